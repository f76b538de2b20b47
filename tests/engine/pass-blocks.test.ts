/**
 * A pass with more rows than one binding of its largest temporary holds computes each layer in blocks of rows
 * (ForwardPass, rowBlocks). Before that, such a pass bound a buffer over the adapter's limit, WebGPU rejected
 * it, and every later pass reused the broken buffer: a full recompute of 8K tokens of Gemma 3 270M on a 128 MiB
 * adapter answered from garbage. Here the blocks are made small (Engine.maxPassRows) on the fixtures, and every
 * result must equal the pass computed whole: logits of every row, attention scores whose rows span blocks,
 * pre-RoPE keys and the cache, and CacheBlend's narrowing of the rows (select) between layers.
 *
 * Exactly on stories260K. On the Gemma fixture to rounding: on CPU adapters attention takes 4 rows an invocation
 * over the union of their key ranges, and the sliding window gives rows different first keys, so regrouping the
 * rows moves where the online softmax rescales. Measured: at most 5.4e-7 of the largest value; bound 5e-6.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Engine } from '../../src/engine/engine';
import { rowBlocks } from '../../src/engine/model/row-blocks';
import { loadModelFiles } from '../../src/engine/formats/load';
import { loadHfFolder } from '../../src/engine/formats/hf';
import { nodeFolderFiles, nodeModelFiles } from '../../src/node/files';
import { loadKernelSources } from '../../src/node/gpu';
import { harness } from '../helpers/gpu';
import { scaledMaxDiff } from '../helpers/compare';

const STORIES = join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin');
const GEMMA = join(import.meta.dirname, '../fixtures/hf/gemma3');

async function engineFor(which: 'stories' | 'gemma') {
  const h = await harness();
  const m = which === 'stories' ? await loadModelFiles(nodeModelFiles(STORIES), 'stories260K') : await loadHfFolder(nodeFolderFiles(GEMMA), { name: 'gemma3' });
  const e = Engine.create(h.gpu, loadKernelSources());
  await e.load(m.config, m.weights);
  return e;
}

const seq = (n: number, seed: number, V: number) => Array.from({ length: n }, (_, i) => (i * 37 + seed * 11 + 5) % V);

/** Asserts `got` equals `want`, exactly or within `tol` of the largest value (scaledMaxDiff), and reports the gap. */
function same(got: ArrayLike<number>, want: ArrayLike<number>, tol: number, what: string, seen: number[]) {
  assert.equal(got.length, want.length, `${what}: length`);
  const d = scaledMaxDiff(got, want);
  seen.push(d);
  assert.ok(tol ? d <= tol : Array.from(got).every((x, i) => Object.is(x, want[i])), `${what}: ${d.toExponential(2)} apart (bound ${tol})`);
}
const TOL = { stories: 0, gemma: 5e-6 };

test('rowBlocks: blocks of at most maxRows, cut only where the position rises; decreasing positions refused', () => {
  const what = () => 'A pass of 7 rows needs 3 MiB';
  assert.deepEqual(rowBlocks([0, 1, 2, 3, 4, 5, 6], 3, what), [[0, 3], [3, 6], [6, 7]]);
  assert.deepEqual(rowBlocks([0, 1, 1, 1, 2, 3, 4], 3, what), [[0, 1], [1, 4], [4, 7]], 'rows sharing a position stay together');
  assert.deepEqual(rowBlocks([5, 3, 4], 3, what), [[0, 3]], 'one block needs no order');
  assert.throws(() => rowBlocks([0, 1, 2, 1, 4], 2, what), /^Error: A pass of 7 rows needs 3 MiB, and its rows' positions decrease \(row 3\), so they cannot be computed in blocks$/);
  assert.throws(() => rowBlocks([0, 1, 1, 1, 2], 2, what), /more than 2 of its rows share position 1/);
});

for (const which of ['stories', 'gemma'] as const) {
  test(`${which}: a pass computed in blocks of 5 rows equals the pass computed whole`, async (t) => {
    const e = await engineFor(which);
    const V = e.config.vocabSize, L = e.config.nLayers;
    const tokens = seq(23, 3, V);
    // Scores of rows 3, 9 and 21 (three blocks), in two layers; logits of every row; pre-RoPE keys.
    const scores = { layer: [0, L - 1], heads: [0, e.config.nHeads - 1], rows: [3, 9, 21] };
    const run = async (maxRows: number | undefined) => {
      e.maxPassRows = maxRows;
      const c = e.newCache();
      const r = await e.prefill(c, tokens, undefined, { logits: 'all', scores, capturePreRopeK: true });
      const rows = await e.exportRows(c, r, 0, tokens.length);
      const cache = [];
      for (let l = 0; l < L; l++) cache.push(await e.readRows(c, l, 0, tokens.length));
      c.destroy();
      return { r, rows, cache };
    };
    const whole = await run(undefined);
    const blocks = await run(5);
    const tol = TOL[which], gaps: number[] = [];
    same(blocks.r.logits, whole.r.logits, tol, 'logits of every row', gaps);
    assert.equal(blocks.r.scores.length, whole.r.scores.length, 'one result per layer and head');
    blocks.r.scores.forEach((s, i) => {
      assert.deepEqual([s.layer, s.head, s.rows], [whole.r.scores[i].layer, whole.r.scores[i].head, [3, 9, 21]]);
      // Masked keys are -Infinity in both.
      const finite = (x: Float32Array) => x.map((v) => (Number.isFinite(v) ? v : -1e9));
      same(finite(s.scores), finite(whole.r.scores[i].scores), tol, `scores of layer ${s.layer}, head ${s.head}`, gaps);
    });
    for (let l = 0; l < L; l++) {
      same(blocks.rows[l].k, whole.rows[l].k, tol, `layer ${l}: pre-RoPE keys`, gaps);
      same(blocks.cache[l].k, whole.cache[l].k, tol, `layer ${l}: cached keys`, gaps);
      same(blocks.cache[l].v, whole.cache[l].v, tol, `layer ${l}: cached values`, gaps);
    }
    t.diagnostic(`largest gap ${Math.max(...gaps).toExponential(2)} of the largest value (bound ${tol})`);
    e.destroy();
  });
}

// CacheBlend narrows a pass's rows after its first layer (ForwardPass.select): kept rows move between blocks.
test('gemma: narrowing the rows between layers gives the same logits in blocks of 3 rows as whole', async (t) => {
  const e = await engineFor('gemma');
  const V = e.config.vocabSize, L = e.config.nLayers;
  const tokens = seq(17, 5, V);
  const keep = [0, 2, 3, 4, 8, 9, 10, 11, 15, 16];
  const run = async (maxRows: number | undefined) => {
    e.maxPassRows = maxRows;
    const c = e.newCache();
    await e.prefill(c, seq(17, 9, V), undefined, { logits: 'none' });
    const pass = e.pass(c);
    pass.begin(tokens, tokens.map((_, i) => i));
    pass.layer(0);
    pass.select(keep);
    for (let l = 1; l < L; l++) pass.layer(l);
    const logits = await pass.logits(keep.map((_, i) => i));
    const cache = [];
    for (let l = 0; l < L; l++) cache.push(await e.readRows(c, l, 0, tokens.length));
    c.destroy();
    return { logits, cache, blocks: pass.maxRows };
  };
  const whole = await run(undefined);
  const blocks = await run(3);
  assert.equal(blocks.blocks, 3);
  const gaps: number[] = [];
  same(blocks.logits, whole.logits, TOL.gemma, 'logits of the kept rows', gaps);
  for (let l = 0; l < L; l++) {
    same(blocks.cache[l].k, whole.cache[l].k, TOL.gemma, `layer ${l}: cached keys`, gaps);
    same(blocks.cache[l].v, whole.cache[l].v, TOL.gemma, `layer ${l}: cached values`, gaps);
  }
  t.diagnostic(`largest gap ${Math.max(...gaps).toExponential(2)} of the largest value (bound ${TOL.gemma})`);
  e.destroy();
});
