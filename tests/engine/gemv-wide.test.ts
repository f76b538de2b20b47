/**
 * gemv's wide loads (Ops.gemvWide, the W8 define): packed f16 weights read 16 bytes (8 halves) a load instead of 8,
 * each lane taking pairs of vec4s. Parity with reference.ts's matmul (and rmsnorm, glu) on the f16-rounded weights,
 * for both GEMV kernels, 1 to 4 rows, plain (bias, residual), with the NORM and GLU prologues, with x staged and
 * not, and on a matrix in row parts (2 rows, K = 136); K of 8 (one pair a column), 72 (fewer pairs than lanes), 1032
 * (the unrolled loop and its tail) and 4104 (x only partly staged).
 *
 * Measured on SwiftShader: max |Δ| / max |ref| up to 6.9e-7 (f32 summation order; GLU staged over K = 4104);
 * tolerance 4e-6, as the other gemv parity tests' (whose staged rows of 4104 measure up to 8.2e-7). Each of three deliberate faults fails the first
 * test (checked by hand): a pair's two vec4s swapped, the unrolled loop's second load taken for its third, the tail
 * loop left out.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ref from '../../src/engine/reference';
import type { GemvVariant, WeightMatrix, XPrologue } from '../../src/engine/ops';
import { splitRows } from '../../src/engine/model/gpu-plan';
import { floatsToHalves, roundToHalf } from '../../src/engine/f16';
import { assertClose, assertWithinRange, harness, rand, type Harness, relErr, weightMatrix } from '../helpers/gpu';
import { join } from 'node:path';
import { Engine } from '../../src/engine/engine';
import { loadModelFiles } from '../../src/engine/formats/load';
import { nodeModelFiles } from '../../src/node/files';
import { loadKernelSources } from '../../src/node/gpu';

const RT = 4e-6;

const gemvs = (h: Harness): GemvVariant[] => (h.ops.subgroupMin ? ['gemv', 'gemv_sg'] : ['gemv']);

/** Runs `run` with the wide loads on (and x staged or not), and returns the labels of the pipelines it launched. */
function wide(h: Harness, stage: boolean, run: () => void): string[] {
  const { ops } = h;
  const was = [ops.gemvWide, ops.stageX] as const;
  const labels: string[] = [];
  const d = ops.d as unknown as { run: (...a: unknown[]) => void };
  const orig = d.run;
  d.run = function (this: unknown, ...a: unknown[]) {
    labels.push((a[0] as GPUComputePipeline).label);
    return orig.apply(this, a);
  };
  ops.gemvWide = true;
  ops.stageX = stage;
  try {
    run();
  } finally {
    [ops.gemvWide, ops.stageX] = was;
    d.run = orig;
  }
  return labels;
}

// [T, N, K]: one pair a column (K = 8), fewer pairs than lanes (72), N past one workgroup of either kernel (SwiftShader's
// gemv_sg: 64 columns) with the unrolled loop and its tail (1032: 129 pairs), x only partly staged (4104).
const SHAPES: [number, number, number][] = [[1, 37, 8], [2, 20, 72], [3, 300, 1032], [4, 9, 4104]];

test('gemv with wide loads of f16 weights: plain, with the RMSNorm and GLU prologues, staged or not', async (t) => {
  const h = await harness();
  for (const [T, N, K] of SHAPES) {
    const w = weightMatrix(h, 'f16', N, K, 71);
    const x = rand(T * K, 72, 2), g = rand(K, 73), gu = rand(T * 2 * K, 74, 3), bias = rand(N, 75), res = rand(T * N, 76);
    for (let i = K; i < T * K; i++) x[i] *= 1 + Math.floor(i / K);
    const y = h.empty(T * N * 4);
    const norm: XPrologue = { norm: h.upload(g), eps: 1e-6, plusOne: true };
    const cases: [string, Float32Array][] = [
      ['plain', ref.matmul(x, w.values, T, N, K, bias, res)],
      ['norm', ref.matmul(ref.rmsnorm(x, g, T, K, 1e-6, true), w.values, T, N, K, bias, res)],
      ['glu', ref.matmul(ref.glu(gu, T, K, 'silu'), w.values, T, N, K, bias, res)],
    ];
    // Staged and not (the long shape staged only: its partly staged x is what it is there for).
    for (const variant of gemvs(h)) for (const stage of K > 4000 ? [true] : [false, true]) for (const [what, want] of cases) {
      const input = what === 'glu' ? gu : x;
      const pre: XPrologue | undefined = what === 'norm' ? norm : what === 'glu' ? { glu: 'silu' } : undefined;
      const labels = wide(h, stage, () => h.ops.matmul({ x: h.upload(input), w: w.buffer, wDtype: 'f16', y, T, N, K, bias: h.upload(bias), residual: h.upload(res), pre, variant }));
      assert.ok(labels.length === 1 && labels[0].includes('|W8=true'), `${labels}: the wide loads' pipeline`);
      const got = await h.readF32(y, T * N);
      const name = `${variant} ${what}${stage ? ' staged' : ''} T=${T} N=${N} K=${K}`;
      t.diagnostic(`${name}: |Δ| / max|ref| ${relErr(got, want).toExponential(2)}`);
      assertClose(got, want, 0, RT, name);
    }
  }
});

test('gemv with wide loads on a matrix in f16 row parts', async (t) => {
  const h = await harness();
  const T = 2, N = 40, K = 136;
  const values = roundToHalf(rand(N * K, 81));
  const ranges = splitRows(N, K * 2, Math.ceil((N * K * 2) / 3.5 / 16) * 16)!;
  const m: WeightMatrix = { rows: N, cols: K, dtype: 'f16', parts: ranges.map((r) => ({ ...r, buffer: h.upload(floatsToHalves(values.subarray(r.row0 * K, (r.row0 + r.rows) * K))) })) };
  assert.ok(m.parts.length >= 3, `${m.parts.length} parts`);
  const x = rand(T * K, 82, 2), res = rand(T * N, 83);
  const y = h.empty(T * N * 4);
  for (const variant of gemvs(h)) {
    const labels = wide(h, false, () => h.ops.matmulParts({ x: h.upload(x), w: m, y, T, K, residual: h.upload(res), variant }));
    assert.ok(labels.length === m.parts.length && labels.every((l) => l.includes('|W8=true')), `${labels}`);
    const got = await h.readF32(y, T * N);
    t.diagnostic(`${variant} in ${m.parts.length} parts: |Δ| / max|ref| ${relErr(got, ref.matmul(x, values, T, N, K, undefined, res)).toExponential(2)}`);
    assertClose(got, ref.matmul(x, values, T, N, K, undefined, res), 0, RT, `${variant} in parts`);
  }
});

test('the wide loads apply to f16 weights with K a multiple of 8 only; the rest read as before', async () => {
  const h = await harness();
  const T = 1, N = 9;
  for (const [dtype, K, wideLoads] of [['f16', 68, false], ['f32', 72, false], ['q8_0', 64, false], ['f16', 64, true]] as const) {
    const w = weightMatrix(h, dtype, N, K, 91);
    const x = rand(T * K, 92);
    const y = h.empty(T * N * 4);
    const labels = wide(h, false, () => h.ops.matmul({ x: h.upload(x), w: w.buffer, wDtype: dtype, y, T, N, K, variant: 'gemv' }));
    assert.equal(labels[0].includes('|W8=true'), wideLoads, `${dtype}, K=${K}: ${labels[0]}`);
    assertClose(await h.readF32(y, T * N), ref.matmul(x, w.values, T, N, K), 0, RT, `${dtype}, K=${K}`);
  }
  // Off unless asked for: decode's products keep 8-byte loads until Engine.tuneDecode finds the wide ones faster.
  assert.equal(h.ops.gemvWide, undefined);
});

test('stories260K in f16, decoded fused with the wide loads: the same greedy tokens, logits within 2e-6 of their range', async (t) => {
  const h = await harness();
  const m = await loadModelFiles(nodeModelFiles(join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin')), 'stories260K');
  const e = Engine.create(h.gpu, loadKernelSources());
  await e.load(m.config, m.weights, { weightDtype: 'f16' });
  e.ops.matmulProfile = 'gpu';
  e.ops.fuse = true;
  const prompt = m.tokenizer.encode('Lily had a red ball', { addBos: true });
  const run = async (wideLoads: boolean) => {
    e.ops.gemvWide = wideLoads;
    const labels: string[] = [];
    const d = e.ops.d as unknown as { run: (...a: unknown[]) => void };
    const orig = d.run;
    d.run = function (this: unknown, ...a: unknown[]) {
      labels.push((a[0] as GPUComputePipeline).label);
      return orig.apply(this, a);
    };
    const cache = e.newCache(prompt.length + 16);
    try {
      let { logits } = await e.prefill(cache, prompt);
      const rows: Float32Array[] = [], toks: number[] = [];
      for (let i = 0; i < 10; i++) {
        rows.push(logits.slice());
        toks.push(logits.indexOf(Math.max(...logits)));
        logits = await e.decode(cache, toks[i]);
      }
      return { rows, toks, wide: labels.filter((l) => l.includes('|W8=true')).length };
    } finally {
      d.run = orig;
      cache.destroy();
    }
  };
  try {
    const narrow = await run(false), wide = await run(true);
    // Of a step's GEMVs, q/k/v, the output projection, gate/up and the LM head are 64 wide (the down projection's 172 is no multiple of 8).
    assert.equal(narrow.wide, 0);
    assert.equal(wide.wide, 10 * (3 * m.config.nLayers + 1) + 1, 'wide launches: 3 a layer and the LM head each decode step, and the prefill\'s LM head for its last row');
    assert.deepEqual(wide.toks, narrow.toks);
    let worst = 0;
    for (let i = 0; i < wide.rows.length; i++) {
      worst = Math.max(worst, assertWithinRange(wide.rows[i], narrow.rows[i], 2e-6, `step ${i}'s logits, wide against narrow`));
    }
    t.diagnostic(`max |Δlogit| / range ${worst.toExponential(2)} over ${wide.rows.length} steps`);
  } finally {
    e.destroy();
  }
});
