/** The best standalone matmul throughput among our kernel variants, for the engine benchmark's reference line. */
import type { Engine } from '../engine/engine';
import type { StoreDType } from '../engine/ops';

export async function bestMatmul(e: Engine, T: number, K: number, N: number, wDtype: StoreDType): Promise<{ gflops: number; variant: string }> {
  const dev = e.gpu.device;
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const x = dev.createBuffer({ size: T * K * 4, usage });
  const w = dev.createBuffer({ size: N * K * (wDtype === 'f16' ? 2 : 4), usage });
  const y = dev.createBuffer({ size: T * N * 4, usage });
  let best = { gflops: 0, variant: '' };
  for (const variant of e.ops.matmulVariants()) {
    const run = async (reps: number) => {
      for (let i = 0; i < reps; i++) e.ops.matmul({ x, w, wDtype, y, T, N, K, variant });
      await e.ops.d.read(y, 0, 16);
    };
    await run(1);
    const reps = 3;
    const t0 = performance.now();
    await run(reps);
    const gflops = (2 * T * N * K * reps) / (performance.now() - t0) / 1e6;
    if (gflops > best.gflops) best = { gflops, variant };
  }
  for (const b of [x, w, y]) b.destroy();
  return best;
}
