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

export { logSoftmax, logitRangeError } from '../../src/bench/logits';

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
