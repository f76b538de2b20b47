/** Standalone matmul throughput of each of our kernel variants, for bench:engine's reference line and the GPU kit. */
import type { Engine } from '../engine/engine';
import type { MatmulVariant, StoreDType } from '../engine/ops';

export interface MatmulTiming {
  variant: MatmulVariant;
  T: number; K: number; N: number;
  ms: number;
  gflops: number;
  /** Weight bytes read per product over its time (what bounds matrix-vector products). */
  weightGBps: number;
}

/** Times every variant that can compute [T, K]·[K, N] on the engine's device (repetitions fill about `targetMs`). */
export async function timeMatmuls(e: Engine, T: number, K: number, N: number, wDtype: StoreDType, targetMs = 60): Promise<MatmulTiming[]> {
  const dev = e.gpu.device;
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const wBytes = N * K * (wDtype === 'f16' ? 2 : 4);
  const x = dev.createBuffer({ size: T * K * 4, usage });
  const w = dev.createBuffer({ size: wBytes, usage });
  const y = dev.createBuffer({ size: T * N * 4, usage });
  const out: MatmulTiming[] = [];
  try {
    for (const variant of e.ops.matmulVariants(T)) {
      const run = async (reps: number) => {
        const t0 = performance.now();
        for (let i = 0; i < reps; i++) e.ops.matmul({ x, w, wDtype, y, T, N, K, variant });
        await e.ops.d.read(y, 0, 16);
        return performance.now() - t0;
      };
      await run(1);
      const once = await run(1);
      const reps = Math.max(3, Math.min(500, Math.ceil(targetMs / Math.max(once, 0.01))));
      const ms = (await run(reps)) / reps;
      out.push({ variant, T, K, N, ms, gflops: (2 * T * N * K) / ms / 1e6, weightGBps: wBytes / ms / 1e6 });
    }
  } finally {
    for (const b of [x, w, y]) b.destroy();
  }
  return out;
}

export async function bestMatmul(e: Engine, T: number, K: number, N: number, wDtype: StoreDType): Promise<{ gflops: number; variant: string }> {
  const all = await timeMatmuls(e, T, K, N, wDtype);
  return all.reduce((a, b) => (b.gflops > a.gflops ? b : a));
}
