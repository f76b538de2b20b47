/** Comparing logits with an outside reference: the largest absolute difference and the reference's range. */
export function maxDiffOverRange(got: ArrayLike<number>, want: ArrayLike<number>): { d: number; range: number } {
  let lo = Infinity, hi = -Infinity, d = 0;
  for (let i = 0; i < want.length; i++) {
    lo = Math.min(lo, want[i]);
    hi = Math.max(hi, want[i]);
    d = Math.max(d, Math.abs(got[i] - want[i]));
  }
  return { d, range: hi - lo };
}

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

/** Largest |got - want| over (1 + the reference's largest magnitude): what assertClose(got, want, t, t) bounds by t. */
export function scaledMaxDiff(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let d = 0, ref = 0;
  for (let i = 0; i < want.length; i++) {
    d = Math.max(d, Math.abs(got[i] - want[i]));
    ref = Math.max(ref, Math.abs(want[i]));
  }
  return d / (1 + ref);
}

/**
 * Tolerance, on scaledMaxDiff's scale, for keys and values that went through RoPE at position ids up to `maxPos` by
 * two paths (rotated from another position, or computed there). The host rounds each angle pos·freq to f32, an
 * error of up to maxPos·2^-24 rad on either path (frequencies are at most 1), so the two can differ by twice that,
 * and the bound grows with the position; plus 5e-6 for the rest of the f32 arithmetic. Measured on SwiftShader
 * (tests/engine/engine-api, tests/kvlink/kvlink): about a tenth of it at thousands of positions (Gemma 3 fixture:
 * 6.5e-5 against 4.8e-4 at 4,000; 1.2e-4 against 1.1e-3 at 9,000), a fifteenth at tens (6e-7 against 1e-5).
 */
export function rerotationTolerance(maxPos: number): number {
  return 5e-6 + 2 * maxPos * 2 ** -24;
}
