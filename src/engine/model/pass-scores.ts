import { unmaskScores, type Ops, type ScoresArgs } from '../ops';
import type { RunState } from './run-state';

/**
 * What a forward pass reads of attention besides its output (ForwardPass's scores): the raw scores of chosen
 * rows and heads in chosen layers, for the attention maps (sinks at chunk starts) and the analyses.
 */
export interface ScoresRequest {
  /** One layer, or several (each gives its own results, in the same pass). */
  layer: number | readonly number[];
  heads: number[];
  /** Indices into the pass's rows whose scores are wanted. */
  rows: number[];
}
export interface ScoresResult {
  layer: number;
  head: number;
  /** Cache rows of the queries. */
  rows: number[];
  /** Raw scaled scores q·k, [rows, keys], -Infinity where masked. */
  scores: Float32Array;
  keys: number;
}

/** Whether a scores request covers layer `l`. */
export function wantsLayer(layer: ScoresRequest['layer'], l: number): boolean {
  return typeof layer === 'number' ? layer === l : layer.includes(l);
}

/** One result per layer and head: a request whose rows span blocks comes back in parts, joined in pass order. */
export function joinScores(parts: ScoresResult[]): ScoresResult[] {
  const joined = new Map<string, ScoresResult[]>();
  for (const p of parts) {
    const key = `${p.layer}:${p.head}`;
    const list = joined.get(key);
    if (list) list.push(p);
    else joined.set(key, [p]);
  }
  return [...joined.values()].map((ps) => {
    if (ps.length === 1) return ps[0];
    const scores = new Float32Array(ps.reduce((t, p) => t + p.scores.length, 0));
    let o = 0;
    for (const p of ps) {
      scores.set(p.scores, o);
      o += p.scores.length;
    }
    return { ...ps[0], rows: ps.flatMap((p) => p.rows), scores };
  });
}

/**
 * Records the scores of the requested rows in one block of a pass (rows [a, b) of it; `common`, the block's
 * attention), read back once the work is submitted: a read per head, each rejecting only where awaited (a lost
 * device rejects it while the caller awaits another read, a token or a step recorded before).
 */
export function requestScores(ops: Ops, s: RunState, req: ScoresRequest, layer: number, common: Omit<ScoresArgs, 'rows' | 'R' | 'head' | 'out'>, blk: { a: number; b: number }, passRows: Uint32Array): Promise<ScoresResult>[] {
  const mine = req.rows.filter((r) => r >= blk.a && r < blk.b);
  const R = mine.length;
  if (!R) return [];
  const n = common.n;
  const rowsBuf = s.putProbeRows(Uint32Array.from(mine, (r) => r - blk.a));
  const cacheRows = mine.map((r) => passRows[r]);
  return req.heads.map((head) => {
    const out = s.probe(head, R, n);
    ops.attnScores({ ...common, rows: rowsBuf, R, head, out });
    const read = ops.d.read(out, 0, R * n * 4).then((b) => ({ layer, head, rows: cacheRows, scores: unmaskScores(new Float32Array(b)), keys: n }));
    read.catch(() => {});
    return read;
  });
}
