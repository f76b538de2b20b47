/**
 * attention_decode's STEP (AttentionArgs.step): a decode step's one row with rope_scatter's work folded into its
 * attention, against the two launches it replaces, rope_scatter then attention_decode (each parity-tested against
 * the TypeScript reference in rope-scatter.test.ts and attention-kernels.test.ts). Same output, same cache afterwards, for
 * GQA, both RoPE styles, f32 and f16 caches, heads of 8 to 256, key slices, keys a thread, a window, and the
 * step's row at the end of the cache or amid rows out of order, in rounds ('keys') or each invocation walking keys of
 * its own ('lanes'; 'grouped', a kv head's q heads a workgroup), and in rounds for a kv head's q heads at once
 * ('grouped-keys', with the q/k norm too). The step's cache row holds garbage beforehand:
 * the fused launch must take that row's key and value from the step, not from the cache. With Gemma 3's q/k norm
 * (AttentionStep.qkNorm), the same against two rmsnorm launches in place before the two.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { floatsToHalves, halvesToFloats } from '../../src/engine/f16';
import { inverseFrequencies, ropeTable } from '../../src/engine/model/rope';
import { keyBounds, keysSplits, type KeysPerThread } from '../../src/engine/ops';
import type { ModelConfig } from '../../src/engine';
import { assertClose, harness, rand } from '../helpers/gpu';

const H = 4, NKV = 2, N = 40;
// Out against the two launches: 0 measured on SwiftShader (the same f32 arithmetic in the same order); the bound
// leaves room for a compiler contracting the rotation into fused multiply-adds in one kernel and not the other.
// With the q/k norm folded in, at most 1.5e-7 of the largest output (its squares summed in another order than
// rmsnorm.wgsl's): the bound is about 7x that. An f16 cache's keys then agree here; on another adapter a key could
// round to the neighbouring half. LANES sums its keys in another order than the two launches' rounds: at most 1.5e-7
// there too.
const RT = 1e-6;

const cases = [
  { HD: 8, interleaved: false, kv: 'f32', splits: 1, kpt: 1, window: 0, where: 'last' },
  { HD: 64, interleaved: false, kv: 'f16', splits: 3, kpt: 1, window: 0, where: 'last' },
  { HD: 64, interleaved: true, kv: 'f32', splits: 2, kpt: 4, window: 9, where: 'last' },
  { HD: 64, interleaved: true, kv: 'f16', splits: 1, kpt: 2, window: 0, where: 'amid' },
  { HD: 256, interleaved: false, kv: 'f16', splits: 4, kpt: 1, window: 0, where: 'amid' },
  { HD: 256, interleaved: true, kv: 'f32', splits: 1, kpt: 8, window: 17, where: 'last' },
  // Gemma 3's q/k norm folded in too (QKNORM), against two rmsnorm launches before the other two.
  { HD: 256, interleaved: false, kv: 'f16', splits: 4, kpt: 1, window: 0, where: 'last', qkNorm: 'plus one' },
  { HD: 64, interleaved: true, kv: 'f32', splits: 1, kpt: 2, window: 9, where: 'amid', qkNorm: 'plain' },
  { HD: 8, interleaved: false, kv: 'f32', splits: 2, kpt: 1, window: 0, where: 'amid', qkNorm: 'plus one' },
  // The step in attention_decode's LANES (each invocation its own keys), against the same two launches.
  { HD: 64, interleaved: false, kv: 'f16', splits: 3, kpt: 1, window: 0, where: 'last', lanes: true },
  { HD: 64, interleaved: true, kv: 'f32', splits: 1, kpt: 1, window: 9, where: 'amid', qkNorm: 'plain', lanes: true },
  { HD: 8, interleaved: false, kv: 'f32', splits: 2, kpt: 1, window: 0, where: 'amid', qkNorm: 'plus one', lanes: true },
  // The step in attention_grouped (a kv head's two q heads a workgroup; no q/k norm there).
  { HD: 64, interleaved: false, kv: 'f16', splits: 3, kpt: 1, window: 0, where: 'last', grouped: true },
  { HD: 64, interleaved: true, kv: 'f32', splits: 1, kpt: 1, window: 9, where: 'amid', grouped: true },
  { HD: 8, interleaved: false, kv: 'f32', splits: 2, kpt: 1, window: 0, where: 'amid', grouped: true },
  // The step in attention_decode's rounds for a kv head's two q heads at once ('grouped-keys'), with and without the q/k norm.
  { HD: 256, interleaved: false, kv: 'f16', splits: 4, kpt: 1, window: 0, where: 'last', qkNorm: 'plus one', groupedKeys: true },
  { HD: 128, interleaved: true, kv: 'f16', splits: 3, kpt: 8, window: 0, where: 'last', groupedKeys: true },
  { HD: 64, interleaved: true, kv: 'f32', splits: 1, kpt: 2, window: 9, where: 'amid', groupedKeys: true },
  { HD: 8, interleaved: false, kv: 'f32', splits: 2, kpt: 4, window: 0, where: 'amid', qkNorm: 'plain', groupedKeys: true },
] as { HD: number; interleaved: boolean; kv: 'f32' | 'f16'; splits: number; kpt: number; window: number; where: 'last' | 'amid'; qkNorm?: 'plain' | 'plus one'; lanes?: boolean; grouped?: boolean; groupedKeys?: boolean }[];

for (const c of cases) {
  test(`a step's ${c.qkNorm ? `q/k norm (${c.qkNorm}), ` : ''}RoPE and cache write inside ${c.grouped ? 'attention_grouped' : `attention_decode${c.lanes ? ' (lanes)' : c.groupedKeys ? ' (a kv head\'s q heads)' : ''}`}: head ${c.HD}, ${c.interleaved ? 'interleaved' : 'half-split'}, ${c.kv} cache, ${c.splits} slice(s), ${c.kpt} key(s) a thread, window ${c.window}, its row ${c.where}`, async (t) => {
    const h = await harness();
    const { HD } = c;
    const qDim = H * HD, kvDim = NKV * HD, W = qDim + 2 * kvDim;
    // Cache rows at positions 0..N-1 in order, the step's row last; or rows out of order, the step's amid them.
    const kposArr = c.where === 'last' ? Int32Array.from({ length: N }, (_, i) => i) : Int32Array.from({ length: N }, (_, i) => (i * 17) % N);
    const row = c.where === 'last' ? N - 1 : 13;
    const qp = kposArr[row];
    const [first, last] = keyBounds(kposArr, N, [qp], c.window);
    const qkv = rand(W, 5 + HD, 2);
    const keys = rand(N * kvDim, 7 + HD), values = rand(N * kvDim, 9 + HD);
    // Garbage where the step's key and value will go.
    keys.fill(1e4, row * kvDim, (row + 1) * kvDim);
    values.fill(-3e3, row * kvDim, (row + 1) * kvDim);
    const inv = inverseFrequencies({ headDim: HD, ropeTheta: 10000 } as ModelConfig, 'global');
    const cs = h.upload(ropeTable(inv, Array.from({ length: N }, (_, i) => i)));
    const kvBuf = (a: Float32Array) => h.upload(c.kv === 'f16' ? floatsToHalves(a) : a);
    const readKV = async (b: GPUBuffer) => (c.kv === 'f16' ? halvesToFloats(new Uint16Array(await h.ops.d.read(b, 0, N * kvDim * 2))) : h.readF32(b, N * kvDim));
    const kpos = h.upload(kposArr);
    const common = { qStride: W, qOffset: 0, kvDtype: c.kv, kpos, n: N, H, NKV, HD, window: c.window, scale: 1 / Math.sqrt(HD), T: 1, variant: 'keys', splits: c.splits, keysPerThread: c.kpt as KeysPerThread } as const;

    // Norm weights about 1 (Gemma adds 1 to its own, stored about 0), the q norm's then the k norm's.
    const plusOne = c.qkNorm === 'plus one';
    const normW = rand(2 * HD, 11 + HD, 0.5).map((v) => v + (plusOne ? 0 : 1));
    const qkNorm = c.qkNorm ? { w: h.upload(normW), eps: 1e-6, plusOne } : undefined;

    // Two launches: rope_scatter, then attention_decode (and before them, with a q/k norm, two rmsnorm in place).
    const x1 = h.upload(qkv), k1 = kvBuf(keys), v1 = kvBuf(values), out1 = h.empty(qDim * 4);
    const qposB = h.upload(Int32Array.from([qp])), idx = h.upload(Uint32Array.from([row])), bounds = h.upload(Uint32Array.from([first, last]));
    if (qkNorm) {
      const norm = { x: x1, w: qkNorm.w, T: 1, D: HD, stride: W, eps: qkNorm.eps, plusOne };
      h.ops.rmsnorm({ ...norm, G: H, offset: 0 });
      h.ops.rmsnorm({ ...norm, G: NKV, offset: qDim, wOffset: HD });
    }
    h.ops.ropeScatter({ x: x1, cs, csRows: h.upload(Uint32Array.from([qp])), idx, dstK: k1, dstV: v1, dstDtype: c.kv, T: 1, H, NKV, HD, stride: W, interleaved: c.interleaved });
    h.ops.attention({ ...common, q: x1, k: k1, v: v1, qpos: qposB, bounds, out: out1 });

    // One launch: the step.
    const x2 = h.upload(qkv), k2 = kvBuf(keys), v2 = kvBuf(values), out2 = h.empty(qDim * 4);
    h.ops.attention({ ...common, ...(c.lanes ? { variant: 'lanes' } : c.grouped ? { variant: 'grouped' } : c.groupedKeys ? { variant: 'grouped-keys' } : {}), q: x2, k: k2, v: v2, qpos: qposB, bounds, out: out2, step: { cs, qp, row, first, last, interleaved: c.interleaved, qkNorm } });

    const [o1, o2] = [await h.readF32(out1, qDim), await h.readF32(out2, qDim)];
    let worst = 0;
    for (let i = 0; i < qDim; i++) worst = Math.max(worst, Math.abs(o1[i] - o2[i]));
    t.diagnostic(`largest difference from the two launches: ${worst.toExponential(2)} (keys ${first}..${last})`);
    assertClose(o2, o1, 0, RT, 'attention output');
    assert.ok(o1.some((v) => v !== 0), 'the step attends to something');
    // The cache afterwards: the step's row holds its rotated key and its value, every other row as it was.
    assertClose(await readKV(k2), await readKV(k1), 0, RT, 'cached keys');
    assert.deepEqual(await readKV(v2), await readKV(v1), 'cached values');
  });
}

test('a step cuts the keys it scans into slices, not the whole cache: on a sliding-window layer, its window', async () => {
  const h = await harness();
  const HD = 8, n = 4096, window = 512, W = (H + 2 * NKV) * HD;
  const kposArr = Int32Array.from({ length: n }, (_, i) => i);
  const row = n - 1, qp = row;
  const [first, last] = keyBounds(kposArr, n, [qp], window);
  assert.equal(last - first, window);
  const inv = inverseFrequencies({ headDim: HD, ropeTheta: 10000 } as ModelConfig, 'global');
  const slices = h.ops.attention({
    q: h.upload(rand(W, 3)), qStride: W, qOffset: 0, k: h.upload(rand(n * NKV * HD, 4)), v: h.upload(rand(n * NKV * HD, 6)), kvDtype: 'f32',
    qpos: h.empty(4), kpos: h.upload(kposArr), out: h.empty(H * HD * 4), T: 1, n, H, NKV, HD, window, scale: 1, bounds: h.empty(8),
    variant: 'keys', keysPerThread: 1, leaveSlices: 1 << 20,
    step: { cs: h.upload(ropeTable(inv, Array.from({ length: n }, (_, i) => i))), qp, row, first, last, interleaved: false },
  });
  h.ops.d.flush();
  assert.equal(slices?.splits, keysSplits(H, window), 'slices of the window');
  assert.ok(keysSplits(H, n) > keysSplits(H, window), 'fewer than the cache would get');
});

test('a step is refused where attention_decode cannot take it', async () => {
  const h = await harness();
  const b = h.empty(4096);
  const args = { q: b, qStride: 24, qOffset: 0, k: b, v: b, kvDtype: 'f32', qpos: b, kpos: b, out: b, n: 4, H: 1, NKV: 1, HD: 8, window: 0, scale: 1, bounds: b } as const;
  const step = { cs: b, qp: 3, row: 3, first: 0, last: 4, interleaved: false };
  assert.throws(() => h.ops.attention({ ...args, T: 2, variant: 'keys', step }), /one row/);
  assert.throws(() => h.ops.attention({ ...args, T: 1, variant: 'rows', step }), /one row/);
  // attention_grouped takes a step, but not one with a q/k norm to fold.
  assert.throws(() => h.ops.attention({ ...args, H: 2, T: 1, variant: 'grouped', step: { ...step, qkNorm: { w: b, eps: 1e-6, plusOne: false } } }), /q\/k norm/);
});
