/** The result charts: EPIC's Figures 6, 8 and 9, drawn from the JSON the benchmarks write. */
import { lineChart, compact } from './svg';
import type { LoadResults, ScalingResults } from './result-files';
import type { EvalResults } from './runner';

const tokensK = (v: number) => (v >= 1024 && v % 1024 === 0 ? `${v / 1024}K` : compact(v));
const shortAdapter = (a: string) => a.split(' / ')[0].replace(/^\s+|\s+$/g, '');

/** Figure 9: TTFT against context length (log-log), one line per algorithm, with its fitted exponent. */
export function scalingChart(r: ScalingResults): string {
  const algs = [...new Set(r.points.map((p) => p.algorithm))];
  return lineChart({
    title: 'TTFT vs context length',
    subtitle: `${r.model}, ${r.chunk_tokens}-token chunks, ${shortAdapter(r.adapter)}`,
    xLabel: 'context tokens', yLabel: 'TTFT (ms)', xLog: true, yLog: true,
    xTicks: [...new Set(r.points.map((p) => p.context_tokens))].sort((a, b) => a - b), xFormat: tokensK,
    series: algs.map((alg) => {
      const f = r.fits.find((x) => x.algorithm === alg);
      return {
        name: f && f.points >= 2 && Number.isFinite(f.exponent) ? `${alg} (N^${f.exponent.toFixed(2)})` : alg,
        points: r.points.filter((p) => p.algorithm === alg).map((p) => [p.context_tokens, p.ttft_ms] as [number, number]),
      };
    }),
  });
}

/** Figure 8: mean TTFT (queueing included) and throughput against the request rate. */
export function loadChart(r: LoadResults): string {
  const algs = [...new Set(r.points.map((p) => p.algorithm))];
  const rates = [...new Set(r.points.map((p) => p.rate))].sort((a, b) => a - b);
  const sub = `${r.model}, ${r.users} users × ${r.context_tokens} tokens, ${shortAdapter(r.adapter)}`;
  const left = lineChart({
    title: 'TTFT (with queueing) vs request rate', subtitle: sub, xLabel: 'request rate (req/s)', yLabel: 'mean TTFT (ms)', xLog: true, yLog: true,
    xTicks: rates, series: algs.map((alg) => ({ name: alg, points: r.points.filter((p) => p.algorithm === alg).map((p) => [p.rate, p.ttft_ms_mean] as [number, number]) })),
  });
  const right = lineChart({
    title: 'Throughput vs request rate', subtitle: sub, xLabel: 'request rate (req/s)', yLabel: 'served requests / s', xLog: true, yLog: true,
    xTicks: rates, series: algs.map((alg) => ({ name: alg, dashed: true, points: r.points.filter((p) => p.algorithm === alg).map((p) => [p.rate, p.throughput_rps] as [number, number]) })),
  });
  // Side by side in one SVG.
  const inner = (svg: string, dx: number) => svg.replace(/^<svg[^>]*>/, `<g transform="translate(${dx} 0)">`).replace(/<\/svg>\s*$/, '</g>');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="1280" height="400" viewBox="0 0 1280 400" font-family="sans-serif" font-size="12">\n${inner(left, 0)}\n${inner(right, 640)}\n</svg>\n`;
}

const CHART_KEYS = {
  accuracy: { title: 'Accuracy', y: 'accuracy (F1 / Rouge-L)' },
  answer_recall: { title: 'Answer recall', y: 'share of the answer in the reply' },
  agreement_with_full: { title: 'Agreement with full recompute', y: 'F1 against full recompute' },
};

/** Figure 6: accuracy (or answer recall, or agreement with full recompute) against mean TTFT for one run, one point per algorithm. */
export function accuracyChart(r: EvalResults, key: keyof typeof CHART_KEYS = 'accuracy'): string {
  const data = r.data.replace(/^.*\//, '').replace(/\.jsonl$/, '');
  return lineChart({
    title: `${CHART_KEYS[key].title} vs TTFT: ${data}`,
    subtitle: `${r.model}, ${shortAdapter(r.adapter)}, ${Math.max(0, ...r.results.map((x) => x.n))} cases`,
    xLabel: 'mean TTFT (ms)', yLabel: CHART_KEYS[key].y, xLog: true,
    yTicks: [0, 0.25, 0.5, 0.75, 1],
    series: r.results.filter((x) => x.n > 0 && x[key] != null).map((x) => ({ name: x.algorithm, markersOnly: true, points: [[x.ttft_ms_mean, x[key] as number]] as [number, number][] })),
  });
}
