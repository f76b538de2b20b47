/**
 * Parity of gemv's prologues (kernels/gemv_x.wgsl, MatmulArgs.pre) with the unfused ops' TypeScript twins:
 * RMSNorm then matmul (NORM: plain and Gemma's (1 + w) weight, with bias, in row parts), and GLU then matmul
 * (GLU: SiLU and tanh-GELU, with residual, gates large enough to saturate), over every weight format gemv
 * reads (f32, f16, the packed quantized types) and 1 to 4 rows. The references are reference.ts's rmsnorm,
 * glu and matmul composed, on the f16-rounded or dequantized weights the kernel sees.
 *
 * Measured on SwiftShader (max |Δ| / max |ref| over the cases below): NORM up to 4.0e-7, GLU up to 3.7e-7
 * (f32 summation order, and the norm's scale applied to the dot product instead of to each x); tolerance 4e-6.
 * Each test fails with the fusion broken (checked by hand: the norm's scale, its weight or its (1 + w) left
 * out, the up half or the activation left out of the GLU).
 * Each is also run with x staged in workgroup memory (Ops.stageX, gemv's STAGE), as is a GEMV with no prologue;
 * staged, up to 8.2e-7 (a GEMV with no prologue over rows of 4104). Staging fails them with half the squares reduced, or the norm's weight left out of the
 * staged part or of the part past it (checked by hand). Gemma 3's sandwich norm folded in before the norm (POST, staged
 * only): up to 3.0e-7 in the product and the residual stream it writes; it fails with the sandwich norm's scale
 * left out, or the stream not written (checked by hand).
 * Whole-model decode with the fusion: fused-model.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ref from '../../src/engine/reference';
import { gemvSgColumns, type GemvVariant, type WeightDType, type WeightMatrix, type XPrologue } from '../../src/engine/ops';
import { QUANT_TYPES } from '../../src/engine/quant';
import { splitRows } from '../../src/engine/model/gpu-plan';
import { assertClose, harness, rand, type Harness, relErr, weightMatrix } from '../helpers/gpu';

const RT = 4e-6;

/** Each way of working out a prologue's x: in every column's lanes, and once a workgroup in workgroup memory (Ops.stageX). */
const stages = (): boolean[] => [false, true];
const staged = (h: Harness, stage: boolean, run: () => void) => {
  const was = h.ops.stageX;
  h.ops.stageX = stage;
  try {
    run();
  } finally {
    h.ops.stageX = was;
  }
};

/** Both GEMV kernels where the device has subgroups (SwiftShader does); gemv alone where it has none. */
const gemvs = (h: Harness, t: { diagnostic(m: string): void }): GemvVariant[] => {
  if (!h.ops.subgroupMin) t.diagnostic('this device has no subgroups: gemv_sg is not run');
  return h.ops.subgroupMin ? ['gemv', 'gemv_sg'] : ['gemv'];
};

const DTYPES: WeightDType[] = ['f32', 'f16', ...QUANT_TYPES];
// [T, N, K]: N not a multiple of the workgroup's 8 columns; for f32/f16 K shorter and longer than 32 vec4s and
// not a multiple of them, for the packed types whole 256-weight blocks (1 to 5 sub-blocks a lane).
// A last shape whose x (4 rows of 4104 or 4352) outgrows any adapter's workgroup memory up to 64 KiB, so that STAGE
// keeps part of each row there and works out the rest on the fly.
const shapes = (d: WeightDType): [number, number, number][] => {
  const base: [number, number, number][] = d === 'f32' || d === 'f16' ? [[1, 37, 68], [3, 20, 172], [4, 9, 1032]] : [[1, 37, 256], [3, 12, 512], [4, 9, 1280]];
  return [...base, [4, 5, d === 'f32' || d === 'f16' ? 4104 : 4352]];
};

for (const dtype of DTYPES) {
  test(`gemv with the RMSNorm prologue on ${dtype} weights: w and (1 + w), with bias`, async (t) => {
    const h = await harness();
    for (const [T, N, K] of shapes(dtype)) {
      // Rows of different scales, so each row's own rms matters.
      const x = rand(T * K, 41, 3);
      for (let i = K; i < T * K; i++) x[i] *= 1 + Math.floor(i / K);
      const g = rand(K, 42);
      const w = weightMatrix(h, dtype, N, K, 43);
      const bias = rand(N, 44);
      const y = h.empty(T * N * 4);
      for (const variant of gemvs(h, t)) for (const plusOne of [false, true]) for (const stage of stages()) {
        const eps = plusOne ? 1e-6 : 1e-5;
        const pre: XPrologue = { norm: h.upload(g), eps, plusOne };
        staged(h, stage, () => h.ops.matmul({ x: h.upload(x), w: w.buffer, wDtype: dtype, y, T, N, K, bias: h.upload(bias), pre, variant }));
        const got = await h.readF32(y, T * N);
        const want = ref.matmul(ref.rmsnorm(x, g, T, K, eps, plusOne), w.values, T, N, K, bias);
        const what = `${variant}${stage ? ' staged' : ''} T=${T} N=${N} K=${K} plusOne=${plusOne}`;
        t.diagnostic(`${what}: |Δ| / max|ref| ${relErr(got, want).toExponential(2)}`);
        assertClose(got, want, 0, RT, what);
      }
    }
  });

  test(`gemv with the GLU prologue on ${dtype} weights: SiLU and tanh-GELU, with residual`, async (t) => {
    const h = await harness();
    for (const [T, N, K] of shapes(dtype)) {
      const gu = rand(T * 2 * K, 45, 4);
      // Gates that saturate the activation (exp overflows for -100).
      gu[0] = 60; gu[1] = -60; gu[2] = -100;
      const w = weightMatrix(h, dtype, N, K, 46);
      const res = rand(T * N, 47);
      const y = h.empty(T * N * 4);
      for (const variant of gemvs(h, t)) for (const act of ['silu', 'gelu_tanh'] as const) for (const stage of stages()) {
        staged(h, stage, () => h.ops.matmul({ x: h.upload(gu), w: w.buffer, wDtype: dtype, y, T, N, K, residual: h.upload(res), pre: { glu: act }, variant }));
        const got = await h.readF32(y, T * N);
        const want = ref.matmul(ref.glu(gu, T, K, act), w.values, T, N, K, undefined, res);
        const what = `${variant}${stage ? ' staged' : ''} T=${T} N=${N} K=${K} ${act}`;
        t.diagnostic(`${what}: |Δ| / max|ref| ${relErr(got, want).toExponential(2)}`);
        assertClose(got, want, 0, RT, what);
      }
    }
  });
}

// STAGE alone: x as stored, read from workgroup memory (a staged prefix where it outgrows it), with bias and residual.
test('gemv with x staged and no prologue, on every weight format', async (t) => {
  const h = await harness();
  for (const dtype of DTYPES) {
    for (const [T, N, K] of shapes(dtype)) {
      const x = rand(T * K, 61, 2), w = weightMatrix(h, dtype, N, K, 62), bias = rand(N, 63), res = rand(T * N, 64);
      const y = h.empty(T * N * 4);
      for (const variant of gemvs(h, t)) {
        staged(h, true, () => h.ops.matmul({ x: h.upload(x), w: w.buffer, wDtype: dtype, y, T, N, K, bias: h.upload(bias), residual: h.upload(res), variant }));
        const got = await h.readF32(y, T * N);
        const want = ref.matmul(x, w.values, T, N, K, bias, res);
        const what = `${variant} staged ${dtype} T=${T} N=${N} K=${K}`;
        t.diagnostic(`${what}: |Δ| / max|ref| ${relErr(got, want).toExponential(2)}`);
        assertClose(got, want, 0, RT, what);
      }
    }
  }
});

// A matrix in row parts (Y_RANGE): each part's launch computes the norm, or the GLU, itself.
test('gemv prologues on a matrix in row parts, with bias and residual', async (t) => {
  const h = await harness();
  const T = 2, N = 40, K = 68;
  const w = rand(N * K, 51);
  const ranges = splitRows(N, K * 4, Math.ceil((N * K * 4) / 3.5 / 16) * 16)!;
  const m: WeightMatrix = { rows: N, cols: K, dtype: 'f32', parts: ranges.map((r) => ({ ...r, buffer: h.upload(w.subarray(r.row0 * K, (r.row0 + r.rows) * K)) })) };
  assert.ok(m.parts.length >= 4, `${m.parts.length} parts`);
  const x = rand(T * K, 52, 2), gu = rand(T * 2 * K, 53, 3), g = rand(K, 54), bias = rand(N, 55), res = rand(T * N, 56);
  const y = h.empty(T * N * 4);
  for (const variant of gemvs(h, t)) for (const stage of stages()) {
    staged(h, stage, () => h.ops.matmulParts({ x: h.upload(x), w: m, y, T, K, bias: h.upload(bias), pre: { norm: h.upload(g), eps: 1e-6, plusOne: true }, variant }));
    assertClose(await h.readF32(y, T * N), ref.matmul(ref.rmsnorm(x, g, T, K, 1e-6, true), w, T, N, K, bias), 0, RT, `${variant} norm${stage ? ' staged' : ''}`);
    staged(h, stage, () => h.ops.matmulParts({ x: h.upload(gu), w: m, y, T, K, residual: h.upload(res), pre: { glu: 'gelu_tanh' }, variant }));
    assertClose(await h.readF32(y, T * N), ref.matmul(ref.glu(gu, T, K, 'gelu_tanh'), w, T, N, K, undefined, res), 0, RT, `${variant} glu${stage ? ' staged' : ''}`);
  }
});

// POST: Gemma 3's sandwich norm folded in before the norm, x staged. x is the previous product's output; the
// launch works out res + rmsnorm(x; pw), writes it for the next residual, then norms it into the product. Rows of
// different scales, the long shape partly staged (its tail worked out on the fly), and a matrix in row parts
// (each part's launch writes the same stream).
test('gemv with a sandwich norm folded in before its norm (POST, x staged), on f16 and Q4_K weights and in parts', async (t) => {
  const h = await harness();
  const cases: [WeightDType | 'parts', number, number, number, boolean][] = [['f16', 1, 37, 68, true], ['f16', 3, 20, 172, false], ['f16', 4, 5, 4104, true], ['q4_k', 2, 12, 512, true], ['parts', 2, 40, 68, true]];
  let worst = 0;
  for (const [dtype, T, N, K, plusOne] of cases) {
    const tmp = rand(T * K, 61, 2), res = rand(T * K, 62, 5), pw = rand(K, 63), g = rand(K, 64);
    for (let i = K; i < T * K; i++) tmp[i] *= 1 + Math.floor(i / K);
    const eps = 1e-6;
    let w: WeightMatrix, values: Float32Array;
    if (dtype === 'parts') {
      values = rand(N * K, 65);
      const ranges = splitRows(N, K * 4, Math.ceil((N * K * 4) / 3.5 / 16) * 16)!;
      w = { rows: N, cols: K, dtype: 'f32', parts: ranges.map((r) => ({ ...r, buffer: h.upload(values.subarray(r.row0 * K, (r.row0 + r.rows) * K)) })) };
    } else {
      const m = weightMatrix(h, dtype, N, K, 66);
      values = m.values;
      w = { rows: N, cols: K, dtype, parts: [{ buffer: m.buffer, row0: 0, rows: N }] };
    }
    const stream = ref.rmsnorm(tmp, pw, T, K, eps, plusOne, 1, K, 0, res);
    const want = ref.matmul(ref.rmsnorm(stream, g, T, K, eps, plusOne), values, T, N, K);
    for (const variant of gemvs(h, t)) {
      const y = h.empty(T * N * 4), out = h.empty(T * K * 4);
      const pre: XPrologue = { norm: h.upload(g), eps, plusOne, post: { w: h.upload(pw), res: h.upload(res), out } };
      staged(h, true, () => h.ops.matmulParts({ x: h.upload(tmp), w, y, T, K, pre, variant }));
      const [got, wrote] = [await h.readF32(y, T * N), await h.readF32(out, T * K)];
      const what = `${variant} ${dtype} T=${T} N=${N} K=${K} plusOne=${plusOne}`;
      worst = Math.max(worst, relErr(got, want), relErr(wrote, stream));
      assertClose(got, want, 0, RT, `${what}: product`);
      assertClose(wrote, stream, 0, RT, `${what}: the residual stream it writes`);
    }
  }
  t.diagnostic(`largest |Δ| / max|ref|: ${worst.toExponential(2)}`);
  const b = h.empty(4096);
  assert.throws(() => staged(h, false, () => h.ops.matmul({ x: b, w: b, wDtype: 'f32', y: b, T: 1, N: 4, K: 4, variant: 'gemv', pre: { norm: b, eps: 1e-6, plusOne: true, post: { w: b, res: b, out: h.empty(16) } } })), /only where x is staged/);
});

test('a prologue with a matmul variant other than gemv is refused', async () => {
  const h = await harness();
  const b = h.empty(4096);
  assert.throws(() => h.ops.matmul({ x: b, w: b, wDtype: 'f32', y: b, T: 1, N: 4, K: 4, variant: 'reg', pre: { glu: 'silu' } }), /only gemv/);
});

test('Ops.fuses: the GPU profile fuses passes of up to 4 rows, CPU adapters only when forced', async () => {
  const h = await harness();
  const { ops } = h;
  const saved = [ops.matmulProfile, ops.fuse] as const;
  try {
    ops.fuse = undefined;
    ops.matmulProfile = 'cpu';
    assert.deepEqual([1, 4, 5].map((T) => ops.fuses(T)), [false, false, false]);
    ops.matmulProfile = 'gpu';
    assert.deepEqual([1, 4, 5].map((T) => ops.fuses(T)), [true, true, false]);
    ops.fuse = false;
    assert.equal(ops.fuses(1), false);
    ops.matmulProfile = 'cpu';
    ops.fuse = true;
    assert.deepEqual([1, 4, 5].map((T) => ops.fuses(T)), [true, true, false]);
  } finally {
    [ops.matmulProfile, ops.fuse] = saved;
  }
});

test('the GEMV kernel: gemv_sg where the device has subgroups (overridable), its columns a workgroup from the subgroup size', async () => {
  const h = await harness();
  const { ops } = h;
  const saved = [ops.matmulProfile, ops.gemvVariant] as const;
  try {
    ops.matmulProfile = 'gpu';
    ops.gemvVariant = undefined;
    // With subgroups (SwiftShader's are 4 wide, an H100's 32) decode's products go to gemv_sg, else to gemv;
    // prefill's to the tiles either way.
    const gemv = ops.subgroupMin ? 'gemv_sg' : 'gemv';
    assert.deepEqual([1, 4, 16].map((T) => ops.pickMatmul(T, 64, 64)), [gemv, gemv, 'tiled']);
    // Llama-1B's products at 2048 rows, as measured on the H100: 128-row tiles for gate/up (2048 tiles) and down
    // (256 tiles, K 8192), 64-row tiles for q/k/v (384 tiles, K 2048) and the output product (256 tiles, K 2048).
    assert.deepEqual([[16384, 2048], [2048, 8192], [3072, 2048], [2048, 2048]].map(([N, K]) => ops.pickMatmul(2048, N, K)), ['tiled128', 'tiled128', 'tiled', 'tiled']);
    assert.deepEqual(ops.matmulVariants(1), ops.subgroupMin ? ['reg', 'gemv', 'gemv_sg'] : ['reg', 'gemv']);
    ops.gemvVariant = 'gemv';
    assert.equal(ops.pickMatmul(1, 64, 64), 'gemv');
    ops.matmulProfile = 'cpu';
    assert.equal(ops.pickMatmul(1, 64, 64), 'reg', 'CPU adapters keep the register kernel');
  } finally {
    [ops.matmulProfile, ops.gemvVariant] = saved;
  }
  // One subgroup a column: 256 invocations over the smallest subgroup size, 8 to 64 columns.
  assert.deepEqual([4, 8, 16, 32, 64, 128].map(gemvSgColumns), [64, 32, 16, 8, 8, 8]);
});
