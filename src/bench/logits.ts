/** Comparing two runs' logits, as the parity tests and the GPU kit's real-model check do. */

/** log-softmax in f64. */
export function logSoftmax(x: ArrayLike<number>): Float64Array {
  let m = -Infinity;
  for (let i = 0; i < x.length; i++) m = Math.max(m, x[i]);
  let s = 0;
  for (let i = 0; i < x.length; i++) s += Math.exp(x[i] - m);
  const lse = m + Math.log(s);
  const out = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) out[i] = x[i] - lse;
  return out;
}

/**
 * Two runs' logits compared as log-softmax (so a constant offset never counts): max |ours - ref| over the range
 * of ref's, and the index of the largest difference.
 */
export function logitRangeError(ours: ArrayLike<number>, ref: ArrayLike<number>): { err: number; at: number } {
  const a = logSoftmax(ours), b = logSoftmax(ref);
  let lo = Infinity, hi = -Infinity, worst = 0, at = 0;
  for (let i = 0; i < b.length; i++) {
    lo = Math.min(lo, b[i]);
    hi = Math.max(hi, b[i]);
    const d = Math.abs(a[i] - b[i]);
    if (d > worst) [worst, at] = [d, i];
  }
  return { err: worst / (hi - lo), at };
}

/** The gap between the best and the second-best logit (how close greedy is to a tie). */
export function top2Gap(x: ArrayLike<number>): number {
  let a = -Infinity, b = -Infinity;
  for (let i = 0; i < x.length; i++) {
    if (x[i] > a) [a, b] = [x[i], a];
    else if (x[i] > b) b = x[i];
  }
  return a - b;
}
