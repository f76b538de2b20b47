/**
 * Parity of every WGSL kernel in kernels/ (matmul, matmul_tiled,
 * matmul_tiled128 and gemv with their shared matmul_io, rmsnorm, rope, attention
 * (whole and in key slices, with attention_combine), attn_scores, kv_scatter, embed,
 * glu; common holds shared helpers) with its TypeScript twin in
 * src/engine/reference.ts, on SwiftShader through the `webgpu` package.
 * Tolerances: f32 paths within 2e-5 of the largest reference magnitude
 * (f32 summation order differs); packed-f16 paths are compared with a
 * reference fed the same f16-rounded values, so the same bound holds.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ref from '../../src/engine/reference';
import { keyBounds, unmaskScores, type MatmulVariant } from '../../src/engine/ops';
import { floatsToHalves, roundToHalf } from '../../src/engine/f16';
import { assertClose, harness, rand } from '../helpers/gpu';

const RT = 2e-5;

const MATMUL_SHAPES: [number, number, number, MatmulVariant][] = [
  [1, 36, 64, 'reg'], [5, 172, 64, 'reg'], [9, 10, 172, 'reg'],
  // matmul_tiled: ragged tiles in every dimension, K not a multiple of 16.
  [70, 130, 36, 'tiled'], [16, 64, 64, 'tiled'], [33, 10, 172, 'tiled'],
  // matmul_tiled128: ragged in every dimension, both halves of the 8x8 blocks partly outside.
  [130, 140, 36, 'tiled128'], [128, 128, 64, 'tiled128'], [20, 70, 172, 'tiled128'],
  // gemv: 1 to 4 rows of x, N not a multiple of the workgroup's 8 columns, K shorter and longer than 32 vec4s.
  [1, 37, 68, 'gemv'], [3, 200, 172, 'gemv'], [4, 9, 1032, 'gemv'], [2, 8, 4, 'gemv'],
];
const KERNEL_FILE: Record<MatmulVariant, string> = { reg: 'matmul', tiled: 'matmul_tiled', tiled128: 'matmul_tiled128', gemv: 'gemv' };

for (const wDtype of ['f32', 'f16'] as const) {
  for (const [T, N, K, variant] of MATMUL_SHAPES) {
    test(`${KERNEL_FILE[variant]} ${wDtype} T=${T} N=${N} K=${K}, with bias and residual`, async () => {
      const h = await harness();
      const x = rand(T * K, 1);
      let w = rand(N * K, 2);
      if (wDtype === 'f16') w = roundToHalf(w);
      const bias = rand(N, 3);
      const res = rand(T * N, 4);
      const y = h.empty(T * N * 4);
      const wbuf = h.upload(wDtype === 'f16' ? floatsToHalves(w) : w);
      h.ops.matmul({ x: h.upload(x), w: wbuf, wDtype, y, T, N, K, variant });
      assertClose(await h.readF32(y, T * N), ref.matmul(x, w, T, N, K), 0, RT, 'plain');
      h.ops.matmul({ x: h.upload(x), w: wbuf, wDtype, y, T, N, K, variant, bias: h.upload(bias), residual: h.upload(res) });
      assertClose(await h.readF32(y, T * N), ref.matmul(x, w, T, N, K, bias, res), 0, RT, 'bias+residual');
    });
  }
}

test('rmsnorm: plain, (1 + w), strided heads in place, and with residual', async () => {
  const h = await harness();
  const T = 3, D = 16, eps = 1e-6;
  const x = rand(T * D, 5, 3);
  const w = rand(D, 6);
  const y = h.empty(T * D * 4);
  for (const plusOne of [false, true]) {
    h.ops.rmsnorm({ x: h.upload(x), w: h.upload(w), y, T, D, eps, plusOne });
    assertClose(await h.readF32(y, T * D), ref.rmsnorm(x, w, T, D, eps, plusOne), 0, RT, `plusOne=${plusOne}`);
  }
  const res = rand(T * D, 7);
  h.ops.rmsnorm({ x: h.upload(x), w: h.upload(w), y, T, D, eps, plusOne: false, residual: h.upload(res) });
  assertClose(await h.readF32(y, T * D), ref.rmsnorm(x, w, T, D, eps, false, 1, D, 0, res), 0, RT, 'residual');
  // Heads of width 8 at offset 8 inside rows of stride 40 (a fused qkv row), in place.
  const G = 3, HD = 8, stride = 40, offset = 8;
  const qkv = rand(T * stride, 8, 2);
  const wq = rand(HD, 9);
  const buf = h.upload(qkv);
  h.ops.rmsnorm({ x: buf, w: h.upload(wq), T, D: HD, G, stride, offset, eps, plusOne: true });
  const got = await h.readF32(buf, T * stride);
  const normed = ref.rmsnorm(qkv, wq, T, HD, eps, true, G, stride, offset);
  const want = qkv.slice();
  for (let t = 0; t < T; t++) want.set(normed.subarray(t * G * HD, (t + 1) * G * HD), t * stride + offset);
  assertClose(got, want, 0, RT, 'strided in place');
});

for (const interleaved of [true, false]) {
  test(`rope ${interleaved ? 'interleaved' : 'half-split'} on strided heads`, async () => {
    const h = await harness();
    const T = 4, H = 2, HD = 8, stride = 24, offset = 4;
    const x = rand(T * stride, 10);
    const cs = new Float32Array(T * HD);
    for (let t = 0; t < T; t++) for (let i = 0; i < HD / 2; i++) {
      const ang = (t * 7 + 3) * 10000 ** (-(2 * i) / HD);
      cs[2 * (t * HD / 2 + i)] = Math.cos(ang);
      cs[2 * (t * HD / 2 + i) + 1] = Math.sin(ang);
    }
    const buf = h.upload(x);
    h.ops.rope({ x: buf, cs: h.upload(cs), T, H, HD, stride, offset, interleaved });
    assertClose(await h.readF32(buf, T * stride), ref.rope(x, cs, T, H, HD, stride, offset, interleaved), 0, RT);
  });
}

function attnCase(window: number, gapped: boolean) {
  const T = 5, n = 11, H = 4, NKV = 2, HD = 8, qStride = 48, qOffset = 8;
  const kpos = Int32Array.from({ length: n }, (_, j) => (gapped ? [0, 1, 2, 3, 9, 10, 11, 20, 21, 22, 23][j] : j));
  const rows = [1, 4, 6, 9, 10];
  const qpos = Int32Array.from(rows, (r) => kpos[r]);
  return { T, n, H, NKV, HD, qStride, qOffset, kpos, qpos, window, scale: 1 / Math.sqrt(HD),
    q: rand(T * qStride, 11), k: rand(n * NKV * HD, 12), v: rand(n * NKV * HD, 13) };
}

for (const kvDtype of ['f32', 'f16'] as const) {
  for (const [window, gapped] of [[0, false], [0, true], [3, false]] as const) {
    test(`attention ${kvDtype} window=${window} gapped=${gapped}, and raw scores (attn_scores)`, async () => {
      const h = await harness();
      const a = attnCase(window, gapped);
      if (kvDtype === 'f16') { a.k = roundToHalf(a.k); a.v = roundToHalf(a.v); }
      const kv = (x: Float32Array) => h.upload(kvDtype === 'f16' ? floatsToHalves(x) : x);
      const out = h.empty(a.T * a.H * a.HD * 4);
      const common = { q: h.upload(a.q), qStride: a.qStride, qOffset: a.qOffset, k: kv(a.k), kvDtype,
        qpos: h.upload(a.qpos), kpos: h.upload(a.kpos), n: a.n, H: a.H, NKV: a.NKV, HD: a.HD, window, scale: a.scale };
      // Narrowed key ranges (sorted positions) and the full range must both give the reference.
      const narrow = keyBounds(a.kpos, a.n, a.qpos, window);
      assert.ok(narrow.some((v, i) => (i % 2 ? v < a.n : v > 0)), 'bounds actually narrow');
      const full = Uint32Array.from({ length: 2 * a.T }, (_, i) => (i % 2 ? a.n : 0));
      for (const bounds of [narrow, full]) {
        // Unsplit, and the key range in slices merged by attention_combine (more slices than some rows have keys).
        for (const splits of [1, 2, 5]) {
          h.ops.attention({ ...common, v: kv(a.v), out, T: a.T, bounds: h.upload(bounds), splits });
          assertClose(await h.readF32(out, a.T * a.H * a.HD), ref.attention(a), 0, RT, `attention, ${splits} slices`);
        }
      }
      const rows = Uint32Array.from([0, 3, 4]);
      const head = 3;
      const sbuf = h.empty(rows.length * a.n * 4);
      h.ops.attnScores({ ...common, rows: h.upload(rows), R: rows.length, head, out: sbuf });
      const got = unmaskScores(await h.readF32(sbuf, rows.length * a.n));
      const want = new Float32Array(rows.length * a.n);
      rows.forEach((t, r) => want.set(ref.scores(a, t, head), r * a.n));
      assert.ok(got.some((v) => v === -Infinity) === want.some((v) => v === -Infinity), 'mask agrees');
      assertClose(got, want, 0, RT, 'scores');
    });
  }
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

test('keyBounds: sorted positions narrow the scan, unsorted ones scan every row', () => {
  const sorted = Int32Array.from([0, 1, 2, 5, 6, 9]);
  assert.deepEqual([...keyBounds(sorted, 6, [2, 6, 9], 0)], [0, 3, 0, 5, 0, 6]);
  // Window 3: query at 6 sees positions 4..6, i.e. rows 3..4.
  assert.deepEqual([...keyBounds(sorted, 6, [6], 3)], [3, 5]);
  const unsorted = Int32Array.from([0, 1, 7, 2, 3]);
  assert.deepEqual([...keyBounds(unsorted, 5, [2], 0)], [0, 5]);
});
