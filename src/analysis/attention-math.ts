/**
 * Attention-map arithmetic, kept apart from drawing so it can be tested and
 * shared by the studio's maps and the `npm run sinks` report: per-row
 * normalization (softmax probabilities, or EPIC Fig. 4's min-max scaling of
 * QKᵀ), column sums, per-chunk sink shares, and column downsampling for long
 * contexts.
 */
import type { AttentionMap } from '../types/attention';

export type Normalization = 'softmax' | 'minmax';

/** A row-major [rows × cols] matrix; NaN marks masked cells (keys after the query). */
export interface Grid {
  rows: number;
  cols: number;
  values: Float32Array;
}

/** One row normalized over its visible keys: softmax, or (x − min) / (max − min). */
export function normalizeRow(scores: ArrayLike<number>, cols: number, mode: Normalization): Float32Array {
  const out = new Float32Array(cols).fill(NaN);
  const n = Math.min(cols, scores.length);
  let max = -Infinity, min = Infinity;
  for (let j = 0; j < n; j++) {
    const v = scores[j];
    if (!Number.isFinite(v)) continue;
    if (v > max) max = v;
    if (v < min) min = v;
  }
  if (max === -Infinity) return out;
  if (mode === 'softmax') {
    let sum = 0;
    for (let j = 0; j < n; j++) if (Number.isFinite(scores[j])) sum += out[j] = Math.exp(scores[j] - max);
    for (let j = 0; j < n; j++) if (Number.isFinite(scores[j])) out[j] /= sum;
  } else {
    const span = max - min;
    for (let j = 0; j < n; j++) if (Number.isFinite(scores[j])) out[j] = span > 0 ? (scores[j] - min) / span : 1;
  }
  return out;
}

export function normalizeMap(map: AttentionMap, mode: Normalization): Grid {
  const cols = map.columns.length;
  const values = new Float32Array(map.rows.length * cols);
  map.rows.forEach((r, i) => values.set(normalizeRow(r.scores, cols, mode), i * cols));
  return { rows: map.rows.length, cols, values };
}

/** Sum of every column over the rows (masked cells count as 0). */
export function columnSums(g: Grid): Float32Array {
  const out = new Float32Array(g.cols);
  for (let i = 0; i < g.rows; i++) {
    for (let j = 0; j < g.cols; j++) {
      const v = g.values[i * g.cols + j];
      if (!Number.isNaN(v)) out[j] += v;
    }
  }
  return out;
}

export interface SinkShare {
  label: string;
  /** Column of the chunk's first token. */
  start: number;
  /** Mean share of a row's attention on the chunk's first `sinkTokens` tokens. */
  sink: number;
  /** Mean share of a row's attention on the whole chunk. */
  chunk: number;
}

/**
 * Per segment, the softmax attention mass of raw score rows (-Infinity where masked) on its first `sinkTokens`
 * columns and on all of it, averaged over the rows.
 */
export function segmentShares(
  rows: ArrayLike<number>[], cols: number, segments: { start: number; length: number }[], sinkTokens: number,
): { sink: number; chunk: number }[] {
  const values = new Float32Array(rows.length * cols);
  rows.forEach((r, i) => values.set(normalizeRow(r, cols, 'softmax'), i * cols));
  const sums = columnSums({ rows: rows.length, cols, values });
  const n = Math.max(1, rows.length);
  const range = (a: number, b: number) => {
    let s = 0;
    for (let j = a; j < Math.min(b, sums.length); j++) s += sums[j];
    return s / n;
  };
  return segments.map((s) => ({ sink: range(s.start, s.start + Math.min(sinkTokens, s.length)), chunk: range(s.start, s.start + s.length) }));
}

/** Per chunk of a map, the fraction of attention mass (softmax) on its first `sinkTokens` tokens, averaged over rows. */
export function sinkShares(map: AttentionMap, sinkTokens: number): { chunks: SinkShare[]; total: number } {
  const shares = segmentShares(map.rows.map((r) => r.scores), map.columns.length, map.segments, sinkTokens);
  const chunks = map.segments.map((s, i) => ({ label: s.label, start: s.start, ...shares[i] }));
  return { chunks, total: chunks.reduce((a, c) => a + c.sink, 0) };
}

export interface Binned extends Grid {
  /** Tokens per drawn column (1 when not downsampled). */
  factor: number;
}

/**
 * At most `maxCols` columns: each drawn column is the maximum of `factor` consecutive tokens (so a bright sink
 * column stays visible); masked when all of them are.
 */
export function downsample(g: Grid, maxCols: number): Binned {
  const factor = Math.max(1, Math.ceil(g.cols / Math.max(1, maxCols)));
  if (factor === 1) return { ...g, factor };
  const cols = Math.ceil(g.cols / factor);
  const values = new Float32Array(g.rows * cols).fill(NaN);
  for (let i = 0; i < g.rows; i++) {
    for (let j = 0; j < g.cols; j++) {
      const v = g.values[i * g.cols + j];
      if (Number.isNaN(v)) continue;
      const k = i * cols + Math.floor(j / factor);
      if (Number.isNaN(values[k]) || v > values[k]) values[k] = v;
    }
  }
  return { rows: g.rows, cols, values, factor };
}

/** Bins a per-token series by summing `factor` consecutive values. */
export function binSums(series: Float32Array, factor: number): Float32Array {
  if (factor <= 1) return series;
  const out = new Float32Array(Math.ceil(series.length / factor));
  series.forEach((v, j) => (out[Math.floor(j / factor)] += v));
  return out;
}

/** Colour of a value in [0, 1] (a perceptually ordered dark-blue → yellow ramp); masked cells are light grey. */
export function heatColour(v: number): [number, number, number] {
  if (Number.isNaN(v)) return [236, 238, 241];
  const t = Math.min(1, Math.max(0, v));
  const stops: [number, number, number][] = [[13, 8, 135], [84, 2, 163], [156, 23, 158], [205, 73, 117], [237, 121, 83], [253, 180, 47], [240, 249, 33]];
  const x = t * (stops.length - 1);
  const i = Math.min(stops.length - 2, Math.floor(x));
  const f = x - i;
  return [0, 1, 2].map((c) => Math.round(stops[i][c] + (stops[i + 1][c] - stops[i][c]) * f)) as [number, number, number];
}
