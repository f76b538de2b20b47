/** Choosing a KVSplit mode: fixed token runs, semantic units up to a budget, the whole document, or hand-set boundaries. */
import { useEffect, useState } from 'react';
import type { SplitMode } from '../kvsplit/types';

const LABELS = { fixed: 'fixed-size', semantic: 'semantic', document: 'one per document', boundaries: 'by hand' } as const;

export function ModeControl({ mode, onChange, idPrefix, disabled }: { mode: SplitMode; onChange: (m: SplitMode) => void; idPrefix: string; disabled?: boolean }) {
  const size = mode.kind === 'fixed' ? mode.tokens : mode.kind === 'semantic' ? mode.maxTokens : 48;
  const pick = (kind: SplitMode['kind'], n = size): SplitMode =>
    kind === 'fixed' ? { kind, tokens: n } : kind === 'semantic' ? { kind, maxTokens: n } : kind === 'document' ? { kind } : { kind: 'boundaries', offsets: mode.kind === 'boundaries' ? mode.offsets : [] };
  // The size applies a moment after typing stops, so a long document is not cut again at every keystroke.
  const [draft, setDraft] = useState(String(size));
  useEffect(() => setDraft(String(size)), [size]);
  useEffect(() => {
    const n = Math.round(Number(draft));
    if (!(n >= 1) || n === size || (mode.kind !== 'fixed' && mode.kind !== 'semantic')) return;
    const t = setTimeout(() => onChange(pick(mode.kind, n)), 350);
    return () => clearTimeout(t);
  }, [draft]); // only typing schedules a change
  return (
    <span className="mode-control">
      <select aria-label={`Split mode (${idPrefix})`} value={mode.kind} disabled={disabled} onChange={(e) => onChange(pick(e.target.value as SplitMode['kind']))}>
        {(Object.keys(LABELS) as SplitMode['kind'][]).map((k) => (
          <option key={k} value={k}>{LABELS[k]}</option>
        ))}
      </select>
      {(mode.kind === 'fixed' || mode.kind === 'semantic') && (
        <label>
          {mode.kind === 'fixed' ? ' tokens ' : ' at most '}
          <input
            type="number" min={4} max={8192} value={draft} disabled={disabled} aria-label={`Chunk tokens (${idPrefix})`}
            onChange={(e) => setDraft(e.target.value)}
          />
          {mode.kind === 'semantic' ? ' tokens' : ''}
        </label>
      )}
    </span>
  );
}
