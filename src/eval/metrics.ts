/**
 * Accuracy metrics, as LongBench scores the datasets EPIC evaluates on.
 *
 * - F1 (QA, needle): both strings are normalised (lower-cased; ASCII
 *   punctuation removed; the articles a, an, the removed; whitespace
 *   collapsed), split on whitespace, and scored by token-overlap F1 (a token
 *   counts as often as it occurs in both). The score is the best over the
 *   reference answers.
 * - Rouge-L F (summaries): both strings are lower-cased and split into runs of
 *   letters and digits; with L the length of their longest common
 *   subsequence, P = L / |prediction|, R = L / |reference|, F = 2PR / (P + R).
 *   The best over the references.
 *
 * - Answer recall (QA, needle; reported beside F1): the share of the
 *   reference's normalised tokens that the prediction contains (the R of F1,
 *   a token counting as often as it occurs in both). It asks whether the
 *   reply holds the answer at all, as needle tests (RULER) score: an
 *   instruction model that answers "The best day to visit Biobe is
 *   Wednesday." scores recall 1 but F1 0.2, the same for every algorithm, so
 *   F1 alone squeezes a model that answers well into the bottom of the scale.
 *
 * Scores are in [0, 1].
 */
import type { MetricName } from './dataset';

const PUNCT = new Set('!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~');

/** LongBench's (SQuAD's) answer normalisation. */
export function normalizeAnswer(s: string): string {
  const lower = s.toLowerCase();
  let noPunct = '';
  for (const ch of lower) if (!PUNCT.has(ch)) noPunct += ch;
  const noArticles = noPunct.replace(/\b(a|an|the)\b/g, ' ');
  return noArticles.split(/\s+/).filter(Boolean).join(' ');
}

/** Tokens the two lists share, each counted as often as it occurs in both. */
function sharedTokens(a: readonly string[], b: readonly string[]): number {
  const counts = new Map<string, number>();
  for (const t of b) counts.set(t, (counts.get(t) ?? 0) + 1);
  let same = 0;
  for (const t of a) {
    const n = counts.get(t) ?? 0;
    if (n > 0) {
      same++;
      counts.set(t, n - 1);
    }
  }
  return same;
}

/** Token-overlap F1 of two token lists. */
export function tokenF1(pred: readonly string[], ref: readonly string[]): number {
  if (pred.length === 0 || ref.length === 0) return 0;
  const same = sharedTokens(pred, ref);
  if (same === 0) return 0;
  const p = same / pred.length;
  const r = same / ref.length;
  return (2 * p * r) / (p + r);
}

/** Share of `ref`'s tokens found in `pred` (each counted as often as it occurs in both). */
export function tokenRecall(pred: readonly string[], ref: readonly string[]): number {
  return ref.length === 0 ? 0 : sharedTokens(pred, ref) / ref.length;
}

const answerTokens = (s: string) => normalizeAnswer(s).split(' ').filter(Boolean);

/** Answer recall against one reference, normalised as qaF1. */
export function answerRecall(prediction: string, reference: string): number {
  return tokenRecall(answerTokens(prediction), answerTokens(reference));
}

/** LongBench-style QA F1 against one reference. */
export function qaF1(prediction: string, reference: string): number {
  return tokenF1(answerTokens(prediction), answerTokens(reference));
}

/** Lower-cased runs of letters and digits. */
export function rougeTokens(s: string): string[] {
  return s.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** Length of the longest common subsequence (two-row dynamic programme). */
export function lcsLength(a: readonly string[], b: readonly string[]): number {
  if (a.length === 0 || b.length === 0) return 0;
  let prev = new Uint32Array(b.length + 1);
  let cur = new Uint32Array(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      cur[j] = a[i - 1] === b[j - 1] ? prev[j - 1] + 1 : Math.max(prev[j], cur[j - 1]);
    }
    [prev, cur] = [cur, prev];
  }
  return prev[b.length];
}

/** Rouge-L F (β = 1) against one reference. */
export function rougeL(prediction: string, reference: string): number {
  const p = rougeTokens(prediction);
  const r = rougeTokens(reference);
  const l = lcsLength(p, r);
  if (l === 0) return 0;
  const precision = l / p.length;
  const recall = l / r.length;
  return (2 * precision * recall) / (precision + recall);
}

/** The best of `f` over the reference answers. */
const bestOver = (f: (prediction: string, reference: string) => number, prediction: string, answers: readonly string[]) =>
  answers.reduce((best, a) => Math.max(best, f(prediction, a)), 0);

/** The case's metric, best over its reference answers. */
export function score(metric: MetricName, prediction: string, answers: readonly string[]): number {
  return bestOver(metric === 'f1' ? qaF1 : rougeL, prediction, answers);
}

/** Answer recall, best over the reference answers; null for summaries (Rouge-L cases), where it means nothing. */
export function recallScore(metric: MetricName, prediction: string, answers: readonly string[]): number | null {
  return metric === 'f1' ? bestOver(answerRecall, prediction, answers) : null;
}
