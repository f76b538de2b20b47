/**
 * The explicit context-caching API end to end in Node (stories260K, a
 * KVStore over memory backends): compileContext returns content-hash ids and
 * reuses stored caches; chatCompletion mixes cache and text parts in any
 * order, streams text and reports TTFT; full and legolink:k>=len give the
 * same greedy answer; prompt answers as an ordinary prompt without reading
 * a cache; a corrupt stored blob is recompiled,
 * never used; expireCache drops an entry.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openModel } from '../../src/node/session';
import { KVStore, MemoryBlobBackend, MemoryIndexBackend } from '../../src/kvstore';
import { ContextCache, type CompletionEvent } from '../../src/api/context-cache';

const STORIES = join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin');

async function collect(gen: AsyncGenerator<CompletionEvent>) {
  const events: CompletionEvent[] = [];
  for await (const e of gen) events.push(e);
  const done = events.at(-1) as Extract<CompletionEvent, { type: 'done' }>;
  const first = events[0] as Extract<CompletionEvent, { type: 'first-token' }>;
  return { events, done, first, streamed: events.filter((e) => e.type === 'text').map((e) => (e as { text: string }).text).join('') };
}

test('compileContext, chatCompletion with mixed parts, corrupt blob recompiled, expireCache', async () => {
  const s = await openModel(STORIES);
  const blobs = new MemoryBlobBackend();
  const store = new KVStore({ blobs, index: new MemoryIndexBackend() });
  await store.open();
  const lego = new ContextCache(s.engine, { id: 'stories260K', config: s.model.config, tokenizer: s.model.tokenizer, tokenizerId: 'tok512' }, store);
  try {
    const docs = ['Lily had a red ball. She liked to play with it in the park.', 'Tom had a big dog. The dog was named Max.'];
    const ids = await lego.compileContext(docs);
    assert.equal(ids.length, 2);
    assert.equal((await store.list()).length, 2);
    const again = await lego.compileContext(docs);
    assert.deepEqual(again, ids, 'the same chunks give the same ids');
    assert.equal((await store.list()).length, 2, 'and are not stored twice');

    const messages = [{ role: 'user' as const, content: [{ type: 'cache' as const, id: ids[1] }, { type: 'cache' as const, id: ids[0] }, { type: 'text' as const, text: ' One day, Lily' }] }];
    const full = await collect(lego.chatCompletion({ messages, algorithm: 'full', maxTokens: 12 }));
    const lego16 = await collect(lego.chatCompletion({ messages, algorithm: 'legolink:64', maxTokens: 12 }));
    const naive = await collect(lego.chatCompletion({ messages, algorithm: 'naive', maxTokens: 12 }));
    assert.equal(full.first.recomputed, full.first.promptTokens);
    assert.ok(naive.first.recomputed < naive.first.promptTokens);
    assert.ok(naive.first.ttft.totalMs > 0 && naive.first.ttft.recomputeMs > 0);
    assert.equal(full.streamed, full.done.text);
    assert.equal(lego16.done.text, full.done.text, 'legolink with k >= chunk length answers like full');
    assert.ok(full.done.tokens > 0);

    // prompt: one BOS instead of one per chunk, every row computed, no cached row read.
    const hits = [(await store.stats()).hits, lego.gpuTier.stats().hits];
    const prompt = await collect(lego.chatCompletion({ messages, algorithm: 'prompt', maxTokens: 12 }));
    assert.deepEqual([(await store.stats()).hits, lego.gpuTier.stats().hits], hits, 'prompt read nothing from the store or the GPU tier');
    assert.equal(prompt.first.promptTokens, full.first.promptTokens - 1);
    assert.equal(prompt.first.recomputed, prompt.first.promptTokens);
    assert.equal(prompt.first.ttft.lookupMs + prompt.first.ttft.loadMs, 0, 'its TTFT is all compute');
    assert.ok(prompt.done.tokens > 0);

    const tok = s.model.tokenizer;

    // A damaged blob is dropped and the chunk recompiled, and the answer does not change.
    const names = await blobs.list();
    const victim = names.find((n) => n.includes(ids[0]))!;
    const bytes = (await blobs.read(victim))!;
    bytes[bytes.length - 5] ^= 0xff;
    await blobs.write(victim, bytes);
    const store2 = new KVStore({ blobs, index: (store as unknown as { index: MemoryIndexBackend }).index });
    await store2.open();
    const lego2 = new ContextCache(s.engine, { id: 'stories260K', config: s.model.config, tokenizer: tok, tokenizerId: 'tok512' }, store2);
    const healed = await collect(lego2.chatCompletion({ messages, algorithm: 'naive', maxTokens: 12 }));
    assert.equal(healed.done.text, naive.done.text);
    assert.equal((await store2.stats()).corrupt, 1);

    assert.equal(await lego2.expireCache(ids[1]), true);
    assert.equal(await store2.has(ids[1]), false);
    await assert.rejects(collect(lego2.chatCompletion({ messages: [{ role: 'user', content: [{ type: 'cache', id: 'nope' }] }] })), /not in the store/);
  } finally {
    s.close();
  }
});

test('the GPU tier serves links from the compile on without touching the store, and attention is streamed', async () => {
  const s = await openModel(STORIES);
  const store = new KVStore({ blobs: new MemoryBlobBackend(), index: new MemoryIndexBackend() });
  await store.open();
  const lego = new ContextCache(s.engine, { id: 'stories260K', config: s.model.config, tokenizer: s.model.tokenizer, tokenizerId: 'tok512' }, store);
  try {
    const ids = await lego.compileContext(['Lily had a red ball.', 'Tom had a big dog.']);
    const messages = [{ role: 'user' as const, content: [{ type: 'cache' as const, id: ids[0] }, { type: 'cache' as const, id: ids[1] }, { type: 'text' as const, text: ' Lily' }] }];
    // The compile kept both chunks on the GPU: the first link already reads nothing from the store.
    assert.equal(lego.gpuTier.stats().entries, 2);
    const hitsBefore = (await store.stats()).hits;
    const first = await collect(lego.chatCompletion({ messages, algorithm: 'naive', maxTokens: 4 }));
    const second = await collect(lego.chatCompletion({ messages, algorithm: 'naive', maxTokens: 4, scores: { layer: 2, heads: [0] } }));
    assert.equal((await store.stats()).hits, hitsBefore, 'the links read nothing from the store');
    assert.deepEqual([lego.gpuTier.stats().hits, lego.gpuTier.stats().misses], [4, 0]);
    assert.equal(second.done.text, first.done.text);
    assert.equal(second.first.scores.length, 1);
    const attention = second.events.filter((e) => e.type === 'attention');
    assert.equal(attention.length, second.done.tokens - 1, 'one row per decode step after the first token');
    await lego.expireCache(ids[0]);
    assert.equal(lego.gpuTier.has(ids[0]), false);
  } finally {
    s.close();
  }
});

test('a link of more chunks than the GPU tier holds: held chunks are not evicted under it, and it answers as with room', async () => {
  const s = await openModel(STORIES);
  const docs = [
    'Lily had a red ball. She liked to play with it in the park.', 'Tom had a big dog. The dog was named Max.',
    'The sun was hot, so they sat under a big tree.', 'Mom made a cake and they all ate it together.',
  ];
  const run = async (gpuBudgetBytes?: number) => {
    const store = new KVStore({ blobs: new MemoryBlobBackend(), index: new MemoryIndexBackend() });
    await store.open();
    const lego = new ContextCache(s.engine, { id: 'stories260K', config: s.model.config, tokenizer: s.model.tokenizer, tokenizerId: 'tok512' }, store, { gpuBudgetBytes });
    const ids = await lego.compileContext(docs);
    const bytes = (await store.list()).map((e) => e.bytes);
    const messages = [{ role: 'user' as const, content: [...ids.map((id) => ({ type: 'cache' as const, id })), { type: 'text' as const, text: ' One day, Lily' }] }];
    const device = s.engine.gpu.device;
    device.pushErrorScope('validation');
    const answers: string[] = [];
    // Twice: the second link finds some chunks on the GPU and must evict others to make room.
    for (let i = 0; i < 2; i++) answers.push((await collect(lego.chatCompletion({ messages, algorithm: 'legolink:4', maxTokens: 10 }))).done.text);
    const err = await device.popErrorScope();
    return { answers, err, stats: lego.gpuTier.stats(), bytes };
  };
  const roomy = await run();
  // Room for about two of the four chunks' f32 rows.
  const small = await run(Math.round(2.5 * 2 * s.model.config.nLayers * s.model.config.nKvHeads * s.model.config.headDim * 4 * 16));
  assert.equal(roomy.err, null);
  assert.equal(small.err, null, `no buffer used after it was destroyed: ${small.err?.message}`);
  assert.ok(small.stats.bytes <= small.stats.budget, 'the budget holds');
  assert.ok(small.stats.entries < docs.length, 'the tier could not keep every chunk');
  assert.deepEqual(small.answers, roomy.answers);
  assert.equal(small.answers[0], small.answers[1]);
  s.close();
});

test('keys and values kept as f16 (the app\'s choice above 50M weights): half the stored bytes, and one answer whether the rows come from the GPU tier, the RAM tier or a stored blob', async () => {
  const docs = ['Lily had a red ball. She liked to play with it in the park.', 'Tom had a big dog. The dog was named Max.'];
  const stored: Record<string, { bytes: number; dtype: string }[]> = {};
  const answers: Record<string, string[]> = {};
  const held: Record<string, { gpu: number; ram: number }> = {};
  for (const kvDtype of ['f32', 'f16'] as const) {
    const s = await openModel(STORIES, { kvDtype });
    try {
      const blobs = new MemoryBlobBackend(), index = new MemoryIndexBackend();
      const open = async () => {
        const store = new KVStore({ blobs, index });
        await store.open();
        return { store, lego: new ContextCache(s.engine, { id: `stories260K|kv-${kvDtype}`, config: s.model.config, tokenizer: s.model.tokenizer, tokenizerId: 'tok512' }, store) };
      };
      const first = await open();
      const ids = await first.lego.compileContext(docs);
      stored[kvDtype] = (await first.store.list()).map((e) => ({ bytes: e.bytes, dtype: e.dtype }));
      const messages = [{ role: 'user' as const, content: [{ type: 'cache' as const, id: ids[1] }, { type: 'cache' as const, id: ids[0] }, { type: 'text' as const, text: ' One day, Lily' }] }];
      const ask = async (lego: ContextCache) => {
        const out: string[] = [];
        for (const algorithm of ['naive', 'legolink:4', 'cacheblend:0.15']) out.push((await collect(lego.chatCompletion({ messages, algorithm, maxTokens: 12 }))).done.text);
        return out;
      };
      // Fresh from the compile (the GPU tier); a second cache over the same store (its RAM tier); a store opened
      // again over the same backends (the stored blobs, decoded: f16 rows stay halves until the GPU widens them).
      // A link of one chunk first, so the longer links after it grow the link's staging at a GPU-tier chunk (that
      // growth once lost the chunk's first layer).
      await collect(first.lego.chatCompletion({ messages: [{ role: 'user', content: [{ type: 'cache', id: ids[0] }, { type: 'text', text: ' One day' }] }], algorithm: 'naive', maxTokens: 2 }));
      const fromGpu = await ask(first.lego);
      held[kvDtype] = { gpu: first.lego.gpuTier.stats().bytes, ram: (await first.store.stats()).ram.bytes };
      const ram = new ContextCache(s.engine, { id: `stories260K|kv-${kvDtype}`, config: s.model.config, tokenizer: s.model.tokenizer, tokenizerId: 'tok512' }, first.store);
      const fromRam = await ask(ram);
      const reopened = await open();
      const fromBlob = await ask(reopened.lego);
      assert.equal((await reopened.store.stats()).hits >= 2, true, 'the reopened store served the chunks');
      assert.deepEqual(fromRam, fromGpu, `${kvDtype}: the RAM tier's rows answer as the compile's`);
      assert.deepEqual(fromBlob, fromGpu, `${kvDtype}: the stored blobs answer as the compile's`);
      assert.ok(fromGpu.every((t) => t.length > 0));
      answers[kvDtype] = fromGpu;
    } finally {
      s.close();
    }
  }
  assert.deepEqual(stored.f32.map((e) => e.dtype), ['f32', 'f32']);
  assert.deepEqual(stored.f16.map((e) => e.dtype), ['f16', 'f16']);
  // The GPU tier and the RAM tier hold the halves themselves: exactly half of what f32 rows take.
  assert.equal(held.f16.gpu * 2, held.f32.gpu, JSON.stringify(held));
  assert.equal(held.f16.ram * 2, held.f32.ram, JSON.stringify(held));
  const total = (kv: string) => stored[kv].reduce((t, e) => t + e.bytes, 0);
  // Two bytes a value instead of four; the blob's header and checksums are the rest.
  assert.ok(total('f16') < 0.52 * total('f32') && total('f16') > 0.45 * total('f32'), `${total('f16')} against ${total('f32')} bytes`);
});
