/**
 * kv_gather.wgsl against its TypeScript reference (reference.ts `gather`), and against the launch it replaces for
 * rows already on the GPU (rope_scatter.wgsl on a staging copy, as a fresh row is cached): slab rows in any
 * order into chosen cache rows, keys rotated by both RoPE styles, f32 or packed f16 on either side (halves of every
 * kind widened exactly, subnormals and infinities too: the link's host rows kept as halves go this way), only the rows [t0, t0 + T) of the
 * placement written; keys rotated by a table by position (the model's, as links use it) or of the placement's rows.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ref from '../../src/engine/reference';
import { floatsToHalves, halvesToFloats } from '../../src/engine/f16';
import { inverseFrequencies, ropeTable } from '../../src/engine/model/rope';
import type { ModelConfig } from '../../src/engine';
import { assertClose, harness, rand } from '../helpers/gpu';

const SLAB_ROWS = 10, CACHE_ROWS = 9;
// Placement rows 0..6: their slab rows, cache rows and positions; the launch writes rows 2..5 of it.
const srcRows = Uint32Array.from([9, 0, 7, 3, 5, 1, 2]);
const idx = Uint32Array.from([8, 1, 6, 0, 3, 7, 2]);
const positions = [0, 3, 517, 40, 2047, 12, 9];
const t0 = 2, T = 4;
const SENTINEL = -7;
const TOL = { f32: 2.5e-6, f16: 1e-2 };


for (const [HD, heads] of [[8, 2], [64, 3]] as const) {
  for (const interleaved of [false, true]) {
    for (const srcDtype of ['f32', 'f16'] as const) {
      for (const dstDtype of ['f32', 'f16'] as const) {
        test(`kv_gather head ${HD} × ${heads}, ${interleaved ? 'interleaved' : 'half-split'} RoPE, ${srcDtype} slab → ${dstDtype} cache`, async () => {
          const h = await harness();
          const W = HD * heads;
          const inv = inverseFrequencies({ headDim: HD, ropeTheta: 10000 } as ModelConfig, 'global');
          const rowsCs = ropeTable(inv, positions);
          // Half the cases rotate by a table by position (the model's, as a link uses it: row = position), half by
          // a table of the placement's own rows (row = t).
          const byPosition = srcDtype === 'f16';
          const cs = byPosition ? ropeTable(inv, Array.from({ length: 2048 }, (_, i) => i)) : rowsCs;
          const csRows = byPosition ? Uint32Array.from(positions) : Uint32Array.from(positions, (_, t) => t);
          // The slab's values as the kernel reads them (halves widened exactly).
          let k = rand(SLAB_ROWS * W, 61 + HD, 3), v = rand(SLAB_ROWS * W, 62 + HD, 3);
          const kBits = floatsToHalves(k), vBits = floatsToHalves(v);
          // Values of every kind of half, copied exactly: subnormals, ±0 (in placed rows 3 and 5), and, widened into
          // an f32 cache, ±infinity (WGSL's pack2x16float leaves an infinity, and its neighbour, undefined).
          const special = [[3 * W, 0x0001], [3 * W + 1, 0x83ff], [3 * W + 2, 0x8000], [5 * W + 3, 0x0000], ...(dstDtype === 'f32' ? [[5 * W + 1, 0x7c00], [5 * W + 2, 0xfc00]] : [])];
          for (const [at, bits] of special) vBits[at] = bits;
          if (srcDtype === 'f16') [k, v] = [halvesToFloats(kBits), halvesToFloats(vBits)];
          const up = (a: Float32Array, bits: Uint16Array) => h.upload(srcDtype === 'f16' ? bits : a);
          const fill = new Float32Array(CACHE_ROWS * W).fill(SENTINEL);
          const dst = () => h.upload(dstDtype === 'f16' ? floatsToHalves(fill) : fill);
          const [dk, dv] = [dst(), dst()];
          const args = { k: up(k, kBits), v: up(v, vBits), srcDtype, srcRows: h.upload(srcRows), idx: h.upload(idx), cs: h.upload(cs), csRows: h.upload(csRows), dstDtype, W, HD, interleaved };
          h.ops.gather({ ...args, dstK: dk, dstV: dv, t0, T });
          const want = ref.gather(k, v, srcRows, idx, cs, csRows, t0, T, W, HD, interleaved, fill, fill);
          const read = async (b: GPUBuffer) => (dstDtype === 'f16' ? halvesToFloats(new Uint16Array(await h.ops.d.read(b, 0, CACHE_ROWS * W * 2))) : h.readF32(b, CACHE_ROWS * W));
          const [gk, gv] = [await read(dk), await read(dv)];
          // Rows outside the launch keep the sentinel; values are copied exactly.
          for (let t = 0; t < srcRows.length; t++) {
            const inside = t >= t0 && t < t0 + T;
            if (!inside) assert.ok(gk.subarray(idx[t] * W, (idx[t] + 1) * W).every((x) => x === SENTINEL), `row ${t} untouched`);
          }
          assert.deepEqual(gv, dstDtype === 'f16' ? halvesToFloats(floatsToHalves(want.v)) : want.v, 'values placed exactly');
          // Keys: f32 math against the reference's f64 products of the same f32 inputs, rounded alike for an f16
          // cache. Measured on SwiftShader and lavapipe: at most 2.4e-7 in f32 (an ulp at values near 3), and in
          // f16 at most 9.8e-4 (one half's ulp, where f32 rounding lands a product on the other side of a half's
          // rounding boundary); tolerances about 10× those.
          assertClose(gk, dstDtype === 'f16' ? halvesToFloats(floatsToHalves(want.k)) : want.k, TOL[dstDtype], 0, `${dstDtype} keys`);

          // The same as the launch it replaces for rows on the GPU: a staging copy of each row's keys and values
          // (as a fused row with no q heads), rotated and cached by rope_scatter as a fresh row would be.
          const sel = Array.from({ length: T }, (_, i) => srcRows[t0 + i]);
          const staged = new Float32Array(T * 2 * W);
          sel.forEach((r, i) => {
            staged.set(k.subarray(r * W, (r + 1) * W), 2 * i * W);
            staged.set(v.subarray(r * W, (r + 1) * W), (2 * i + 1) * W);
          });
          const [ok, ov] = [dst(), dst()];
          const rows = { x: h.upload(staged), cs: h.upload(rowsCs.subarray(t0 * HD, (t0 + T) * HD)), csRows: h.upload(Uint32Array.from({ length: T }, (_, i) => i)), idx: h.upload(idx.subarray(t0, t0 + T)) };
          h.ops.ropeScatter({ ...rows, dstK: ok, dstV: ov, dstDtype, T, H: 0, NKV: heads, HD, stride: 2 * W, interleaved });
          assert.deepEqual(await read(ov), gv, 'values as rope_scatter places them');
          const old = await read(ok);
          // Bit for bit on both CPU adapters; a GPU's compiler may contract the products differently in each kernel.
          assertClose(gk, old, TOL[dstDtype], 0, `${dstDtype} keys against rope_scatter's`);
        });
      }
    }
  }
}
