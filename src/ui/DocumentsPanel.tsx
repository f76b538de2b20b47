/**
 * Documents: drop files or pick them (.txt, .md, .html, .pdf), or paste
 * text; the KVSplit mode new documents get; every document with its chunks;
 * compiling with per-chunk progress.
 */
import { useState, type DragEvent } from 'react';
import { useStudio, type Settings } from './studio-store';
import { addDocument, addSamples, dismissImportError, importFiles, reportImportError } from './doc-actions';
import { describeError } from './errors';
import { promptFor, useApp } from './store';
import { DocumentCard } from './DocumentCard';
import { CompileBar } from './CompileBar';
import { ModeControl } from './ModeControl';
import { ModelRoles } from './ModelRoles';

export function DocumentsPanel() {
  const docs = useStudio((s) => s.docs);
  const importErrors = useStudio((s) => s.importErrors);
  const settings = useStudio((s) => s.settings);
  const set = useStudio((s) => s.set);
  const [over, setOver] = useState(false);
  const [reading, setReading] = useState(0);
  const [paste, setPaste] = useState('');
  const [pasteName, setPasteName] = useState('');
  const model = useApp((a) => a.model);
  const profile = useApp((a) => promptFor(a.bundled, a.model?.id));
  const [sampling, setSampling] = useState(false);

  /** The loaded model's sample documents, all their chunks in the composer, and its example question. */
  async function addModelSamples() {
    if (!profile?.samples) return;
    setSampling(true);
    try {
      const keys = (await addSamples(profile.samples.files, profile.samples.mode)).flat();
      set((s) => ({ composer: keys, settings: { ...s.settings, question: profile.example, questionFor: model?.id } }));
    } catch (e) {
      reportImportError(describeError(e, 'Adding the sample documents'));
    } finally {
      setSampling(false);
    }
  }

  async function addFiles(files: File[]) {
    setReading((n) => n + files.length);
    try {
      await importFiles(files);
    } finally {
      setReading((n) => n - files.length);
    }
  }

  function onDrop(e: DragEvent<HTMLDivElement>) {
    e.preventDefault();
    setOver(false);
    const files = Array.from(e.dataTransfer.files);
    if (files.length) void addFiles(files);
  }

  async function addPasted() {
    const text = paste;
    const name = pasteName.trim() || `Pasted text ${docs.length + 1}`;
    if (await addDocument(name, 'paste', text)) {
      setPaste('');
      setPasteName('');
    }
  }

  return (
    <section className="panel" id="documents" aria-labelledby="documents-title">
      <h2 id="documents-title">Documents</h2>
      <ModelRoles />
      <div
        className={`dropzone${over ? ' over' : ''}`}
        data-testid="doc-dropzone"
        onDragOver={(e) => {
          if (!e.dataTransfer.types.includes('Files')) return;
          e.preventDefault();
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={onDrop}
      >
        <p>Drop .txt, .md, .html or .pdf files here, or</p>
        <label className="button-like">
          Add files…
          <input
            type="file" multiple accept=".txt,.md,.markdown,.html,.htm,.pdf,text/plain,text/markdown,text/html,application/pdf"
            className="visually-hidden" aria-label="Add document files"
            onChange={(e) => {
              const files = Array.from(e.target.files ?? []);
              e.target.value = '';
              void addFiles(files);
            }}
          />
        </label>
        {reading > 0 && <p role="status" className="muted">Reading {reading} file{reading > 1 ? 's' : ''}…</p>}
      </div>
      {importErrors.map((e) => (
        <div key={e.id} role="alert" className="notice row-between" data-testid="import-error">
          <span>{e.message}</span>
          <button className="small-btn" aria-label="Dismiss this message" onClick={() => dismissImportError(e.id)}>×</button>
        </div>
      ))}
      {profile?.samples && model && (
        <p className="row small">
          <button onClick={() => void addModelSamples()} disabled={sampling}>Add sample documents for {model.id}</button>
          <span className="muted">{profile.samples.files.length} documents written for this model, all their chunks in the composer, and a question about them.</span>
        </p>
      )}
      <details className="paste">
        <summary>Paste text</summary>
        <label className="stack">
          Name <input value={pasteName} onChange={(e) => setPasteName(e.target.value)} placeholder="Pasted text" aria-label="Name of the pasted document" />
        </label>
        <textarea aria-label="Pasted document text" rows={4} value={paste} onChange={(e) => setPaste(e.target.value)} />
        <button onClick={() => void addPasted()} disabled={!paste.trim()}>Add pasted text</button>
      </details>
      <div className="row small">
        <span>New documents are cut</span>
        <ModeControl
          idPrefix="default" mode={settings.defaultMode}
          onChange={(defaultMode) => set((s) => ({ settings: { ...s.settings, defaultMode } as Settings }))}
        />
      </div>
      {docs.length === 0 ? (
        <p className="muted">No documents yet. Add some, or start the guided demo above.</p>
      ) : (
        <ul className="doc-list">
          {docs.map((d) => (
            <DocumentCard key={d.id} doc={d} />
          ))}
        </ul>
      )}
      <CompileBar />
    </section>
  );
}
