/**
 * The page: the model picker, a prompt, and the streamed completion. Worker
 * calls live in actions.ts; all model output is rendered as text.
 */
import { useEffect, useState } from 'react';
import { useApp } from './store';
import { NoWebGPU } from './NoWebGPU';
import { ModelPicker } from './ModelPicker';
import { generate, startEngine, stopGenerate } from './actions';

export function App() {
  const s = useApp();
  const [prompt, setPrompt] = useState('Once upon a time');
  const [steps, setSteps] = useState(120);
  const [temperature, setTemperature] = useState(0);

  useEffect(() => {
    void startEngine();
  }, []);

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
      <ModelPicker />
      <section className="prompt">
        <textarea aria-label="Prompt" value={prompt} onChange={(e) => setPrompt(e.target.value)} rows={3} />
        <div className="row">
          <label>Steps <input aria-label="Steps" type="number" min={2} max={4096} value={steps} onChange={(e) => setSteps(Number(e.target.value))} /></label>
          <label>Temperature <input aria-label="Temperature" type="number" min={0} max={2} step={0.1} value={temperature} onChange={(e) => setTemperature(Number(e.target.value))} /></label>
          <button onClick={() => void generate({ prompt, steps, temperature })} disabled={!s.model || s.running || !!s.progress}>Generate</button>
          <button onClick={stopGenerate} disabled={!s.running}>Stop</button>
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
