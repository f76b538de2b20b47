/** Plain generation from a prompt (no chunks, no caching): the model's own output, streamed as text. */
import { useState } from 'react';
import { useApp } from './store';
import { generate, stopGenerate } from './actions';

export function Playground() {
  const s = useApp();
  const [prompt, setPrompt] = useState('Once upon a time');
  const [steps, setSteps] = useState(120);
  const [temperature, setTemperature] = useState(0);
  return (
    <section className="panel prompt" aria-labelledby="playground-title">
      <h2 id="playground-title">Plain generation</h2>
      <textarea aria-label="Prompt" value={prompt} onChange={(e) => setPrompt(e.target.value)} rows={3} />
      <div className="row">
        <label>Steps <input aria-label="Steps" type="number" min={2} max={4096} value={steps} onChange={(e) => setSteps(Number(e.target.value))} /></label>
        <label>Temperature <input aria-label="Temperature" type="number" min={0} max={2} step={0.1} value={temperature} onChange={(e) => setTemperature(Number(e.target.value))} /></label>
        <button onClick={() => void generate({ prompt, steps, temperature })} disabled={!s.model || s.running || !!s.progress}>Generate</button>
        <button onClick={stopGenerate} disabled={!s.running}>Stop</button>
      </div>
      <pre className="output" data-testid="output">{s.output}</pre>
      {s.stats && (
        <p data-testid="stats" className="muted">
          {s.stats.promptTokens} prompt tokens · TTFT {s.stats.ttftMs.toFixed(0)} ms · {s.stats.generatedTokens} tokens at{' '}
          {s.stats.decodeTokensPerS.toFixed(1)} tok/s
        </p>
      )}
    </section>
  );
}
