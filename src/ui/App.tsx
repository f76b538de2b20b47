/**
 * The page: the studio (documents → chunks → compile → link and ask, the
 * attention-sink maps, charts, the cache library, the guided demo), then the
 * model picker and plain generation. Worker calls live in the *-actions.ts
 * files; all user text and model output is rendered as text.
 */
import { useEffect } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { useApp } from './store';
import { useStudio } from './studio-store';
import { NoWebGPU } from './NoWebGPU';
import { ModelPicker } from './ModelPicker';
import { Playground } from './Playground';
import { DocumentsPanel } from './DocumentsPanel';
import { Composer } from './Composer';
import { AnswerCards } from './AnswerCards';
import { AttentionPanel } from './AttentionPanel';
import { ChartsPanel } from './ChartsPanel';
import { CacheLibrary } from './CacheLibrary';
import { DemoPanel } from './DemoPanel';
import { Welcome } from './Welcome';
import { startEngine } from './actions';
import { hydrateStudio } from './persist';
import { resplitStale } from './doc-actions';
import { useClearStale } from './prompt-context';

const NAV = [
  ['demo', 'Demo'], ['documents', 'Documents'], ['ask', 'Ask'], ['attention', 'Attention map'], ['charts', 'Charts'],
  ['library', 'Cache library'], ['model', 'Model'],
] as const;

const mib = (bytes: number) => `${Math.round(bytes / 2 ** 20).toLocaleString('en')} MiB`;

export function App() {
  // Not the streamed output: App re-renders only when these change.
  const s = useApp(useShallow((a) => ({ fatal: a.fatal, adapter: a.adapter, model: a.model, progress: !!a.progress, notice: a.notice })));
  const hydrated = useStudio((x) => x.hydrated);
  const modelKey = s.model?.cacheKey;
  useClearStale();

  useEffect(() => {
    void hydrateStudio();
    void startEngine();
  }, []);
  useEffect(() => {
    if (hydrated && modelKey) void resplitStale(modelKey);
  }, [hydrated, modelKey]);

  // Two lines from the start (the second blank until the adapter is known), so the header does not grow.
  const adapterLine = s.adapter
    ? [`Adapter: ${s.adapter.description}${s.adapter.isFallback ? ' (fallback, CPU)' : ''} · f16 ${s.adapter.hasF16 ? 'yes' : 'no'} · subgroups ${s.adapter.hasSubgroups ? 'yes' : 'no'}`,
      `largest buffer ${mib(s.adapter.maxBufferSize)} · largest binding ${mib(s.adapter.maxStorageBufferBindingSize)}`]
    : ['Starting WebGPU…', '\u00a0'];

  if (s.fatal) return <NoWebGPU title={s.fatal.title} message={s.fatal.message} />;

  return (
    <main className="page">
      <header className="top">
        <div className="intro">
          <h1>LegoKV studio</h1>
          <Welcome />
        </div>
        <div className="status small">
          <div className="adapter" data-testid="adapter" title={adapterLine.join(' · ')}>
            {adapterLine.map((l, i) => <p key={i}>{l}</p>)}
          </div>
          <p data-testid="header-model">
            {s.model ? `Model: ${s.model.id} · ${s.model.layers} layers × ${s.model.heads} heads` : s.progress ? 'Loading the model…' : 'No model loaded'}
            {' '}<a href="#model">change</a>
          </p>
        </div>
      </header>
      <nav className="nav" aria-label="Sections">
        {NAV.map(([id, label]) => <a key={id} href={`#${id}`}>{label}</a>)}
      </nav>
      {s.notice && <p role="alert" className="notice">{s.notice}</p>}
      <DemoPanel />
      <div className="studio-grid">
        <DocumentsPanel />
        <div className="col sticky">
          <Composer />
        </div>
      </div>
      <AnswerCards />
      <AttentionPanel />
      <ChartsPanel />
      <CacheLibrary />
      <div id="model" className="studio-grid">
        <ModelPicker />
        <Playground />
      </div>
    </main>
  );
}
