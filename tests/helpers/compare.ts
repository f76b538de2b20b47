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
