/**
 * Parity of the packed-quant paths (kernels/quant.wgsl, included by
 * matmul_io for matmul, matmul_tiled, matmul_tiled128 and gemv, and by embed)
 * with their TypeScript twins: the CPU dequantizer of gguf-quants.ts (which
 * is bit-identical to ggml's) and reference.ts's matmul and embed on its f32
 * output. Blocks are random (quant.ts's noiseBlocks), repacked into the GPU
 * layout as GpuModel uploads them.
 *
 * Measured on SwiftShader (max over the cases below):
 *   dequantization (embed, scale 1): equal bits for every type. The tolerance,
 *     1e-6 of max|ref|, leaves room for a GPU that fuses Q4_1's d·q + m or
 *     Q4_K's (d·sc)·q − dmin·m into one multiply-add (the reference rounds d·q
 *     first): a few ulps, ~1e-7;
 *   matmul and gemv: up to 6.8e-7 of max|ref| (f32 summation order) -> tolerance 5e-6.
 * matmul (reg) and gemv read whole 32-weight sub-blocks (quant.wgsl's dq32),
 * matmul_tiled, matmul_tiled128 and embed a vec4 at a time (dq4): each type's
 * matmul test covers both. Each type's tests
 * fail when its unpacking is broken (checked by hand: an offset, a shift, a
 * scale index or a sign changed in dq4, then in dq32).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ref from '../../src/engine/reference';
import type { MatmulVariant, WeightMatrix } from '../../src/engine/ops';
import { dequantizeF32 } from '../../src/engine/formats/gguf-quants';
import { noiseBlocks, QUANT, QUANT_TYPES, repackForGpu, type QuantType } from '../../src/engine/quant';
import { floatsToHalves, roundToHalf } from '../../src/engine/f16';
import { assertClose, harness, rand, type Harness, relErr } from '../helpers/gpu';

const DEQUANT_RT = 1e-6;
const MATMUL_RT = 5e-6;

/** A random [rows, cols] matrix of type q: the GPU buffer, and the reference's f32 values. */
function quantMatrix(h: Harness, q: QuantType, rows: number, cols: number, seed: number) {
  const nb = (rows * cols) / QUANT[q].block;
  const bytes = noiseBlocks(q, nb, seed, 1);
  return { buffer: h.upload(repackForGpu(q, bytes, nb)), values: dequantizeF32(QUANT[q].ggml, bytes, rows * cols), bytes };
}

for (const q of QUANT_TYPES) {
  test(`embed ${q}: every row dequantized as the CPU dequantizer does`, async (t) => {
    const h = await harness();
    const V = 6, D = 2 * QUANT[q].block;
    const m = quantMatrix(h, q, V, D, 7);
    const tokens = Uint32Array.from({ length: V }, (_, i) => V - 1 - i);
    const x = h.empty(V * D * 4);
    h.ops.embed({ tokens: h.upload(tokens), table: m.buffer, dtype: q, x, T: V, D, V, scale: 1 });
    const got = await h.readF32(x, V * D);
    const want = ref.embed(tokens, m.values, V, D, V, 1);
    t.diagnostic(`|Δ| / max|ref| ${relErr(got, want).toExponential(2)}`);
    assertClose(got, want, 0, DEQUANT_RT);
  });
}

// Shapes as kernels.test.ts's (ragged tiles, 1-4 rows for gemv), with K whole 256-weight blocks.
const SHAPES: [number, number, number, MatmulVariant][] = [
  [1, 9, 256, 'reg'], [5, 36, 512, 'reg'],
  [70, 40, 256, 'tiled'], [130, 140, 256, 'tiled128'],
  // gemv's lanes take two sub-blocks a pass, then one: with 32 lanes a column, K of 512 (16 sub-blocks) has only
  // the one, 1280 (40) the pair or the one, 2304 (72) the pair and then one more in a lane.
  [1, 37, 512, 'gemv'], [4, 9, 1280, 'gemv'], [2, 7, 2304, 'gemv'],
  // gemv_sg (where the device has subgroups; kernels.test.ts checks the refusal where it has none).
  [1, 37, 512, 'gemv_sg'], [4, 9, 1280, 'gemv_sg'], [2, 70, 256, 'gemv_sg'], [2, 7, 2304, 'gemv_sg'],
];

for (const q of QUANT_TYPES) {
  test(`matmul, matmul_tiled, matmul_tiled128, gemv and gemv_sg on ${q} weights, with bias and residual`, async (t) => {
    const h = await harness();
    for (const [T, N, K, variant] of SHAPES) {
      if (variant === 'gemv_sg' && !h.ops.subgroupMin) continue;
      const x = rand(T * K, 11);
      const w = quantMatrix(h, q, N, K, 12);
      const bias = rand(N, 13), res = rand(T * N, 14);
      const y = h.empty(T * N * 4);
      h.ops.matmul({ x: h.upload(x), w: w.buffer, wDtype: q, y, T, N, K, variant, bias: h.upload(bias), residual: h.upload(res) });
      const got = await h.readF32(y, T * N);
      const want = ref.matmul(x, w.values, T, N, K, bias, res);
      t.diagnostic(`${variant} T=${T} N=${N} K=${K}: |Δ| / max|ref| ${relErr(got, want).toExponential(2)}`);
      assertClose(got, want, 0, MATMUL_RT, `${variant} T=${T} N=${N} K=${K}`);
    }
  });
}

/** Rows [row0, row0 + rows) of an f32 matrix of `cols` columns. */
const rowsOf = (a: Float32Array, cols: number, row0: number, rows: number) => a.subarray(row0 * cols, (row0 + rows) * cols);

// A fused matrix whose tensors have different types (as Gemma's q/k/v can: Q5_0 and Q8_0) is stored one part per
// type; a large quantized matrix is stored in row parts, each repacked on its own (its own scale region).
test('matmulParts and embedParts over parts of different types, and a quantized matrix in row parts', async () => {
  const h = await harness();
  const K = 256, T = 3;
  const a = quantMatrix(h, 'q4_k', 20, K, 31), b = quantMatrix(h, 'q8_0', 12, K, 32);
  const c = roundToHalf(rand(8 * K, 33));
  const mixed: WeightMatrix = {
    rows: 40, cols: K, dtype: 'q4_k',
    parts: [{ buffer: a.buffer, row0: 0, rows: 20 }, { buffer: b.buffer, row0: 20, rows: 12, dtype: 'q8_0' }, { buffer: h.upload(floatsToHalves(c)), row0: 32, rows: 8, dtype: 'f16' }],
  };
  const all = new Float32Array(40 * K);
  all.set(a.values); all.set(b.values, 20 * K); all.set(c, 32 * K);
  // The same q6_k matrix in three row parts, each repacked from its rows' blocks.
  const q6 = quantMatrix(h, 'q6_k', 40, K, 34);
  const rowBytes = (K / 256) * QUANT.q6_k.bytes;
  const split: WeightMatrix = {
    rows: 40, cols: K, dtype: 'q6_k',
    parts: [[0, 15], [15, 15], [30, 10]].map(([row0, rows]) => ({
      row0, rows, buffer: h.upload(repackForGpu('q6_k', q6.bytes.subarray(row0 * rowBytes, (row0 + rows) * rowBytes), (rows * K) / 256)),
    })),
  };
  const x = rand(T * K, 35), bias = rand(40, 36);
  for (const [m, values] of [[mixed, all], [split, q6.values]] as const) {
    for (const variant of ['reg', 'gemv'] as const) {
      const y = h.empty(T * 40 * 4);
      h.ops.matmulParts({ x: h.upload(x), w: m, y, T, K, variant, bias: h.upload(bias) });
      assertClose(await h.readF32(y, T * 40), ref.matmul(x, values, T, 40, K, bias), 0, MATMUL_RT, `${m.dtype} ${variant}`);
    }
    const ids = [39, 0, 21, 33, 16];
    const out = h.empty(ids.length * K * 4);
    h.ops.embedParts({ tokens: h.upload(Uint32Array.from(ids)), ids, table: m, x: out, T: ids.length, scale: 2 });
    assertClose(await h.readF32(out, ids.length * K), ref.embed(Uint32Array.from(ids), values, ids.length, K, 40, 2), 0, DEQUANT_RT, `${m.dtype} embed`);
  }
  assert.ok(rowsOf(all, K, 32, 8).every((v, i) => v === c[i]));
});

test('a quantized matmul refuses K that is not a whole number of blocks', async () => {
  const h = await harness();
  const w = h.empty(4096);
  assert.throws(() => h.ops.matmul({ x: w, w, wDtype: 'q4_k', y: w, T: 1, N: 4, K: 128 }), /128 columns is not a whole number of q4_k blocks/);
});
