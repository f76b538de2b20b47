/**
 * The measured sink map's arithmetic (src/analysis/sink-grid.ts), against
 * values worked out by hand: per layer and head the softmax share of the
 * question rows on each measured chunk's first token and on one ordinary
 * token, the chunk that starts the prompt left out, the ratio over layers >=
 * minLayer, and the pick.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sinkGrid, measuredSegments, type HeadScores } from '../../src/analysis/sink-grid';

const close = (a: number, b: number, msg: string) => assert.ok(Math.abs(a - b) < 1e-6, `${msg}: ${a} vs ${b}`);

/** One question row over 6 keys with these softmax weights (0 = masked). */
function head(layer: number, h: number, weights: number[]): HeadScores {
  return { layer, head: h, rows: [6], keys: 6, scores: Float32Array.from(weights.map((w) => (w > 0 ? Math.log(w) : -Infinity))) };
}

test('sink map: start and ordinary-token shares per head, the prompt-start chunk left out, ratio over layers >= minLayer, pick', () => {
  // Chunk A = keys 0-1 (starts the prompt: not measured), chunk B = keys 2-4, key 5 = the question row itself.
  const segments = [{ start: 0, length: 2 }, { start: 2, length: 3 }];
  assert.deepEqual(measuredSegments(segments), [segments[1]]);
  const scores = [
    head(0, 0, [1, 1, 1, 1, 1, 1]), // B start 1/6, B ordinary 1/6 each
    head(0, 1, [1, 1, 4, 1, 1, 2]), // B start 4/10, ordinary 1/10
    head(1, 0, [2, 0, 6, 1, 1, 0]), // masked keys drop out: B start 6/10, ordinary 1/10
    head(1, 1, [1, 1, 2, 2, 2, 2]), // B start 2/10, ordinary 2/10
  ];
  const g = sinkGrid(scores, segments, 2, 2, 1);
  assert.equal(g.chunks, 1);
  close(g.start[0], 1 / 6, 'l0h0 start');
  close(g.ordinary[0], 1 / 6, 'l0h0 ordinary');
  close(g.start[1], 0.4, 'l0h1 start');
  close(g.ordinary[1], 0.1, 'l0h1 ordinary');
  close(g.start[2], 0.6, 'l1h0 start');
  close(g.start[3], 0.2, 'l1h1 start');
  // Layers >= 1: (0.6 + 0.2) / (0.1 + 0.2).
  close(g.ratio, 0.8 / 0.3, 'ratio');
  assert.deepEqual([g.best.layer, g.best.head], [1, 0]);
  close(sinkGrid(scores, segments, 2, 2, 0).ratio, (1 / 6 + 0.4 + 0.6 + 0.2) / (1 / 6 + 0.1 + 0.1 + 0.2), 'ratio over all layers');
  // Two measured chunks: the means are over chunks.
  const two = sinkGrid([head(0, 0, [1, 1, 3, 1, 5, 1])], [{ start: 1, length: 3 }, { start: 4, length: 2 }], 1, 1, 0);
  close(two.start[0], (1 / 12 + 5 / 12) / 2, 'mean start over chunks');
  close(two.ordinary[0], ((3 + 1) / 2 / 12 + 1 / 12) / 2, 'mean ordinary over chunks');
  assert.throws(() => sinkGrid(scores, [segments[0]], 2, 2), /No chunk to measure/);
});
