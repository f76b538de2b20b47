/**
 * KVLink: turn cached chunks and raw text into one prompt's KV cache with a
 * chosen algorithm, ready for decoding, and time every stage of the TTFT.
 *
 * Cached rows are written into the working cache at their new positions
 * (keys rotated on the way in); then the algorithm's rows are recomputed
 * through every layer with the engine's selective-row pass, each attending
 * by position id to every row; the last row's logits give the first token.
 */
import type { Engine } from '../engine/engine';
import type { KVCache } from '../engine/model/kv-cache';
import type { ScoresRequest, ScoresResult } from '../engine/model/forward';
import { staticRecomputeRows, type LinkAlgorithm } from './algorithms';
import { layoutParts, type LinkLayout, type LinkPart } from './layout';
import { cacheBlendPass } from './cacheblend';

export interface TtftBreakdown {
  /** Finding the caches (store index). */
  lookupMs: number;
  /** Reading them from slower tiers and placing them on the GPU. */
  loadMs: number;
  /** Running the recomputed rows through every layer. */
  recomputeMs: number;
  /** Final norm, LM head and reading the logits back. */
  firstTokenMs: number;
  totalMs: number;
}

export interface LinkResult {
  cache: KVCache;
  /** Raw scores of the question rows against every prompt row, when asked for. */
  scores: ScoresResult[];
  /** Logits of the last row: the first generated token comes from them. */
  logits: Float32Array;
  layout: LinkLayout;
  recomputed: number;
  recomputedFraction: number;
  ttft: TtftBreakdown;
}

export interface LinkOptions {
  bosId: number | null;
  /** Time the caller spent finding and reading the caches (KVStore), added to the breakdown. */
  lookupMs?: number;
  hostLoadMs?: number;
  /** Extra rows to reserve for decoding. */
  reserve?: number;
  /**
   * Attention scores to capture during the recompute pass, for the rows of
   * the prompt after its last cached chunk (the question): one layer, some heads.
   */
  scores?: { layer: number; heads: number[] };
}

export function link(engine: Engine, parts: LinkPart[], algo: LinkAlgorithm, opts: LinkOptions): Promise<LinkResult> {
  return engine.exclusive(() => linkNow(engine, parts, algo, opts));
}

async function linkNow(engine: Engine, parts: LinkPart[], algo: LinkAlgorithm, opts: LinkOptions): Promise<LinkResult> {
  const layout = layoutParts(parts, opts.bosId);
  const N = layout.tokens.length;
  const cache = engine.newCache(N + (opts.reserve ?? 64));
  try {
    const t0 = performance.now();
    cache.setPositions(0, layout.positions);
    if (algo.kind !== 'full') {
      for (const s of layout.segments) {
        engine.writeRows(cache, s.start, layout.positions.slice(s.start, s.start + s.length), s.chunk.layers);
      }
    }
    await engine.sync();
    const t1 = performance.now();
    let rows: number[];
    let logits: Float32Array;
    let t2: number;
    let scores: ScoresResult[] = [];
    const lastCached = layout.segments.length ? layout.segments[layout.segments.length - 1] : null;
    const questionStart = lastCached ? lastCached.start + lastCached.length : 0;
    const scoresFor = (passRows: number[]): ScoresRequest | undefined =>
      opts.scores && { ...opts.scores, rows: passRows.flatMap((r, i) => (r >= questionStart ? [i] : [])) };
    if (algo.kind === 'cacheblend') {
      const r = await cacheBlendPass(engine, cache, layout, algo, scoresFor);
      rows = r.rows;
      t2 = r.recomputedAt;
      logits = await r.logits();
      scores = await r.scores();
    } else {
      rows = staticRecomputeRows(layout, algo);
      const pass = engine.pass(cache);
      pass.begin(rows.map((i) => layout.tokens[i]), rows);
      const req = scoresFor(rows);
      for (let l = 0; l < engine.config.nLayers; l++) pass.layer(l, { scores: req });
      await engine.sync();
      t2 = performance.now();
      logits = await pass.logits([rows.length - 1]);
      scores = await pass.scores();
    }
    const t3 = performance.now();
    const lookupMs = opts.lookupMs ?? 0;
    const loadMs = (opts.hostLoadMs ?? 0) + (t1 - t0);
    return {
      cache, logits, scores, layout, recomputed: rows.length, recomputedFraction: rows.length / N,
      ttft: { lookupMs, loadMs, recomputeMs: t2 - t1, firstTokenMs: t3 - t2, totalMs: lookupMs + loadMs + (t3 - t1) },
    };
  } catch (e) {
    cache.destroy();
    throw e;
  }
}
