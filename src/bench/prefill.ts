/**
 * Prefill and decode throughput of the loaded model, the measurement behind
 * `npm run bench:engine` and the GPU kit (scripts/gpu/): tokens/s and
 * achieved GFLOP/s (attention included) at several prompt lengths, decode
 * tokens/s after the first, and the weight bytes one decode step must read.
 */
import type { Engine, ModelConfig } from '../engine';

/** FLOPs of a causal prefill of n tokens: 2 per weight per token in matmuls, plus QKᵀ and PV over n(n+1)/2 pairs. */
export function prefillFlops(c: ModelConfig, n: number): { matmul: number; attention: number } {
  const qDim = c.nHeads * c.headDim, kvDim = c.nKvHeads * c.headDim;
  const perLayer = c.hidden * (qDim + 2 * kvDim) + qDim * c.hidden + 3 * c.hidden * c.intermediate;
  const matmul = 2 * n * (perLayer * c.nLayers + c.hidden * c.vocabSize / n);
  let pairs = 0;
  for (const kind of c.layerKinds) {
    const w = kind === 'local' ? Math.min(c.slidingWindow, n) : n;
    pairs += n * w - (w * (w - 1)) / 2;
  }
  return { matmul, attention: 4 * pairs * c.nHeads * c.headDim };
}

export interface PrefillRow {
  tokens: number;
  prefill_ms: number;
  tokens_per_s: number;
  gflops: number;
  attention_share: number;
  /** Decode steps/s right after this prefill (only after the first length). */
  /** Greedy decode step by step (the token picked on the GPU, 4 bytes read back a step, then the next recorded). */
  decode_tokens_per_s?: number;
  /**
   * Greedy decode with steps recorded ahead (Engine.greedySteps: the GPU feeds each token to the next step, the
   * host reads tokens behind it): what the app's decode loop runs where the engine's decodeAhead is above 1.
   */
  decode_ahead_tokens_per_s?: number;
  /** decodeAhead of the engine measured: 1 where the app decodes step by step. */
  decode_ahead?: number;
  /**
   * Host milliseconds a step takes to record and submit, in the run recorded ahead: the floor of a step's wall
   * time once the GPU's work hides behind it, or the reverse.
   */
  decode_record_ms?: number;
  /** Of decode_record_ms, the milliseconds in finish and submit (Dispatcher.submitMs). */
  decode_submit_ms?: number;
  /**
   * The same run recorded ahead with every step recorded anew (Engine.replaySteps off), right after: tok/s and the
   * host's milliseconds a step, beside the replayed figures above.
   */
  decode_unreplayed_tokens_per_s?: number;
  decode_unreplayed_record_ms?: number;
  /** Decode reading back each step's logits (sampling with a temperature). */
  decode_logits_tokens_per_s?: number;
  decode_context?: number;
  /** GPU busy time of one decode step (timestamp queries), beside its wall time: the rest is the host's. */
  decode_gpu_ms?: number;
  decode_wall_ms?: number;
  /** Decode's achieved GFLOP/s (decodeFlops over its wall time). */
  decode_gflops?: number;
}

/**
 * Decode tok/s as the app's decode loop runs it on the adapter measured: steps recorded ahead where the engine's
 * decodeAhead is above 1, else step by step (also for rows measured before steps were recorded ahead).
 */
export function appDecodeTokS(r: Pick<PrefillRow, 'decode_tokens_per_s' | 'decode_ahead_tokens_per_s' | 'decode_ahead'>): number | undefined {
  return (r.decode_ahead ?? 1) > 1 && r.decode_ahead_tokens_per_s ? r.decode_ahead_tokens_per_s : r.decode_tokens_per_s;
}

/** A row with its decode (the app's way) as a share of the roofline its weight bytes allow, where both are known. */
export function withRoofline<R extends PrefillRow>(row: R, rooflineTokS: number | undefined): R & { decode_roofline_tokens_per_s?: number; decode_share_of_roofline?: number } {
  const d = appDecodeTokS(row);
  return d && rooflineTokS ? { ...row, decode_roofline_tokens_per_s: rooflineTokS, decode_share_of_roofline: d / rooflineTokS } : row;
}

export interface PrefillBenchOptions {
  lengths: number[];
  /** Seconds one prefill may be expected to take before a longer length is skipped. */
  budgetS: number;
  /** Measure every length whatever the estimate. */
  forced?: boolean;
  decodeSteps?: number;
  log?: (line: string) => void;
}

/** FLOPs of one decode step at `context` cached rows: every weight once (LM head included), attention over the cache. */
export function decodeFlops(c: ModelConfig, context: number): number {
  const f = prefillFlops(c, 1);
  let keys = 0;
  for (const kind of c.layerKinds) keys += kind === 'local' ? Math.min(c.slidingWindow, context) : context;
  return f.matmul + 4 * keys * c.nHeads * c.headDim;
}

/** Token ids that touch the whole vocabulary, deterministic. */
export const benchTokens = (n: number, vocab: number, salt = 0) => Array.from({ length: n }, (_, i) => (i * 7919 + 13 + salt * 104729) % vocab);

export async function benchPrefillDecode(e: Engine, opts: PrefillBenchOptions): Promise<PrefillRow[]> {
  const c = e.config;
  const log = opts.log ?? (() => {});
  const rows: PrefillRow[] = [];
  let gflopsSoFar = 0;
  for (const n of opts.lengths) {
    const f = prefillFlops(c, n);
    const estimateS = gflopsSoFar ? (f.matmul + f.attention) / gflopsSoFar / 1e9 : 0;
    if (!opts.forced && estimateS > opts.budgetS) {
      log(`prefill ${n}: skipped, about ${estimateS.toFixed(0)} s on this adapter (over the budget of ${opts.budgetS} s)`);
      continue;
    }
    const tokens = benchTokens(n, c.vocabSize);
    const steps = rows.length === 0 ? opts.decodeSteps ?? 16 : 0;
    const cache = e.newCache(n + 4 * steps + 12);
    try {
      // Warm up at this very length: on a GPU the kernel variants (and their pipelines) depend on the row count.
      if (!rows.length || (e.gpu.profile === 'gpu' && n <= 4096)) {
        await e.prefill(cache, tokens, undefined, { logits: 'last' });
        cache.truncate(0);
      }
      const t0 = performance.now();
      await e.prefill(cache, tokens, undefined, { logits: 'last' });
      const ms = performance.now() - t0;
      const gflops = (f.matmul + f.attention) / ms / 1e6;
      gflopsSoFar = gflops;
      const row: PrefillRow = { tokens: n, prefill_ms: ms, tokens_per_s: (n / ms) * 1000, gflops, attention_share: f.attention / (f.matmul + f.attention) };
      if (steps) {
        // Decode as the app decodes (greedy: the token picked on the GPU), then once more reading back every
        // step's logits, as sampling with a temperature must.
        const greedy = { greedy: true };
        await e.step(cache, tokens[0], undefined, greedy); // warm the decode pipelines
        await e.decode(cache, tokens[0]);
        const t1 = performance.now();
        for (let i = 1; i <= steps; i++) await e.step(cache, tokens[i], undefined, greedy);
        row.decode_tokens_per_s = (steps / (performance.now() - t1)) * 1000;
        const t2 = performance.now();
        for (let i = 1; i <= steps; i++) await e.decode(cache, tokens[i]);
        row.decode_logits_tokens_per_s = (steps / (performance.now() - t2)) * 1000;
        await e.greedySteps(cache, tokens[0], { count: 2, stopIds: [] }); // its bind groups
        const stats = { recordMs: 0 };
        const s3 = e.ops.d.submitMs;
        const t3 = performance.now();
        await e.greedySteps(cache, tokens[1], { count: steps, stopIds: [], stats });
        row.decode_ahead_tokens_per_s = (steps / (performance.now() - t3)) * 1000;
        row.decode_ahead = e.decodeAhead;
        row.decode_record_ms = stats.recordMs / steps;
        row.decode_submit_ms = (e.ops.d.submitMs - s3) / steps;
        const live = { recordMs: 0 };
        e.replaySteps = false;
        try {
          const t4 = performance.now();
          await e.greedySteps(cache, tokens[2], { count: steps, stopIds: [], stats: live });
          row.decode_unreplayed_tokens_per_s = (steps / (performance.now() - t4)) * 1000;
          row.decode_unreplayed_record_ms = live.recordMs / steps;
        } finally {
          e.replaySteps = true;
        }
        row.decode_context = n;
        row.decode_wall_ms = 1000 / row.decode_tokens_per_s;
        row.decode_gflops = decodeFlops(c, n + steps / 2) / row.decode_wall_ms / 1e6;
        if (e.ops.d.startGpuTimer()) {
          const probe = Math.min(8, steps);
          for (let i = 0; i < probe; i++) await e.step(cache, tokens[i], undefined, greedy);
          const gpuMs = await e.ops.d.stopGpuTimer();
          if (gpuMs !== null) row.decode_gpu_ms = gpuMs / probe;
        }
      }
      rows.push(row);
      log(
        `prefill ${n}: ${ms.toFixed(0)} ms, ${row.tokens_per_s.toFixed(0)} tok/s, ${gflops.toFixed(1)} GFLOP/s ` +
          `(${(row.attention_share * 100).toFixed(0)}% attention)` + (row.decode_tokens_per_s ? `; decode ${row.decode_tokens_per_s.toFixed(1)} tok/s greedy, ${row.decode_ahead_tokens_per_s!.toFixed(1)} with steps recorded ahead (${row.decode_record_ms!.toFixed(2)} ms a step to record, ${row.decode_submit_ms!.toFixed(2)} of them in finish and submit; ${row.decode_unreplayed_tokens_per_s!.toFixed(1)} tok/s and ${row.decode_unreplayed_record_ms!.toFixed(2)} ms with no step replayed), ${row.decode_logits_tokens_per_s!.toFixed(1)} reading logits` : '') +
          (row.decode_gpu_ms !== undefined ? ` (GPU busy ${row.decode_gpu_ms.toFixed(2)} of ${row.decode_wall_ms!.toFixed(2)} ms a step)` : ''),
      );
    } finally {
      cache.destroy();
    }
  }
  return rows;
}
