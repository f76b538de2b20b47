/**
 * One document: its split mode and its chunks with token counts and compile
 * status. Boundaries are set by hand: click in a chunk's text to cut there,
 * or use the buttons (cut in half, merge, move a boundary a word left or
 * right); any of these switches the document to the 'boundaries' mode.
 * The chunk list is one tab stop (arrow keys inside, see roving.ts).
 */
import type { MouseEvent } from 'react';
import { useStudio, chunkKey, type StudioDoc } from './studio-store';
import { compileKeys, removeDocument, setDocumentMode } from './doc-actions';
import { ModeControl } from './ModeControl';
import { wordStep } from './list-ops';
import { useRovingList } from './roving';
import type { ChunkInfo } from '../worker/studio-protocol';

/** Chunks drawn at most (long documents show a note). */
const MAX_SHOWN = 150;

/** Character offset under the mouse inside `el` (whose only child is the chunk's text node). */
function offsetAt(e: MouseEvent<HTMLElement>): number | null {
  const doc = document as Document & { caretPositionFromPoint?: (x: number, y: number) => { offsetNode: Node; offset: number } | null };
  const pos = doc.caretPositionFromPoint?.(e.clientX, e.clientY);
  if (pos && e.currentTarget.contains(pos.offsetNode)) return pos.offset;
  const r = document.caretRangeFromPoint?.(e.clientX, e.clientY);
  return r && e.currentTarget.contains(r.startContainer) ? r.startOffset : null;
}

export function DocumentCard({ doc }: { doc: StudioDoc }) {
  const split = useStudio((s) => s.splits[doc.id]);
  const splitError = useStudio((s) => s.splitErrors[doc.id]);
  const composer = useStudio((s) => s.composer);
  const library = useStudio((s) => s.library);
  const compile = useStudio((s) => s.compile);
  const busy = useStudio((s) => s.busy);
  const set = useStudio((s) => s.set);
  const stored = new Set(library?.entries.map((e) => e.id));
  const chunks = split?.chunks ?? [];
  const starts = chunks.slice(1).map((c) => c.start);
  const cutAt = (offsets: number[]) => void setDocumentMode(doc.id, { kind: 'boundaries', offsets: [...new Set(offsets)].sort((a, b) => a - b) });
  const add = (k: string) => set((s) => ({ composer: s.composer.includes(k) ? s.composer : [...s.composer, k] }));
  const compiledCount = chunks.filter((c) => stored.has(c.ids.plain)).length;
  const [listRef, onListKey] = useRovingList<HTMLOListElement>();

  function onTextClick(e: MouseEvent<HTMLParagraphElement>, c: ChunkInfo) {
    if (!window.getSelection()?.isCollapsed) return;
    const o = offsetAt(e);
    if (o === null || o <= 0 || o >= c.end - c.start) return;
    cutAt([...starts, c.start + o]);
  }

  return (
    <li className="doc-card" data-testid="document" aria-label={`Document ${doc.name}`}>
      <div className="row-between">
        <strong className="doc-name">{doc.name}</strong>
        <button className="small-btn" aria-label={`Remove ${doc.name}`} onClick={() => removeDocument(doc.id)} disabled={!!busy}>Remove</button>
      </div>
      <p className="muted small meta">
        {doc.kind}{doc.encoding ? <span data-testid="doc-encoding"> · read as {doc.encoding} (not UTF-8)</span> : ''} · {doc.text.length.toLocaleString()} chars · {split ? `${split.totalTokens} tokens · ${chunks.length} chunks · ${compiledCount} compiled` : 'waiting for the model…'}
      </p>
      <div className="row small">
        <ModeControl idPrefix={doc.name} mode={doc.mode} onChange={(m) => void setDocumentMode(doc.id, m)} disabled={!!busy} />
        <button className="small-btn" disabled={!!busy || !chunks.length} onClick={() => void compileKeys(chunks.map((c) => chunkKey(doc.id, c.index)))}>
          Compile this document
        </button>
        <button className="small-btn" disabled={!chunks.length} onClick={() => chunks.forEach((c) => add(chunkKey(doc.id, c.index)))}>
          Add all to composer
        </button>
      </div>
      {splitError && <p role="alert" className="notice">{splitError}</p>}
      <p className="muted small hint">Click in a chunk's text to cut it there; use ⇤ ⇥ to move a boundary by a word, or merge chunks.</p>
      <ol className="chunks" aria-label={`Chunks of ${doc.name}`} ref={listRef} onKeyDown={onListKey}>
        {chunks.slice(0, MAX_SHOWN).map((c, i) => {
          const key = chunkKey(doc.id, c.index);
          const state = stored.has(c.ids.plain) ? 'compiled' : compile.current === key ? 'compiling…' : 'not compiled';
          return (
            <li key={key} className="chunk" data-testid="chunk" draggable data-roving
              aria-label={`${doc.name} · ${c.index + 1}: ${c.tokens.length} tokens + BOS, ${state}. Arrow keys: other chunks and this chunk's buttons`}
              onDragStart={(e) => {
                e.dataTransfer.setData('application/x-legokv-chunk', key);
                e.dataTransfer.effectAllowed = 'copy';
              }}
            >
              {i > 0 && (
                <div className="boundary" aria-label={`Boundary before chunk ${i + 1}`}>
                  <button className="tiny" aria-label={`Move boundary ${i} a word left`} disabled={!!busy}
                    onClick={() => cutAt(starts.map((s) => (s === c.start ? wordStep(doc.text, s, -1) : s)))}>⇤</button>
                  <span className="boundary-line" />
                  <button className="tiny" aria-label={`Merge chunks ${i} and ${i + 1}`} disabled={!!busy}
                    onClick={() => cutAt(starts.filter((s) => s !== c.start))}>merge</button>
                  <button className="tiny" aria-label={`Move boundary ${i} a word right`} disabled={!!busy}
                    onClick={() => cutAt(starts.map((s) => (s === c.start ? wordStep(doc.text, s, 1) : s)))}>⇥</button>
                </div>
              )}
              <div className="row-between small">
                <span><span className="grip" title="Drag into the composer" aria-hidden>⠿</span> <b>#{c.index + 1}</b> · <span title="Its cache also holds the BOS token compiled before it">{c.tokens.length} tokens + BOS</span> · <span className={`badge ${state === 'compiled' ? 'ok' : ''}`}>{state}</span></span>
                <span className="row tight">
                  <button className="tiny" aria-label={`Cut chunk ${i + 1} in half`} disabled={!!busy || c.end - c.start < 8}
                    onClick={() => cutAt([...starts, wordStep(doc.text, Math.floor((c.start + c.end) / 2), -1)])}>cut ½</button>
                  <button className="tiny" aria-label={`Add ${doc.name} · ${c.index + 1} to the composer`} disabled={composer.includes(key)} onClick={() => add(key)}>
                    {composer.includes(key) ? 'in composer' : 'add'}
                  </button>
                </span>
              </div>
              <p className="chunk-text" onClick={(e) => onTextClick(e, c)}>{doc.text.slice(c.start, c.end)}</p>
            </li>
          );
        })}
      </ol>
      {chunks.length > MAX_SHOWN && <p className="muted small">Showing the first {MAX_SHOWN} of {chunks.length} chunks.</p>}
    </li>
  );
}
