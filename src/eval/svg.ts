/**
 * Dependency-free SVG charts for the results: lines or points per series,
 * linear or log axes, a legend. Deterministic output (same data, same
 * bytes), so regenerated charts only change when the data does.
 */

export interface Series {
  name: string;
  points: [number, number][];
  /** Draw markers only, no line (scatter). */
  markersOnly?: boolean;
  dashed?: boolean;
}

export interface ChartOptions {
  title: string;
  subtitle?: string;
  xLabel: string;
  yLabel: string;
  xLog?: boolean;
  yLog?: boolean;
  series: Series[];
  /** Explicit tick values (default: chosen from the data range). */
  xTicks?: number[];
  yTicks?: number[];
  width?: number;
  height?: number;
  /** Format tick labels. */
  xFormat?: (v: number) => string;
  yFormat?: (v: number) => string;
}

const COLORS = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22', '#17becf'];
const MARKERS = ['circle', 'square', 'triangle', 'diamond', 'circle', 'square', 'triangle', 'diamond', 'circle', 'square'];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const n2 = (v: number) => (Math.round(v * 100) / 100).toString();

export function compact(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e6) return `${n2(v / 1e6)}M`;
  if (a >= 1e4) return `${n2(v / 1e3)}K`;
  if (a >= 100 || Number.isInteger(v)) return String(Math.round(v));
  if (a >= 1) return n2(v);
  return String(Number(v.toPrecision(2)));
}

function niceTicks(lo: number, hi: number, log: boolean): number[] {
  if (log) {
    const out: number[] = [];
    const e0 = Math.floor(Math.log10(lo)), e1 = Math.ceil(Math.log10(hi));
    const steps = e1 - e0 <= 2 ? [1, 2, 5] : [1];
    for (let e = e0; e <= e1; e++) for (const m of steps) {
      const v = m * 10 ** e;
      if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v);
    }
    return out.length >= 2 ? out : [lo, hi];
  }
  const span = hi - lo || 1;
  const raw = span / 5;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => span / s <= 6)!;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

function marker(kind: string, x: number, y: number, color: string): string {
  const r = 4;
  if (kind === 'square') return `<rect x="${n2(x - r)}" y="${n2(y - r)}" width="${2 * r}" height="${2 * r}" fill="${color}"/>`;
  if (kind === 'triangle') return `<path d="M${n2(x)} ${n2(y - r - 1)}L${n2(x + r + 1)} ${n2(y + r)}L${n2(x - r - 1)} ${n2(y + r)}Z" fill="${color}"/>`;
  if (kind === 'diamond') return `<path d="M${n2(x)} ${n2(y - r - 1)}L${n2(x + r + 1)} ${n2(y)}L${n2(x)} ${n2(y + r + 1)}L${n2(x - r - 1)} ${n2(y)}Z" fill="${color}"/>`;
  return `<circle cx="${n2(x)}" cy="${n2(y)}" r="${r}" fill="${color}"/>`;
}

export function lineChart(o: ChartOptions): string {
  const W = o.width ?? 640, H = o.height ?? 400;
  const legendW = 170;
  const m = { l: 64, r: legendW + 16, t: o.subtitle ? 52 : 38, b: 48 };
  const pw = W - m.l - m.r, ph = H - m.t - m.b;
  const pts = o.series.flatMap((s) => s.points).filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y) && (!o.xLog || x > 0) && (!o.yLog || y > 0));
  const xs = pts.map((p) => p[0]), ys = pts.map((p) => p[1]);
  let [x0, x1] = pts.length ? [Math.min(...xs), Math.max(...xs)] : [1, 10];
  let [y0, y1] = pts.length ? [Math.min(...ys), Math.max(...ys)] : [1, 10];
  if (o.xTicks?.length) [x0, x1] = [Math.min(x0, ...o.xTicks), Math.max(x1, ...o.xTicks)];
  if (o.yTicks?.length) [y0, y1] = [Math.min(y0, ...o.yTicks), Math.max(y1, ...o.yTicks)];
  const pad = (lo: number, hi: number, log: boolean): [number, number] => {
    if (log) {
      const f = lo === hi ? 2 : 1.15;
      return [lo / f, hi * f];
    }
    const span = hi - lo || Math.abs(hi) || 1;
    return [lo - span * 0.06, hi + span * 0.06];
  };
  [x0, x1] = pad(x0, x1, !!o.xLog);
  [y0, y1] = pad(y0, y1, !!o.yLog);
  const tx = (v: number) => (o.xLog ? m.l + ((Math.log(v) - Math.log(x0)) / (Math.log(x1) - Math.log(x0))) * pw : m.l + ((v - x0) / (x1 - x0)) * pw);
  const ty = (v: number) => (o.yLog ? m.t + ph - ((Math.log(v) - Math.log(y0)) / (Math.log(y1) - Math.log(y0))) * ph : m.t + ph - ((v - y0) / (y1 - y0)) * ph);
  const xf = o.xFormat ?? compact, yf = o.yFormat ?? compact;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${W / 2 - legendW / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">${esc(o.title)}</text>`);
  if (o.subtitle) out.push(`<text x="${W / 2 - legendW / 2}" y="37" text-anchor="middle" font-size="10" fill="#555">${esc(o.subtitle)}</text>`);
  // Grid and ticks.
  for (const v of o.xTicks ?? niceTicks(x0, x1, !!o.xLog)) {
    if (v < x0 || v > x1) continue;
    const x = n2(tx(v));
    out.push(`<line x1="${x}" y1="${m.t}" x2="${x}" y2="${m.t + ph}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${x}" y="${m.t + ph + 16}" text-anchor="middle">${esc(xf(v))}</text>`);
  }
  for (const v of o.yTicks ?? niceTicks(y0, y1, !!o.yLog)) {
    if (v < y0 || v > y1) continue;
    const y = n2(ty(v));
    out.push(`<line x1="${m.l}" y1="${y}" x2="${m.l + pw}" y2="${y}" stroke="#e5e5e5"/>`);
    out.push(`<text x="${m.l - 6}" y="${n2(ty(v) + 4)}" text-anchor="end">${esc(yf(v))}</text>`);
  }
  out.push(`<rect x="${m.l}" y="${m.t}" width="${pw}" height="${ph}" fill="none" stroke="#333"/>`);
  out.push(`<text x="${m.l + pw / 2}" y="${H - 10}" text-anchor="middle">${esc(o.xLabel)}${o.xLog ? ' (log)' : ''}</text>`);
  out.push(`<text transform="translate(16 ${m.t + ph / 2}) rotate(-90)" text-anchor="middle">${esc(o.yLabel)}${o.yLog ? ' (log)' : ''}</text>`);
  // Series.
  o.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length];
    const p = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y) && (!o.xLog || x > 0) && (!o.yLog || y > 0));
    if (!s.markersOnly && p.length > 1) {
      const d = p.map(([x, y], j) => `${j ? 'L' : 'M'}${n2(tx(x))} ${n2(ty(y))}`).join('');
      out.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`);
    }
    for (const [x, y] of p) out.push(marker(MARKERS[i % MARKERS.length], tx(x), ty(y), color));
    const ly = m.t + 8 + i * 20;
    const lx = W - legendW;
    if (!s.markersOnly) out.push(`<line x1="${lx}" y1="${ly}" x2="${lx + 24}" y2="${ly}" stroke="${color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="6 4"' : ''}/>`);
    out.push(marker(MARKERS[i % MARKERS.length], lx + 12, ly, color));
    out.push(`<text x="${lx + 30}" y="${ly + 4}">${esc(s.name)}</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}
