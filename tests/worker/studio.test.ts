/**
 * The studio's worker side in Node (stories260K, a KVStore over memory
 * backends): KVSplit of the sample documents, compile with per-chunk
 * progress and reuse (the worker's ContextCache), the library, asking with
 * attention scores for a layer and head (studio-ask.ts over that
 * ContextCache: question rows from KVLink, one row per decode step),
 * LegoLink-0 compiled on demand, the ordinary prompt with nothing compiled or
 * read, cancel, empty documents, and the TTFT sweep.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { openModel } from '../../src/node/session';
import { KVStore, MemoryBlobBackend, MemoryIndexBackend } from '../../src/kvstore';
import { StudioWorker } from '../../src/worker/studio';
import { studioAsk } from '../../src/worker/studio-ask';
import type { AskRequest, AskResult, ChunkRef, SplitResult, StudioEvent, SweepPoint } from '../../src/worker/studio-protocol';
import { chunkAt, chunkIndexOfId } from '../../src/worker/chunk-table';

const root = join(import.meta.dirname, '../..');
const s = await openModel(join(root, 'public/models/stories260K/stories260K.bin'));
after(() => s.close());
const store = new KVStore({ blobs: new MemoryBlobBackend(), index: new MemoryIndexBackend() });
const studio = new StudioWorker(async () => ({ engine: s.engine, model: s.model, key: 'stories260K|f32' }), store);
const docs = ['lily-and-the-kite.txt', 'tom-and-max.txt'].map((f) => readFileSync(join(root, 'public/samples', f), 'utf8'));

/** The studio's requests as the page makes them, with the events each one streams. */
type Req =
  | { type: 'split'; docId: string; text: string; mode: Parameters<StudioWorker['split']>[2] }
  | { type: 'compile'; chunks: ChunkRef[]; variant: 'plain' }
  | { type: 'library' }
  | { type: 'ask'; req: AskRequest }
  | { type: 'sweep'; req: Parameters<StudioWorker['sweep']>[0] };

async function handle(r: Req, signal: AbortSignal, emit: (e: StudioEvent | { kind: 'sweep-point' }) => void): Promise<unknown> {
  switch (r.type) {
    case 'split':
      return studio.split(r.docId, r.text, r.mode);
    case 'compile': {
      let compiled = 0;
      const ids = await (await studio.cc()).compileContext(r.chunks.map((c) => c.tokens), {
        variant: { kind: 'plain' }, signal,
        onProgress: (p) => {
          if (p.status === 'compiled') compiled++;
          emit({ kind: 'compile', done: p.done, total: p.total, key: r.chunks[p.index].key, status: p.status, ms: p.ms });
        },
      });
      return { ids, compiled };
    }
    case 'library':
      return studio.library();
    case 'ask':
      return studioAsk(await studio.cc(), r.req, emit, { signal });
    case 'sweep':
      return studio.sweep(r.req, signal, () => emit({ kind: 'sweep-point' }));
  }
}

async function run<T>(req: Req, signal = new AbortController().signal) {
  const events: (StudioEvent | { kind: 'sweep-point' })[] = [];
  const result = (await handle(req, signal, (e) => events.push(e))) as T;
  return { result, events };
}

test('split, compile with progress, reuse, library, ask with scores, legolink0 on demand, sweep', async () => {
  const splits: SplitResult[] = [];
  for (const [i, text] of docs.entries()) {
    splits.push((await run<SplitResult>({ type: 'split', docId: `d${i}`, text, mode: { kind: 'semantic', maxTokens: 64 } })).result);
  }
  assert.ok(splits.every((sp) => sp.chunks.count >= 2 && sp.modelKey === 'stories260K|f32'));
  const first2 = (sp: SplitResult) => [chunkAt(sp.chunks, 0)!, chunkAt(sp.chunks, 1)!];
  const c0 = first2(splits[0])[0];
  assert.equal(c0.tokens.length > 0 && c0.tokens.length <= 64, true);
  assert.notEqual(c0.ids.plain, c0.ids.legolink0);
  // The packed table holds what KVSplit cut: the chunks cover the text in order, and their tokens sum to the total.
  for (const [d, sp] of splits.entries()) {
    const cs = Array.from({ length: sp.chunks.count }, (_, i) => chunkAt(sp.chunks, i)!);
    assert.equal(cs.reduce((a, c) => a + c.tokens.length, 0), sp.totalTokens);
    assert.ok(cs.every((c, i) => i === 0 || c.start >= cs[i - 1].end), `doc ${d}: chunks in order`);
    assert.equal(chunkIndexOfId(sp.chunks, cs[1].ids.legolink0), 1);
  }
  const refs: ChunkRef[] = splits.flatMap((sp, d) => first2(sp).map((c) => ({ key: `d${d}#${c.index}`, label: `doc ${d + 1} · ${c.index + 1}`, tokens: c.tokens })));

  const compiled = await run<{ ids: string[]; compiled: number }>({ type: 'compile', chunks: refs, variant: 'plain' });
  assert.equal(compiled.result.compiled, 4);
  assert.deepEqual(compiled.events.map((e) => e.kind === 'compile' && e.done), [1, 2, 3, 4]);
  assert.deepEqual(compiled.result.ids, [...first2(splits[0]), ...first2(splits[1])].map((c) => c.ids.plain));
  const again = await run<{ compiled: number }>({ type: 'compile', chunks: refs, variant: 'plain' });
  assert.equal(again.result.compiled, 0, 'compiled chunks are reused');
  assert.ok(again.events.every((e) => e.kind === 'compile' && e.status === 'cached'));

  const lib = await run<{ entries: { tokens: number; tier: string; bytes: number }[] }>({ type: 'library' });
  assert.equal(lib.result.entries.length, 4);
  // Compiled chunks stay on the GPU too (the GPU tier), so the first link reads no rows from the host.
  assert.ok(lib.result.entries.every((e) => e.bytes > 0 && e.tier === 'GPU + RAM + OPFS'), JSON.stringify(lib.result.entries.map((e) => e.tier)));

  const order = [refs[3], refs[0], refs[2]];
  const ask = (algorithm: string, maxTokens = 8) =>
    run<AskResult>({ type: 'ask', req: { chunks: order, question: ' One day, Lily', algorithm, maxTokens, temperature: 0, scores: { layer: 2, head: 1 } } });
  const naive = await ask('naive');
  const r = naive.result;
  assert.deepEqual(naive.events.filter((e) => e.kind !== 'text').map((e) => e.kind), ['compile', 'compile', 'compile', 'first-token']);
  assert.ok(r.tokens > 0 && r.text.length > 0 && r.first.ttft.totalMs > 0);
  assert.equal(naive.events.filter((e) => e.kind === 'text').map((e) => (e as { text: string }).text).join(''), r.text);
  const m = r.map!;
  assert.equal(m.layer, 2);
  assert.equal(m.head, 1);
  assert.equal(m.segments.length, 3);
  assert.deepEqual(m.segments.map((x) => x.label), order.map((x) => x.label));
  assert.equal(m.columns.length, m.promptTokens + m.rows.filter((x) => x.kind === 'answer').length);
  const qRows = m.rows.filter((x) => x.kind === 'question');
  assert.equal(qRows.length, m.promptTokens - m.questionStart);
  assert.equal(m.rows.filter((x) => x.kind === 'answer').length, r.tokens - 1);
  for (const row of m.rows) assert.ok(row.scores.some((v) => Number.isFinite(v)));
  assert.equal(qRows[0].scores.length, m.promptTokens);

  const full = await ask('full');
  const lego = await ask('legolink:64');
  assert.equal(lego.result.text, full.result.text, 'legolink with k >= chunk length answers like full');
  assert.equal(full.result.first.recomputed, full.result.first.promptTokens);
  assert.ok(naive.result.first.recomputed < lego.result.first.recomputed);

  const l0 = await ask('legolink0');
  assert.equal(l0.result.first.compiledOnDemand, 3, 'legolink0 compiles its own variant on demand');
  assert.equal((await ask('legolink0')).result.first.compiledOnDemand, 0);

  // prompt: nothing compiled or read, one BOS for the whole prompt, every row computed.
  const prompt = await ask('prompt');
  assert.deepEqual(prompt.events.filter((e) => e.kind !== 'text').map((e) => e.kind), ['first-token']);
  const pf = prompt.result.first;
  assert.equal(pf.compiledOnDemand, 0);
  assert.equal(pf.promptTokens, full.result.first.promptTokens - (order.length - 1));
  assert.equal(pf.recomputed, pf.promptTokens);
  assert.equal(pf.ttft.lookupMs + pf.ttft.loadMs, 0, 'its TTFT is all compute');
  assert.ok(prompt.result.tokens > 0);
  assert.deepEqual(prompt.result.map!.segments.map((x) => x.label), order.map((x) => x.label));

  const ac = new AbortController();
  const cancelled = handle({ type: 'ask', req: { chunks: order, question: ' Tom', algorithm: 'naive', maxTokens: 200, temperature: 0 } }, ac.signal, (e) => {
    if (e.kind === 'text') ac.abort();
  });
  const cr = (await cancelled) as AskResult;
  assert.equal(cr.cancelled, true);
  assert.ok(cr.tokens < 200);

  await assert.rejects(run({ type: 'split', docId: 'empty', text: ' \n\t ', mode: { kind: 'fixed', tokens: 32 } }), { name: 'EmptyDocumentError' });

  const sweep = await run<SweepPoint[]>({ type: 'sweep', req: { text: docs[0], chunkTokens: 32, lengths: [64, 128], algorithms: ['full', 'legolink:16'] } });
  assert.equal(sweep.result.length, 4);
  assert.equal(sweep.events.length, 4);
  const at = (a: string, n: number) => sweep.result.find((p) => p.algorithm === a && p.chunks === n)!;
  assert.ok(at('full', 4).contextTokens > at('full', 2).contextTokens);
  assert.ok(at('legolink:16', 4).recomputed < at('full', 4).recomputed);

  assert.equal(await (await studio.cc()).expireCache(c0.ids.plain), true);
  await studio.clearLibrary();
  assert.equal((await store.list()).length, 0);
});
