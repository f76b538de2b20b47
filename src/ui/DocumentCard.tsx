/**
 * One document: its split mode and its chunks with token counts and compile
 * status. Boundaries are set by hand: click in a chunk's text to cut there,
 * or use the buttons (cut in half, merge, move a boundary a word left or
 * right); any of these switches the document to the 'boundaries' mode.
 * The chunk list is one tab stop (arrow keys inside, see roving.ts).
 */
import { memo, useDeferredValue, useMemo, useState, type MouseEvent } from 'react';
import { useStudio, chunkKey, docChunkKeys, studio, type StudioDoc } from './studio-store';
import { compileKeys, removeDocument, setDocumentMode } from './doc-actions';
import { ModeControl } from './ModeControl';
import { wordStep } from './list-ops';
import { useRovingList } from './roving';
import { chunkAt, plainId, type ChunkInfo } from '../worker/chunk-table';

/** Chunks drawn at first, and how many more each "Show more" draws (a document may have tens of thousands). */
const FIRST_SHOWN = 50;
const MORE_SHOWN = 100;

/** Character offset under the mouse inside `el` (whose only child is the chunk's text node). */
function offsetAt(e: MouseEvent<HTMLElement>): number | null {
  const doc = document as Document & { caretPositionFromPoint?: (x: number, y: number) => { offsetNode: Node; offset: number } | null };
  const pos = doc.caretPositionFromPoint?.(e.clientX, e.clientY);
  if (pos && e.currentTarget.contains(pos.offsetNode)) return pos.offset;
  const r = document.caretRangeFromPoint?.(e.clientX, e.clientY);
  return r && e.currentTarget.contains(r.startContainer) ? r.startOffset : null;
}

/** Cuts the document at `offsets` (switching it to the 'boundaries' mode); not while compiling or asking. */
function cutAt(docId: string, offsets: number[]) {
  // Rows learn of `busy` a moment late (see DocumentCard), so a click can still arrive: it is ignored.
  if (studio().busy) return;
  void setDocumentMode(docId, { kind: 'boundaries', offsets: [...new Set(offsets)].sort((a, b) => a - b) });
}

/** The document's chunk boundaries now (every chunk's start but the first). */
const startsOf = (docId: string) => Array.from(studio().splits[docId]?.chunks.starts.subarray(1) ?? []);

const addToComposer = (k: string) => studio().set((s) => ({ composer: s.composer.includes(k) ? s.composer : [...s.composer, k] }));

type ChunkState = 'compiled' | 'compiling…' | 'not compiled';

/**
 * One chunk. Memoised: compile progress re-renders the document ten times a second, and only the rows whose
 * state changed are drawn again (150 rows each time kept the page busy).
 */
const ChunkRow = memo(function ChunkRow({ doc, c, state, inComposer, busy }: {
  doc: StudioDoc; c: ChunkInfo; state: ChunkState; inComposer: boolean; busy: boolean;
}) {
  const i = c.index;
  const key = chunkKey(doc.id, i);
  const move = (dir: -1 | 1) => cutAt(doc.id, startsOf(doc.id).map((s) => (s === c.start ? wordStep(doc.text, s, dir) : s)));
  function onTextClick(e: MouseEvent<HTMLParagraphElement>) {
    if (!window.getSelection()?.isCollapsed) return;
    const o = offsetAt(e);
    if (o === null || o <= 0 || o >= c.end - c.start) return;
    cutAt(doc.id, [...startsOf(doc.id), c.start + o]);
  }
  return (
    <li className="chunk" data-testid="chunk" draggable data-roving
      aria-label={`${doc.name} · ${i + 1}: ${c.tokens.length} tokens + BOS, ${state}. Arrow keys: other chunks and this chunk's buttons`}
      onDragStart={(e) => {
        e.dataTransfer.setData('application/x-legokv-chunk', key);
        e.dataTransfer.effectAllowed = 'copy';
      }}
    >
      {i > 0 && (
        <div className="boundary" aria-label={`Boundary before chunk ${i + 1}`}>
          <button className="tiny" aria-label={`Move boundary ${i} a word left`} disabled={busy} onClick={() => move(-1)}>⇤</button>
          <span className="boundary-line" />
          <button className="tiny" aria-label={`Merge chunks ${i} and ${i + 1}`} disabled={busy}
            onClick={() => cutAt(doc.id, startsOf(doc.id).filter((s) => s !== c.start))}>merge</button>
          <button className="tiny" aria-label={`Move boundary ${i} a word right`} disabled={busy} onClick={() => move(1)}>⇥</button>
        </div>
      )}
      <div className="row-between small">
        <span><span className="grip" title="Drag into the composer" aria-hidden>⠿</span> <b>#{i + 1}</b> · <span title="Its cache also holds the BOS token compiled before it">{c.tokens.length} tokens + BOS</span> · <span className={`badge ${state === 'compiled' ? 'ok' : ''}`}>{state}</span></span>
        <span className="row tight">
          <button className="tiny" aria-label={`Cut chunk ${i + 1} in half`} disabled={busy || c.end - c.start < 8}
            onClick={() => cutAt(doc.id, [...startsOf(doc.id), wordStep(doc.text, Math.floor((c.start + c.end) / 2), -1)])}>cut ½</button>
          <button className="tiny" aria-label={`Add ${doc.name} · ${i + 1} to the composer`} disabled={inComposer} onClick={() => addToComposer(key)}>
            {inComposer ? 'in composer' : 'add'}
          </button>
        </span>
      </div>
      <p className="chunk-text" onClick={onTextClick}>{doc.text.slice(c.start, c.end)}</p>
    </li>
  );
});

export function DocumentCard({ doc }: { doc: StudioDoc }) {
  const split = useStudio((s) => s.splits[doc.id]);
  const splitError = useStudio((s) => s.splitErrors[doc.id]);
  const composer = useStudio((s) => s.composer);
  const library = useStudio((s) => s.library);
  const current = useStudio((s) => s.compile.current);
  const busy = useStudio((s) => s.busy);
  const set = useStudio((s) => s.set);
  const stored = useMemo(() => new Set(library?.entries.map((e) => e.id)), [library]);
  const table = split?.chunks;
  const count = table?.count ?? 0;
  const [shown, setShown] = useState(FIRST_SHOWN);
  /** The chunks drawn: the first `shown`. */
  const chunks = useMemo(() => Array.from({ length: Math.min(count, shown) }, (_, i) => chunkAt(table!, i)!), [table, count, shown]);
  const addAll = (keys: string[]) => set((s) => {
    const have = new Set(s.composer);
    return { composer: [...s.composer, ...keys.filter((k) => !have.has(k))] };
  });
  // The rows follow the chunks drawn, the library and `busy` in a deferred render, which React interrupts to keep
  // the page answering: redrawing 150 rows in one go held the main thread for a tenth of a second and more.
  const rowsChunks = useDeferredValue(chunks, []);
  const rowsStored = useDeferredValue(stored);
  const rowsBusy = useDeferredValue(!!busy);
  const compiledCount = useMemo(() => {
    let n = 0;
    for (let i = 0; i < count; i++) if (stored.has(plainId(table!, i))) n++;
    return n;
  }, [table, count, stored]);
  const [listRef, onListKey] = useRovingList<HTMLOListElement>();

  return (
    <li className="doc-card" data-testid="document" aria-label={`Document ${doc.name}`}>
      <div className="row-between">
        <strong className="doc-name">{doc.name}</strong>
        <button className="small-btn" aria-label={`Remove ${doc.name}`} onClick={() => removeDocument(doc.id)} disabled={!!busy}>Remove</button>
      </div>
      <p className="muted small meta">
        {doc.kind}{doc.encoding ? <span data-testid="doc-encoding"> · read as {doc.encoding} (not UTF-8)</span> : ''} · {doc.text.length.toLocaleString()} chars · {split ? `${split.totalTokens} tokens · ${count} chunks · ${compiledCount} compiled` : 'waiting for the model…'}
      </p>
      <div className="row small">
        <ModeControl idPrefix={doc.name} mode={doc.mode} onChange={(m) => void setDocumentMode(doc.id, m)} disabled={!!busy} />
        <button className="small-btn" disabled={!!busy || !count} onClick={() => void compileKeys(docChunkKeys(studio(), doc.id))}>
          Compile this document
        </button>
        <button className="small-btn" disabled={!count} onClick={() => addAll(docChunkKeys(studio(), doc.id))}>
          Add all to composer
        </button>
      </div>
      {splitError && <p role="alert" className="notice">{splitError}</p>}
      <p className="muted small hint">Click in a chunk's text to cut it there; use ⇤ ⇥ to move a boundary by a word, or merge chunks.</p>
      <ol className="chunks" aria-label={`Chunks of ${doc.name}`} ref={listRef} onKeyDown={onListKey}>
        {rowsChunks.map((c) => {
          const key = chunkKey(doc.id, c.index);
          const state = rowsStored.has(c.ids.plain) ? 'compiled' : current === key ? 'compiling…' : 'not compiled';
          return <ChunkRow key={key} doc={doc} c={c} state={state} inComposer={composer.includes(key)} busy={rowsBusy} />;
        })}
      </ol>
      {count > shown && (
        <p className="muted small row">
          Showing the first {shown} of {count.toLocaleString()} chunks.
          <button className="small-btn" onClick={() => setShown((n) => n + MORE_SHOWN)}>Show {Math.min(MORE_SHOWN, count - shown)} more</button>
        </p>
      )}
    </li>
  );
}
