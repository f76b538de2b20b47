/** KVStore over memory backends: round trips, tiers, LRU order, budgets, stats, events. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { roundToHalf } from '../../src/engine/f16';
import { StorageFullError } from '../../src/kvstore';
import { DIMS, f32Bytes, fakeLayers, putMeta, Rig } from './helpers';

test('put then get: RAM hit, then after a reload an OPFS hit that is promoted to RAM', async () => {
  const rig = new Rig();
  const report = await rig.store.open();
  assert.deepEqual(report, { entries: 0, removedBlobs: [], droppedEntries: [] });
  const layers = fakeLayers(DIMS.layers, DIMS.tokens, DIMS.kvDim, 5);
  const m = await rig.store.put(putMeta('a'), layers);
  assert.deepEqual({ ...m, bytes: 0 }, {
    id: 'a', modelId: 'stories260K', dtype: 'f32', layers: 2, tokens: 8, kvDim: 16, bytes: 0, createdAt: 1000, lastUsedAt: 1000,
    hits: 0, variant: 'plain', meta: { preview: 'text of a', docId: 'd1' },
  });
  assert.equal(m.bytes, rig.blobs.files.values().next().value!.length);
  assert.ok(await rig.store.has('a'));

  const r1 = await rig.store.get('a');
  assert.equal(r1.status, 'hit');
  if (r1.status !== 'hit') return;
  assert.equal(r1.tier, 'ram');
  assert.deepEqual(r1.layers, layers);
  assert.equal(r1.meta.hits, 1);
  assert.ok(r1.meta.lastUsedAt > m.lastUsedAt);
  assert.deepEqual({ tier: r1.timing.tier, bytes: r1.timing.bytes }, { tier: 'ram', bytes: f32Bytes() });

  const store = rig.reload();
  assert.equal((await store.open()).entries, 1);
  const r2 = await store.get('a');
  assert.ok(r2.status === 'hit' && r2.tier === 'opfs');
  assert.deepEqual(r2.layers, layers);
  assert.equal(r2.meta.hits, 2, 'hits persist in the index');
  assert.equal(r2.timing.bytes, m.bytes);
  assert.ok(r2.timing.ms >= r2.timing.readMs + r2.timing.decodeMs - 1e-6 && r2.timing.readMs >= 0);
  const r3 = await store.get('a');
  assert.ok(r3.status === 'hit' && r3.tier === 'ram', 'promoted on the OPFS hit');
  assert.deepEqual((await store.list()).map((e) => [e.id, e.inRam, e.hits]), [['a', true, 3]]);
  assert.deepEqual(rig.events.map((e) => e.type === 'lookup' && `${e.status}:${e.timing.tier}`), ['hit:opfs', 'hit:ram']);
});

test('f16 entries come back rounded to half, the same from RAM and from OPFS', async () => {
  const rig = new Rig();
  const layers = fakeLayers(DIMS.layers, DIMS.tokens, DIMS.kvDim, 9);
  const m = await rig.store.put(putMeta('h', { dtype: 'f16' }), layers);
  assert.equal(m.dtype, 'f16');
  const ram = await rig.store.get('h');
  rig.reload();
  const disk = await rig.store.get('h');
  assert.ok(ram.status === 'hit' && ram.tier === 'ram' && disk.status === 'hit' && disk.tier === 'opfs');
  for (let l = 0; l < DIMS.layers; l++) {
    assert.deepEqual(ram.layers[l].k, roundToHalf(layers[l].k));
    assert.deepEqual(disk.layers[l].v, ram.layers[l].v);
  }
});

test('misses, stats, expire, clear', async () => {
  const rig = new Rig();
  const s = rig.store;
  assert.equal((await s.get('nope')).status, 'miss');
  await rig.put('a');
  await rig.put('b', 2);
  await s.get('a');
  rig.store.pin('b');
  const st = await s.stats();
  const blob = (await s.list())[0].bytes;
  assert.deepEqual(st, {
    ram: { bytes: 2 * f32Bytes(), entries: 2, budget: rig.store.getBudgets().ram },
    opfs: { bytes: 2 * blob, entries: 2, budget: rig.store.getBudgets().opfs },
    hits: 1, ramHits: 1, opfsHits: 0, misses: 1, corrupt: 0, evictions: 0,
  });
  assert.deepEqual((await s.list()).map((e) => [e.id, e.pinned]), [['a', false], ['b', true]]);
  assert.equal(await s.expire('a'), true);
  assert.equal(await s.expire('a'), false);
  assert.equal((await s.get('a')).status, 'miss');
  assert.deepEqual(rig.evictions(), ['ram:a:expire', 'opfs:a:expire']);
  assert.equal(rig.files().length, 1);
  await s.clear();
  assert.deepEqual(await s.list(), []);
  assert.deepEqual(rig.files(), []);
  assert.deepEqual([...rig.index.records.keys()], []);
  assert.equal((await s.stats()).opfs.bytes, 0);
});

test('OPFS budget: least recently used first, by puts, gets and touches', async () => {
  const rig = new Rig();
  await rig.put('a');
  const blob = (await rig.store.list())[0].bytes;
  await rig.store.setBudgets({ opfs: 3 * blob });
  await rig.put('b');
  await rig.put('c');
  await rig.store.get('a'); // a is now newer than b and c
  await rig.store.touch('b'); // b newer than c
  await rig.put('d'); // evicts c
  assert.deepEqual((await rig.store.list()).map((e) => e.id), ['d', 'b', 'a']);
  await rig.put('e'); // evicts a
  await rig.store.get('b');
  await rig.put('f'); // evicts d
  assert.deepEqual((await rig.store.list()).map((e) => e.id).sort(), ['b', 'e', 'f']);
  assert.deepEqual(rig.evictions().filter((e) => e.startsWith('opfs')), ['opfs:c:lru', 'opfs:a:lru', 'opfs:d:lru']);
  assert.equal((await rig.store.stats()).opfs.bytes, 3 * blob);
  assert.equal(rig.files().length, 3, 'evicted blobs are deleted');
  // Lowering the budget evicts at once; a pinned entry stays.
  rig.store.pin('b');
  await rig.store.setBudgets({ opfs: blob });
  assert.deepEqual((await rig.store.list()).map((e) => e.id), ['b']);
  // Nothing can make room for a blob bigger than the budget.
  await assert.rejects(rig.put('g'), (e: Error) => e instanceof StorageFullError && /needs .* \(\d+ bytes\) but only .* \(\d+ bytes\) remain in the OPFS tier budget/.test(e.message));
  await rig.store.setBudgets({ opfs: blob - 1 });
  await assert.rejects(rig.put('g'), /fit in the OPFS tier budget/);
  assert.deepEqual((await rig.store.list()).map((e) => e.id), ['b'], 'a failed put changes nothing');
});

test('RAM tier: budget in f32 bytes, LRU copies dropped, promotion on OPFS hits', async () => {
  const rig = new Rig({ ram: 2 * f32Bytes() });
  await rig.put('a');
  await rig.put('b');
  await rig.put('c'); // a's host copy goes
  const inRam = async () => (await rig.store.list()).filter((e) => e.inRam).map((e) => e.id).sort();
  assert.deepEqual(await inRam(), ['b', 'c']);
  const a = await rig.store.get('a');
  assert.ok(a.status === 'hit' && a.tier === 'opfs');
  assert.deepEqual(await inRam(), ['a', 'c'], 'a promoted, b (least recent) dropped');
  rig.store.pin('c');
  await rig.store.get('b'); // promoted; a goes since c is pinned
  assert.deepEqual(await inRam(), ['b', 'c']);
  const cold = await rig.store.get('a', { promote: false });
  assert.ok(cold.status === 'hit' && cold.tier === 'opfs');
  assert.deepEqual(await inRam(), ['b', 'c']);
  assert.deepEqual(rig.evictions(), ['ram:a:lru', 'ram:b:lru', 'ram:a:lru']);
  const st = await rig.store.stats();
  assert.deepEqual([st.ram.entries, st.ram.bytes, st.opfs.entries, st.hits, st.opfsHits, st.ramHits], [2, 2 * f32Bytes(), 3, 3, 3, 0]);
  // An entry bigger than the whole RAM budget is stored but never held in RAM.
  rig.store.unpin('c');
  await rig.store.setBudgets({ ram: f32Bytes() - 1 });
  assert.deepEqual(await inRam(), []);
  await rig.put('d');
  assert.deepEqual(await inRam(), []);
  assert.equal((await rig.store.get('d')).status, 'hit');
});

test('replacing an entry keeps one blob and tells upper tiers', async () => {
  const rig = new Rig();
  await rig.put('a', 1);
  const layers = fakeLayers(DIMS.layers, DIMS.tokens, DIMS.kvDim, 2);
  await rig.store.put(putMeta('a', { variant: 'sinks4' }), layers);
  assert.equal(rig.files().length, 1);
  assert.deepEqual(rig.evictions(), ['ram:a:replaced', 'opfs:a:replaced']);
  rig.reload();
  const r = await rig.store.get('a');
  assert.ok(r.status === 'hit');
  assert.deepEqual(r.layers, layers);
  assert.equal(r.meta.variant, 'sinks4');
});

test('concurrent calls run one at a time', async () => {
  const rig = new Rig();
  await rig.put('x0');
  const blob = (await rig.store.list())[0].bytes;
  await rig.store.setBudgets({ opfs: 5 * blob });
  const ids = Array.from({ length: 12 }, (_, i) => `p${'abcdefghijkl'[i]}`);
  await Promise.all(ids.flatMap((id, i) => [rig.put(id, i), rig.store.get(ids[Math.max(0, i - 1)])]));
  const left = (await rig.store.list()).map((e) => e.id);
  assert.equal(left.length, 5);
  assert.equal(rig.files().length, 5);
  assert.deepEqual((await rig.store.stats()).opfs.bytes, 5 * blob);
});
