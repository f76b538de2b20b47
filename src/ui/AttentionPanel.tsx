/**
 * The attention-sink maps: two algorithms side by side (Naive against
 * LegoLink by default) for the chosen layer and head, softmax or min-max
 * scaled QKᵀ (EPIC Fig. 4), with each chunk's sink share.
 */
import { useEffect, useRef, useState } from 'react';
import { mapTarget, useStudio, type Settings } from './studio-store';
import { useApp } from './store';
import { refreshMaps } from './ask-actions';
import { Heatmap } from './Heatmap';
import { sinkShares, type Normalization } from '../analysis/attention-math';
import type { AttentionMap } from '../types/attention';
import { useCurrentMeasures } from './prompt-context';
import { COMPARE_ALGORITHMS } from '../kvlink/catalogue';

const pct = (v: number) => `${(100 * v).toFixed(1)}%`;

function SinkTable({ map, sinkTokens }: { map: AttentionMap; sinkTokens: number }) {
  const { chunks, total } = sinkShares(map, sinkTokens);
  return (
    <table className="sink-table" data-testid="sink-share">
      <caption>Sink share: attention on each chunk's first {sinkTokens} tokens (mean over rows, softmax)</caption>
      <thead><tr><th>Chunk</th><th>on its first {sinkTokens}</th><th>on the whole chunk</th></tr></thead>
      <tbody>
        {chunks.map((c, i) => (
          <tr key={i}><td>{i + 1}: {c.label}</td><td>{pct(c.sink)}</td><td>{pct(c.chunk)}</td></tr>
        ))}
      </tbody>
      <tfoot><tr><td>all chunk starts</td><td>{pct(total)}</td><td /></tr></tfoot>
    </table>
  );
}

function useWidth<T extends HTMLElement>(): [React.RefObject<T | null>, number] {
  const ref = useRef<T>(null);
  const [w, setW] = useState(560);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setW(Math.max(240, Math.floor(el.clientWidth))));
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  return [ref, w];
}

export function AttentionPanel() {
  // Only maps of the current model and prompt: another prompt's shares would be read as this one's.
  const { maps } = useCurrentMeasures();
  const pair = useStudio((s) => s.mapPair);
  const st = useStudio((s) => s.settings);
  const busy = useStudio((s) => s.busy);
  const composer = useStudio((s) => s.composer);
  const set = useStudio((s) => s.set);
  const model = useApp((s) => s.model);
  const [ref, width] = useWidth<HTMLDivElement>();
  const setSettings = (p: Partial<Settings>) => set((x) => ({ settings: { ...x.settings, ...p } }));
  const names = [...new Set([...Object.keys(maps), ...COMPARE_ALGORITHMS])];
  const layers = model?.layers ?? 1;
  const heads = model?.heads ?? 1;
  const colW = Math.floor((width - 16) / 2);
  const target = mapTarget(st, model);
  const stale = (m?: AttentionMap) => m && (m.layer !== target.layer || m.head !== target.head);

  return (
    <section className="panel" id="attention" aria-labelledby="attention-title">
      <h2 id="attention-title">Attention-sink map</h2>
      <p className="muted small">
        Each chunk was compiled alone from position 0, so under Naive its first tokens stay attention sinks and pull attention away from the
        rest; LegoLink recomputes each chunk's first k tokens so they learn they are no longer first.
      </p>
      <div className="row">
        <label>Layer <select aria-label="Layer" value={target.layer} onChange={(e) => setSettings({ layer: Number(e.target.value) })}>
          {Array.from({ length: layers }, (_, i) => <option key={i} value={i}>{i}</option>)}
        </select></label>
        <label>Head <select aria-label="Head" value={target.head} onChange={(e) => setSettings({ head: Number(e.target.value) })}>
          {Array.from({ length: heads }, (_, i) => <option key={i} value={i}>{i}</option>)}
        </select></label>
        <label>Values <select aria-label="Normalization" value={st.norm} onChange={(e) => setSettings({ norm: e.target.value as Normalization })}>
          <option value="softmax">softmax probabilities</option>
          <option value="minmax">min-max scaled QKᵀ (EPIC Fig. 4)</option>
        </select></label>
        <label>Colour <select aria-label="Colour scale" value={st.contrast} onChange={(e) => setSettings({ contrast: e.target.value as Settings['contrast'] })}>
          <option value="sqrt">√ value (brighter)</option>
          <option value="linear">value</option>
        </select></label>
        <label>Sink tokens <input type="number" aria-label="Sink tokens per chunk" min={1} max={64} value={st.sinkTokens} onChange={(e) => setSettings({ sinkTokens: Math.max(1, Number(e.target.value)) })} /></label>
        <span className="legend" aria-hidden>0 <span className="ramp" /> 1{st.contrast === 'sqrt' ? ' (√ scale)' : ''}</span>
        <button onClick={() => void refreshMaps()} disabled={!!busy || !composer.length || !model}>Capture {pair[0]} and {pair[1]}</button>
      </div>
      <div className="map-pair" ref={ref}>
        {[0, 1].map((side) => {
          const name = pair[side];
          const m = maps[name];
          return (
            <div key={side} className="map-col" data-testid={`map-${side}`}>
              <label>
                {side === 0 ? 'Left ' : 'Right '}
                <select aria-label={side === 0 ? 'Left map algorithm' : 'Right map algorithm'} value={name}
                  onChange={(e) => set((x) => ({ mapPair: (side === 0 ? [e.target.value, x.mapPair[1]] : [x.mapPair[0], e.target.value]) as [string, string] }))}>
                  {names.map((n) => <option key={n} value={n}>{n}{maps[n] ? '' : ' (not asked yet)'}</option>)}
                </select>
              </label>
              {m ? (
                <>
                  <p className="small"><b>{m.algorithm}</b> · layer {m.layer}, head {m.head}{stale(m) ? ' (captured for another layer or head: press Capture)' : ''}</p>
                  <Heatmap map={m} norm={st.norm} width={colW} contrast={st.contrast} />
                  <SinkTable map={m} sinkTokens={st.sinkTokens} />
                </>
              ) : (
                <p className="muted">No map for {name} yet: ask with it (or press Capture).</p>
              )}
            </div>
          );
        })}
      </div>
    </section>
  );
}
