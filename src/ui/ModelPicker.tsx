/**
 * Choosing a model: a bundled one, a folder or files from disk (picked or
 * dropped), a Hugging Face Hub id or URL, one of the catalogue's instruction
 * models (ModelCatalogue), or a copy in the browser's cache.
 * Shows load progress with Cancel, errors, and the loaded model.
 */
import { useState, type ChangeEvent, type DragEvent } from 'react';
import { useApp } from './store';
import { ProgressBar } from './ProgressBar';
import { CachedModels } from './CachedModels';
import { ModelCatalogue } from './ModelCatalogue';
import { cancelLoad, hubEndpoint, loadBundled, loadModel } from './actions';
import { filesFromDrop, filesFromInput, type LocalSelection } from './local-files';
import type { ModelInfo } from '../worker/protocol';
import { decodeTuningText, prefillTuningText } from './tuning-text';

/** Sets webkitdirectory, which React's typings do not know, on the folder input. */
const asFolderPicker = (el: HTMLInputElement | null) => el?.setAttribute('webkitdirectory', '');

export function ModelPicker() {
  const s = useApp();
  const [bundledIdx, setBundledIdx] = useState(0);
  const [hubInput, setHubInput] = useState('');
  const [revision, setRevision] = useState('');
  const [keepCopy, setKeepCopy] = useState(false);
  const [dragging, setDragging] = useState(false);
  const busy = !!s.progress || s.running;
  const endpoint = hubEndpoint();

  function loadLocal(sel: LocalSelection) {
    if (!sel.files.length) {
      s.set({ loadError: 'No files were selected (hidden files and folders are skipped).' });
      return;
    }
    void loadModel({ kind: 'files', name: sel.name, files: sel.files, cache: keepCopy }, sel.name);
  }

  function onPicked(e: ChangeEvent<HTMLInputElement>) {
    const sel = filesFromInput(e.target.files);
    e.target.value = ''; // picking the same folder again fires change again
    loadLocal(sel);
  }

  function onDrop(e: DragEvent<HTMLDivElement>) {
    e.preventDefault();
    setDragging(false);
    if (busy) return;
    filesFromDrop(e.dataTransfer).then(loadLocal, (err: Error) =>
      s.set({ loadError: `Could not read the dropped files: ${err.message}` }),
    );
  }

  function loadHub() {
    const input = hubInput.trim();
    if (!input) return;
    void navigator.storage?.persist?.().catch(() => false);
    void loadModel({ kind: 'hub', input, revision: revision.trim() || undefined, endpoint }, input);
  }

  return (
    <section className="picker" aria-labelledby="picker-title">
      <h2 id="picker-title">Model</h2>
      <div className="row">
        <label>
          Bundled{' '}
          <select aria-label="Bundled model" value={bundledIdx} disabled={busy} onChange={(e) => setBundledIdx(Number(e.target.value))}>
            {s.bundled.map((m, i) => (
              <option key={m.id} value={i}>{m.label}</option>
            ))}
          </select>
        </label>
        <button disabled={busy || !s.bundled.length} onClick={() => void loadBundled(s.bundled[bundledIdx])}>
          Load bundled
        </button>
      </div>

      <div className="row">
        <span>From disk:</span>
        <label className="button-like">
          Open folder…
          <input ref={asFolderPicker} type="file" className="visually-hidden" aria-label="Open folder…" disabled={busy} onChange={onPicked} />
        </label>
        <label className="button-like">
          Open file…
          <input type="file" multiple accept=".gguf,.bin,.json,.safetensors" className="visually-hidden" aria-label="Open file…" disabled={busy} onChange={onPicked} />
        </label>
        <label>
          <input type="checkbox" checked={keepCopy} onChange={(e) => setKeepCopy(e.target.checked)} /> Keep a copy in this browser
        </label>
      </div>
      <div
        className={`dropzone${dragging ? ' over' : ''}`}
        data-testid="dropzone"
        onDragOver={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={onDrop}
      >
        Drop a model here: a Hugging Face folder (config.json, tokenizer.json, *.safetensors), a .gguf file, or a
        llama2.c .bin with its tokenizer .bin.
      </div>

      <form
        className="row"
        onSubmit={(e) => {
          e.preventDefault();
          loadHub();
        }}
      >
        <label>
          Hugging Face Hub{' '}
          <input
            className="hub-input" aria-label="Hub model id or URL" placeholder="HuggingFaceTB/SmolLM2-135M-Instruct or a .gguf URL"
            value={hubInput} onChange={(e) => setHubInput(e.target.value)}
          />
        </label>
        <label>
          Revision <input aria-label="Revision" placeholder="main" size={8} value={revision} onChange={(e) => setRevision(e.target.value)} />
        </label>
        <button type="submit" disabled={busy || !hubInput.trim()}>Load from Hub</button>
      </form>
      <p className="muted small">
        Downloading from the Hub needs a network connection; the files are kept in this browser's storage, so the
        model loads offline afterwards. Public models only.
        {endpoint && <> Hub address: <code data-testid="hub-endpoint">{endpoint}</code>.</>}
      </p>

      <ModelCatalogue endpoint={endpoint} />

      {s.progress && <ProgressBar progress={s.progress} onCancel={cancelLoad} />}
      {s.loadError && <p role="alert" className="notice" data-testid="load-error">{s.loadError}</p>}
      {s.model && (
        <p data-testid="model-ready" className="muted">
          {s.model.id} ({s.model.source}): {s.model.arch}, {s.model.layers} layers, {(s.model.params / 1e6).toFixed(2)}M params,{' '}
          {(s.model.gpuBytes / 2 ** 20).toFixed(1)} MiB of {s.model.weightDtype} weights on the GPU, plus{' '}
          {((s.model.kvBytesPerToken * 1024) / 2 ** 20).toFixed(1)} MiB of {s.model.kvDtype} KV cache per 1K context tokens;{' '}
          {s.model.chatTemplate ? `chat template: ${s.model.chatTemplate}` : 'no chat template'}
        </p>
      )}
      {s.model?.decodeTuning && <DecodeTuningLine t={s.model.decodeTuning} />}
      {s.model?.uploadTuning && <UploadTuningLine t={s.model.uploadTuning} />}
      {s.model?.prefillTuning && <PrefillTuningLine t={s.model.prefillTuning} />}
      <CachedModels />
    </section>
  );
}

/** How a link's chunks in host memory go up to this GPU, as timed at load (absent on CPU adapters). */
function UploadTuningLine({ t }: { t: NonNullable<ModelInfo['uploadTuning']> }) {
  if ('error' in t) return <p className="muted small" data-testid="upload-tuning">Uploads: writeBuffer (timing them failed: {t.error})</p>;
  return (
    <p className="muted small" data-testid="upload-tuning">
      Uploads from host memory, timed on this GPU: {t.chosen} ({t.writeGBps.toFixed(1)} GB/s by writeBuffer, {t.mappedGBps.toFixed(1)} GB/s by
      mapped staging)
    </p>
  );
}

/** Prefill's attention kernel as timed at load on this GPU (absent on CPU adapters and without subgroups). */
function PrefillTuningLine({ t }: { t: NonNullable<ModelInfo['prefillTuning']> }) {
  return (
    <p className="muted small" data-testid="prefill-tuning">
      {prefillTuningText(t)}
    </p>
  );
}

/** What timing decode's kernels at load chose on this GPU (absent on CPU adapters, which are not tuned). */
function DecodeTuningLine({ t }: { t: NonNullable<ModelInfo['decodeTuning']> }) {
  return (
    <p className="muted small" data-testid="decode-tuning">
      {decodeTuningText(t)}
    </p>
  );
}
