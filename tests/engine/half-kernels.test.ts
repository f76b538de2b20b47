/**
 * Parity of the tiled matmuls' `shader-f16` fast path (HALF: kernels/matmul_half.wgsl, in matmul_tiled and
 * matmul_tiled128) with its TypeScript twin, reference.ts's matmulHalf, on Mesa's lavapipe: the one adapter in
 * reach that offers `shader-f16` (SwiftShader and llvmpipe's GL path do not; Dawn offers it on NVIDIA's Vulkan
 * driver only with the toggle vulkan_enable_f16_on_nvidia). scripts/fetch-lavapipe.mjs fetches it (npm test does);
 * without it these tests skip and say so. The GPU kit runs this file on the lent GPU's own driver
 * (LEGOKV_NODE_BACKEND=vulkan, LEGOKV_DAWN_ENABLE=vulkan_enable_f16_on_nvidia; gpu-check's f16 stage), where the
 * tests skip if the adapter still offers no `shader-f16`.
 *
 * Measured on lavapipe (Mesa 25.0.7, LLVM 15), worst over the cases below:
 *   against matmulHalf: 0 without bias and residual (lavapipe rounds each product and each sum, as the
 *     twin does), 1.0e-7 of max|ref| with them (their f32 sums in another order) -> HALF_RT 1e-6. A GPU
 *     that fuses a product into its f16 sum (one rounding where the twin rounds twice) would differ by
 *     up to half an f16 ulp of a slice's sum (2^-11 = 4.9e-4): until one is measured (the GPU kit prints each
 *     case's error), other adapters get that bound's double, HALF_RT_FUSED 1e-3, still far below what a
 *     wrongly summed slice gives (the f32 check below catches those too);
 *   against f32 math (reference.ts's matmul): 9.4e-4 of max|ref| -> F32_RT 1e-2, the accuracy HALF trades.
 * Each case fails when the kernel's slices are summed wrongly (checked by hand: the per-slice reset of the
 * f16 sums dropped, and the f32 accumulation made f16).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import * as ref from '../../src/engine/reference';
import type { MatmulVariant, WeightDType } from '../../src/engine/ops';
import { LAVAPIPE_ICD } from '../../scripts/gpu-env.mjs';
import { assertClose, harness, rand, relErr, weightMatrix } from '../helpers/gpu';

const HALF_RT = 1e-6;
const HALF_RT_FUSED = 1e-3;
const F32_RT = 1e-2;

// This file's one device is lavapipe's (src/node/gpu.ts points the Vulkan loader at it before Dawn loads), unless
// the caller names another backend (the GPU kit: its GPU's own Vulkan driver).
process.env.LEGOKV_NODE_BACKEND ??= 'lavapipe';
const onLavapipe = process.env.LEGOKV_NODE_BACKEND === 'lavapipe';
const missing = !onLavapipe || existsSync(LAVAPIPE_ICD) ? false : 'lavapipe is not fetched (node scripts/fetch-lavapipe.mjs)';

/** A device with `shader-f16` (lavapipe's must have it), or why this test skips. */
async function halfHarness(t: TestContext) {
  const h = await harness();
  if (onLavapipe || h.ops.shaderF16) return h;
  t.skip(`${h.gpu.adapter.description} offers no shader-f16`);
  return null;
}

// Ragged tiles in every dimension, K not a multiple of the 16-deep slices; the quantized ones whole blocks.
const CASES: [number, number, number, 'tiled' | 'tiled128', WeightDType][] = [
  [70, 130, 36, 'tiled', 'f16'], [33, 10, 172, 'tiled', 'f16'], [16, 64, 1000, 'tiled', 'f16'],
  [130, 140, 36, 'tiled128', 'f16'], [20, 70, 172, 'tiled128', 'f16'],
  [70, 40, 256, 'tiled', 'q4_k'], [130, 140, 256, 'tiled128', 'q8_0'], [40, 24, 512, 'tiled', 'q6_k'],
];

test('the adapter offers shader-f16 (lavapipe must), and the engine enables it', { skip: missing }, async (t) => {
  const h = await harness();
  if (onLavapipe) assert.match(h.gpu.adapter.description, /llvmpipe/);
  else if (!h.gpu.adapter.hasF16) return t.skip(`${h.gpu.adapter.description} offers no shader-f16`);
  assert.ok(h.gpu.adapter.hasF16 && h.ops.shaderF16, 'shader-f16 on the adapter and the device');
});

for (const [T, N, K, variant, dtype] of CASES) {
  test(`${variant} half ${dtype} T=${T} N=${N} K=${K}: as matmulHalf, with bias and residual`, { skip: missing }, async (t) => {
    const h = await halfHarness(t);
    if (!h) return;
    // Activations of an LLM's scale, and one outlier in the first row: past f16's range, where it must saturate
    // (the f16 weights are under 1, so its product stays finite), or an activation outlier of a real model's size.
    const x = rand(T * K, 1, 4);
    x[3] = dtype === 'f16' ? 1e5 : 3000;
    const w = weightMatrix(h, dtype, N, K, 2);
    const bias = rand(N, 3);
    const res = rand(T * N, 4);
    const [xb, y] = [h.upload(x), h.empty(T * N * 4)];
    const diag: string[] = [];
    for (const extra of [{}, { bias, residual: res }]) {
      h.ops.matmul({
        x: xb, w: w.buffer, wDtype: dtype, y, T, N, K, variant,
        ...(extra.bias ? { bias: h.upload(extra.bias), residual: h.upload(extra.residual) } : {}),
      });
      const got = await h.readF32(y, T * N);
      assert.ok(got.every(Number.isFinite), 'every output finite');
      const want = ref.matmulHalf(x, w.values, T, N, K, extra.bias, extra.residual);
      assertClose(got, want, 0, onLavapipe ? HALF_RT : HALF_RT_FUSED, 'against matmulHalf');
      // Against f32 math, leaving out the saturated outlier's row.
      const rows = (T - 1) * N;
      const exact = ref.matmul(x, w.values, T, N, K, extra.bias, extra.residual).subarray(N);
      assertClose(got.subarray(N), exact, 0, F32_RT, 'against f32 math');
      diag.push(`${extra.bias ? 'bias+residual' : 'plain'}: |Δ| / max|ref| ${relErr(got, want).toExponential(2)} vs matmulHalf, ${relErr(got.subarray(N, N + rows), exact).toExponential(2)} vs f32`);
    }
    t.diagnostic(diag.join('; '));
  });
}

test('Ops.half = false keeps f32 math on the same device; f32 weights never get half', { skip: missing }, async (t) => {
  const h = await halfHarness(t);
  if (!h) return;
  const [T, N, K] = [70, 130, 36];
  const x = rand(T * K, 5);
  const w = weightMatrix(h, 'f16', N, K, 6);
  const y = h.empty(T * N * 4);
  h.ops.half = false;
  try {
    h.ops.matmul({ x: h.upload(x), w: w.buffer, wDtype: 'f16', y, T, N, K, variant: 'tiled' });
    assertClose(await h.readF32(y, T * N), ref.matmul(x, w.values, T, N, K), 0, 2e-5, 'f32 math');
  } finally {
    h.ops.half = undefined;
  }
  const w32 = weightMatrix(h, 'f32', N, K, 6);
  h.ops.matmul({ x: h.upload(x), w: w32.buffer, wDtype: 'f32', y, T, N, K, variant: 'tiled' });
  assertClose(await h.readF32(y, T * N), ref.matmul(x, w32.values, T, N, K), 0, 2e-5, 'f32 weights by default');
  assert.throws(() => h.ops.matmul({ x: h.upload(x), w: w32.buffer, wDtype: 'f32', y, T, N, K, variant: 'tiled', half: true }), /f32 weights keep f32 math/);
});
