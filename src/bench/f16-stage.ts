/**
 * The GPU kit's f16 stage: `shader-f16`'s fast path (HALF, kernels/matmul_half.wgsl) on the lent GPU. The users
 * it serves have `shader-f16` in Chrome on D3D12 and Metal; Dawn offers it on NVIDIA's Vulkan driver only with the
 * toggle vulkan_enable_f16_on_nvidia (blocklisted there for driver bugs, crbug.com/42251215), so no run of the kit
 * had it. The stage asks for the toggle on a device of its own; where the adapter then offers `shader-f16` it checks
 * the kernels first (half-kernels.test, in a process of its own, so a driver fault cannot take the kit down), and
 * only where they pass times the tiled prefill products, and then a whole prefill, with f16 math and with f32 math
 * side by side. Within `timeoutS`: the tests a third of it, the products until a third, the prefill if two thirds
 * are left.
 */
import { join } from 'node:path';
import { createNodeGpu, loadKernelSources, type NodeGpu } from '../node/gpu';
import { Engine } from '../engine';
import type { MatmulVariant } from '../engine';
import { timeMatmuls, type MatmulTiming } from './matmul';
import { closestCall, runTests, type TestRun } from './run-tests';
import { shapeConfig, syntheticWeights } from './shapes';

/** The rows of the products and of the prefill timed. */
const PREFILL = 2048;

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
  /** A real-shape model's prefill with f16 math and with f32 math, each the fastest of its runs, taken in turns. */
  prefill?: { model: string; tokens: number; f32_ms: number; f16_ms: number; runs: number }[];
  /** Why nothing was timed. */
  skipped?: string;
  error?: string;
}

/**
 * On `model`'s real shape (random weights): its tiled prefill products at 2048 rows, and then its whole prefill of
 * 2048 tokens, each with f16 math and with f32 math.
 */
export async function f16Stage(o: { testsDir: string; model: string; timeoutS: number; log: (l: string) => void }): Promise<F16Report> {
  const c = shapeConfig(o.model);
  const qkv = (c.nHeads + 2 * c.nKvHeads) * c.headDim, qDim = c.nHeads * c.headDim;
  const shapes: [number, number, number][] = [[PREFILL, c.hidden, qkv], [PREFILL, qDim, c.hidden], [PREFILL, c.hidden, 2 * c.intermediate], [PREFILL, c.intermediate, c.hidden]];
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
  const t0 = performance.now();
  const elapsedS = () => (performance.now() - t0) / 1000;
  r.parity = runTests(o.testsDir, F16_TESTS.map((f) => join(o.testsDir, f)), { env, timeoutS: Math.max(20, o.timeoutS / 3), bounds: true });
  o.log(`f16: half-kernels.test ${JSON.stringify({ pass: r.parity.pass, fail: r.parity.fail, skipped: r.parity.skipped })}${closestCall(r.parity)}`);
  if (r.parity.status !== 0 || r.parity.fail > 0 || !(r.parity.pass > 0)) {
    gpu.release();
    return { ...r, skipped: 'the f16 kernels did not pass their tests on this adapter' };
  }
  const e = Engine.create(gpu, loadKernelSources());
  try {
    const rows: (MatmulTiming & { adapter: string })[] = [];
    for (const [T, K, N] of shapes) {
      if (elapsedS() > o.timeoutS / 3) break;
      const tiled = e.ops.matmulVariants(T).filter((v): v is MatmulVariant => v === 'tiled' || v === 'tiled128');
      for (const m of await timeMatmuls(e, T, K, N, 'f16', 60, tiled)) {
        rows.push({ adapter, ...m });
        o.log(`f16: matmul ${m.variant}${m.half ? ' (f16 math)' : ' (f32 math)'} [${T}x${K}]·[${K}x${N}]: ${m.ms.toFixed(3)} ms, ${m.gflops.toFixed(0)} GFLOP/s`);
      }
    }
    r.matmul = rows;
    if (elapsedS() < o.timeoutS / 3) r.prefill = [await prefillBothWays(gpu, o.model, o.log)];
    else o.log(`f16: ${o.model} prefill not timed (${elapsedS().toFixed(0)} s of the stage's ${o.timeoutS.toFixed(0)} gone)`);
    return r;
  } catch (err) {
    return { ...r, error: String((err as Error)?.stack ?? err) };
  } finally {
    e.destroy();
    gpu.release();
  }
}

/** The model's prefill with f32 math and with f16 math (Ops.half), once each untimed, then 3 turns each; the fastest of each. */
async function prefillBothWays(gpu: NodeGpu, model: string, log: (l: string) => void) {
  const c = shapeConfig(model);
  const e = Engine.create(gpu, loadKernelSources());
  try {
    // Built without tuning: both ways attend alike.
    const w = syntheticWeights(c, 1);
    await e.load(c, w, { weightDtype: 'f16' });
    w.clear();
    const tokens = Array.from({ length: PREFILL }, (_, i) => 3 + ((i * 7919) % (c.vocabSize - 3)));
    const cache = e.newCache(PREFILL);
    const best = { f32: Infinity, f16: Infinity };
    const RUNS = 3;
    for (let run = -1; run < RUNS; run++) {
      for (const half of [false, true]) {
        e.ops.half = half;
        cache.truncate(0);
        const t = performance.now();
        await e.prefill(cache, tokens, undefined, { logits: 'last' });
        const ms = performance.now() - t;
        if (run >= 0) best[half ? 'f16' : 'f32'] = Math.min(best[half ? 'f16' : 'f32'], ms);
      }
    }
    e.ops.half = undefined;
    cache.destroy();
    log(`f16: ${model} prefill of ${PREFILL}: ${best.f32.toFixed(1)} ms with f32 math, ${best.f16.toFixed(1)} ms with f16 math (fastest of ${RUNS} each)`);
    return { model, tokens: PREFILL, f32_ms: best.f32, f16_ms: best.f16, runs: RUNS };
  } finally {
    e.destroy();
  }
}
