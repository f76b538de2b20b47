/**
 * The attention-sink report's arithmetic (src/eval/sinks.ts): softmax over
 * the visible keys of each question row, then the mass on each chunk's first
 * tokens and on the whole chunk, averaged over rows. Checked against values
 * worked out by hand; and the report itself on stories260K, whose default
 * rows start with the ordinary prompt.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chunkShares, sinkReport, SINK_ALGORITHMS } from '../../src/eval/sinks';
import { NodeBackend } from '../../src/eval/node-backend';
import { generateMultiDoc } from '../../src/eval/generators/multidoc';
import type { LinkLayout } from '../../src/kvlink/layout';

const close = (a: number, b: number, msg: string) => assert.ok(Math.abs(a - b) < 1e-9, `${msg}: ${a} vs ${b}`);

test('chunk shares: softmax mass on chunk starts and chunks, masked keys excluded, averaged over rows', () => {
  // Two chunks of 2 rows each (rows 0-1 and 2-3), then one question row (4) that is itself a key.
  const layout = { segments: [{ start: 0, length: 2 }, { start: 2, length: 2 }] } as unknown as LinkLayout;
  const ln = Math.log;
  // Row A: weights 4:1:2:1:0(masked) → probabilities 4/8, 1/8, 2/8, 1/8.
  // Row B: weights 1:1:1:1:4 → probabilities 1/8 each on the chunks, 4/8 on itself.
  const scores = new Float32Array([ln(4), ln(1), ln(2), ln(1), -Infinity, 0, 0, 0, 0, ln(4)]);
  const [c1, c2] = chunkShares(layout, { layer: 0, head: 0, rows: [4, 4], scores, keys: 5 }, 1);
  close(c1.start, (4 / 8 + 1 / 8) / 2, 'chunk 1 start');
  close(c1.chunk, (5 / 8 + 2 / 8) / 2, 'chunk 1');
  close(c2.start, (2 / 8 + 1 / 8) / 2, 'chunk 2 start');
  close(c2.chunk, (3 / 8 + 2 / 8) / 2, 'chunk 2');
  assert.equal(c2.length, 2);
  const [w1] = chunkShares(layout, { layer: 0, head: 0, rows: [4, 4], scores, keys: 5 }, 2);
  close(w1.start, w1.chunk, 'two sink tokens cover the whole 2-row chunk');
});

test('the report links each case with every default algorithm, the ordinary prompt first', async () => {
  const algorithms = SINK_ALGORITHMS.split(',');
  assert.deepEqual(algorithms, ['prompt', 'naive', 'legolink:16', 'full']);
  const cases = generateMultiDoc({ seed: 3, n: 1, docs: 2 });
  const backend = await NodeBackend.open('stories260K');
  try {
    const r = await sinkReport(backend, cases, algorithms, 1);
    assert.equal(r.cases, 1);
    assert.deepEqual(Object.keys(r.algorithms), algorithms);
    for (const al of algorithms) {
      const chunks = r.algorithms[al].per_chunk;
      assert.equal(chunks.length, cases[0].chunks.length, `${al}: a row per chunk`);
      for (const c of chunks) assert.ok(c.cases === 1 && c.start_share > 0 && c.start_share <= c.chunk_share && c.chunk_share < 1, `${al} chunk ${c.chunk}`);
      assert.equal(r.algorithms[al].per_layer.length, r.layers);
    }
    // Chunk 2 of the ordinary prompt is its text alone (no BOS): a different row from full's, whose chunk 2 starts with one.
    assert.notEqual(r.algorithms.prompt.per_chunk[1].start_share, r.algorithms.full.per_chunk[1].start_share);
  } finally {
    await backend.close();
  }
});
