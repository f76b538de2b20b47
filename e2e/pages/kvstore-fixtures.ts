/** Deterministic caches for the KVStore e2e pages (page and worker). */
import type { LayerRows } from '../../src/types/kv';

/** `[tokens, kvDim]` layers: value i of layer l, K or V, is a function of (seed, l, i), bounded by 13. */
export function layers(nLayers: number, tokens: number, kvDim: number, seed: number): LayerRows[] {
  const arr = (l: number, kv: number) =>
    Float32Array.from({ length: tokens * kvDim }, (_, i) => Math.sin(seed * 1.7 + l * 0.31 + kv * 0.77 + i * 0.013) * (1 + (i % 13)));
  return Array.from({ length: nLayers }, (_, l) => ({ k: arr(l, 0), v: arr(l, 1) }));
}

/** Largest absolute difference between two sets of layers (Infinity when shapes differ). */
export function maxDiff(a: LayerRows[], b: LayerRows[]): number {
  if (a.length !== b.length) return Infinity;
  let m = 0;
  a.forEach((x, l) => {
    for (const key of ['k', 'v'] as const) {
      if (x[key].length !== b[l][key].length) return void (m = Infinity);
      for (let i = 0; i < x[key].length; i++) m = Math.max(m, Math.abs(x[key][i] - b[l][key][i]));
    }
  });
  return m;
}

export interface Dims {
  layers: number;
  tokens: number;
  kvDim: number;
}

/** A request to the test worker, and its answer. */
export type WorkerRequest =
  | { op: 'put'; id: string; seed: number; dims: Dims; dtype: 'f32' | 'f16' }
  | { op: 'get'; id: string; seed: number; dims: Dims; fresh: boolean };
export interface WorkerReply {
  ms: number;
  status?: string;
  tier?: string | null;
  diff?: number;
  timing?: { ms: number; readMs: number; decodeMs: number; bytes: number };
  error?: string;
}
