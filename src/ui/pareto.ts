/** Reading evaluation results for the accuracy-against-TTFT chart, and its Pareto front (tested in Node). */

export interface ParetoPoint {
  algorithm: string;
  ttftMs: number;
  accuracy: number;
  /** Agreement of the answers with full recompute's (F1), when the run had full; NaN otherwise. */
  agreement: number;
}

export type ParetoMetric = 'accuracy' | 'agreement';

/** Points from an evaluation results file; accepts `{ results: [...] }` or a bare array, with a few key spellings. */
export function parseResults(json: unknown): ParetoPoint[] {
  const list = Array.isArray(json) ? json : (json as { results?: unknown })?.results;
  if (!Array.isArray(list)) throw new Error('expected { "results": [ { "algorithm", "accuracy", "ttft_ms_mean" }, … ] }');
  const num = (o: Record<string, unknown>, keys: string[]) => {
    for (const k of keys) if (typeof o[k] === 'number') return o[k] as number;
    return NaN;
  };
  const out = list.map((r: Record<string, unknown>) => ({
    algorithm: String(r.algorithm ?? '?'),
    ttftMs: num(r, ['ttft_ms_mean', 'ttft_ms', 'ttftMs', 'ttft']),
    accuracy: num(r, ['accuracy', 'score', 'f1']),
    agreement: num(r, ['agreement_with_full', 'agreement']),
  })).filter((p) => Number.isFinite(p.ttftMs) && Number.isFinite(p.accuracy));
  if (!out.length) throw new Error('no result has both a TTFT and an accuracy');
  return out;
}

/** The points no other point beats on both TTFT (lower) and the metric (higher), by TTFT. */
export function paretoFront(points: ParetoPoint[], metric: ParetoMetric = 'accuracy'): ParetoPoint[] {
  const ok = points.filter((p) => Number.isFinite(p[metric]));
  const sorted = ok.sort((a, b) => a.ttftMs - b.ttftMs || b[metric] - a[metric]);
  const front: ParetoPoint[] = [];
  for (const p of sorted) if (!front.length || p[metric] > front[front.length - 1][metric]) front.push(p);
  return front;
}
