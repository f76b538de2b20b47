/**
 * Charts: the TTFT breakdown of the latest answer of each algorithm to the
 * current model and prompt (stacked bars), TTFT against context length from
 * a sweep run here with fixed-size chunks, and accuracy against TTFT from an
 * evaluation run.
 */
import { memo, useDeferredValue, useMemo, useState } from 'react';
import type { AskFirst } from '../worker/studio-protocol';
import { Bar, BarChart, CartesianGrid, Legend, Line, LineChart, Tooltip, XAxis, YAxis } from 'recharts';
import { useStudio, type Settings } from './studio-store';
import { runSweep, stopAll } from './ask-actions';
import { ChartCard } from './ChartCard';
import { ALGO_COLOURS, ParetoChart } from './ParetoChart';
import { useApp } from './store';
import { StudioError } from './StudioError';
import { SWEEP_ALGORITHMS } from '../kvlink/catalogue';
import { usePromptContext } from './prompt-context';

const PARTS = [
  { key: 'lookup', label: 'lookup', colour: '#94a3b8' },
  { key: 'load', label: 'load', colour: '#38bdf8' },
  { key: 'recompute', label: 'recompute', colour: '#f97316' },
  { key: 'firstToken', label: 'first token', colour: '#16a34a' },
] as const;
const WIDTH = 540;

export function ChartsPanel() {
  // Only answers' TTFTs matter here: a string key keeps streamed text from re-rendering the charts. The breakdown
  // shows the answers to the current model and prompt (context) only; others are counted, to say they are from before.
  const ctx = usePromptContext();
  const ttftKey = useStudio((s) => JSON.stringify(s.answers.filter((a) => a.first).map((a) => [a.algorithm, a.first, a.context === ctx])));
  const all = useMemo(() => JSON.parse(ttftKey) as [string, AskFirst, boolean][], [ttftKey]);
  const answers = all.filter(([, , current]) => current);
  const earlier = all.length - answers.length;
  const sweep = useStudio((s) => s.sweep);
  const busy = useStudio((s) => s.busy);
  const docs = useStudio((s) => s.docs);
  const st = useStudio((s) => s.settings);
  const set = useStudio((s) => s.set);
  const model = useApp((s) => s.model);
  const [lengths, setLengths] = useState(st.sweepLengths.join(', '));
  const setSettings = (p: Partial<Settings>) => set((x) => ({ settings: { ...x.settings, ...p } }));

  // The latest finished answer of each algorithm, in first-seen order.
  // Kept while their inputs hold: the charts (memoised below) then skip the page's other updates.
  const breakdown = useMemo(() => {
    const seen = new Map<string, AskFirst>();
    for (const [algorithm, f, current] of all) if (current && !seen.has(algorithm)) seen.set(algorithm, f);
    return [...seen.entries()].reverse().map(([algorithm, f]) => ({
      algorithm, lookup: f.ttft.lookupMs, load: f.ttft.loadMs, recompute: f.ttft.recomputeMs,
      firstToken: f.ttft.firstTokenMs, total: f.ttft.totalMs, recomputed: f.recomputed, promptTokens: f.promptTokens,
    }));
  }, [all]);

  const [algos, sweepRows] = useMemo(() => {
    const byLength = new Map<number, Record<string, number>>();
    for (const p of sweep.points) byLength.set(p.contextTokens, { ...(byLength.get(p.contextTokens) ?? { contextTokens: p.contextTokens }), [p.algorithm]: p.ttft.totalMs });
    return [[...new Set(sweep.points.map((p) => p.algorithm))], [...byLength.values()].sort((a, b) => a.contextTokens - b.contextTokens)] as const;
  }, [sweep.points]);

  function startSweep() {
    const ls = lengths.split(/[\s,]+/).map(Number).filter((n) => Number.isFinite(n) && n > 0);
    setSettings({ sweepLengths: ls });
    // Settings are read by the action; let the store update first.
    queueMicrotask(() => void runSweep(SWEEP_ALGORITHMS));
  }

  return (
    <section className="panel" id="charts" aria-labelledby="charts-title">
      <h2 id="charts-title">Charts</h2>
      <div className="chart-grid">
        <ChartCard title="TTFT breakdown" file="ttft-breakdown" data={breakdown} testId="ttft-chart">
          {breakdown.length ? null : (
            <p className="muted" data-testid="ttft-empty">
              {earlier > 0 ? `The ${earlier} answers so far were to another model, question or chunk order. ` : ''}
              Put chunks in the composer, type a question and press Ask (or Compare) to see each algorithm's time to first token,
              split into lookup, load, recompute and first token.
            </p>
          )}
          {/* Drawn empty from the start: recharts takes 100 ms and more of the main thread to mount a chart on a slow
              machine, which is better spent while the page loads than when the first answer arrives. */}
          <TtftBars data={breakdown} />
        </ChartCard>
        <ChartCard title="TTFT against context length" file="ttft-sweep" data={sweep.points} testId="sweep-chart">
          <div className="row small">
            <label>Chunk tokens <input type="number" aria-label="Sweep chunk tokens" min={4} max={4096} value={st.sweepChunk} onChange={(e) => setSettings({ sweepChunk: Number(e.target.value) })} /></label>
            <label>Context lengths <input aria-label="Sweep context lengths" value={lengths} onChange={(e) => setLengths(e.target.value)} size={18} /></label>
            <button onClick={startSweep} disabled={!!busy || !docs.length || !model}>Run sweep</button>
            {busy === 'sweep' && <button onClick={stopAll}>Stop sweep</button>}
          </div>
          {busy === 'sweep' && <p role="status" className="small">Measured {sweep.done} of {sweep.total} points…</p>}
          <StudioError at="charts" />
          {sweepRows.length ? (
            <SweepLines rows={sweepRows} algos={algos} />
          ) : (
            <p className="muted" data-testid="sweep-empty">
              {docs.length ? 'Press Run sweep' : 'Add a document above, then press Run sweep'}: it runs {SWEEP_ALGORITHMS.join(', ')} over your documents'
              text repeated and cut into fixed-size chunks, one point per context length. Full recompute and CacheBlend grow quadratically with
              the context; LegoLink stays near linear.
            </p>
          )}
        </ChartCard>
        <ParetoChart width={WIDTH} />
      </div>
    </section>
  );
}

type BreakdownRow = Record<(typeof PARTS)[number]['key'], number> & { algorithm: string };

/**
 * The charts are memoised and drawn in a deferred render: recharts draws a chart in tens of milliseconds (more in a
 * development build), and the panel re-renders whenever the page is busy or idle again.
 */
const TtftBars = memo(function TtftBars({ data }: { data: BreakdownRow[] }) {
  const rows = useDeferredValue(data);
  return (
    <BarChart width={WIDTH} height={280} data={rows} margin={{ top: 8, right: 12, bottom: 8, left: 8 }}>
      <CartesianGrid strokeDasharray="3 3" />
      <XAxis dataKey="algorithm" fontSize={11} interval={0} angle={-25} textAnchor="end" height={56} />
      <YAxis unit=" ms" fontSize={11} />
      <Tooltip formatter={(v) => `${Number(v).toFixed(1)} ms`} />
      <Legend itemSorter={null} />
      {PARTS.map((p) => <Bar key={p.key} dataKey={p.key} name={p.label} stackId="ttft" fill={p.colour} isAnimationActive={false} />)}
    </BarChart>
  );
});

const SweepLines = memo(function SweepLines({ rows, algos }: { rows: Record<string, number>[]; algos: readonly string[] }) {
  const deferred = useDeferredValue(rows);
  return (
    <LineChart width={WIDTH} height={280} data={deferred} margin={{ top: 8, right: 12, bottom: 16, left: 8 }}>
      <CartesianGrid strokeDasharray="3 3" />
      <XAxis dataKey="contextTokens" type="number" domain={['dataMin', 'dataMax']} fontSize={11} label={{ value: 'context tokens', position: 'insideBottom', offset: -8, fontSize: 11 }} />
      <YAxis unit=" ms" fontSize={11} padding={{ top: 14 }} />
      <Tooltip formatter={(v) => `${Number(v).toFixed(1)} ms`} />
      <Legend verticalAlign="top" itemSorter={null} />
      {algos.map((a, i) => <Line key={a} dataKey={a} stroke={ALGO_COLOURS[i % ALGO_COLOURS.length]} dot isAnimationActive={false} />)}
    </LineChart>
  );
});
