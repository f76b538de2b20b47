/**
 * The first page: loads the bundled default model in the worker and streams
 * a completion for a typed prompt. All model output is rendered as text.
 */
import { useEffect, useRef, useState } from 'react';
import { EngineClient } from '../worker/client';
import type { BundledModelRef } from '../worker/protocol';
import { useApp } from './store';
import { ProgressBar } from './ProgressBar';
import { NoWebGPU } from './NoWebGPU';

interface ModelIndex {
  models: (BundledModelRef & { label: string })[];
}

let client: EngineClient | null = null;

export function App() {
  const s = useApp();
  const [prompt, setPrompt] = useState('Once upon a time');
  const [steps, setSteps] = useState(120);
  const [temperature, setTemperature] = useState(0);
  const jobRef = useRef<number | null>(null);
  const [models, setModels] = useState<ModelIndex['models']>([]);

  async function loadModel(ref: BundledModelRef) {
    const c = client!;
    s.set({ model: null, progress: { stage: 'download', loaded: 0, total: 0, startedAt: performance.now() } });
    const base = new URL(ref.base, document.baseURI).href;
    const job = c.load({ kind: 'url', id: ref.id, base, files: ref.files }, (stage, loaded, total) =>
      useApp.getState().set({ progress: { ...useApp.getState().progress!, stage, loaded, total } }),
    );
    jobRef.current = job.id;
    try {
      s.set({ model: await job.result, notice: null });
    } catch (e) {
      s.set({ notice: `Could not load ${ref.id}: ${(e as Error).message}` });
    } finally {
      jobRef.current = null;
      s.set({ progress: null });
    }
  }

  useEffect(() => {
    if (client) return;
    if (!('gpu' in navigator)) {
      s.set({ fatal: { title: 'WebGPU is not available', message: 'This browser does not expose navigator.gpu.' } });
      return;
    }
    client = new EngineClient();
    client.onDeviceLost = (message) => {
      useApp.getState().set({ notice: `The GPU device was lost (${message}). It is re-created on the next request.` });
    };
    (async () => {
      try {
        const { adapter } = await client!.init();
        s.set({ adapter });
        const index = (await (await fetch('models/index.json')).json()) as ModelIndex;
        setModels(index.models);
        await loadModel(index.models[0]);
      } catch (e) {
        const err = e as Error;
        s.set({ fatal: { title: err.name === 'NoWebGPUError' ? 'WebGPU is not available' : 'Could not start', message: err.message } });
      }
    })();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, []);

  async function run() {
    s.set({ output: '', running: true, stats: null, notice: null });
    const job = client!.generate({ prompt, steps, temperature }, (t) => useApp.getState().set({ output: useApp.getState().output + t }));
    jobRef.current = job.id;
    try {
      const r = await job.result;
      s.set({ stats: r.stats });
    } catch (e) {
      s.set({ notice: (e as Error).message });
    } finally {
      jobRef.current = null;
      s.set({ running: false });
    }
  }

  if (s.fatal) return <NoWebGPU title={s.fatal.title} message={s.fatal.message} />;

  return (
    <main className="page">
      <header>
        <h1>LegoKV</h1>
        <p className="tagline">Position-independent KV caching of LLMs, on your GPU, in the browser.</p>
        <p className="adapter" data-testid="adapter">
          {s.adapter
            ? `Adapter: ${s.adapter.description}${s.adapter.isFallback ? ' (fallback, CPU)' : ''} · f16 ${s.adapter.hasF16 ? 'yes' : 'no'}`
            : 'Starting WebGPU…'}
        </p>
      </header>
      <section className="model">
        <label>
          Model{' '}
          <select aria-label="Model" disabled={!!s.progress || s.running} onChange={(e) => loadModel(models[Number(e.target.value)])}>
            {models.map((m, i) => (
              <option key={m.id} value={i}>{m.label}</option>
            ))}
          </select>
        </label>
        {s.progress && (
          <ProgressBar progress={s.progress} onCancel={() => jobRef.current && client!.cancel(jobRef.current)} />
        )}
        {s.model && (
          <span data-testid="model-ready" className="muted">
            {s.model.id}: {s.model.arch}, {s.model.layers} layers, {(s.model.params / 1e6).toFixed(2)}M params,{' '}
            {(s.model.gpuBytes / 2 ** 20).toFixed(1)} MiB on the GPU
          </span>
        )}
      </section>
      <section className="prompt">
        <textarea aria-label="Prompt" value={prompt} onChange={(e) => setPrompt(e.target.value)} rows={3} />
        <div className="row">
          <label>Steps <input aria-label="Steps" type="number" min={2} max={4096} value={steps} onChange={(e) => setSteps(Number(e.target.value))} /></label>
          <label>Temperature <input aria-label="Temperature" type="number" min={0} max={2} step={0.1} value={temperature} onChange={(e) => setTemperature(Number(e.target.value))} /></label>
          <button onClick={run} disabled={!s.model || s.running}>Generate</button>
          <button onClick={() => jobRef.current && client!.cancel(jobRef.current)} disabled={!s.running}>Stop</button>
        </div>
      </section>
      {s.notice && <p role="alert" className="notice">{s.notice}</p>}
      <pre className="output" data-testid="output">{s.output}</pre>
      {s.stats && (
        <p data-testid="stats" className="muted">
          {s.stats.promptTokens} prompt tokens · TTFT {s.stats.ttftMs.toFixed(0)} ms · {s.stats.generatedTokens} tokens at{' '}
          {s.stats.decodeTokensPerS.toFixed(1)} tok/s
        </p>
      )}
    </main>
  );
}
