/**
 * KVStore under faults: corrupt and missing blobs, crashes between the steps
 * of a write (with and without rename), a bad read-back, and the device
 * running out of space (QuotaExceededError → LRU eviction → StorageFullError).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CorruptBlobError, SimulatedCrash, StorageFullError, TMP_PREFIX } from '../../src/kvstore';
import { Rig } from './helpers';

const fileOf = (rig: Rig, id: string) => rig.index.records.get(id)!.file;

test('a corrupt blob is dropped with its entry and reported, never returned', async () => {
  const rig = new Rig();
  await rig.put('a');
  await rig.put('b', 2);
  rig.reload(); // empty RAM tier: the next get reads the blob
  const bytes = rig.blobs.files.get(fileOf(rig, 'a'))!;
  bytes[bytes.length - 10] ^= 0x10;
  const r = await rig.store.get('a');
  assert.equal(r.status, 'corrupt');
  assert.ok(r.status === 'corrupt' && /payload checksum mismatch/.test(r.reason));
  assert.equal(r.timing.tier, 'opfs');
  assert.equal(await rig.store.has('a'), false);
  assert.equal(rig.index.records.has('a'), false);
  assert.equal(rig.files().length, 1, 'its blob is deleted');
  assert.equal((await rig.store.get('a')).status, 'miss', 'then it is a plain miss: compile again');
  assert.deepEqual(rig.evictions(), ['opfs:a:corrupt']);
  const st = await rig.store.stats();
  assert.deepEqual([st.corrupt, st.misses, st.hits], [1, 1, 0]);
  assert.equal((await rig.store.get('b')).status, 'hit', 'other entries are untouched');
});

test('a blob whose header does not match its index record, or that vanished, is corrupt too', async () => {
  const rig = new Rig();
  await rig.put('a');
  await rig.put('b', 2);
  rig.reload();
  const [fa, fb] = [fileOf(rig, 'a'), fileOf(rig, 'b')];
  rig.blobs.files.set(fa, rig.blobs.files.get(fb)!); // a valid blob, of another entry
  const r = await rig.store.get('a');
  assert.ok(r.status === 'corrupt' && /header does not match the index/.test(r.reason));
  rig.blobs.files.delete(fb);
  const m = await rig.store.get('b');
  assert.ok(m.status === 'corrupt' && /blob file is missing/.test(m.reason));
  assert.deepEqual(rig.evictions(), ['opfs:a:corrupt', 'opfs:b:missing']);
  assert.deepEqual(await rig.store.list(), []);
});

/** Puts "new" with a crash armed, reloads, and returns the open report. */
async function crashDuringPut(rig: Rig, when: Parameters<NonNullable<Rig['blobs']['crashAfter']>> extends [infer O, infer N] ? (op: O, name: N) => boolean : never, id = 'new') {
  await rig.put('old');
  rig.blobs.crashAfter = when;
  await assert.rejects(rig.put(id, 3), SimulatedCrash);
  rig.reload();
  return rig.store.open();
}

test('crash after the tmp write: invisible, and the tmp file is deleted on open', async () => {
  const rig = new Rig();
  const report = await crashDuringPut(rig, (op, name) => op === 'write' && name.startsWith(TMP_PREFIX) && name.includes('new'));
  assert.equal(report.removedBlobs.length, 1);
  assert.ok(report.removedBlobs[0].startsWith('tmp-new.'));
  assert.equal(await rig.store.has('new'), false);
  assert.deepEqual((await rig.store.list()).map((e) => e.id), ['old']);
  assert.deepEqual(rig.files(), [fileOf(rig, 'old')]);
});

test('crash after the rename, before the index commit: invisible, the orphan blob is deleted on open', async () => {
  const rig = new Rig();
  const report = await crashDuringPut(rig, (op, name) => op === 'rename' && name.includes('new'));
  assert.match(report.removedBlobs.join(), /^new\.\w+\.lkv$/);
  assert.equal(await rig.store.has('new'), false);
  assert.equal(rig.files().length, 1);
});

test('crash after the index commit of a replacement: the new version is live, the old blob is cleaned up', async () => {
  const rig = new Rig();
  await rig.put('new', 1);
  const oldFile = fileOf(rig, 'new');
  rig.index.crashAfter = (op, key) => op === 'set' && key === 'new';
  await assert.rejects(rig.put('new', 2), SimulatedCrash);
  rig.reload();
  const report = await rig.store.open();
  assert.deepEqual(report.removedBlobs, [oldFile]);
  const r = await rig.store.get('new');
  assert.ok(r.status === 'hit' && r.tier === 'opfs');
  assert.notEqual(fileOf(rig, 'new'), oldFile);
});

test('without rename: the final name is written directly and the index is the commit point', async () => {
  const rig = new Rig({}, { rename: false });
  const report = await crashDuringPut(rig, (op, name) => op === 'write' && name.startsWith('new.'));
  assert.match(report.removedBlobs.join(), /^new\.\w+\.lkv$/);
  assert.equal(await rig.store.has('new'), false);
  await rig.put('new', 4);
  assert.ok(!rig.blobs.ops.some((o) => o.includes(TMP_PREFIX)), 'no tmp files on such a backend');
  rig.reload();
  assert.equal((await rig.store.get('new')).status, 'hit');
});

test('an index record whose blob is gone, or that is malformed, is dropped on open', async () => {
  const rig = new Rig();
  await rig.put('a');
  await rig.put('b');
  rig.blobs.files.delete(fileOf(rig, 'a'));
  rig.index.records.set('junk', { ...rig.index.records.get('b')!, id: 'other' });
  rig.reload();
  const report = await rig.store.open();
  assert.deepEqual(report.droppedEntries.sort(), ['a', 'junk']);
  assert.deepEqual((await rig.store.list()).map((e) => e.id), ['b']);
});

test('crash while expiring, after the index delete: the orphan blob goes on open', async () => {
  const rig = new Rig();
  await rig.put('a');
  rig.index.crashAfter = (op) => op === 'del';
  await assert.rejects(rig.store.expire('a'), SimulatedCrash);
  rig.reload();
  assert.equal((await rig.store.open()).removedBlobs.length, 1);
  assert.deepEqual(rig.files(), []);
});

test('a blob that reads back wrong after writing fails the put and leaves nothing', async () => {
  const rig = new Rig();
  rig.blobs.corruptWrites = true;
  await assert.rejects(rig.put('a'), (e: Error) => e instanceof CorruptBlobError && /read back after writing it failed its check: it differs from what was written \(write of a\)/.test(e.message));
  assert.deepEqual(rig.files(), []);
  assert.equal(await rig.store.has('a'), false);
  rig.blobs.corruptWrites = false;
  await rig.put('a');
  assert.equal(await rig.store.has('a'), true);
});

test('device quota exceeded: LRU entries are evicted and the write retried, then StorageFullError', async () => {
  const probe = new Rig();
  await probe.put('a');
  const blob = (await probe.store.list())[0].bytes;
  const rig = new Rig({}, { quotaBytes: 2 * blob + 100 }); // room for two blobs, not three
  await rig.put('a');
  await rig.put('b');
  await rig.store.get('a'); // b is now the least recently used
  await rig.put('c');
  assert.deepEqual((await rig.store.list()).map((e) => e.id).sort(), ['a', 'c']);
  assert.deepEqual(rig.evictions().filter((e) => e.startsWith('opfs')), ['opfs:b:lru']);
  assert.equal(rig.files().length, 2, 'no partial file is left after a failed write');
  // With everything else pinned nothing can be evicted.
  rig.store.pin('a');
  rig.store.pin('c');
  await assert.rejects(rig.put('d'), (e: Error) => {
    assert.ok(e instanceof StorageFullError);
    assert.equal(e.needed, blob);
    assert.ok(e.available < blob && e.available >= 0);
    assert.match(e.message, /KV store is full: this cache needs .* but only .* are free on this device/);
    return true;
  });
  assert.deepEqual((await rig.store.list()).map((e) => e.id).sort(), ['a', 'c']);
  assert.equal(rig.files().length, 2);
  rig.store.unpin('a');
  await rig.put('d'); // a goes now
  assert.deepEqual((await rig.store.list()).map((e) => e.id).sort(), ['c', 'd']);
});
