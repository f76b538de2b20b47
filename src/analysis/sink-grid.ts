/**
 * The measured sink map: for every layer and head of one linked prompt, how
 * much of the question rows' attention (softmax) lands on the first token of
 * each cached chunk, against one ordinary token of the same chunk. The guided
 * demo picks the layer and head to draw from it, and the SmolLM2 test checks
 * its ratio; both use this arithmetic, on top of attention-math's shares.
 *
 * Chunks measured: every cached chunk except one that starts the prompt
 * (row 0), whose first token is the prompt's real start and a sink under any
 * algorithm; chunks of one token have no ordinary token and are left out.
 */
import { segmentShares } from './attention-math';

/** Question rows' raw scores for one layer and head (as the engine captures them: [rows, keys], -Infinity masked). */
export interface HeadScores {
  layer: number;
  head: number;
  rows: ArrayLike<number>;
  scores: Float32Array;
  keys: number;
}

export interface SinkGrid {
  layers: number;
  heads: number;
  /** Per cell (`layer * heads + head`): mean over the measured chunks of the share on the chunk's first token. */
  start: number[];
  /** Per cell: mean over the measured chunks of the share of one ordinary (non-first) token of the chunk. */
  ordinary: number[];
  /** How many chunks were measured. */
  chunks: number;
  /** The layers the ratio averages over: `minLayer` and up. */
  minLayer: number;
  /**
   * Mean start share over mean ordinary-token share, both averaged over layers >= minLayer and all heads: how
   * many ordinary tokens of its chunk one chunk start weighs.
   */
  ratio: number;
  /** The cell with the largest start share (ties: the first). */
  best: { layer: number; head: number; start: number; ordinary: number };
}

/** The chunks measured (see the file comment): segments that do not start the prompt and have an ordinary token. */
export function measuredSegments<S extends { start: number; length: number }>(segments: S[]): S[] {
  return segments.filter((s) => s.start > 0 && s.length >= 2);
}

export function sinkGrid(
  scores: HeadScores[], segments: { start: number; length: number }[], layers: number, heads: number, minLayer = 2,
): SinkGrid {
  const segs = measuredSegments(segments);
  if (!segs.length) throw new Error('No chunk to measure: link at least one chunk of two or more tokens after the prompt start');
  const start = new Array<number>(layers * heads).fill(NaN);
  const ordinary = new Array<number>(layers * heads).fill(NaN);
  for (const s of scores) {
    const nRows = s.rows.length;
    const rows = Array.from({ length: nRows }, (_, r) => s.scores.subarray(r * s.keys, (r + 1) * s.keys));
    const shares = segmentShares(rows, s.keys, segs, 1);
    let st = 0, ord = 0;
    shares.forEach((x, i) => {
      st += x.sink;
      ord += (x.chunk - x.sink) / (segs[i].length - 1);
    });
    start[s.layer * heads + s.head] = st / segs.length;
    ordinary[s.layer * heads + s.head] = ord / segs.length;
  }
  let num = 0, den = 0, best = -1;
  for (let l = 0; l < layers; l++) {
    for (let h = 0; h < heads; h++) {
      const i = l * heads + h;
      if (Number.isNaN(start[i])) continue;
      if (l >= minLayer) {
        num += start[i];
        den += ordinary[i];
      }
      if (best < 0 || start[i] > start[best]) best = i;
    }
  }
  if (best < 0) throw new Error('No attention scores were captured');
  return {
    layers, heads, start, ordinary, chunks: segs.length, minLayer, ratio: den > 0 ? num / den : NaN,
    best: { layer: Math.floor(best / heads), head: best % heads, start: start[best], ordinary: ordinary[best] },
  };
}
