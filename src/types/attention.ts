/**
 * An attention map as the studio draws it and analysis/attention-math reduces it: the worker captures it, the
 * page and the `sinks` report read it. Kept here so that neither side imports the other for it.
 */

/** One query row of an attention map: raw scaled q·k against every key before it (-Infinity where masked). */
export interface MapRow {
  /** Text of the query token. */
  token: string;
  kind: 'question' | 'answer';
  scores: Float32Array;
}

export interface AttentionMap {
  algorithm: string;
  layer: number;
  head: number;
  /** Text of every key token (prompt rows, then generated tokens). */
  columns: string[];
  /** Cached chunks in the prompt, in order. */
  segments: { start: number; length: number; label: string }[];
  /** First row after the last cached chunk (the question and its template). */
  questionStart: number;
  promptTokens: number;
  rows: MapRow[];
}
