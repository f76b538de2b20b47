/**
 * KVLink: turn cached chunks and raw text into one prompt's KV cache with a
 * chosen algorithm, ready for decoding, and time every stage of the TTFT.
 *
 * Cached rows are written into the working cache at their new positions
 * (keys rotated on the way in), layer by layer: layer l + 1 of every chunk is
 * staged while the GPU recomputes layer l (CacheBlend §5's pipelining). The
 * algorithm's rows are recomputed through every layer with the engine's
 * selective-row pass, each attending by position id to every row; the last
 * row's logits give the first token.
 *
 * `prompt` lays the parts out as an ordinary prompt instead (layout.ts
 * `promptLayout`) and computes every row: nothing is loaded or staged, so its
 * TTFT is recompute and first-token time alone.
 */
import type { Engine, KVCache, ScoresRequest, ScoresResult } from '../engine';
import { staticRecomputeRows, type LinkAlgorithm } from './algorithms';
import type { LinkPart } from '../types/kv';
import { layoutParts, promptLayout, type LinkLayout } from './layout';
import { cacheBlendPass } from './cacheblend';
import { LoadingController } from './controller';

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
  /** GPU busy time of the load and recompute passes (timestamp queries), null where the adapter has none. */
  gpuMs: number | null;
  /** How much loading and GPU work ran at the same time (staging + GPU − wall), when measurable. */
  overlapMs: number | null;
  /** Whether layer l + 1 was loaded while layer l recomputed. */
  pipelined: boolean;
  /**
   * Host ms recording the recompute's launches, layer by layer, and submitting them (part of recomputeMs). Near
   * recomputeMs and above gpuMs, the host's recording bounds the link and the GPU waits for it.
   */
  recordMs: number;
  /**
   * Host ms before the first layer: laying the parts out and making the working cache (part of recomputeMs;
   * KVSpare's spare makes the cache cheap from the second link on).
   */
  cacheMs: number;
  /** Host ms waiting for room to upload host rows (part of recomputeMs: the GPU's work on earlier layers). */
  waitMs: number;
  /** Host ms of the link in the WebGPU implementation's finish and submit (Dispatcher.submitMs), and its submissions. */
  submitMs: number;
  submits: number;
}

export interface LinkResult {
  cache: KVCache;
  /** Raw scores of the question rows against every prompt row, when asked for. */
  scores: ScoresResult[];
  /** Logits of the last row: the first generated token comes from them. */
  logits: Float32Array;
  layout: LinkLayout;
  /** Rows recomputed through every layer after selection (the question's rows included). */
  recomputed: number;
  recomputedFraction: number;
  /**
   * Recompute work: rows run, summed over layers. recomputed × layers for the
   * static algorithms; more for cacheblend, which runs its first layers over every row.
   */
  recomputedRowLayers: number;
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
   * the prompt after its last cached chunk (the question): one layer or several, some heads.
   */
  scores?: { layer: ScoresRequest['layer']; heads: number[] };
  /** Load layer l + 1 while layer l recomputes (default), or load everything first. */
  pipeline?: boolean;
  /** CacheBlend's loading controller: measures load and recompute speed, picks the ratio for cacheblend:auto. */
  controller?: LoadingController;
}

export function link(engine: Engine, parts: LinkPart[], algo: LinkAlgorithm, opts: LinkOptions): Promise<LinkResult> {
  return engine.exclusive(() => linkNow(engine, parts, algo, opts));
}

async function linkNow(engine: Engine, parts: LinkPart[], algo: LinkAlgorithm, opts: LinkOptions): Promise<LinkResult> {
  // The TTFT counts laying the parts out (a 32K-token layout took 1.4 ms on this project's host) and making the
  // working cache (KVSpare makes it cheap from the second link on).
  const t0 = performance.now();
  const d = engine.ops.d;
  const submitted = { ms: d.submitMs, n: d.submits };
  const layout = algo.kind === 'prompt' ? promptLayout(parts, opts.bosId) : layoutParts(parts, opts.bosId);
  const N = layout.tokens.length;
  const L = engine.config.nLayers;
  const cache = engine.newCache(N + (opts.reserve ?? 64));
  const cacheMs = performance.now() - t0;
  try {
    cache.setPositions(0, layout.positions);
    // One writer for every cached chunk; layer l of all of them is staged right before layer l is recomputed.
    // full and prompt recompute every row, so they stage none.
    const segments = algo.kind === 'full' || algo.kind === 'prompt' ? [] : layout.segments;
    const writer = engine.rowWriter(cache, segments.map((s) => ({ start: s.start, positions: layout.positions.slice(s.start, s.start + s.length) })));
    let stagingMs = 0;
    let waitMs = 0;
    const loadLayer = async (l: number) => {
      if (!segments.length) return;
      // Waiting for a staging buffer is waiting for the GPU's work on earlier layers: recompute, not load.
      const w = performance.now();
      await engine.ops.d.uploadRoom();
      const a = performance.now();
      waitMs += a - w;
      // Host rows' uploads go now; rows from the GPU tier are placed by launches that go with the layer's recompute.
      if (writer.layer(l, segments.map((s) => s.chunk.gpu?.[l] ?? s.chunk.layers[l]))) engine.ops.d.flush();
      stagingMs += performance.now() - a;
    };
    const pipelined = opts.pipeline ?? true;
    if (!pipelined) {
      for (let l = 0; l < L; l++) await loadLayer(l);
      await engine.sync();
    }
    const timed = engine.ops.d.startGpuTimer();
    const beforeLayer = pipelined ? loadLayer : async () => {};
    let rows: number[];
    let rowLayers: number;
    let logits: Float32Array;
    let t2: number;
    let scores: ScoresResult[] = [];
    let tFirst = 0;
    let recordMs = 0;
    const lastCached = layout.segments.length ? layout.segments[layout.segments.length - 1] : null;
    const questionStart = lastCached ? lastCached.start + lastCached.length : 0;
    const scoresFor = (passRows: number[]): ScoresRequest | undefined =>
      opts.scores && { ...opts.scores, rows: passRows.flatMap((r, i) => (r >= questionStart ? [i] : [])) };
    if (algo.kind === 'cacheblend') {
      const r = await cacheBlendPass(engine, cache, layout, resolveBlend(algo, layout, opts), scoresFor, beforeLayer);
      rows = r.rows;
      recordMs = r.recordMs;
      rowLayers = r.rowLayers;
      t2 = r.recomputedAt;
      logits = await r.logits();
      tFirst = performance.now();
      scores = await r.scores();
    } else {
      rows = staticRecomputeRows(layout, algo);
      rowLayers = rows.length * L;
      const pass = engine.pass(cache);
      pass.begin(rows.map((i) => layout.tokens[i]), rows);
      const req = scoresFor(rows);
      for (let l = 0; l < L; l++) {
        await beforeLayer(l);
        const a = performance.now();
        pass.layer(l, { scores: req });
        engine.ops.d.flush();
        recordMs += performance.now() - a;
      }
      await engine.sync();
      t2 = performance.now();
      logits = await pass.logits([rows.length - 1]);
      tFirst = performance.now();
      scores = await pass.scores();
    }
    // The first token is ready once its logits are read; scores and GPU timings are read after.
    const t3 = tFirst;
    const gpuMs = timed ? await engine.ops.d.stopGpuTimer() : null;
    const lookupMs = opts.lookupMs ?? 0;
    const phaseMs = t2 - t0;
    const ttft: TtftBreakdown = {
      lookupMs,
      loadMs: (opts.hostLoadMs ?? 0) + stagingMs,
      recomputeMs: phaseMs - stagingMs,
      firstTokenMs: t3 - t2,
      totalMs: lookupMs + (opts.hostLoadMs ?? 0) + (t3 - t0),
      gpuMs,
      overlapMs: gpuMs === null ? null : Math.max(0, stagingMs + gpuMs - phaseMs),
      pipelined,
      recordMs,
      cacheMs,
      waitMs,
      submitMs: d.submitMs - submitted.ms,
      submits: d.submits - submitted.n,
    };
    const result: LinkResult = { cache, logits, scores, layout, recomputed: rows.length, recomputedFraction: rows.length / N, recomputedRowLayers: rowLayers, ttft };
    opts.controller?.observe(result, engine.config.nLayers, engine.model!.kvDim);
    return result;
  } catch (e) {
    cache.destroy();
    throw e;
  }
}

/** The CacheBlend ratio to use: the given one, or the loading controller's pick for `cacheblend:auto`. */
function resolveBlend(a: Extract<LinkAlgorithm, { kind: 'cacheblend' }>, layout: LinkLayout, opts: LinkOptions) {
  if (a.auto === undefined) return a;
  const cachedTokens = layout.segments.reduce((n, s) => n + s.length, 0);
  const r = (opts.controller ?? new LoadingController()).chooseRatio(cachedTokens, layout.tokens.length, a.auto);
  return { ...a, r };
}
