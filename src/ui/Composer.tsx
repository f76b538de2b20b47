/**
 * The composer: the chunks to link, in order (drag and drop, or the ↑ ↓
 * buttons), the linking algorithm and its parameter, the question; Ask,
 * Compare and Stop.
 */
import { useState, type DragEvent } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useStudio, resolveChunk, algorithmSpec, framingFor, ALGORITHMS, COMPARE_ALGORITHMS, type Settings } from './studio-store';
import { askSelected, compareAll, stopAll } from './ask-actions';
import { promptFor, useApp } from './store';
import { moveItem } from './list-ops';
import { useRovingList } from './roving';
import { StudioError } from './StudioError';
import { algorithmInfo } from '../kvlink/catalogue';

const CHUNK = 'application/x-legokv-chunk';
const ORDER = 'application/x-legokv-order';

export function Composer() {
  const s = useStudio(useShallow((x) => ({ docs: x.docs, splits: x.splits, composer: x.composer, settings: x.settings, busy: x.busy, composerNote: x.composerNote, set: x.set })));
  const model = useApp((a) => a.model);
  const bundled = useApp((a) => a.bundled);
  const profile = promptFor(bundled, model?.id);
  const [overIdx, setOverIdx] = useState<number | null>(null);
  const [listRef, onListKey] = useRovingList<HTMLOListElement>();
  const resolved = new Map(s.composer.flatMap((k) => { const c = resolveChunk(s, k); return c ? [[k, c] as const] : []; }));
  const st = s.settings;
  /** The chosen algorithm's parameter (k or r), from the catalogue. */
  const param = algorithmInfo(st.algorithm)?.param;
  const framing = framingFor(st, model?.id, bundled);
  const setSettings = (p: Partial<Settings>) => s.set((x) => ({ settings: { ...x.settings, ...p } }));
  const setComposer = (composer: string[]) => s.set({ composer });
  const items = s.composer.filter((k) => resolved.has(k));
  const tokens = items.reduce((a, k) => a + resolved.get(k)!.chunk.tokens.length, 0);
  const asking = s.busy === 'ask';
  const canAsk = !s.busy && !!model && items.length > 0 && !!st.question.trim();

  function onDrop(e: DragEvent, at: number) {
    e.preventDefault();
    e.stopPropagation();
    setOverIdx(null);
    const order = e.dataTransfer.getData(ORDER);
    const key = e.dataTransfer.getData(CHUNK);
    if (order !== '') setComposer(moveItem(items, Number(order), at));
    else if (key && resolveChunk(s, key) && !items.includes(key)) setComposer([...items.slice(0, at), key, ...items.slice(at)]);
  }
  const allowDrop = (e: DragEvent) => {
    if (e.dataTransfer.types.includes(ORDER) || e.dataTransfer.types.includes(CHUNK)) e.preventDefault();
  };

  return (
    <section className="panel" id="ask" aria-labelledby="composer-title">
      <h2 id="composer-title">Link and ask</h2>
      <p className="muted small">Drag chunks here from the documents (or use their “add” buttons); drag to reorder, or use ↑ ↓.</p>
      <ol className="composer" data-testid="composer" aria-label="Chunks to link, in order" ref={listRef} onKeyDown={onListKey}
        onDragOver={allowDrop} onDrop={(e) => onDrop(e, items.length)}>
        {items.map((k, i) => {
          const c = resolved.get(k)!;
          return (
            <li
              key={k} draggable data-testid="composer-item" className={`composer-item${overIdx === i ? ' over' : ''}`} data-roving
              aria-label={`${i + 1}. ${c.label} (${c.chunk.tokens.length} tokens). Arrow keys: other chunks and the move buttons`}
              onDragStart={(e) => {
                e.dataTransfer.setData(ORDER, String(i));
                e.dataTransfer.effectAllowed = 'move';
              }}
              onDragOver={(e) => {
                allowDrop(e);
                setOverIdx(i);
              }}
              onDragLeave={() => setOverIdx(null)}
              onDrop={(e) => onDrop(e, i)}
            >
              <span className="grip" aria-hidden>⠿</span>
              <span className="composer-label">
                <b>{i + 1}.</b> {c.label} <span className="muted">({c.chunk.tokens.length} tok)</span>
                <span className="muted preview"> {c.text.slice(0, 60)}{c.text.length > 60 ? '…' : ''}</span>
              </span>
              <span className="row tight">
                <button className="tiny" aria-label={`Move ${c.label} up`} disabled={i === 0} onClick={() => setComposer(moveItem(items, i, i - 1))}>↑</button>
                <button className="tiny" aria-label={`Move ${c.label} down`} disabled={i === items.length - 1} onClick={() => setComposer(moveItem(items, i, i + 1))}>↓</button>
                <button className="tiny" aria-label={`Take ${c.label} out`} onClick={() => setComposer(items.filter((x) => x !== k))}>×</button>
              </span>
            </li>
          );
        })}
        <li className={`composer-end muted small${overIdx === items.length ? ' over' : ''}`} data-testid="composer-end"
          onDragOver={(e) => { allowDrop(e); setOverIdx(items.length); }} onDragLeave={() => setOverIdx(null)} onDrop={(e) => onDrop(e, items.length)}>
          Drop chunks here to add them at the end
        </li>
      </ol>
      <p className="muted small">{items.length} chunks · {tokens} cached tokens{items.length ? ' · each chunk keeps its own BOS' : ''}</p>
      {s.composerNote && (
        <p role="status" className="notice small row-between" data-testid="composer-note">
          <span>{s.composerNote}</span>
          <button className="small-btn" aria-label="Dismiss this note" onClick={() => s.set({ composerNote: null })}>×</button>
        </p>
      )}
      <div className="row">
        <label>
          Algorithm{' '}
          <select aria-label="Linking algorithm" value={st.algorithm} onChange={(e) => setSettings({ algorithm: e.target.value })}>
            {ALGORITHMS.map((a) => <option key={a.value} value={a.value}>{a.label}</option>)}
          </select>
        </label>
        {param && (
          <label>{param.name} <input type="number" aria-label={param.label} min={param.min} max={param.max} step={param.step} value={st[param.name]} onChange={(e) => setSettings({ [param.name]: Number(e.target.value) })} /></label>
        )}
        <label>Answer tokens <input type="number" aria-label="Answer tokens" min={1} max={512} value={st.maxTokens} onChange={(e) => setSettings({ maxTokens: Number(e.target.value) })} /></label>
      </div>
      <label className="stack">
        Question
        <textarea aria-label="Question" rows={2} placeholder={profile?.example} value={st.question} onChange={(e) => setSettings({ question: e.target.value, questionFor: undefined })} />
      </label>
      <label className="stack small">
        Framing: the uncached text after the chunks, with {'{question}'} for the question
        {model?.chatTemplate ? ` (chunks and framing are the user's message in ${model.id}'s ${model.chatTemplate} chat template)` : ' (no chat template: the prompt is the chunks and this text)'}
        <textarea
          aria-label="Question framing" rows={framing.split('\n').length + 1} value={framing} disabled={!model}
          onChange={(e) => model && setSettings({ framings: { ...st.framings, [model.id]: e.target.value } })}
        />
      </label>
      <div className="row">
        <button className="primary" onClick={() => void askSelected()} disabled={!canAsk}>Ask ({algorithmSpec(st)})</button>
        <button onClick={() => void compareAll()} disabled={!canAsk} title={COMPARE_ALGORITHMS.join(', ')}>Compare {COMPARE_ALGORITHMS.length} algorithms</button>
        <button aria-label="Stop answering" onClick={stopAll} disabled={!asking}>Stop</button>
      </div>
      <StudioError at="ask" />
    </section>
  );
}
