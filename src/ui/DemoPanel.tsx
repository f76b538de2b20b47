/**
 * The guided "attention sink" demo, offline: load the demo's model and the
 * sample stories, compile their chunks, measure the sink map under Naive in
 * every layer and head, draw the head where chunk starts draw the most, ask
 * with Naive and with LegoLink, and compare the two maps.
 *
 * It runs on the first model of public/samples/index.json's `demos` that the
 * page offers: SmolLM2-135M-Instruct where `npm start` fetched it, else
 * stories260K, with a note that its sinks are weak.
 */
import { useEffect, useState } from 'react';
import type { SplitMode } from '../kvsplit/types';
import { addSamples, compileKeys } from './doc-actions';
import { askAlgorithms, measureSinkMap } from './ask-actions';
import { studio, useStudio } from './studio-store';
import { useApp, type BundledModel } from './store';
import { loadBundled } from './actions';
import { sinkShares } from '../analysis/attention-math';
import { describeError } from './errors';
import { useCurrentMeasures } from './prompt-context';
import { SinkGridView } from './SinkGridView';
import type { SinkMapResult } from '../worker/studio-protocol';

export interface Demo {
  /** The bundled (or fetched) model the demo runs on. */
  model: string;
  mode: SplitMode;
  chunksPerDocument: number;
  question: string;
  /** Answer tokens of each ask. */
  maxTokens: number;
  /** Shown beside the demo (the fallback says its sinks are weak). */
  note?: string;
}

interface DemoIndex {
  samples: { file: string; title: string }[];
  demos: Demo[];
}

/** The first demo whose model the page offers. */
export const pickDemo = (demos: readonly Demo[], bundled: readonly Pick<BundledModel, 'id'>[]): Demo | undefined =>
  demos.find((d) => bundled.some((m) => m.id === d.model));

const pct = (v: number) => `${(100 * v).toFixed(1)}%`;

function steps(d: Demo | undefined) {
  const model = d?.model ?? 'the demo model';
  const per = d?.chunksPerDocument === 1 ? 'The first chunk' : `The first ${d?.chunksPerDocument ?? 2} chunks`;
  return [
    { title: 'Load the sample stories', text: `${model} is loaded if another model is, and three short stories written for LegoKV become documents, each cut into chunks of at most ${d?.mode.kind === 'semantic' ? d.mode.maxTokens : 48} tokens. ${per} of every story go into the composer, in order.` },
    { title: 'Compile the chunks', text: 'Every chunk is prefilled on its own, from position 0 with its own BOS token, and its KV cache is stored in this browser. That is why each chunk\'s first token behaves like the start of a prompt: an attention sink.' },
    { title: 'Measure the sinks, then ask with Naive and LegoLink', text: 'Naive pastes the cached chunks together and recomputes only the question. Linked that way once, the question\'s attention is read in every layer and head, and the demo draws the head where chunk starts draw the largest share. Then it asks with Naive and with LegoLink-16, which also recomputes the first 16 tokens of every chunk that does not open the prompt, so they learn they are no longer at the start.' },
    { title: 'Compare the maps', text: 'In the Naive map, bright columns stand at chunk starts; with LegoLink some of that attention moves back into the chunks. The sink share below each map puts a number on it.' },
  ];
}

function Pick({ grid }: { grid: SinkMapResult }) {
  const i = grid.best.layer * grid.heads + grid.best.head;
  return (
    <div className="demo-pick">
      <p className="small" data-testid="demo-pick">
        Measured under {grid.algorithm} over {grid.chunks} chunk starts: averaged over layers ≥ {grid.minLayer} and all heads, a chunk start
        draws <b>{grid.ratio.toFixed(1)}×</b> the attention of an ordinary token of its chunk. The maps show <b>layer {grid.best.layer}, head {grid.best.head}</b>,
        where chunk starts draw the most: {pct(grid.start[i])} of the question's attention on each, against {pct(grid.ordinary[i])} on an ordinary token.
      </p>
      <SinkGridView grid={grid} />
    </div>
  );
}

export function DemoPanel() {
  const model = useApp((s) => s.model);
  const bundled = useApp((s) => s.bundled);
  const busy = useStudio((s) => s.busy);
  const { maps, sinkGrid } = useCurrentMeasures();
  const sinkTokens = useStudio((s) => s.settings.sinkTokens);
  const [ix, setIx] = useState<DemoIndex | null>(null);
  const [step, setStep] = useState(0);
  const [running, setRunning] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const demo = ix ? pickDemo(ix.demos, bundled) : undefined;

  useEffect(() => {
    fetch('samples/index.json').then((r) => r.json() as Promise<DemoIndex>).then(setIx, (e: Error) => setError(`The demo's index could not be read: ${e.message}`));
  }, []);

  async function loadDemoModel(id: string) {
    const m = useApp.getState().bundled.find((x) => x.id === id);
    if (!m) throw new Error(`the demo needs the model ${id}, which this page does not offer`);
    await loadBundled(m);
    if (useApp.getState().model?.id !== id) throw new Error(`${id} could not be loaded${useApp.getState().loadError ? `: ${useApp.getState().loadError}` : ''}`);
  }

  async function runStep(i: number) {
    if (!ix || !demo) return;
    setRunning(true);
    setError(null);
    try {
      if (i === 0) {
        if (useApp.getState().model?.id !== demo.model) await loadDemoModel(demo.model);
        const keys = (await addSamples(ix.samples, demo.mode)).flatMap((k) => k.slice(0, demo.chunksPerDocument));
        studio().set((s) => ({ composer: keys, settings: { ...s.settings, question: demo.question, questionFor: demo.model }, mapPair: ['naive', 'legolink:16'] }));
      } else if (i === 1) {
        await compileKeys(studio().composer);
      } else if (i === 2) {
        const grid = await measureSinkMap('naive');
        if (grid) {
          studio().set((s) => ({ settings: { ...s.settings, layer: grid.best.layer, head: grid.best.head } }));
          await askAlgorithms(['naive', 'legolink:16'], { maxTokens: demo.maxTokens });
        }
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
      {ix && (
        <p className="small" data-testid="demo-model">
          {demo ? <>Runs on <b>{demo.model}</b>, offline.</> : 'None of the demo\'s models is offered here.'}
          {demo?.note && <> {demo.note}</>}
        </p>
      )}
      <ol className="demo-steps">
        {steps(demo).map((s, i) => (
          <li key={i} className={i < step ? 'done' : i === step ? 'current' : ''}>
            <div className="row-between">
              <strong>{i + 1}. {s.title}</strong>
              <button className="small-btn" disabled={running || !!busy || !model || !demo || i > step} onClick={() => void runStep(i)}>
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
      {sinkGrid && <Pick grid={sinkGrid} />}
      {error && <p role="alert" className="notice">{error}</p>}
    </section>
  );
}
