/**
 * ContextCache.compileContext as a pipeline (stories260K, a KVStore over memory backends whose writes are made slow
 * and traced): the next chunk compiles while the last one is being stored; every chunk is reported once stored, in
 * order; a chunk listed twice is compiled once; a failed write fails the call after the chunks before it were
 * stored and before any later one is; a cancel drops a chunk whose compile it overtook and lets the write under way
 * finish, and no write runs once the call has settled. Fails if the writes are awaited before the next compile (no
 * overlap in the trace), or left running.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openModel } from '../../src/node/session';
import { KVStore, MemoryBlobBackend, MemoryIndexBackend, StorageFullError } from '../../src/kvstore';
import { ContextCache } from '../../src/api/context-cache';
import type { CompileProgress } from '../../src/api/context-cache';
import { waitFor } from '../helpers/until';

const STORIES = join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin');
const DOCS = ['Lily had a red ball.', 'Tom had a big dog.', 'The sun was hot.', 'Sue liked cake.'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A ContextCache whose store writes take `writeMs` and whose compiles and writes leave a trace. With `untilNext`, a
 * write instead lasts until the next chunk's compile has started (the last chunk's write until nothing), `writeMs`
 * at most: an overlap then shows however slow the host, and a pipeline that awaits each write before the next
 * compile still shows none, each of its writes waiting out the bound.
 */
async function traced(writeMs: number, failAt = -1, untilNext = false) {
  const s = await openModel(STORIES);
  const store = new KVStore({ blobs: new MemoryBlobBackend(), index: new MemoryIndexBackend() });
  await store.open();
  const lego = new ContextCache(s.engine, { id: 'stories260K', config: s.model.config, tokenizer: s.model.tokenizer, tokenizerId: 'tok512' }, store);
  const trace: string[] = [];
  let compiles = 0, writes = 0, writing = 0;
  // compileChunk makes one working cache a chunk, as the first thing it does on the engine.
  const newCache = s.engine.newCache.bind(s.engine);
  s.engine.newCache = (n) => (trace.push(`compile ${compiles++}`), newCache(n));
  const put = store.put.bind(store);
  store.put = async (meta, layers) => {
    const w = writes++;
    trace.push(`write ${w}`);
    writing++;
    try {
      if (!untilNext) await sleep(writeMs);
      else await waitFor(() => compiles >= w + 2 || w === DOCS.length - 1, writeMs);
      if (w === failAt) throw new StorageFullError(1 << 20, 0, 'are free on this device');
      return await put(meta, layers);
    } finally {
      writing--;
      trace.push(`written ${w}`);
    }
  };
  const progress: CompileProgress[] = [];
  const onProgress = (p: CompileProgress) => (progress.push(p), trace.push(`reported ${p.index} ${p.status}`));
  return { s, store, lego, trace, progress, onProgress, writing: () => writing };
}

test('the next chunk compiles while the last is being stored; each is reported once stored, in order', async () => {
  // 5 s: no host is that slow to start the next compile; a pipeline that awaits its writes fails after 15.
  const t = await traced(5000, -1, true);
  try {
    const ids = await t.lego.compileContext(DOCS, { onProgress: t.onProgress });
    assert.equal(new Set(ids).size, 4);
    // Chunk i + 1's compile starts while chunk i's write is under way; chunk i is reported once written.
    for (let i = 0; i < 3; i++) {
      const at = (e: string) => t.trace.indexOf(e);
      assert.ok(at(`write ${i}`) < at(`compile ${i + 1}`) && at(`compile ${i + 1}`) < at(`written ${i}`), `compile ${i + 1} overlaps write ${i}: ${t.trace.join(', ')}`);
      assert.ok(at(`written ${i}`) < at(`reported ${i} compiled`), t.trace.join(', '));
    }
    assert.deepEqual(t.progress.map((p) => [p.index, p.done, p.status]), DOCS.map((_, i) => [i, i + 1, 'compiled']));
    assert.equal(t.trace.at(-1), 'reported 3 compiled', 'the last chunk is reported once it too is stored');
    assert.deepEqual((await t.store.list()).map((e) => e.id).sort(), [...ids].sort());
    assert.equal(t.lego.gpuTier.stats().entries, 4, 'and kept on the GPU');
    // A second call finds them all stored: nothing compiled or written.
    const before = t.trace.length;
    assert.deepEqual(await t.lego.compileContext(DOCS, { onProgress: t.onProgress }), ids);
    assert.deepEqual(t.trace.slice(before), DOCS.map((_, i) => `reported ${i} cached`));
  } finally {
    t.s.close();
  }
});

test('a chunk listed twice is compiled and stored once, the second reported cached after the first is stored', async () => {
  const t = await traced(20);
  try {
    const ids = await t.lego.compileContext([DOCS[0], DOCS[1], DOCS[0]], { onProgress: t.onProgress });
    assert.equal(ids[2], ids[0]);
    assert.deepEqual(t.progress.map((p) => [p.index, p.status]), [[0, 'compiled'], [1, 'compiled'], [2, 'cached']]);
    assert.equal(t.trace.filter((e) => e.startsWith('write ')).length, 2);
    assert.equal((await t.store.list()).length, 2);
  } finally {
    t.s.close();
  }
});

test('a failed write fails the call: the chunks before it stored and reported, none after, no write left running', async () => {
  const t = await traced(20, 1);
  try {
    await assert.rejects(t.lego.compileContext(DOCS, { onProgress: t.onProgress }), StorageFullError);
    assert.equal(t.writing(), 0, 'no write runs once the call has failed');
    assert.deepEqual(t.progress.map((p) => p.index), [0]);
    assert.deepEqual((await t.store.list()).length, 1);
    assert.ok(!t.trace.includes('write 2'), `nothing written after the failure: ${t.trace.join(', ')}`);
  } finally {
    t.s.close();
  }
});

test('cancelled while a chunk compiles, the last chunk\'s write finishes and the compiled chunk is dropped; no later chunk compiles', async () => {
  const t = await traced(40);
  const ctl = new AbortController();
  try {
    const newCache = t.s.engine.newCache;
    // Cancel as chunk 1 starts compiling (chunk 0 is being written then).
    let n = 0;
    t.s.engine.newCache = (rows) => (n++ === 1 && ctl.abort(), newCache(rows));
    await assert.rejects(t.lego.compileContext(DOCS, { onProgress: t.onProgress, signal: ctl.signal }), { name: 'AbortError' });
    assert.equal(t.writing(), 0, 'no write runs once the call has settled');
    assert.ok(t.trace.includes('compile 1') && !t.trace.includes('compile 2') && !t.trace.includes('write 1'), t.trace.join(', '));
    assert.equal((await t.store.list()).length, 1);
    assert.deepEqual(t.progress.map((p) => p.index), [0]);
  } finally {
    t.s.close();
  }
});

test('cancelled while a chunk is being written, the write finishes, whole, before the call rejects', async () => {
  const t = await traced(40);
  const ctl = new AbortController();
  try {
    const put = t.store.put;
    let n = 0;
    t.store.put = (meta, layers) => (n++ === 1 && ctl.abort(), put(meta, layers));
    await assert.rejects(t.lego.compileContext(DOCS, { onProgress: t.onProgress, signal: ctl.signal }), { name: 'AbortError' });
    assert.equal(t.writing(), 0, 'no write runs once the call has settled');
    assert.ok(t.trace.includes('written 1') && !t.trace.includes('compile 2'), t.trace.join(', '));
    assert.equal((await t.store.list()).length, 2, 'chunk 1, written when the cancel came, is stored whole');
    assert.deepEqual(t.progress.map((p) => p.index), [0], 'and not reported: the call was cancelled');
  } finally {
    t.s.close();
  }
});
