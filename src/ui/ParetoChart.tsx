/**
 * Accuracy against TTFT from an evaluation run (EPIC Fig. 6): load the
 * results JSON the evaluation writes (`results[]` with algorithm, accuracy,
 * ttft_ms_mean); one point per algorithm, the Pareto front joined by a line.
 */
import { useState } from 'react';
import { CartesianGrid, LabelList, Scatter, ScatterChart, Tooltip, XAxis, YAxis, ZAxis } from 'recharts';
import { ChartCard } from './ChartCard';
import { paretoFront, parseResults, type ParetoMetric, type ParetoPoint } from './pareto';

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
        <ScatterChart width={width} height={260} margin={{ top: 16, right: 24, bottom: 16, left: 8 }}>
          <CartesianGrid strokeDasharray="3 3" />
          <XAxis dataKey="ttftMs" type="number" name="TTFT" unit=" ms" fontSize={11} />
          <YAxis dataKey={metric} type="number" name={metric} fontSize={11} />
          <ZAxis range={[60, 60]} />
          <Tooltip />
          <Scatter data={shown} fill="#2563eb" isAnimationActive={false}>
            <LabelList dataKey="algorithm" position="top" fontSize={10} />
          </Scatter>
          <Scatter data={front} line={{ stroke: '#16a34a' }} fill="#16a34a" shape="cross" isAnimationActive={false} />
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
