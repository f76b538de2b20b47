/**
 * Measuring the sink map of a prompt, for the guided demo: the composer's
 * chunks are linked once with the asked algorithm (Naive by default), the
 * question rows' attention scores of every layer and head are read back from
 * KVLink's recompute pass, and analysis/sink-grid turns them into the share
 * on each chunk start per layer and head. Nothing is decoded.
 */
import type { ContextCache } from '../api/context-cache';
import { buildParts } from '../api/messages';
import { link } from '../kvlink/link';
import { compileVariantOf, formatAlgorithm, parseAlgorithm } from '../kvlink/algorithms';
import { sinkGrid } from '../analysis/sink-grid';
import { askMessages, askVariants, compileChunks, loadChunk } from './linked-answer';
import type { SinkMapRequest, SinkMapResult, StudioEvent } from './studio-protocol';

export async function measureSinks(
  lego: ContextCache, req: SinkMapRequest, signal: AbortSignal | undefined, emit: (ev: StudioEvent) => void,
): Promise<SinkMapResult> {
  const { engine } = lego;
  const { tokenizer: tok, config } = lego.model;
  const algo = parseAlgorithm(req.algorithm);
  const algorithm = formatAlgorithm(algo);
  if (!req.chunks.length) throw new Error('Pick at least one chunk to link');
  if (!req.question.trim()) throw new Error('Type a question first');
  const variants = await askVariants(lego, req.chunks, req.question, compileVariantOf(algorithm));
  const compiled = await compileChunks(lego, req.chunks, variants, signal, emit);
  signal?.throwIfAborted();
  const chunkOf = new Map(compiled.ids.map((id, i) => [id, i]));
  const parts = await buildParts(askMessages(compiled.ids, req.question), tok, config.bosId, async (id) => {
    const i = chunkOf.get(id)!;
    return (await loadChunk(lego, id, req.chunks[i].tokens, variants[i])).chunk;
  });
  const { nLayers: L, nHeads: H } = config;
  const all = (n: number) => Array.from({ length: n }, (_, i) => i);
  const t0 = performance.now();
  const linked = await link(engine, parts, algo, { bosId: config.bosId, reserve: 1, scores: { layer: all(L), heads: all(H) } });
  try {
    const grid = sinkGrid(linked.scores, linked.layout.segments, L, H);
    return { algorithm, ...grid, promptTokens: linked.layout.tokens.length, ms: performance.now() - t0 };
  } finally {
    linked.cache.destroy();
  }
}
