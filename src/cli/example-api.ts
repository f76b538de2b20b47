/**
 * npm run example:api — the README's context-caching example, runnable in
 * Node on stories260K (the browser app uses the same API in its worker,
 * with an OPFS-backed KVStore instead of this in-memory one).
 */
import { openModel } from '../node/session';
import { KVStore, MemoryBlobBackend, MemoryIndexBackend } from '../kvstore';
import { ContextCache } from '../api/context-cache';

const s = await openModel('public/models/stories260K/stories260K.bin');
const store = new KVStore({ blobs: new MemoryBlobBackend(), index: new MemoryIndexBackend() });
await store.open();
const lego = new ContextCache(s.engine, { id: 'stories260K', config: s.model.config, tokenizer: s.model.tokenizer, tokenizerId: 'tok512' }, store);

// 1. Compile each chunk's KV cache on its own (reused if already stored).
const [lily, tom] = await lego.compileContext([
  'Lily had a red ball. She liked to play with it in the park.',
  'Tom had a big dog. The dog was named Max.',
]);

// 2. Link cached chunks, in any order, with new text, and stream the answer.
for (const algorithm of ['full', 'naive', 'legolink:16']) {
  for await (const ev of lego.chatCompletion({
    messages: [{ role: 'user', content: [{ type: 'cache', id: tom }, { type: 'cache', id: lily }, { type: 'text', text: ' One day, Lily' }] }],
    algorithm,
    maxTokens: 24,
  })) {
    if (ev.type === 'first-token') process.stdout.write(`[${algorithm}] TTFT ${ev.ttft.totalMs.toFixed(0)} ms, recomputed ${ev.recomputed}/${ev.promptTokens}:`);
    if (ev.type === 'text') process.stdout.write(ev.text);
    if (ev.type === 'done') process.stdout.write('\n');
  }
}

// 3. Drop a cache.
await lego.expireCache(tom);
s.close();
