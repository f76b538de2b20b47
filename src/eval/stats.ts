/** Small statistics helpers for the runner and the benchmarks. */

export function mean(xs: readonly number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN;
}

/** Linear-interpolated quantile, q in [0, 1]. */
export function quantile(xs: readonly number[], q: number): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const pos = (s.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

export const median = (xs: readonly number[]) => quantile(xs, 0.5);

export function stddev(xs: readonly number[]): number {
  if (xs.length < 2) return 0;
  const m = mean(xs);
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1));
}

/** Least-squares line y = a + b x. */
export function linearFit(xs: readonly number[], ys: readonly number[]): { intercept: number; slope: number; r2: number } {
  const n = xs.length;
  if (n < 2 || ys.length !== n) return { intercept: NaN, slope: NaN, r2: NaN };
  const mx = mean(xs);
  const my = mean(ys);
  let sxx = 0, sxy = 0, syy = 0;
  for (let i = 0; i < n; i++) {
    sxx += (xs[i] - mx) ** 2;
    sxy += (xs[i] - mx) * (ys[i] - my);
    syy += (ys[i] - my) ** 2;
  }
  const slope = sxy / sxx;
  return { intercept: my - slope * mx, slope, r2: syy === 0 ? 1 : (sxy * sxy) / (sxx * syy) };
}

/** Fits y = c · x^k by least squares on log y against log x; returns the exponent k, c and the fit's R². */
export function powerLawFit(xs: readonly number[], ys: readonly number[]): { exponent: number; coefficient: number; r2: number } {
  const pts = xs.map((x, i) => [x, ys[i]]).filter(([x, y]) => x > 0 && y > 0);
  const f = linearFit(pts.map(([x]) => Math.log(x)), pts.map(([, y]) => Math.log(y)));
  return { exponent: f.slope, coefficient: Math.exp(f.intercept), r2: f.r2 };
}
