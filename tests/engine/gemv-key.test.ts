/**
 * Ops.gemv finds its pipeline by gemvKey (KernelLibrary.keyed), building gemv's defines only for a key it has not
 * seen: so two launches with one key must get the same defines, or the second would run the first's pipeline. Over
 * a grid of every input gemvDefines reads, and of some it does not (N, a norm's eps, a merge's key slices), launches
 * that share a key get equal defines. Leaving an input out of the key (checked by hand: the residual flag) fails it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gemvDefines, gemvKey } from '../../src/engine/matmul-launch';
import type { MatmulArgs, XPrologue } from '../../src/engine/ops-args';

const b = {} as GPUBuffer;
// Prologues whose differences gemv's defines do not see (a norm's eps, a merge's slices) share a key, and must.
const PRES: (XPrologue | undefined)[] = [
  undefined, { norm: b, eps: 1e-5, plusOne: false }, { norm: b, eps: 1e-6, plusOne: true }, { norm: b, eps: 1e-6, plusOne: true, post: { w: b, res: b, out: b } },
  { glu: 'silu' }, { glu: 'gelu_tanh' }, { combine: { part: b, ml: b, heads: 8, splits: 4 } }, { combine: { part: b, ml: b, heads: 8, splits: 2 } },
  { combine: { part: b, ml: b, heads: 32, splits: 2 } },
];

test('launches with one gemv key get the same defines, over every input the defines read and some they do not', () => {
  const seen = new Map<string, string>();
  const defs = new Set<string>();
  let launches = 0;
  for (const T of [1, 2, 4]) for (const wDtype of ['f16', 'f32', 'q4_0', 'q4_k', 'q8_0'] as const) for (const K of [512, 516, 2048]) for (const N of [96, 200])
    for (const bias of [false, true]) for (const residual of [false, true]) for (const ranged of [false, true]) for (const pre of PRES)
      for (const [sg, cols] of [[false, 8], [true, 8], [true, 32]] as const) for (const xk4 of [0, 64]) for (const wide of [false, true]) {
        const a: MatmulArgs = {
          x: b, w: b, wDtype, y: b, T, N, K, ...(bias ? { bias: b } : {}), ...(residual ? { residual: b } : {}),
          ...(ranged ? { ldy: 2 * N, y0: N } : {}), ...(pre ? { pre } : {}),
        };
        const o = { sg, cols, xk4, wide };
        const key = gemvKey(a, o);
        const d = JSON.stringify(Object.entries(gemvDefines(a, o)).sort());
        const before = seen.get(key);
        if (before !== undefined) assert.equal(d, before, `key ${key}: two launches, different defines`);
        seen.set(key, d);
        defs.add(d);
        launches++;
      }
  // Many launches shared a key (N, eps, slices), so the check above was made; every set of defines was met.
  assert.ok(launches > 2 * seen.size && defs.size > 1000, `${launches} launches, ${seen.size} keys, ${defs.size} sets of defines`);
});
