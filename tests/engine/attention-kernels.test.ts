/**
 * Parity of the attention kernels with their TypeScript twin (src/engine/reference.ts), on SwiftShader through the
 * `webgpu` package: attention.wgsl (rows), attention_tiled and attention_tiled_sg (row groups of subgroup lanes
 * sharing rows or splitting one; both with attention_tile), attention_decode (keys, lanes), all with their shared
 * attention_io, whole and in key slices merged by attention_combine; attn_scores; and which kernel each adapter
 * profile picks. The other kernels are in kernels.test.ts. Tolerances are relative to the largest reference
 * magnitude, each about 10x the worst error measured on SwiftShader (below); f16 keys and values are compared with
 * a reference fed the same f16-rounded values.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ref from '../../src/engine/reference';
import { keyBounds, LANES_MAX_HEAD, unmaskScores, type TiledLanes } from '../../src/engine/ops';
import { floatsToHalves, roundToHalf } from '../../src/engine/f16';
import { assertClose, harness, rand, relErr, type Harness } from '../helpers/gpu';

/** attention.wgsl's and attn_scores' bound: about 10x their worst error (1.4e-7 of the largest output on SwiftShader, 2.0e-7 on llvmpipe). */
const RT = 2e-6;
/**
 * attention_tiled's bound: about 10x its worst error on SwiftShader (2.0e-7 of the largest output);
 * attention_tiled_sg's is 1.8e-7 there and on lavapipe, at two and four lanes a row group.
 */
const TILED_RT = 2e-6;
/** attention_decode's bound: about 10x its worst error on SwiftShader (4.6e-7 of the largest output). */
const KEYS_RT = 5e-6;
/** attention_decode's LANES: about 10x its worst error on SwiftShader (2.8e-7 of the largest output). */
const LANES_RT = 3e-6;

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
      t.diagnostic(`${splits} slices: |Δ| / max|ref| ${relErr(got, want).toExponential(2)}`);
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
