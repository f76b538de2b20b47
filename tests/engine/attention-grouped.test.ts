/**
 * attention_grouped.wgsl, decode attention for a kv head's 2 to 4 q heads in one workgroup, against reference.ts's
 * attention (f16 caches against a reference fed the same rounded keys and values): groups of 2, 3 and 4; heads of
 * 8, 40 and 64; 1 and 3 query rows, one seeing no key and one seeing part of them; gapped positions; a window; f32
 * and f16 caches; one slice, several (merged by attention_combine), more slices than some rows have keys; scores
 * past 2^128 in base 2, so each head's merge must take its own max. Measured on SwiftShader: at most 8.4e-7 of the
 * largest output; the bound GROUPED_RT is about 10x that. Each of three deliberate faults fails cases: a head's
 * merge reading another head's maxima, a q head taken from the wrong kv group, the accumulators not rescaled by
 * their invocation's share. Where it is refused: heads over 64, groups of 1 or over 4. attention_lanes.wgsl, the walk
 * and merge it shares with attention_decode's LANES: both kernels include it, and they agree on the same heads.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ref from '../../src/engine/reference';
import { keyBounds } from '../../src/engine/ops';
import { preprocess } from '../../src/engine/gpu/kernels';
import { loadKernelSources } from '../../src/node/gpu';
import { assertClose, harness, rand } from '../helpers/gpu';
import { groupedParity } from '../helpers/grouped-attention';

const GROUPED_RT = 9e-6;

for (const [QG, NKV, HD] of [[2, 2, 64], [3, 3, 40], [4, 2, 8], [4, 1, 64]] as const) {
  test(`attention_grouped: groups of ${QG}, ${NKV} kv heads of ${HD}, f32 and f16, in slices and with a window`, async (t) => {
    // One slice; two and seven; 300, more than the early row's keys, and past the key count a slice of 64 would give.
    const worst = await groupedParity({ QG, NKV, HD, variant: 'grouped', splits: [undefined, 1, 2, 7, 300], bound: GROUPED_RT, seeds: [61 + QG, 62, 63] });
    t.diagnostic(`largest difference ${worst.toExponential(2)} of the largest output`);
  });
}

test('attention_grouped is offered and refused by head width and group size', async () => {
  const { ops } = await harness();
  assert.deepEqual(ops.decodeKernels(64, 4), ['keys', 'lanes', 'grouped', 'grouped-keys', 'rows']);
  assert.deepEqual(ops.decodeKernels(64, 3), ['keys', 'lanes', 'grouped', 'grouped-keys', 'rows']);
  assert.deepEqual(ops.decodeKernels(64, 1), ['keys', 'lanes', 'rows'], 'no group: lanes is the same');
  assert.deepEqual(ops.decodeKernels(64, 7), ['keys', 'lanes', 'grouped-keys', 'rows'], 'seven heads would take 448 invocations');
  assert.deepEqual(ops.decodeKernels(128, 4), ['keys', 'grouped-keys', 'rows'], 'a head of 128 does not fit the registers');
  const h = await harness();
  const args = (H: number, NKV: number, HD: number) => ({ q: h.empty(4 * H * HD), qStride: H * HD, qOffset: 0, k: h.empty(64 * NKV * HD), v: h.empty(64 * NKV * HD), kvDtype: 'f32' as const,
    qpos: h.empty(4), kpos: h.empty(64), out: h.empty(4 * H * HD), T: 1, n: 16, H, NKV, HD, window: 0, scale: 1, bounds: h.empty(8), variant: 'grouped' as const });
  assert.throws(() => h.ops.attention(args(4, 4, 64)), /groups of 2 to 4/);
  assert.throws(() => h.ops.attention(args(7, 1, 64)), /groups of 2 to 4/);
  assert.throws(() => h.ops.attention(args(4, 2, 128)), /heads of 128/);
});

test('attention_lanes.wgsl: attention_decode\'s LANES and attention_grouped walk and merge with it, and agree on the same heads', async () => {
  const sources = loadKernelSources();
  const base = { HD4: 16, KV_F16: false, SPLIT: true, STEP: false, INTERLEAVED: false };
  const has = (wgsl: string) => wgsl.includes('fn lanes_walk(') && wgsl.includes('fn lanes_merge(');
  assert.ok(has(preprocess('attention_grouped', sources, { ...base, QG: 3, WGS: 192 })));
  assert.ok(has(preprocess('attention_decode', sources, { ...base, KPT: 1, QG: 1, LANES: true, QKNORM: false })));
  assert.ok(!has(preprocess('attention_decode', sources, { ...base, KPT: 1, QG: 1, LANES: false, QKNORM: false })), 'attention_decode in rounds does not walk in lanes');
  // Both over the same rows: one head a workgroup (LANES, 8 vec4s merged at a time) or three (grouped, 2 at a time).
  const h = await harness();
  const T = 2, n = 257, H = 6, NKV = 2, HD = 64, qStride = (H + 2 * NKV) * HD;
  const kpos = Int32Array.from({ length: n }, (_, j) => j);
  const qpos = Int32Array.from([n - 1, 100]);
  const a = { T, n, H, NKV, HD, qStride, qOffset: 0, kpos, qpos, window: 0, scale: 1 / Math.sqrt(HD), q: rand(T * qStride, 71), k: rand(n * NKV * HD, 72), v: rand(n * NKV * HD, 73) };
  const want = ref.attention(a);
  const args = { q: h.upload(a.q), qStride, qOffset: 0, k: h.upload(a.k), v: h.upload(a.v), kvDtype: 'f32' as const, qpos: h.upload(qpos), kpos: h.upload(kpos),
    T, n, H, NKV, HD, window: 0, scale: a.scale, bounds: h.upload(keyBounds(kpos, n, qpos, 0)), splits: 3 };
  const outs = [];
  for (const variant of ['lanes', 'grouped'] as const) {
    const out = h.empty(want.length * 4);
    h.ops.attention({ ...args, out, variant });
    outs.push(await h.readF32(out, want.length));
  }
  assertClose(outs[1], outs[0], 0, GROUPED_RT, 'grouped against LANES');
  assertClose(outs[0], want, 0, GROUPED_RT, 'LANES against the reference');
});
