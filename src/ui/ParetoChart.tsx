/**
 * Accuracy against TTFT from an evaluation run (EPIC Fig. 6): load the
 * results JSON the evaluation writes (`results[]` with algorithm, accuracy,
 * ttft_ms_mean); one point per algorithm (named in the legend), the Pareto
 * front joined by a line.
 */
import { useState } from 'react';
import { CartesianGrid, Legend, Scatter, ScatterChart, Tooltip, XAxis, YAxis, ZAxis } from 'recharts';
import { ChartCard } from './ChartCard';
import { paretoFront, parseResults, type ParetoMetric, type ParetoPoint } from './pareto';

/** One colour per algorithm in the charts' series. */
export const ALGO_COLOURS = ['#dc2626', '#2563eb', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#4b5563', '#be185d'];

export function ParetoChart({ width }: { width: number }) {
  const [points, setPoints] = useState<ParetoPoint[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [metric, setMetric] = useState<ParetoMetric>('accuracy');
  async function load(file: File | undefined) {
    if (!file) return;
    try {
      setPoints(parseResults(JSON.parse(await file.text())));
      setError(null);
    } catch (e) {
      setError(`Could not read ${file.name}: ${(e as Error).message}`);
    }
  }
  const front = paretoFront(points, metric);
  const shown = points.filter((p) => Number.isFinite(p[metric]));
  const hasAgreement = points.some((p) => Number.isFinite(p.agreement));
  return (
    <ChartCard title="Accuracy against TTFT" file="accuracy-ttft" data={points} testId="pareto-chart">
      <label className="button-like small">
        Load evaluation results (JSON)…
        <input type="file" accept=".json,application/json" className="visually-hidden" aria-label="Evaluation results file" onChange={(e) => void load(e.target.files?.[0])} />
      </label>
      {hasAgreement && (
        <label className="small">
          {' '}Vertical axis{' '}
          <select aria-label="Pareto metric" value={metric} onChange={(e) => setMetric(e.target.value as ParetoMetric)}>
            <option value="accuracy">accuracy</option>
            <option value="agreement">agreement with full recompute</option>
          </select>
        </label>
      )}
      {error && <p role="alert" className="notice">{error}</p>}
      {points.length ? (
        <ScatterChart width={width} height={300} margin={{ top: 16, right: 24, bottom: 16, left: 8 }}>
          <CartesianGrid strokeDasharray="3 3" />
          <XAxis dataKey="ttftMs" type="number" name="TTFT" unit=" ms" fontSize={11} padding={{ left: 20 }} />
          <YAxis dataKey={metric} type="number" name={metric} fontSize={11} />
          <ZAxis range={[60, 60]} />
          <Tooltip />
          {/* The front underneath; then one series per algorithm, named in the legend (labels beside close points would overlap). */}
          <Scatter name="Pareto front" data={front} line={{ stroke: '#64748b', strokeDasharray: '4 3' }} fill="#64748b" shape="cross" legendType="line" isAnimationActive={false} />
          {shown.map((p, i) => (
            <Scatter key={p.algorithm} name={p.algorithm} data={[p]} fill={ALGO_COLOURS[i % ALGO_COLOURS.length]} isAnimationActive={false} />
          ))}
          <Legend verticalAlign="bottom" wrapperStyle={{ fontSize: 11 }} itemSorter={null} />
        </ScatterChart>
      ) : (
        <p className="muted" data-testid="pareto-empty">
          Run an evaluation (<code>npm run eval -- --model stories260K --data data/multidoc.jsonl --out results.json</code>, see the README), then press Load evaluation results and pick
          its JSON file: each algorithm's accuracy is plotted against its mean TTFT.
        </p>
      )}
    </ChartCard>
  );
}
