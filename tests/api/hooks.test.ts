/**
 * What ContextCache gives the studio and the evaluation besides a plain
 * completion (stories260K, memory KVStore): compiling for an algorithm
 * (LegoLink-0's own variant, Prompt Cache's modules at the prompt's schema
 * positions) with per-chunk progress, cancellation between chunks, a link
 * with no decoding (maxTokens 0), `prompt` over chunks given by their tokens
 * (nothing stored or read), a clear error for scores outside the model,
 * a warm-up that changes no answer, the decode delay (a lower bound
 * only: setTimeout never fires early), and close freeing the GPU tier.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openModel } from '../../src/node/session';
import { KVStore, MemoryBlobBackend, MemoryIndexBackend } from '../../src/kvstore';
import { ContextCache, type CompileProgress, type CompletionEvent, type CompletionRequest } from '../../src/api/context-cache';
import { cacheId } from '../../src/kvcompile/compile';
import { chunkMessages } from '../../src/api/messages';

const s = await openModel(join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin'));
after(() => s.close());
const DOCS = ['Lily had a red ball. She liked to play with it.', 'Tom had a big dog named Max.'];
const QUESTION = ' One day, Lily';

async function fresh() {
  const store = new KVStore({ blobs: new MemoryBlobBackend(), index: new MemoryIndexBackend() });
  await store.open();
  const lego = new ContextCache(s.engine, { id: 'stories260K', config: s.model.config, tokenizer: s.model.tokenizer, tokenizerId: 'tok512' }, store);
  return { store, lego };
}

async function complete(lego: ContextCache, req: CompletionRequest) {
  const events: CompletionEvent[] = [];
  for await (const e of lego.chatCompletion(req)) events.push(e);
  return {
    events,
    first: events.find((e) => e.type === 'first-token') as Extract<CompletionEvent, { type: 'first-token' }>,
    done: events.at(-1) as Extract<CompletionEvent, { type: 'done' }>,
  };
}

test('compileContext for an algorithm: variants, schema positions, progress, cancellation', async () => {
  const { store, lego } = await fresh();
  const tokens = await Promise.all(DOCS.map((d) => lego.tokenize(d)));
  const ctx = { modelId: 'stories260K', tokenizerId: 'tok512', bosId: lego.model.config.bosId };
  const progress: CompileProgress[] = [];
  const l0 = await lego.compileContext(DOCS, { algorithm: 'legolink0', onProgress: (p) => progress.push(p) });
  assert.deepEqual(l0, await Promise.all(tokens.map((t) => cacheId(ctx, t, { kind: 'legolink0' }))));
  assert.deepEqual(progress.map((p) => [p.done, p.total, p.index, p.id, p.status]), [[1, 2, 0, l0[0], 'compiled'], [2, 2, 1, l0[1], 'compiled']]);
  const again: CompileProgress[] = [];
  await lego.compileContext(DOCS, { algorithm: 'legolink0', onProgress: (p) => again.push(p) });
  assert.deepEqual(again.map((p) => p.status), ['cached', 'cached']);

  // Prompt Cache: each chunk a module at the positions it takes before the question (after BOS, back to back here).
  const pc = await lego.compileContext(DOCS, { algorithm: 'promptcache', question: QUESTION });
  const at = [tokens[0].map((_, i) => 1 + i), tokens[1].map((_, i) => 1 + tokens[0].length + i)];
  assert.deepEqual(await lego.schemaPositions(tokens, QUESTION), at);
  assert.deepEqual(pc, await Promise.all(tokens.map((t, i) => cacheId(ctx, t, { kind: 'promptcache', positions: at[i] }))));

  // An aborted compile stops before the next chunk, and compiles nothing more.
  const ac = new AbortController();
  const before = (await store.list()).length;
  await assert.rejects(
    lego.compileContext(['A cat sat on a mat.', 'The end of the day came.'], { onProgress: () => ac.abort(), signal: ac.signal }),
    { name: 'AbortError' },
  );
  assert.equal((await store.list()).length, before + 1, 'the first chunk was compiled, the second not');
});

test('chatCompletion: link only, prompt from given tokens, scores checked, warm-up, decode delay', async () => {
  const { store, lego } = await fresh();
  const ids = await lego.compileContext(DOCS);
  const messages = chunkMessages(ids, QUESTION);

  const linkOnly = await complete(lego, { messages, algorithm: 'naive', maxTokens: 0 });
  assert.deepEqual(linkOnly.events.map((e) => e.type), ['first-token', 'done']);
  assert.equal(linkOnly.done.tokens, 0);
  assert.ok(linkOnly.first.promptTokens > 0);

  // prompt over chunks given by their tokens: nothing compiled for them, nothing read.
  const tokens = await Promise.all(DOCS.map((d) => lego.tokenize(d)));
  const stored = (await store.list()).length;
  const given = [{ role: 'user' as const, content: [
    ...tokens.map((t, i) => ({ type: 'cache' as const, id: `unstored ${i}`, tokens: t })), { type: 'text' as const, text: QUESTION }] }];
  const p1 = await complete(lego, { messages: given, algorithm: 'prompt', maxTokens: 6 });
  const p2 = await complete(lego, { messages, algorithm: 'prompt', maxTokens: 6 });
  assert.equal((await store.list()).length, stored);
  assert.equal(p1.first.ttft.lookupMs + p1.first.ttft.loadMs, 0);
  assert.equal(p1.first.promptTokens, p2.first.promptTokens);
  assert.equal(p1.done.text, p2.done.text, 'given tokens and the store index give the same prompt');
  await assert.rejects(complete(lego, { messages: chunkMessages(['unstored 0'], QUESTION), algorithm: 'naive', maxTokens: 1 }), /not in the store/);

  const L = s.model.config.nLayers;
  await assert.rejects(complete(lego, { messages, algorithm: 'naive', scores: { layer: L, heads: [0] } }), new RegExp(`Layer ${L} / head 0 is out of range \\(${L} layers`));
  await assert.rejects(complete(lego, { messages, algorithm: 'naive', scores: { layer: 0, heads: [99] } }), /head 99 is out of range/);

  const plain = await complete(lego, { messages, algorithm: 'cacheblend:0.3', maxTokens: 6 });
  const warmed = await complete(lego, { messages, algorithm: 'cacheblend:0.3', maxTokens: 6, warmup: true });
  assert.equal(warmed.done.text, plain.done.text);
  assert.equal(warmed.first.recomputed, plain.first.recomputed);

  const t0 = performance.now();
  const slow = await complete(lego, { messages, algorithm: 'naive', maxTokens: 4, decodeDelayMs: 50 });
  assert.equal(slow.done.tokens, 4);
  assert.ok(performance.now() - t0 >= 4 * 50, 'a pause after every decoded token');

  // close: the GPU tier's copies are freed (the studio does this when the model changes); the store keeps its entries.
  assert.ok(lego.gpuTier.stats().entries > 0);
  lego.close();
  assert.equal(lego.gpuTier.stats().entries, 0);
  assert.equal((await store.list()).length, stored);
});
