/**
 * Parity of WGSL kernels in kernels/ with their TypeScript twins in src/engine/reference.ts, on SwiftShader through
 * the `webgpu` package: matmul, matmul_tiled, matmul_tiled128 and gemv (with their shared matmul_io), rmsnorm,
 * kv_scatter, embed and glu; common holds shared helpers. The attention kernels are in attention-kernels.test.ts,
 * argmax and the quantized, fused and f16 paths in files of their own.
 * Tolerances: f32 paths within RT of the largest reference magnitude
 * (f32 summation order differs); packed-f16 paths are compared with a
 * reference fed the same f16-rounded values, so the same bound holds.
 * Matrices split in row parts (what GpuModel does with one larger than a
 * buffer may be) are held to the same bound, and to equal bits with the
 * unsplit kernel.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ref from '../../src/engine/reference';
import { type MatmulVariant, type WeightMatrix } from '../../src/engine/ops';
import { splitRows } from '../../src/engine/model/gpu-plan';
import { floatsToHalves, roundToHalf } from '../../src/engine/f16';
import { assertClose, harness, rand, relErr, type Harness } from '../helpers/gpu';

/**
 * The f32 paths' bound, relative to the largest reference magnitude: about 10x their worst error, 5.8e-7 on
 * SwiftShader and on llvmpipe alike (a matmul's plain product; rmsnorm, embed and glu stay below it).
 */
const RT = 6e-6;
/** gemv_sg's bound, relative like RT: about 10x its worst error on SwiftShader (2.7e-7 of the largest output; gemv's is 2.2e-7). */
const GEMV_SG_RT = 3e-6;

const MATMUL_SHAPES: [number, number, number, MatmulVariant][] = [
  [1, 36, 64, 'reg'], [5, 172, 64, 'reg'], [9, 10, 172, 'reg'],
  // matmul_tiled: ragged tiles in every dimension, K not a multiple of 16.
  [70, 130, 36, 'tiled'], [16, 64, 64, 'tiled'], [33, 10, 172, 'tiled'],
  // matmul_tiled128: ragged in every dimension, both halves of the 8x8 blocks partly outside.
  [130, 140, 36, 'tiled128'], [128, 128, 64, 'tiled128'], [20, 70, 172, 'tiled128'],
  // gemv: 1 to 4 rows of x, N not a multiple of the workgroup's 8 columns, K shorter and longer than 32 vec4s.
  [1, 37, 68, 'gemv'], [3, 200, 172, 'gemv'], [4, 9, 1032, 'gemv'], [2, 8, 4, 'gemv'],
  // gemv_sg (SwiftShader's subgroups of 4: 64 columns a workgroup): N short of and past one workgroup, K under
  // one vec4 a lane, not a multiple of the lanes, and long.
  [1, 37, 68, 'gemv_sg'], [3, 200, 172, 'gemv_sg'], [4, 9, 1032, 'gemv_sg'], [2, 8, 4, 'gemv_sg'], [1, 130, 24, 'gemv_sg'],
];
const KERNEL_FILE: Record<MatmulVariant, string> = { reg: 'matmul', tiled: 'matmul_tiled', tiled128: 'matmul_tiled128', gemv: 'gemv', gemv_sg: 'gemv (subgroups)' };

/**
 * gemv_sg runs only on a device with `subgroups` (SwiftShader has them, size 4; llvmpipe's GL path does not): on
 * one without, the call must be refused with a clear message, and that refusal is what the test checks.
 */
function refusedWithoutSubgroups(h: Harness, variant: MatmulVariant): boolean {
  if (variant !== 'gemv_sg' || h.ops.subgroupMin) return false;
  const b = h.empty(64);
  assert.throws(() => h.ops.matmul({ x: b, w: b, wDtype: 'f32', y: b, T: 1, N: 4, K: 4, variant }), /subgroups feature/);
  return true;
}


for (const wDtype of ['f32', 'f16'] as const) {
  for (const [T, N, K, variant] of MATMUL_SHAPES) {
    test(`${KERNEL_FILE[variant]} ${wDtype} T=${T} N=${N} K=${K}, with bias and residual`, async () => {
      const h = await harness();
      if (refusedWithoutSubgroups(h, variant)) return;
      const x = rand(T * K, 1);
      let w = rand(N * K, 2);
      if (wDtype === 'f16') w = roundToHalf(w);
      const bias = rand(N, 3);
      const res = rand(T * N, 4);
      const y = h.empty(T * N * 4);
      const wbuf = h.upload(wDtype === 'f16' ? floatsToHalves(w) : w);
      h.ops.matmul({ x: h.upload(x), w: wbuf, wDtype, y, T, N, K, variant });
      const rt = variant === 'gemv_sg' ? GEMV_SG_RT : RT;
      assertClose(await h.readF32(y, T * N), ref.matmul(x, w, T, N, K), 0, rt, 'plain');
      h.ops.matmul({ x: h.upload(x), w: wbuf, wDtype, y, T, N, K, variant, bias: h.upload(bias), residual: h.upload(res) });
      assertClose(await h.readF32(y, T * N), ref.matmul(x, w, T, N, K, bias, res), 0, rt, 'bias+residual');
    });
  }
}

// The tiled matmuls' f16 slices (HALF) need `shader-f16`, which SwiftShader lacks: asked for, they are refused
// with a clear message, and by default this device keeps f32 math (half-kernels.test.ts runs HALF on lavapipe).
test('matmul half is refused on a device without shader-f16', async (t) => {
  const h = await harness();
  if (h.ops.shaderF16) return t.skip(`this adapter has shader-f16 (${h.gpu.adapter.description}): half-kernels.test.ts covers it`);
  const b = h.empty(64 * 64 * 4);
  assert.throws(() => h.ops.matmul({ x: b, w: b, wDtype: 'f16', y: b, T: 16, N: 16, K: 16, variant: 'tiled', half: true }), /shader-f16 feature/);
});

/** `w` ([rows, cols], f16-rounded for f16) in the row parts splitRows gives for `limit`, as GpuModel stores a large matrix. */
function uploadParts(h: Harness, w: Float32Array, rows: number, cols: number, dtype: 'f32' | 'f16', limit: number): WeightMatrix {
  const ranges = splitRows(rows, cols * (dtype === 'f16' ? 2 : 4), limit);
  assert.ok(ranges, 'the rows fit the limit');
  return {
    rows, cols, dtype,
    parts: ranges.map((r) => {
      const slice = w.subarray(r.row0 * cols, (r.row0 + r.rows) * cols);
      return { ...r, buffer: h.upload(dtype === 'f16' ? floatsToHalves(slice) : slice) };
    }),
  };
}

// A matrix larger than one buffer is stored in row parts; matmulParts runs one matmul per part, each writing its
// columns of the output (ldy, y0). A tiny limit splits small shapes, ragged parts included.
for (const wDtype of ['f32', 'f16'] as const) {
  for (const [T, N, K, variant] of [[5, 172, 64, 'reg'], [1, 36, 64, 'reg'], [70, 130, 36, 'tiled'], [130, 140, 36, 'tiled128'], [3, 200, 68, 'gemv'], [3, 200, 68, 'gemv_sg']] as const) {
    test(`matmul split in row parts: ${variant} ${wDtype} T=${T} N=${N} K=${K}, with bias and residual`, async (t) => {
      const h = await harness();
      if (refusedWithoutSubgroups(h, variant)) return;
      const x = rand(T * K, 21);
      let w = rand(N * K, 22);
      if (wDtype === 'f16') w = roundToHalf(w);
      const bias = rand(N, 23);
      const res = rand(T * N, 24);
      const bytes = N * K * (wDtype === 'f16' ? 2 : 4);
      const m = uploadParts(h, w, N, K, wDtype, Math.ceil(bytes / 3.5 / 16) * 16);
      assert.ok(m.parts.length >= 4, `${m.parts.length} parts`);
      const whole = h.upload(wDtype === 'f16' ? floatsToHalves(w) : w);
      const [xb, bb, rb] = [h.upload(x), h.upload(bias), h.upload(res)];
      const y = h.empty(T * N * 4);
      const y1 = h.empty(T * N * 4);
      for (const extra of [{}, { bias: bb, residual: rb }] as { bias?: GPUBuffer; residual?: GPUBuffer }[]) {
        h.ops.matmulParts({ x: xb, w: m, y, T, K, variant, ...extra });
        h.ops.matmul({ x: xb, w: whole, wDtype, y: y1, T, N, K, variant, ...extra });
        const got = await h.readF32(y, T * N);
        const want = ref.matmul(x, w, T, N, K, extra.bias && bias, extra.residual && res);
        // The twin, part by part, is the whole product exactly.
        const twin = new Float32Array(T * N);
        for (const p of m.parts) {
          ref.matmul(x, w.subarray(p.row0 * K), T, p.rows, K, extra.bias && bias, extra.residual && res, { y: twin, ldy: N, y0: p.row0 });
        }
        assert.deepEqual(twin, want);
        assertClose(got, want, 0, RT, `${m.parts.length} parts`);
        // Each output is the same dot product in the same order as without the split: equal bits.
        assert.deepEqual(got, await h.readF32(y1, T * N), 'split equals whole');
        t.diagnostic(`${m.parts.map((p) => p.rows).join('+')} rows${extra.bias ? ', bias+residual' : ''}: |Δ| / max|ref| ${relErr(got, want).toExponential(2)}`);
      }
    });
  }
}

// One invocation per row (CPU adapters), or a workgroup of 64 per row (GPUs), on rows shorter and longer than 64.
for (const [perRow, D] of [['invocation', 16], ['workgroup', 16], ['workgroup', 200]] as const) {
test(`rmsnorm (${perRow} per row, D=${D}): plain, (1 + w), strided heads in place, and with residual`, async () => {
  const h = await harness();
  const T = 3, eps = 1e-6;
  const x = rand(T * D, 5, 3);
  const w = rand(D, 6);
  const y = h.empty(T * D * 4);
  for (const plusOne of [false, true]) {
    h.ops.rmsnorm({ x: h.upload(x), w: h.upload(w), y, T, D, eps, plusOne, perRow });
    assertClose(await h.readF32(y, T * D), ref.rmsnorm(x, w, T, D, eps, plusOne), 0, RT, `plusOne=${plusOne}`);
  }
  const res = rand(T * D, 7);
  h.ops.rmsnorm({ x: h.upload(x), w: h.upload(w), y, T, D, eps, plusOne: false, residual: h.upload(res), perRow });
  assertClose(await h.readF32(y, T * D), ref.rmsnorm(x, w, T, D, eps, false, 1, D, 0, res), 0, RT, 'residual');
  // Heads of width 8 at offset 8 inside rows of stride 40 (a fused qkv row), in place.
  const G = 3, HD = 8, stride = 40, offset = 8;
  const qkv = rand(T * stride, 8, 2);
  const wq = rand(HD, 9);
  const buf = h.upload(qkv);
  h.ops.rmsnorm({ x: buf, w: h.upload(wq), T, D: HD, G, stride, offset, eps, plusOne: true, perRow });
  const got = await h.readF32(buf, T * stride);
  const normed = ref.rmsnorm(qkv, wq, T, HD, eps, true, G, stride, offset);
  const want = qkv.slice();
  for (let t = 0; t < T; t++) want.set(normed.subarray(t * G * HD, (t + 1) * G * HD), t * stride + offset);
  assertClose(got, want, 0, RT, 'strided in place');
});
}

for (const dstDtype of ['f32', 'f16'] as const) {
  test(`kv_scatter ${dstDtype} into chosen cache rows`, async () => {
    const h = await harness();
    const T = 3, W = 8, stride = 32, offset = 16, rowsInCache = 6;
    const src = rand(T * stride, 14);
    const idx = Uint32Array.from([4, 0, 2]);
    const dst = h.empty(rowsInCache * W * 4);
    h.ops.scatter({ src: h.upload(src), stride, offset, idx: h.upload(idx), dst, dstDtype, T, W });
    const want = ref.scatter(src, stride, offset, idx, new Float32Array(rowsInCache * W), T, W);
    if (dstDtype === 'f32') {
      assertClose(await h.readF32(dst, rowsInCache * W), want, 0, 0);
    } else {
      const got = new Uint16Array(await h.ops.d.read(dst, 0, rowsInCache * W * 2));
      assert.deepEqual([...got], [...floatsToHalves(want)], 'f16 bits equal round-to-nearest-even');
    }
  });
}

for (const dtype of ['f32', 'f16'] as const) {
  test(`embed ${dtype} with scale`, async () => {
    const h = await harness();
    const V = 10, D = 12, T = 4;
    let table = rand(V * D, 15);
    if (dtype === 'f16') table = roundToHalf(table);
    const tokens = Uint32Array.from([3, 0, 9, 3]);
    const x = h.empty(T * D * 4);
    h.ops.embed({ tokens: h.upload(tokens), table: h.upload(dtype === 'f16' ? floatsToHalves(table) : table), dtype, x, T, D, V, scale: 1.5 });
    assertClose(await h.readF32(x, T * D), ref.embed(tokens, table, T, D, V, 1.5), 0, RT);
  });
}

for (const dtype of ['f32', 'f16'] as const) {
  test(`embed ${dtype} from a table split in row parts`, async () => {
    const h = await harness();
    const V = 10, D = 12, T = 5;
    let table = rand(V * D, 25);
    if (dtype === 'f16') table = roundToHalf(table);
    // Token 99 is clamped to the last row, as without a split.
    const tokens = Uint32Array.from([3, 0, 9, 99, 7]);
    const m = uploadParts(h, table, V, D, dtype, Math.ceil((3 * D * (dtype === 'f16' ? 2 : 4)) / 16) * 16);
    assert.deepEqual(m.parts.map((p) => [p.row0, p.rows]), [[0, 3], [3, 3], [6, 3], [9, 1]]);
    const want = ref.embed(tokens, table, T, D, V, 1.5);
    const twin = new Float32Array(T * D);
    for (const p of m.parts) ref.embed(tokens, table.subarray(p.row0 * D), T, D, V, 1.5, { ...p, x: twin });
    assert.deepEqual(twin, want);
    const tok = h.upload(tokens);
    for (const ids of [undefined, tokens]) {
      const x = h.empty(T * D * 4);
      const before = h.ops.d.count;
      h.ops.embedParts({ tokens: tok, ids, table: m, x, T, scale: 1.5 });
      assertClose(await h.readF32(x, T * D), want, 0, RT, ids ? 'ids given' : 'every part');
      assert.equal(h.ops.d.count - before, 4, 'one launch per part (every part holds one of these tokens)');
    }
    // With the ids at hand, parts holding none of them are not launched.
    const x = h.empty(2 * D * 4);
    const before = h.ops.d.count;
    h.ops.embedParts({ tokens: h.upload(Uint32Array.from([4, 5])), ids: [4, 5], table: m, x, T: 2, scale: 1.5 });
    assert.equal(h.ops.d.count - before, 1);
    assertClose(await h.readF32(x, 2 * D), ref.embed(Uint32Array.from([4, 5]), table, 2, D, V, 1.5), 0, RT);
  });
}

for (const act of ['silu', 'gelu_tanh'] as const) {
  test(`glu ${act}, including large |x|`, async () => {
    const h = await harness();
    const T = 3, I = 20;
    const gu = rand(T * 2 * I, 16, 4);
    gu[0] = 60; gu[1] = -60; gu[2] = -100;
    const out = h.empty(T * I * 4);
    h.ops.glu({ gu: h.upload(gu), out, T, I, act });
    assertClose(await h.readF32(out, T * I), ref.glu(gu, T, I, act), 1e-6, RT);
  });
}
