/**
 * The engine operations the linker builds on, on stories260K (interleaved
 * RoPE) and the Gemma 3 fixture (half-split RoPE, sliding window, two bases):
 *  - selective recompute of chosen rows against a full-length cache;
 *  - pre-RoPE keys placed at new positions equal keys computed there fresh,
 *    for shifts of tens and thousands of positions and back to position 0,
 *    also on the Llama fixture (llama3-scaled RoPE);
 *  - attention scores and probabilities for chosen layer, head and rows;
 *  - decode steps equal one prefill;
 *  - an f16 cache's exported pre-RoPE keys are halves rounded on the GPU.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Engine } from '../../src/engine/engine';
import { loadModelFiles } from '../../src/engine/formats/load';
import { loadHfFolder } from '../../src/engine/formats/hf';
import { nodeFolderFiles, nodeModelFiles } from '../../src/node/files';
import { loadKernelSources } from '../../src/node/gpu';
import { rope, softmax } from '../../src/engine/reference';
import { inverseFrequencies, ropeTable } from '../../src/engine/model/rope';
import { floatsToHalves, roundToHalf } from '../../src/engine/f16';
import { assertClose, harness } from '../helpers/gpu';
import { rerotationTolerance, scaledMaxDiff } from '../helpers/compare';

const STORIES = join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin');
const GEMMA = join(import.meta.dirname, '../fixtures/hf/gemma3');
const LLAMA3 = join(import.meta.dirname, '../fixtures/hf/llama3-smollm');

async function engineFor(which: 'stories' | 'gemma' | 'llama3', kvDtype: 'f32' | 'f16' = 'f32') {
  const h = await harness();
  const m = which === 'stories' ? await loadModelFiles(nodeModelFiles(STORIES), 'stories260K')
    : await loadHfFolder(nodeFolderFiles(which === 'gemma' ? GEMMA : LLAMA3), { name: which === 'gemma' ? 'gemma3' : 'llama3-smollm' });
  const e = Engine.create(h.gpu, loadKernelSources());
  await e.load(m.config, m.weights, { kvDtype });
  return e;
}

// Placed keys against the reference rotation: at most 2.4e-7 measured on SwiftShader (an f32 ulp); about 10× that.
const KEY_TOL = 2.5e-6;
// Logits of a pass at negative positions against the same at 0.., over 1 + the largest logit's magnitude (scaledMaxDiff):
// at most 4.0e-6 measured on SwiftShader, about 10× that.
const LOGIT_SHIFT_TOL = 4e-5;
const seq = (n: number, seed: number, V: number) => Array.from({ length: n }, (_, i) => (i * 37 + seed * 11 + 5) % V);

for (const which of ['stories', 'gemma'] as const) {
  test(`${which}: recomputing rows that held wrong tokens restores the exact logits`, async () => {
    const e = await engineFor(which);
    const V = e.config.vocabSize;
    const tokens = seq(20, 1, V);
    const a = e.newCache();
    const want = (await e.prefill(a, tokens)).logits;
    // Rows 12..19 first computed from other tokens, then recomputed with the right ones.
    const wrong = [...tokens.slice(0, 12), ...seq(8, 9, V)];
    const b = e.newCache();
    await e.prefill(b, wrong, undefined, { logits: 'none' });
    const rows = [12, 13, 14, 15, 16, 17, 18, 19];
    const got = (await e.recompute(b, rows, tokens.slice(12))).logits;
    assertClose(got, want, 1e-5, 1e-5, 'last-row logits');
    e.destroy();
  });
}

// Key re-rotation: a chunk's pre-RoPE keys, captured at positions from..from+9, written at to..to+9 (rotated there)
// equal the keys and values of the chunk computed fresh at to..to+9, as its relative positions are unchanged. Shifts:
// small, thousands of positions (past the llama3 fixture's original 256-position context, into its scaled band), and
// back to position 0. Tolerance: rerotationTolerance (tests/helpers/compare.ts), which grows with the largest
// position, as the f32 rounding of the RoPE angles does.
const SHIFTS = [[0, 40], [0, 4000], [3000, 0], [1000, 9000]] as const;
for (const which of ['stories', 'gemma', 'llama3'] as const) {
  test(`${which}: pre-RoPE keys moved to new positions equal keys computed there (shifts ${SHIFTS.map(([a, b]) => `${a}→${b}`).join(', ')})`, async (t) => {
    const e = await engineFor(which);
    const V = e.config.vocabSize;
    const chunk = seq(10, 2, V);
    const at = (p0: number) => Array.from({ length: chunk.length }, (_, i) => p0 + i);
    for (const [from, to] of SHIFTS) {
      const a = e.newCache();
      const res = await e.prefill(a, chunk, at(from), { logits: 'none', capturePreRopeK: true });
      const rows = await e.exportRows(a, res, 0, chunk.length);
      const fresh = e.newCache();
      await e.prefill(fresh, chunk, at(to), { logits: 'none' });
      const moved = e.newCache();
      e.writeRows(moved, 0, at(to), rows);
      const tol = rerotationTolerance(Math.max(from, to) + chunk.length);
      let worst = 0;
      for (let l = 0; l < e.config.nLayers; l++) {
        const f = await e.readRows(fresh, l, 0, chunk.length);
        const m = await e.readRows(moved, l, 0, chunk.length);
        worst = Math.max(worst, scaledMaxDiff(m.k, f.k), scaledMaxDiff(m.v, f.v));
        assertClose(m.k, f.k, tol, tol, `${from}→${to}: layer ${l} keys`);
        assertClose(m.v, f.v, tol, tol, `${from}→${to}: layer ${l} values`);
      }
      t.diagnostic(`${from}→${to}: ${worst.toExponential(2)} (tolerance ${tol.toExponential(2)})`);
      for (const c of [a, fresh, moved]) c.destroy();
    }
    e.destroy();
  });
}

// RowWriter rotates each key by the model's table by position, kept on the GPU from link to link (rope.ts
// PositionTable), which grows to cover the largest position; past the most it may hold (64 MiB), by a table of the
// rows' own. At positions 7.. (the table's first 4096 rows), 5000.. (it grows) and past 64 MiB of it, spaced 3
// apart, the keys equal the reference's rotation of the pre-RoPE keys, on Gemma's global and local layers, and
// the values are placed exactly.
test('gemma: keys placed by the table by position, grown, and past it equal the reference rotation', async (t) => {
  const e = await engineFor('gemma');
  const c = e.config;
  const chunk = seq(10, 2, c.vocabSize);
  const a = e.newCache();
  const rows = await e.exportRows(a, await e.prefill(a, chunk, undefined, { logits: 'none', capturePreRopeK: true }), 0, chunk.length);
  const far = Math.ceil((64 * 2 ** 20) / (c.headDim * 4)) + 5;
  let worst = 0;
  for (const p0 of [7, 5000, far]) {
    const at = Array.from({ length: chunk.length }, (_, i) => p0 + 3 * i);
    const cache = e.newCache();
    e.writeRows(cache, 0, at, rows);
    for (let l = 0; l < c.nLayers; l++) {
      const got = await e.readRows(cache, l, 0, chunk.length);
      const cs = ropeTable(inverseFrequencies(c, c.layerKinds[l]), at);
      const kvDim = c.nKvHeads * c.headDim;
      const want = rope(rows[l].k, cs, chunk.length, c.nKvHeads, c.headDim, kvDim, 0, c.ropeStyle === 'interleaved');
      for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got.k[i] - want[i]));
      assertClose(got.k, want, KEY_TOL, 0, `positions ${p0}.., layer ${l} keys`);
      assert.deepEqual(got.v, rows[l].v, `positions ${p0}.., layer ${l} values`);
    }
    cache.destroy();
  }
  t.diagnostic(`largest key error ${worst.toExponential(2)} (tolerance ${KEY_TOL})`);
  a.destroy();
  e.destroy();
});

// Rows read from an f16 store arrive as halves (LayerRows.halves) and go up as such, widened on the GPU. Written in
// blocks of every kind at once (GPU buffers of halves as the GPU tier keeps f16 rows, f32 host rows, halves, halves
// again, GPU buffers of f32), each layer equals the same rows written from f32; the halves' k and v are never read on
// the host. The halves' staging is first made too small, so the writer must grow it at a GPU block: growing submits
// the work recorded so far, and a copy recorded before that on the old encoder was lost (a validation error).
test('gemma: rows kept as halves are uploaded as halves and land exactly where f32 rows do', async () => {
  const e = await engineFor('gemma');
  const V = e.config.vocabSize;
  const L = e.config.nLayers;
  const kvDim = e.model!.kvDim;
  const blocks = [seq(5, 3, V), seq(7, 4, V), seq(3, 5, V), seq(6, 6, V), seq(4, 7, V)];
  const rowsOf = async (tokens: number[]) => {
    const c = e.newCache();
    const res = await e.prefill(c, tokens, undefined, { logits: 'none', capturePreRopeK: true });
    const rows = (await e.exportRows(c, res, 0, tokens.length)).map(({ k, v }) => ({ k: roundToHalf(k), v: roundToHalf(v) }));
    c.destroy();
    return rows;
  };
  const f32 = await Promise.all(blocks.map(rowsOf));
  const untouched = (k: Uint16Array, v: Uint16Array) => ({
    halves: { k, v },
    get k(): Float32Array { throw new Error('read k of rows kept as halves'); },
    get v(): Float32Array { throw new Error('read v of rows kept as halves'); },
  });
  const up = (x: Float32Array | Uint16Array) => {
    const b = e.gpu.device.createBuffer({ size: x.byteLength, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST | GPUBufferUsage.STORAGE });
    e.gpu.device.queue.writeBuffer(b, 0, x.buffer as ArrayBuffer, x.byteOffset, x.byteLength);
    return b;
  };
  const gpuRows = (r: { k: Float32Array; v: Float32Array }) => ({ k: up(r.k), v: up(r.v) });
  const gpuHalves = (r: { k: Float32Array; v: Float32Array }) => ({ k: up(floatsToHalves(r.k)), v: up(floatsToHalves(r.v)), f16: true });
  // Block 0 on the GPU as halves (a run), 1 as f32, 2 and 3 as halves (a second run), 4 on the GPU as f32.
  const mixed = (b: number, l: number) => {
    const r = f32[b][l];
    return b === 0 ? gpuHalves(r) : b === 1 ? r : b === 4 ? gpuRows(r) : untouched(floatsToHalves(r.k), floatsToHalves(r.v));
  };
  // Blocks at cache rows 2.. with a gap row between them, at positions 100 + 3 * row.
  const layout: { start: number; positions: number[] }[] = [];
  let row = 2;
  for (const t of blocks) {
    layout.push({ start: row, positions: Array.from({ length: t.length }, (_, i) => 100 + 3 * (row + i)) });
    row += t.length + 1;
  }
  const total = row + 4;
  const want = e.newCache(total), got = e.newCache(total);
  // One row of halves, so the halves' staging exists but is too small for the writes below.
  e.rowWriter(got, [{ start: 0, positions: [0] }]).layer(0, [gpuHalves({ k: f32[0][0].k.subarray(0, kvDim), v: f32[0][0].v.subarray(0, kvDim) })]);
  const wa = e.rowWriter(want, layout), wg = e.rowWriter(got, layout);
  // The mixed writer goes first, last layer first, so the staging it shares with the other never holds the layer
  // it writes: rows left unwidened there would show.
  for (let l = L - 1; l >= 0; l--) wg.layer(l, blocks.map((_, b) => mixed(b, l)));
  for (let l = 0; l < L; l++) wa.layer(l, f32.map((b) => b[l]));
  await e.sync();
  for (let l = 0; l < L; l++) {
    for (const { start: s, positions } of layout) {
      const a = await e.readRows(want, l, s, positions.length), b = await e.readRows(got, l, s, positions.length);
      assert.deepEqual(b.k, a.k, `layer ${l}, rows ${s}: keys`);
      assert.deepEqual(b.v, a.v, `layer ${l}, rows ${s}: values`);
      assert.ok(a.k.some((x) => x !== 0) && a.k.length === positions.length * kvDim, 'rows were written');
    }
  }
  want.destroy();
  got.destroy();
  e.destroy();
});

test('attention scores: masked by position id, probabilities sum to one', async () => {
  const e = await engineFor('stories');
  const tokens = seq(12, 3, 512);
  const c = e.newCache();
  const r = await e.prefill(c, tokens, undefined, { logits: 'none', scores: { layer: 2, heads: [0, 5], rows: [3, 11] } });
  assert.equal(r.scores.length, 2);
  for (const s of r.scores) {
    assert.equal(s.keys, 12);
    assert.deepEqual(s.rows, [3, 11]);
    const row3 = s.scores.subarray(0, 12);
    assert.ok(row3.slice(0, 4).every(Number.isFinite), 'row 3 sees keys 0..3');
    assert.ok(row3.slice(4).every((v) => v === -Infinity), 'row 3 does not see keys 4..11');
    const p = softmax(s.scores.subarray(12, 24));
    assert.ok(Math.abs(p.reduce((a, b) => a + b, 0) - 1) < 1e-9);
  }
  e.destroy();
});

// RoPE sees only differences of positions: a pass shifted to where the model's table by position cannot serve
// (negative positions) rotates by tables of its own rows and gives the logits of the same pass at 0.., which rotates
// by the table (both kinds of layer, two bases, the sliding window).
test('gemma: a pass the table by position cannot serve rotates by its own tables, with the same logits', async (t) => {
  const e = await engineFor('gemma');
  const c = e.config;
  const tokens = seq(12, 3, c.vocabSize);
  const logitsAt = async (p0: number) => {
    const cache = e.newCache();
    const out = (await e.prefill(cache, tokens, tokens.map((_, i) => p0 + i), { logits: 'all' })).logits;
    cache.destroy();
    return out;
  };
  const want = await logitsAt(0);
  for (const p0 of [-700, -5]) {
    const got = await logitsAt(p0);
    const err = scaledMaxDiff(got, want);
    t.diagnostic(`positions ${p0}..: largest logit difference ${err.toExponential(2)} of 1 + the largest logit`);
    assertClose(got, want, LOGIT_SHIFT_TOL, LOGIT_SHIFT_TOL, `logits at positions ${p0}.. against 0..`);
  }
  e.destroy();
});

test('decode steps equal one prefill (f16 KV)', async () => {
  const e = await engineFor('stories', 'f16');
  const tokens = seq(24, 4, 512);
  const one = e.newCache();
  const all = (await e.prefill(one, tokens, undefined, { logits: 'all' })).logits;
  const step = e.newCache();
  await e.prefill(step, tokens.slice(0, 16), undefined, { logits: 'none' });
  for (let i = 16; i < 24; i++) {
    const l = await e.decode(step, tokens[i]);
    assertClose(l, all.subarray(i * 512, (i + 1) * 512), 1e-4, 1e-4, `decode ${i}`);
  }
  e.destroy();
});

// An f16 cache's compile captures its pre-RoPE keys as halves on the GPU (no widening or rounding on the host). In
// layer 0, whose keys no cached row has touched yet, they are the f32 cache's keys rounded to f16: equal on
// SwiftShader and lavapipe (round to nearest even, as floatsToHalves); a GPU that rounds ties otherwise may differ by
// one f16 step, which is the tolerance. The values come back as halves too.
test('f16 KV: exported pre-RoPE keys are halves, the f32 keys rounded', async (t) => {
  const tokens = seq(40, 3, 512);
  const exported = async (kvDtype: 'f32' | 'f16') => {
    const e = await engineFor('stories', kvDtype);
    const c = e.newCache();
    const rows = await e.exportRows(c, await e.prefill(c, tokens, undefined, { logits: 'none', capturePreRopeK: true }), 0, tokens.length);
    e.destroy();
    return rows;
  };
  const [wide, half] = [await exported('f32'), await exported('f16')];
  assert.ok(half.every((l) => l.halves), 'f16 rows come back as halves');
  const want = floatsToHalves(wide[0].k);
  const got = half[0].halves!.k;
  assert.equal(got.length, want.length);
  let differ = 0;
  for (let i = 0; i < want.length; i++) if (got[i] !== want[i]) differ++, assert.ok(Math.abs(got[i] - want[i]) <= 1, `key ${i}: ${got[i]} against ${want[i]}`);
  t.diagnostic(`${differ} of ${want.length} keys differ by an f16 step`);
  assert.ok(differ <= want.length / 100, `${differ} of ${want.length} keys differ by a step`);
});
