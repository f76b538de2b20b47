/**
 * Decode timed with the fused launches (Ops.fuse: RMSNorm and GLU folded into the GEMVs after them) and without,
 * side by side on one model and cache: the GPU kit's engine stage, so each lent GPU says whether fusing pays
 * there. Each way reports its wall and GPU time a step and its dispatches a step.
 */
import type { Engine } from '../engine';
import { benchTokens } from './prefill';

export interface FuseTiming {
  fused: boolean;
  /** Whether this is the way the engine decodes on this adapter by default. */
  chosen: boolean;
  steps: number;
  decode_tokens_per_s: number;
  decode_wall_ms: number;
  /** GPU busy time a step (timestamp queries), where the adapter has them. */
  decode_gpu_ms?: number;
  dispatches_per_step: number;
}

/**
 * After a `context`-token prefill, one step each way to build its pipelines, then `steps` timed steps each way,
 * the engine's own way first. `otherSteps` bounds the steps of the way the engine does not choose (on CPU
 * adapters the fused way, whose gemv is far slower there).
 */
export async function decodeBothWays(e: Engine, context: number, steps: number, otherSteps = steps): Promise<FuseTiming[]> {
  const chosen = e.ops.fuses(1);
  const saved = e.ops.fuse;
  const ways = [chosen, !chosen];
  const n = (fused: boolean) => Math.max(1, fused === chosen ? steps : Math.min(steps, otherSteps));
  // The prefill, a warm step each way, then each way's timed steps and GPU-timed ones.
  const total = context + 2 + ways.reduce((s, f) => s + n(f) + Math.min(8, n(f)), 0);
  const tokens = benchTokens(total, e.config.vocabSize, 1);
  let at = context;
  const cache = e.newCache(total + 1);
  const d = e.ops.d;
  const out: FuseTiming[] = [];
  try {
    await e.prefill(cache, tokens.slice(0, context), undefined, { logits: 'last' });
    for (const fused of ways) {
      e.ops.fuse = fused;
      await e.decode(cache, tokens[at++]);
    }
    for (const fused of ways) {
      e.ops.fuse = fused;
      const k = n(fused);
      const c0 = d.count;
      const t0 = performance.now();
      for (let i = 0; i < k; i++) await e.decode(cache, tokens[at++]);
      const wall = (performance.now() - t0) / k;
      const dispatches = (d.count - c0) / k;
      let gpu: number | undefined;
      const probe = Math.min(8, k);
      if (d.startGpuTimer()) {
        for (let i = 0; i < probe; i++) await e.decode(cache, tokens[at++]);
        gpu = ((await d.stopGpuTimer()) ?? NaN) / probe;
      }
      out.push({ fused, chosen: fused === chosen, steps: k, decode_tokens_per_s: 1000 / wall, decode_wall_ms: wall, decode_gpu_ms: gpu, dispatches_per_step: dispatches });
    }
    return out;
  } finally {
    e.ops.fuse = saved;
    cache.destroy();
  }
}

/** One line for logs. */
export function formatFuse(rows: FuseTiming[]): string {
  const way = (r: FuseTiming) =>
    `${r.fused ? 'fused' : 'unfused'}${r.chosen ? ' (chosen)' : ''} ${r.decode_tokens_per_s.toFixed(1)} tok/s, ` +
    `${r.decode_wall_ms.toFixed(2)} ms wall${r.decode_gpu_ms !== undefined ? `, ${r.decode_gpu_ms.toFixed(2)} ms GPU` : ''}, ${r.dispatches_per_step} dispatches a step`;
  return `decode ${rows.map(way).join('; ')}`;
}
