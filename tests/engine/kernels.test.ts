/**
 * Parity of every WGSL kernel in kernels/ (matmul, matmul_tiled,
 * matmul_tiled128 and gemv with their shared matmul_io, rmsnorm, attention
 * and attention_tiled (and attention_tiled_sg, its row groups of subgroup lanes sharing rows or splitting one; both
 * with attention_tile) with their shared attention_io (whole and in key slices, with attention_combine), attn_scores, kv_scatter, embed,
 * glu; argmax has its own file; common holds shared helpers) with its TypeScript twin in
 * src/engine/reference.ts, on SwiftShader through the `webgpu` package.
 * Tolerances: f32 paths within 2e-5 of the largest reference magnitude
 * (f32 summation order differs); packed-f16 paths are compared with a
 * reference fed the same f16-rounded values, so the same bound holds.
 * Matrices split in row parts (what GpuModel does with one larger than a
 * buffer may be) are held to the same bound, and to equal bits with the
 * unsplit kernel. attention_tiled is held to 2e-6 (TILED_RT).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ref from '../../src/engine/reference';
import { keyBounds, LANES_MAX_HEAD, unmaskScores, type MatmulVariant, type TiledLanes, type WeightMatrix } from '../../src/engine/ops';
import { splitRows } from '../../src/engine/model/gpu-plan';
import { floatsToHalves, halvesToFloats, roundToHalf } from '../../src/engine/f16';
import { assertClose, harness, rand, type Harness } from '../helpers/gpu';

const RT = 2e-5;
/**
 * attention_tiled's bound, relative like RT: about 10x its worst error on SwiftShader (2.0e-7 of the largest output);
 * attention_tiled_sg's is 1.8e-7 there and on lavapipe, at two and four lanes a row group.
 */
const TILED_RT = 2e-6;
/** attention_decode's bound, relative like RT: about 10x its worst error on SwiftShader (4.6e-7 of the largest output). */
const KEYS_RT = 5e-6;
/** attention_decode's LANES, relative like RT: about 10x its worst error on SwiftShader (2.8e-7 of the largest output). */
const LANES_RT = 3e-6;
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

/**
 * attention_tiled's row groups that run on this device for heads of HD: one lane; and 2 or 4 (attention_tiled_sg)
 * where its subgroups have that many lanes and the head splits into that many vec4 shares, holding as many rows, or
 * one. SwiftShader's subgroups of 4 run all for heads of 64, pairs for heads of 8; a device without subgroups must
 * refuse them clearly.
 */
function tiledGroups(h: Harness, HD: number): { tiledLanes: TiledLanes; tiledRows: number }[] {
  if (!h.ops.subgroupMin) {
    const b = h.empty(64);
    const args = { q: b, k: b, v: b, qpos: b, kpos: b, out: b, bounds: b, qStride: 8, qOffset: 0, kvDtype: 'f32' as const, T: 1, n: 1, H: 1, NKV: 1, HD: 8, window: 0, scale: 1 };
    assert.throws(() => h.ops.attention({ ...args, variant: 'tiled', tiledLanes: 2 }), /lanes a row group need subgroups/);
  }
  const lanes = ([1, 2, 4] as const).filter((r) => h.ops.takesTiledLanes(HD, r));
  return lanes.flatMap((r): { tiledLanes: TiledLanes; tiledRows: number }[] => (r === 1 ? [{ tiledLanes: r, tiledRows: 1 }] : [{ tiledLanes: r, tiledRows: r }, { tiledLanes: r, tiledRows: 1 }]));
}
const groupText = (g: { tiledLanes: number; tiledRows: number }) => `${g.tiledLanes} lane(s) holding ${g.tiledRows} row(s)`;

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

const maxAbsDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
  return d;
};

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
        t.diagnostic(`${m.parts.map((p) => p.rows).join('+')} rows${extra.bias ? ', bias+residual' : ''}: max |Δ| vs reference ${maxAbsDiff(got, want).toExponential(2)} (max |ref| ${maxAbsDiff(want, new Float32Array(want.length)).toFixed(2)})`);
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
        // One or four query rows per invocation (T = 5 leaves a partial group of four).
        for (const splits of [1, 2, 5]) {
          for (const rowsPerThread of [1, 4] as const) {
            h.ops.attention({ ...common, v: kv(a.v), out, T: a.T, bounds: h.upload(bounds), splits, rowsPerThread, variant: 'rows' });
            assertClose(await h.readF32(out, a.T * a.H * a.HD), ref.attention(a), 0, RT, `attention, ${splits} slices, ${rowsPerThread} rows a thread`);
          }
          // attention_tiled: one tile wider than all 11 keys, and tiles of 4 (11 is not a multiple); with pairs of
          // lanes a row group too (attention_tiled_sg; a head of 8 has two vec4s, one a lane).
          for (const keysPerTile of [undefined, 4, 32]) {
            for (const g of tiledGroups(h, a.HD)) {
              h.ops.attention({ ...common, v: kv(a.v), out, T: a.T, bounds: h.upload(bounds), splits, variant: 'tiled', keysPerTile, ...g });
              assertClose(await h.readF32(out, a.T * a.H * a.HD), ref.attention(a), 0, TILED_RT, `attention_tiled, ${splits} slices, ${keysPerTile ?? 'default'} keys a tile, ${groupText(g)}`);
            }
          }
          // attention_decode: a head of 8 (32 value groups), 11 keys in a round of 64 or 256.
          for (const keysPerThread of [1, 4] as const) {
            h.ops.attention({ ...common, v: kv(a.v), out, T: a.T, bounds: h.upload(bounds), splits, variant: 'keys', keysPerThread });
            assertClose(await h.readF32(out, a.T * a.H * a.HD), ref.attention(a), 0, KEYS_RT, `attention_decode, ${splits} slices, ${keysPerThread} keys an invocation`);
          }
          // Its LANES: 11 keys over 64 invocations, most of which see none.
          h.ops.attention({ ...common, v: kv(a.v), out, T: a.T, bounds: h.upload(bounds), splits, variant: 'lanes' });
          assertClose(await h.readF32(out, a.T * a.H * a.HD), ref.attention(a), 0, LANES_RT, `attention_decode (lanes), ${splits} slices`);
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

/**
 * A larger case for attention_tiled, on a 64-wide head: 70 query rows (a full workgroup and a ragged one), scattered
 * and out of order, one of them seeing no key at all; 75 keys with gapped positions, in order or in shuffled chunks
 * (as linked chunks can be); GQA 3:1; strided q with an offset.
 */
function tiledCase(window: number, shuffled: boolean) {
  const T = 70, n = 75, H = 6, NKV = 2, HD = 64, qStride = (H + 2 * NKV) * HD + 8, qOffset = 8;
  const sorted = Array.from({ length: n }, (_, j) => j + 3 * Math.floor(j / 10));
  // Chunks of 15 keys in the order 3, 0, 4, 1, 2.
  const kpos = Int32Array.from(shuffled ? [3, 0, 4, 1, 2].flatMap((c) => sorted.slice(15 * c, 15 * c + 15)) : sorted);
  const order = rand(T, 31);
  const qpos = Int32Array.from({ length: T }, (_, t) => (t === 40 ? -1 : kpos[Math.floor((order[t] * 0.5 + 0.5) * n)]));
  return { T, n, H, NKV, HD, qStride, qOffset, kpos, qpos, window, scale: 1 / Math.sqrt(HD),
    q: rand(T * qStride, 32), k: rand(n * NKV * HD, 33), v: rand(n * NKV * HD, 34) };
}

for (const kvDtype of ['f32', 'f16'] as const) {
  for (const [window, shuffled] of [[0, false], [7, false], [0, true], [9, true]] as const) {
    test(`attention_tiled ${kvDtype} window=${window} shuffled=${shuffled}: ragged blocks, scattered rows, several tiles`, async () => {
      const h = await harness();
      const a = tiledCase(window, shuffled);
      if (kvDtype === 'f16') { a.k = roundToHalf(a.k); a.v = roundToHalf(a.v); }
      const kv = (x: Float32Array) => h.upload(kvDtype === 'f16' ? floatsToHalves(x) : x);
      const out = h.empty(a.T * a.H * a.HD * 4);
      const want = ref.attention(a);
      assert.ok(want.subarray(40 * a.H * a.HD, 41 * a.H * a.HD).every((x) => x === 0), 'row 40 sees no key');
      const args = { q: h.upload(a.q), qStride: a.qStride, qOffset: a.qOffset, k: kv(a.k), v: kv(a.v), kvDtype,
        qpos: h.upload(a.qpos), kpos: h.upload(a.kpos), out, T: a.T, n: a.n, H: a.H, NKV: a.NKV, HD: a.HD, window, scale: a.scale,
        bounds: h.upload(keyBounds(a.kpos, a.n, a.qpos, window)) };
      h.ops.attention({ ...args, variant: 'rows', splits: 1 });
      assertClose(await h.readF32(out, want.length), want, 0, RT, 'attention (rows)');
      // The full key range too, where the mask alone hides what sorted bounds would skip.
      for (const bounds of [args.bounds, h.upload(Uint32Array.from({ length: 2 * a.T }, (_, i) => (i % 2 ? a.n : 0)))]) {
        // 12 keys a tile: 75 keys in 7 tiles, the last partial.
        // attention_tiled_sg: 70 rows in groups of 2 or 4 (the last group of 4 half past T), 4 or 2 vec4s a lane; or
        // one row a group, in blocks of 32 or 16 rows (70 rows: three blocks and a ragged one, or five).
        for (const keysPerTile of [undefined, 12, 32]) {
          for (const splits of [1, 3]) {
            for (const g of tiledGroups(h, a.HD)) {
              h.ops.attention({ ...args, bounds, variant: 'tiled', keysPerTile, splits, ...g });
              assertClose(await h.readF32(out, want.length), want, 0, TILED_RT, `attention_tiled, ${splits} slices, ${keysPerTile ?? 'default'} keys a tile, ${groupText(g)}`);
            }
          }
        }
        // attention_decode on the same rows: 75 keys in a full and a partial round of 64, or in one of 128, 4 value groups.
        for (const splits of [1, 3]) {
          for (const keysPerThread of [1, 2] as const) {
            h.ops.attention({ ...args, bounds, variant: 'keys', splits, keysPerThread });
            assertClose(await h.readF32(out, want.length), want, 0, KEYS_RT, `attention_decode, ${splits} slices, ${keysPerThread} keys an invocation`);
          }
          h.ops.attention({ ...args, bounds, variant: 'lanes', splits });
          assertClose(await h.readF32(out, want.length), want, 0, LANES_RT, `attention_decode (lanes), ${splits} slices`);
        }
      }
    });
  }
}

/**
 * Decode as attention_decode meets it: 3 query rows (one seeing no key) against 300 keys (gapped positions, in
 * rounds of 64, 256 or 512 keys), GQA 2:1, for heads of 256 (one value group, as Gemma 3), 80 (3 groups of 20
 * and 4 idle invocations) and 64.
 */
for (const HD of [256, 80, 64]) {
  for (const window of [0, 50]) {
    test(`attention_decode f32/f16 head=${HD} window=${window}: a workgroup per row over 300 keys, in slices`, async () => {
      const h = await harness();
      const T = 3, n = 300, H = 4, NKV = 2, qStride = (H + 2 * NKV) * HD, qOffset = 0;
      const kpos = Int32Array.from({ length: n }, (_, j) => j + Math.floor(j / 7));
      const qpos = Int32Array.from([kpos[n - 1], -1, kpos[130]]);
      for (const kvDtype of ['f32', 'f16'] as const) {
        const a = { T, n, H, NKV, HD, qStride, qOffset, kpos, qpos, window, scale: 1 / Math.sqrt(HD),
          q: rand(T * qStride, 41), k: rand(n * NKV * HD, 42), v: rand(n * NKV * HD, 43) };
        if (kvDtype === 'f16') { a.k = roundToHalf(a.k); a.v = roundToHalf(a.v); }
        const kv = (x: Float32Array) => h.upload(kvDtype === 'f16' ? floatsToHalves(x) : x);
        const want = ref.attention(a);
        assert.ok(want.subarray(H * HD, 2 * H * HD).every((x) => x === 0), 'row 1 sees no key');
        const out = h.empty(want.length * 4);
        const args = { q: h.upload(a.q), qStride, qOffset, k: kv(a.k), v: kv(a.v), kvDtype, qpos: h.upload(qpos), kpos: h.upload(kpos),
          out, T, n, H, NKV, HD, window, scale: a.scale, bounds: h.upload(keyBounds(kpos, n, qpos, window)) };
        // Rounds of 64 keys (four full and a partial one), and of 256 or 512 (one full and a partial, or one partial).
        for (const splits of [1, 2, 7]) {
          for (const keysPerThread of [1, 4, 8] as const) {
            h.ops.attention({ ...args, variant: 'keys', splits, keysPerThread });
            assertClose(await h.readF32(out, want.length), want, 0, KEYS_RT, `attention_decode ${kvDtype}, ${splits} slices, ${keysPerThread} keys an invocation`);
          }
          // LANES (heads of at most 64): 300 keys over 64 invocations, four or five each, or one slice of 43 keys.
          if (HD <= LANES_MAX_HEAD) {
            h.ops.attention({ ...args, variant: 'lanes', splits });
            assertClose(await h.readF32(out, want.length), want, 0, LANES_RT, `attention_decode (lanes) ${kvDtype}, ${splits} slices`);
          } else {
            assert.throws(() => h.ops.attention({ ...args, variant: 'lanes', splits }), /at most 64/);
          }
        }
      }
    });
  }
}

// attention_combine gives each row and head a workgroup of 64: more slices than invocations (each walks several),
// slices past the 512 whose weights workgroup memory keeps, slices with no key, a row with none at all, and a head
// wider than the workgroup (512: 128 vec4s, one group). Measured on SwiftShader: at most 1.4e-7 of the largest
// output; the bound is about 10x that.
const COMBINE_RT = 1.5e-6;
for (const [HD, variant] of [[64, 'keys'], [80, 'keys'], [512, 'rows']] as const) {
  test(`attention_combine merges many key slices (head ${HD}, ${variant})`, async (t) => {
    const h = await harness();
    const T = 3, n = 1100, H = 4, NKV = 2, qStride = (H + 2 * NKV) * HD;
    const kpos = Int32Array.from({ length: n }, (_, j) => j);
    const qpos = Int32Array.from([n - 1, -1, 700]);
    // Scores large enough that a slice's max, not the first one's, must set the scale.
    const a = { T, n, H, NKV, HD, qStride, qOffset: 0, kpos, qpos, window: 0, scale: 4 / Math.sqrt(HD),
      q: rand(T * qStride, 51), k: rand(n * NKV * HD, 52), v: rand(n * NKV * HD, 53) };
    // Key 1000 scores hundreds for row 0's head 0, where only a slice past the first 64 holds it: 2^(m_s - M)
    // overflows unless M is the largest of all slices' maxima.
    for (let d = 0; d < HD; d++) a.k[1000 * NKV * HD + d] = 40 * a.q[d];
    const want = ref.attention(a);
    const out = h.empty(want.length * 4);
    const args = { q: h.upload(a.q), qStride, qOffset: 0, k: h.upload(a.k), v: h.upload(a.v), kvDtype: 'f32' as const, qpos: h.upload(qpos), kpos: h.upload(kpos),
      out, T, n, H, NKV, HD, window: 0, scale: a.scale, bounds: h.upload(keyBounds(kpos, n, qpos, 0)), variant };
    for (const splits of [65, 300, 600]) {
      h.ops.attention({ ...args, splits });
      const got = await h.readF32(out, want.length);
      t.diagnostic(`${splits} slices: largest difference ${maxAbsDiff(got, want).toExponential(2)} of the largest output ${maxAbsDiff(want, new Float32Array(want.length)).toFixed(2)}`);
      assertClose(got, want, 0, COMBINE_RT, `${variant}, head ${HD}, ${splits} slices`);
    }
  });
}

test('on GPUs attention_tiled is the default once rows fill a workgroup and attention_decode below; never on CPU adapters', async () => {
  const { ops } = await harness();
  const was = ops.matmulProfile;
  try {
    ops.matmulProfile = 'gpu';
    assert.deepEqual([ops.pickAttention(1016, 64), ops.pickAttention(4, 64), ops.pickAttention(1, 256), ops.pickAttention(2048, 4096)], ['tiled', 'keys', 'keys', 'rows']);
    ops.matmulProfile = 'cpu';
    assert.equal(ops.pickAttention(1016, 64), 'rows');
  } finally {
    ops.matmulProfile = was;
  }
});

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
