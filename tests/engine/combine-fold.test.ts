/**
 * attention_combine folded into the output projection (gemv's COMBINE prologue, kernels/gemv_x.wgsl): attention
 * leaves its key slices unmerged (AttentionArgs.leaveSlices) and the GEMV merges them into workgroup memory as
 * its first step. The reference is reference.ts's attention then matmul, on the f16-rounded or dequantized
 * weights the kernel sees; and the same product after attention_combine's launch, which the fold replaces.
 *
 * Cases: 1 and 3 query rows; heads of 8 and 64; 2 to 8 slices, more slices than some rows have visible keys, and a
 * row that sees no key at all (its output is zeros, as unsplit attention gives); scores past 2^128 in base 2;
 * GQA; f32 caches; f32, f16 and Q8_0 weights; a residual; both GEMV kernels. Measured on SwiftShader: max |Δ| /
 * max |ref| up to 5.5e-7 against the reference, 2.0e-7 against the launch it replaces. Tolerance 5e-6.
 * Each of three deliberate faults fails 1 to 3 of the cases: the slices' weights not divided by their sum, the
 * first slice's max taken for the largest (only the large scores show it), the slices of one head read for another.
 * Whole-model decode with the fold: the last test, on a model of random weights with enough cached rows for key
 * slices (the transformers fixtures' few rows never slice): the same logits folded, with attention_combine launched
 * and unfused, and one launch fewer a layer: within 3e-6 of the logits' range (measured at most 2.4e-7).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ref from '../../src/engine/reference';
import { COMBINE_MAX, keyBounds, type GemvVariant, type WeightDType } from '../../src/engine/ops';
import { Engine } from '../../src/engine/engine';
import { loadKernelSources } from '../../src/node/gpu';
import { shapeConfig, syntheticWeights } from '../../src/bench/shapes';
import { assertClose, assertWithinRange, harness, rand, type Harness, relErr, weightMatrix } from '../helpers/gpu';

const RT = 5e-6;

const gemvs = (h: Harness): GemvVariant[] => (h.ops.subgroupMin ? ['gemv', 'gemv_sg'] : ['gemv']);

/**
 * T query rows (the last sees no key when T > 1), H heads of HD over n keys (NKV of them), some visible to each row;
 * q scaled by `big` (scores past 2^128 in base 2 where it is 100: the merge must subtract the slices' max).
 */
function attnCase(T: number, H: number, HD: number, n: number, big = 1) {
  const NKV = H / 2, qStride = (H + 2 * NKV) * HD;
  const kpos = Int32Array.from({ length: n }, (_, j) => j);
  // Rows early and late in the keys: the early one has fewer visible keys than there are slices.
  const qpos = Int32Array.from({ length: T }, (_, t) => (T > 1 && t === T - 1 ? -1 : t === 0 ? n - 1 : 3));
  return { T, n, H, NKV, HD, qStride, qOffset: 0, kpos, qpos, window: 0, scale: 1 / Math.sqrt(HD),
    q: rand(T * qStride, 61, 2 * big), k: rand(n * NKV * HD, 62), v: rand(n * NKV * HD, 63) };
}

for (const [T, H, HD, dtype, big] of [[1, 4, 64, 'f16', 100], [3, 4, 8, 'f32', 1], [1, 8, 32, 'q8_0', 1]] as [number, number, number, WeightDType, number][]) {
  test(`gemv merges attention's key slices as it reads them: ${T} row(s), ${H} heads of ${HD}, ${dtype} weights${big > 1 ? ', large scores' : ''}`, async (t) => {
    const h = await harness();
    const a = attnCase(T, H, HD, 40, big);
    const K = H * HD, N = 37;
    const w = weightMatrix(h, dtype, N, K, 64);
    const res = rand(T * N, 65);
    const want = ref.matmul(ref.attention(a), w.values, T, N, K, undefined, res);
    if (T > 1) assert.ok(ref.attention(a).subarray((T - 1) * H * HD).every((v) => v === 0), 'the last row sees no key');
    const out = h.empty(T * H * HD * 4), y = h.empty(T * N * 4), merged = h.empty(T * N * 4);
    const args = {
      q: h.upload(a.q), qStride: a.qStride, qOffset: 0, k: h.upload(a.k), v: h.upload(a.v), kvDtype: 'f32' as const,
      qpos: h.upload(a.qpos), kpos: h.upload(a.kpos), out, T, n: a.n, H, NKV: a.NKV, HD, window: 0, scale: a.scale,
      bounds: h.upload(keyBounds(a.kpos, a.n, a.qpos, 0)), variant: 'keys' as const,
    };
    for (let splits = 2; splits <= COMBINE_MAX; splits += 3) {
      for (const variant of gemvs(h)) {
        const slices = h.ops.attention({ ...args, splits, leaveSlices: COMBINE_MAX });
        assert.ok(slices && slices.splits === splits && slices.heads === H, `${splits} slices left`);
        h.ops.matmul({ x: slices.part, w: w.buffer, wDtype: dtype, y, T, N, K, residual: h.upload(res), pre: { combine: slices }, variant });
        const got = await h.readF32(y, T * N);
        // The launch the fold replaces: attention_combine into out, then the plain product.
        assert.equal(h.ops.attention({ ...args, splits }), null, 'merged by attention_combine when not left');
        h.ops.matmul({ x: out, w: w.buffer, wDtype: dtype, y: merged, T, N, K, residual: h.upload(res), variant });
        const launched = await h.readF32(merged, T * N);
        const e = relErr(got, want);
        t.diagnostic(`${variant}, ${splits} slices: |Δ| / max|ref| ${e.toExponential(2)} against the reference, ${relErr(got, launched).toExponential(2)} against attention_combine's launch`);
        assertClose(got, want, 0, RT, `${variant}, ${splits} slices`);
        assertClose(got, launched, 0, RT, `${variant}, ${splits} slices, against the launch`);
      }
    }
  });
}

test('slices are left only where they number 2 to leaveSlices; the fold is refused past COMBINE_MAX', async () => {
  const h = await harness();
  const a = attnCase(1, 4, 8, 40);
  const args = {
    q: h.upload(a.q), qStride: a.qStride, qOffset: 0, k: h.upload(a.k), v: h.upload(a.v), kvDtype: 'f32' as const,
    qpos: h.upload(a.qpos), kpos: h.upload(a.kpos), out: h.empty(4 * 32), T: 1, n: a.n, H: 4, NKV: 2, HD: 8, window: 0, scale: a.scale,
    bounds: h.upload(keyBounds(a.kpos, a.n, a.qpos, 0)), variant: 'keys' as const,
  };
  assert.equal(h.ops.attention({ ...args, splits: 1, leaveSlices: 8 }), null, 'one slice: nothing to merge');
  assert.equal(h.ops.attention({ ...args, splits: 5, leaveSlices: 4 }), null, 'more slices than the consumer merges');
  const s = h.ops.attention({ ...args, splits: 4, leaveSlices: 4 });
  assert.ok(s);
  const w = h.upload(rand(8 * 32, 66));
  assert.throws(() => h.ops.matmul({ x: s.part, w, wDtype: 'f32', y: h.empty(32), T: 1, N: 8, K: 32, pre: { combine: { ...s, splits: COMBINE_MAX + 1 } } }), /merges 1 to 8 key slices/);
});

test('Ops.combineFold: only where decode fuses, not when tuned off, and only what the workgroup memory holds', async () => {
  const h = await harness();
  const { ops } = h;
  const saved = [ops.fuse, ops.foldCombine] as const;
  try {
    ops.fuse = true;
    ops.foldCombine = undefined;
    assert.equal(ops.combineFold(1, 2048, 32), COMBINE_MAX, 'Llama-1B: 8 KiB of x');
    assert.equal(ops.combineFold(5, 2048, 32), 0, 'five rows do not fuse');
    assert.equal(ops.combineFold(1, 65536, 64), 0, `256 KiB of x past ${h.gpu.device.limits.maxComputeWorkgroupStorageSize} B`);
    ops.foldCombine = false;
    assert.equal(ops.combineFold(1, 2048, 32), 0);
    ops.foldCombine = undefined;
    ops.fuse = false;
    assert.equal(ops.combineFold(1, 2048, 32), 0);
  } finally {
    [ops.fuse, ops.foldCombine] = saved;
  }
});

test('a fused decode step folds attention_combine into the output projection: the same logits, one launch fewer a layer', async (t) => {
  const h = await harness();
  const c = shapeConfig('tiny-llama');
  const e = Engine.create(h.gpu, loadKernelSources());
  await e.load(c, syntheticWeights(c, 5), { weightDtype: 'f32' });
  const saved = [e.ops.fuse, e.ops.attentionVariant, e.ops.foldCombine] as const;
  try {
    // 300 cached rows: attention_decode cuts a step's 301 keys into 4 slices for its 4 heads.
    const n = 300;
    const cache = e.newCache(n + 1);
    await e.prefill(cache, Array.from({ length: n }, (_, i) => (i * 7 + 3) % c.vocabSize), Array.from({ length: n }, (_, i) => i));
    const step = async (fuse: boolean, foldCombine: boolean, variant: 'keys' | 'lanes' = 'keys') => {
      e.ops.fuse = fuse;
      e.ops.attentionVariant = fuse ? variant : undefined;
      e.ops.foldCombine = foldCombine;
      const before = e.ops.d.count;
      const logits = await e.decode(cache, 5, n);
      cache.truncate(n);
      return { logits, launches: e.ops.d.count - before };
    };
    const folded = await step(true, true), launched = await step(true, false), unfused = await step(false, false);
    // attention_decode's LANES leaves its slices for the fold alike.
    const lanes = await step(true, true, 'lanes');
    assert.equal(lanes.launches, folded.launches, 'lanes folded too');
    for (const [name, other] of [['attention_combine launched', launched], ['unfused', unfused], ['lanes, folded', lanes]] as const) {
      const err = assertWithinRange(folded.logits, other.logits, 3e-6, `folded against ${name}`);
      t.diagnostic(`folded against ${name}: max |Δlogit| / range ${err.toExponential(2)}`);
    }
    assert.equal(launched.launches - folded.launches, c.nLayers, `${folded.launches} launches folded, ${launched.launches} not`);
    cache.destroy();
  } finally {
    [e.ops.fuse, e.ops.attentionVariant, e.ops.foldCombine] = saved;
    e.destroy();
  }
});
