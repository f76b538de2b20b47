/**
 * The GPU kit's f16 stage: `shader-f16`'s fast path (HALF, kernels/matmul_half.wgsl) on the lent GPU. The users
 * it serves have `shader-f16` in Chrome on D3D12 and Metal; Dawn offers it on NVIDIA's Vulkan driver only with the
 * toggle vulkan_enable_f16_on_nvidia (blocklisted there for driver bugs, crbug.com/42251215), so no run of the kit
 * had it. The stage asks for the toggle on a device of its own; where the adapter then offers `shader-f16` it checks
 * the kernels first (half-kernels.test, in a process of its own, so a driver fault cannot take the kit down), and
 * only where they pass times the tiled prefill products with f16 math and with f32 math side by side.
 */
import { join } from 'node:path';
import { createNodeGpu } from '../node/gpu';
import { loadKernelSources } from '../node/gpu';
import { Engine } from '../engine';
import type { MatmulVariant } from '../engine';
import { timeMatmuls, type MatmulTiming } from './matmul';
import { runTests, type TestRun } from './run-tests';

/** The tests of the f16 path, which the kit runs here rather than in its parity stage (paths under tests/). */
export const F16_TESTS = ['engine/half-kernels.test.mjs'];
/** What Dawn needs to offer `shader-f16` on NVIDIA's Vulkan driver. */
export const F16_TOGGLE = 'vulkan_enable_f16_on_nvidia';

export interface F16Report {
  toggle: string;
  /** The adapter with the toggle, and whether it offers `shader-f16` (the tests run only where it does). */
  adapter: string;
  shader_f16: boolean;
  parity?: TestRun;
  matmul?: (MatmulTiming & { adapter: string })[];
  /** Why nothing was timed. */
  skipped?: string;
  error?: string;
}

/** [T, K, N] products to time with f16 math and without. */
export async function f16Stage(o: { testsDir: string; shapes: [number, number, number][]; timeoutS: number; log: (l: string) => void }): Promise<F16Report> {
  const gpu = await createNodeGpu({ enable: [F16_TOGGLE] });
  const adapter = gpu.adapter.description;
  const r: F16Report = { toggle: F16_TOGGLE, adapter, shader_f16: gpu.adapter.hasF16 };
  if (!gpu.adapter.hasF16) {
    gpu.release();
    o.log(`f16: ${adapter} offers no shader-f16, even with the toggle`);
    return { ...r, skipped: 'the adapter offers no shader-f16, even with the toggle' };
  }
  // The kernels' tests first, on the lent GPU's own Vulkan driver (or whatever backend this run was pointed at).
  const env = { LEGOKV_NODE_BACKEND: process.env.LEGOKV_NODE_BACKEND ?? 'vulkan', LEGOKV_DAWN_ENABLE: F16_TOGGLE };
  r.parity = runTests(o.testsDir, F16_TESTS.map((f) => join(o.testsDir, f)), { env, timeoutS: Math.max(20, o.timeoutS / 2) });
  o.log(`f16: half-kernels.test ${JSON.stringify({ pass: r.parity.pass, fail: r.parity.fail, skipped: r.parity.skipped })}`);
  if (r.parity.status !== 0 || r.parity.fail > 0 || !(r.parity.pass > 0)) {
    gpu.release();
    return { ...r, skipped: 'the f16 kernels did not pass their tests on this adapter' };
  }
  const e = Engine.create(gpu, loadKernelSources());
  try {
    const rows: (MatmulTiming & { adapter: string })[] = [];
    const t0 = performance.now();
    for (const [T, K, N] of o.shapes) {
      if ((performance.now() - t0) / 1000 > o.timeoutS / 2) break;
      const tiled = e.ops.matmulVariants(T).filter((v): v is MatmulVariant => v === 'tiled' || v === 'tiled128');
      for (const m of await timeMatmuls(e, T, K, N, 'f16', 60, tiled)) {
        rows.push({ adapter, ...m });
        o.log(`f16: matmul ${m.variant}${m.half ? ' (f16 math)' : ' (f32 math)'} [${T}x${K}]·[${K}x${N}]: ${m.ms.toFixed(3)} ms, ${m.gflops.toFixed(0)} GFLOP/s`);
      }
    }
    return { ...r, matmul: rows };
  } catch (err) {
    return { ...r, error: String((err as Error)?.stack ?? err) };
  } finally {
    e.destroy();
    gpu.release();
  }
}
