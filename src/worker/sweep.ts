/**
 * TTFT against context length, run from the studio: the text is repeated to
 * reach each length, cut by KVSplit into fixed-size chunks, compiled (cached
 * in the KVStore like any chunk), then linked with each algorithm and a short
 * question (the studio's ask, through ContextCache); one token is generated,
 * and the TTFT breakdown is kept.
 */
import type { ContextCache } from '../api/context-cache';
import { splitDocument } from '../kvsplit';
import { studioAsk } from './studio-ask';
import type { ChunkRef, SweepPoint, SweepRequest } from './studio-protocol';

const QUESTION = '\nWhat happened next?';

export async function runSweep(
  lego: ContextCache, req: SweepRequest, signal: AbortSignal | undefined, emit: (ev: { point: SweepPoint; done: number; total: number }) => void,
): Promise<SweepPoint[]> {
  const tok = lego.model.tokenizer;
  const size = Math.floor(req.chunkTokens);
  if (!(size >= 1)) throw new Error('Chunk size must be at least 1 token');
  const lengths = [...new Set(req.lengths.map((n) => Math.floor(n)).filter((n) => n >= size))].sort((a, b) => a - b);
  if (!lengths.length || !req.algorithms.length) throw new Error('Choose at least one context length (≥ the chunk size) and one algorithm');
  const seed = req.text.trim();
  if (!seed) throw new Error('The sweep needs some text: add a document first');
  // Enough text for the longest context: the seed repeated, split into fixed runs once.
  const perCopy = Math.max(1, tok.encode(seed, { addBos: false }).length);
  const copies = Math.ceil((lengths.at(-1)! + size) / perCopy) + 1;
  const text = Array(copies).fill(seed).join('\n\n');
  const runs = splitDocument({ id: 'sweep', text }, tok, { kind: 'fixed', tokens: size }).filter((c) => c.tokens.length === size);
  const points: SweepPoint[] = [];
  const total = lengths.length * req.algorithms.length;
  // One untimed run first, so shader compilation and first-use costs stay out of the curve.
  const warm: ChunkRef[] = runs.slice(0, 2).map((c) => ({ key: `sweep:${c.index}`, label: `sweep ${c.index + 1}`, tokens: c.tokens }));
  for (const algorithm of req.algorithms) {
    await studioAsk(lego, { chunks: warm, question: QUESTION, algorithm, maxTokens: 1, temperature: 0, warmup: false }, () => {}, { signal });
  }
  for (const L of lengths) {
    const n = Math.max(1, Math.round(L / size));
    const chunks: ChunkRef[] = runs.slice(0, n).map((c) => ({ key: `sweep:${c.index}`, label: `sweep ${c.index + 1}`, tokens: c.tokens }));
    for (const algorithm of req.algorithms) {
      signal?.throwIfAborted();
      const r = await studioAsk(lego, { chunks, question: QUESTION, algorithm, maxTokens: 1, temperature: 0, warmup: false }, () => {}, { signal });
      const point: SweepPoint = { algorithm: r.algorithm, contextTokens: r.first.promptTokens, chunks: n, ttft: r.first.ttft, recomputed: r.first.recomputed };
      points.push(point);
      emit({ point, done: points.length, total });
    }
  }
  return points;
}
