/**
 * rope_scatter.wgsl, and through it rope_pairs.wgsl (the rotation it shares with attention_decode's STEP, whose
 * test holds STEP to rope_scatter), against its TypeScript reference (reference.ts `rope` then `scatter`, what rope.wgsl and
 * kv_scatter.wgsl did in two launches before it): fused q/k/v rows with GQA (3 q heads, 1 k and 1 v head),
 * both RoPE styles, f32 or packed f16 cache, each row rotated by a table of the rows' own (cs_rows[t] = t) and by
 * one by position (cs_rows[t] = the row's position, as the forward pass rotates by PositionTable). The q and k heads are rotated in place, the v heads left as they are,
 * and the rotated k heads and the v heads land in cache rows idx[t], every other cache row untouched.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ref from '../../src/engine/reference';
import { floatsToHalves, halvesToFloats } from '../../src/engine/f16';
import { inverseFrequencies, ropeTable } from '../../src/engine/model/rope';
import type { ModelConfig } from '../../src/engine';
import { harness, rand } from '../helpers/gpu';

const T = 5, H = 3, NKV = 1, CACHE_ROWS = 9;
const idx = Uint32Array.from([7, 0, 4, 8, 2]);
const positions = [3, 517, 0, 2047, 40];
const SENTINEL = -7;
// Against the reference's f64 products of the same f32 inputs, values up to 8 after rotation: at most 4.8e-7
// measured on SwiftShader in f32 (an ulp near 4), tolerance about 10× that; in an f16 cache 0 measured, and one
// half's ulp at the largest values allowed (3.9e-3), where f32 rounding can land a product on the other side of a
// half's rounding boundary.
const TOL = { f32: 5e-6, f16: 4e-3 };

const maxDiff = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
};

for (const HD of [8, 64]) {
  for (const interleaved of [false, true]) {
    for (const dstDtype of ['f32', 'f16'] as const) {
      for (const table of ['own', 'by position'] as const) test(`rope_scatter head ${HD}, ${interleaved ? 'interleaved' : 'half-split'} RoPE, ${dstDtype} cache, ${table} table`, async (t) => {
        const h = await harness();
        const qDim = H * HD, kvDim = NKV * HD, W = qDim + 2 * kvDim;
        const x = rand(T * W, 11 + HD, 4);
        const cs = ropeTable(inverseFrequencies({ headDim: HD, ropeTheta: 10000 } as ModelConfig, 'global'), positions);
        const fill = new Float32Array(CACHE_ROWS * kvDim).fill(SENTINEL);
        const cache = () => h.upload(dstDtype === 'f16' ? floatsToHalves(fill) : fill);
        const read = async (b: GPUBuffer) => (dstDtype === 'f16' ? halvesToFloats(new Uint16Array(await h.ops.d.read(b, 0, CACHE_ROWS * kvDim * 2))) : h.readF32(b, CACHE_ROWS * kvDim));
        const stored = (a: Float32Array) => (dstDtype === 'f16' ? halvesToFloats(floatsToHalves(a)) : a);

        // The fused launch.
        const inv = inverseFrequencies({ headDim: HD, ropeTheta: 10000 } as ModelConfig, 'global');
        const [launchCs, csRows] = table === 'own' ? [cs, Uint32Array.from(positions, (_, i) => i)]
          : [ropeTable(inv, Array.from({ length: Math.max(...positions) + 1 }, (_, i) => i)), Uint32Array.from(positions)];
        const xb = h.upload(x), dk = cache(), dv = cache(), csb = h.upload(launchCs), rowsb = h.upload(csRows), idxb = h.upload(idx);
        h.ops.ropeScatter({ x: xb, cs: csb, csRows: rowsb, idx: idxb, dstK: dk, dstV: dv, dstDtype, T, H, NKV, HD, stride: W, interleaved });
        const [gx, gk, gv] = [await h.readF32(xb, T * W), await read(dk), await read(dv)];

        // The reference: q and k heads rotated, then k and v scattered.
        const rx = ref.rope(x, cs, T, H + NKV, HD, W, 0, interleaved);
        const wk = ref.scatter(rx, W, qDim, idx, fill, T, kvDim), wv = ref.scatter(rx, W, qDim + kvDim, idx, fill, T, kvDim);
        const errX = maxDiff(gx, rx), errK = maxDiff(gk, stored(wk));
        t.diagnostic(`rows ${errX.toExponential(2)}, cached keys ${errK.toExponential(2)}`);
        assert.ok(errX <= TOL.f32, `rows rotated in place: ${errX}`);
        assert.ok(errK <= TOL[dstDtype], `cached keys: ${errK}`);
        for (let r = 0; r < T; r++) assert.deepEqual(gx.subarray(r * W + qDim + kvDim, (r + 1) * W), x.subarray(r * W + qDim + kvDim, (r + 1) * W), `row ${r}'s values left as they are`);
        assert.deepEqual(gv, stored(wv), 'values cached exactly');
        for (let r = 0; r < CACHE_ROWS; r++) {
          if (idx.includes(r)) continue;
          assert.ok(gk.subarray(r * kvDim, (r + 1) * kvDim).every((v) => v === SENTINEL) && gv.subarray(r * kvDim, (r + 1) * kvDim).every((v) => v === SENTINEL), `cache row ${r} untouched`);
        }

        for (const b of [xb, dk, dv, csb, rowsb, idxb]) b.destroy();
      });
    }
  }
}
