/**
 * The guided "attention sink" demo, offline on the bundled model: load the
 * sample stories, compile their chunks, ask with Naive and with LegoLink, and
 * compare the two attention maps.
 */
import { useState } from 'react';
import type { SplitMode } from '../kvsplit/types';
import { addSamples, compileKeys } from './doc-actions';
import { askAlgorithms } from './ask-actions';
import { studio, useStudio } from './studio-store';
import { useApp } from './store';
import { loadBundled } from './actions';
import { sinkShares } from '../analysis/attention-math';
import { describeError } from './errors';

interface DemoIndex {
  samples: { file: string; title: string }[];
  /** `model`: the bundled model the stories are written for; the demo loads it when another one is loaded. */
  demo: { model?: string; mode: SplitMode; chunksPerDocument: number; question: string; layer: number; head: number; note?: string };
}

const STEPS = [
  { title: 'Load the sample stories', text: 'The story model stories260K is loaded if another model is, and three short stories written for LegoKV become documents, each cut into chunks of at most 48 tokens. The first two chunks of every story go into the composer, in order.' },
  { title: 'Compile the chunks', text: 'Every chunk is prefilled on its own, from position 0 with its own BOS token, and its KV cache is stored in this browser. That is why each chunk\'s first tokens behave like the start of a prompt: attention sinks.' },
  { title: 'Ask with Naive and with LegoLink', text: 'Naive pastes the cached chunks together and recomputes only the question. LegoLink-16 also recomputes the first 16 tokens of every chunk but the first, so they learn they are no longer at the start.' },
  { title: 'Compare the maps', text: 'In the Naive map, bright columns stand at chunk starts; with LegoLink some of that attention moves back into the chunks. The sink share below each map puts a number on it.' },
];

async function loadDemoModel(id: string) {
  const m = useApp.getState().bundled.find((x) => x.id === id);
  if (!m) throw new Error(`the demo needs the bundled model ${id}, which this build does not have`);
  await loadBundled(m);
  if (useApp.getState().model?.id !== id) throw new Error(`${id} could not be loaded${useApp.getState().loadError ? `: ${useApp.getState().loadError}` : ''}`);
}

export function DemoPanel() {
  const model = useApp((s) => s.model);
  const busy = useStudio((s) => s.busy);
  const maps = useStudio((s) => s.maps);
  const sinkTokens = useStudio((s) => s.settings.sinkTokens);
  const [step, setStep] = useState(0);
  const [running, setRunning] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);

  async function index(): Promise<DemoIndex> {
    return (await fetch('samples/index.json')).json();
  }

  async function runStep(i: number) {
    setRunning(true);
    setError(null);
    try {
      const ix = await index();
      const d = ix.demo;
      if (i === 0) {
        if (d.model && useApp.getState().model?.id !== d.model) await loadDemoModel(d.model);
        const keys = (await addSamples(ix.samples, d.mode)).flatMap((k) => k.slice(0, d.chunksPerDocument));
        studio().set((s) => ({ composer: keys, settings: { ...s.settings, question: d.question, layer: d.layer, head: d.head }, mapPair: ['naive', 'legolink:16'] }));
        setNote(d.note ?? null);
      } else if (i === 1) {
        await compileKeys(studio().composer);
      } else if (i === 2) {
        await askAlgorithms(['naive', 'legolink:16']);
      } else {
        document.getElementById('attention')?.scrollIntoView({ behavior: 'smooth', block: 'start' });
      }
      const failed = studio().error;
      if (failed) throw new Error(failed.message);
      setStep(Math.max(step, i + 1));
    } catch (e) {
      setError(describeError(e, `Step ${i + 1}`));
    } finally {
      setRunning(false);
    }
  }

  const naive = maps['naive'];
  const lego = maps['legolink:16'];
  return (
    <section className="panel demo" id="demo" aria-labelledby="demo-title">
      <h2 id="demo-title">Guided demo: attention sinks</h2>
      <ol className="demo-steps">
        {STEPS.map((s, i) => (
          <li key={i} className={i < step ? 'done' : i === step ? 'current' : ''}>
            <div className="row-between">
              <strong>{i + 1}. {s.title}</strong>
              <button className="small-btn" disabled={running || !!busy || !model || i > step} onClick={() => void runStep(i)}>
                {i < step ? 'Again' : 'Run'} step {i + 1}
              </button>
            </div>
            <p className="small">{s.text}</p>
            {i === 3 && naive && lego && (
              <p className="small" data-testid="demo-summary">
                Attention on chunk starts (first {sinkTokens} tokens of every chunk): Naive {(100 * sinkShares(naive, sinkTokens).total).toFixed(1)}%,
                LegoLink-16 {(100 * sinkShares(lego, sinkTokens).total).toFixed(1)}% (layer {lego.layer}, head {lego.head}).
              </p>
            )}
          </li>
        ))}
      </ol>
      {note && <p className="muted small">{note}</p>}
      {error && <p role="alert" className="notice">{error}</p>}
    </section>
  );
}
