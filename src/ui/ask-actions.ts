/**
 * Asking over the composer's chunks: one algorithm, or Compare (several in
 * turn), streamed into answer cards; the attention maps that come back; and
 * the TTFT sweep. Stop cancels whatever runs.
 */
import type { AskResult, ChunkRef, SinkMapResult, StudioEvent } from '../worker/studio-protocol';
import { studioAsk } from '../worker/studio-ask';
import { client, lego, refreshLibrary } from './doc-actions';
import { describeError, isAbort } from './errors';
import { algorithmSpec, resolveChunk, COMPARE_ALGORITHMS, frameQuestion, framingFor, mapTarget, studio, type AnswerCard, type Settings } from './studio-store';
import { useApp } from './store';
import { parseAlgorithm, SWEEP_ALGORITHMS } from '../kvlink/catalogue';
import { currentContext } from './prompt-context';

/** Stops whatever runs now (an ask, the sink map, the sweep). */
let stopJob: (() => void) | null = null;
let stopped = false;
let nextCard = 1;

function patchCard(id: number, p: Partial<AnswerCard> | ((c: AnswerCard) => Partial<AnswerCard>)) {
  studio().set((s) => ({ answers: s.answers.map((c) => (c.id === id ? { ...c, ...(typeof p === 'function' ? p(c) : p) } : c)) }));
}

/** The composer's chunks in order, as the worker wants them. */
export function composerChunks(): ChunkRef[] {
  const s = studio();
  return s.composer.flatMap((k) => {
    const c = resolveChunk(s, k);
    return c ? [{ key: k, label: c.label, tokens: c.chunk.tokens }] : [];
  });
}

/** What follows the chunks: the question in the loaded model's framing. */
function askedText(st: Settings): string {
  const app = useApp.getState();
  return frameQuestion(framingFor(st, app.model?.id, app.bundled), st.question);
}

/** Asks with one algorithm; adds an answer card and, with scores, the attention map. */
async function askWith(algorithm: string, group: number, opts: { maxTokens?: number } = {}): Promise<AskResult | null> {
  const s = studio();
  const chunks = composerChunks();
  const st = s.settings;
  const ctx = currentContext();
  const card: AnswerCard = {
    id: nextCard++, group, algorithm, question: st.question, chunkLabels: chunks.map((c) => c.label), context: ctx, text: '',
    // prompt compiles nothing: it goes straight to computing the prompt.
    status: parseAlgorithm(algorithm).kind === 'prompt' ? 'linking' : 'compiling',
  };
  s.set((x) => ({ answers: [card, ...x.answers].slice(0, 40) }));
  const onEvent = (ev: StudioEvent) => {
    if (ev.kind === 'first-token') patchCard(card.id, { status: 'streaming', first: ev.first });
    else if (ev.kind === 'text') patchCard(card.id, (c) => ({ text: c.text + ev.text }));
    else if (ev.kind === 'compile') patchCard(card.id, { status: ev.done === ev.total ? 'linking' : 'compiling' });
  };
  const ac = new AbortController();
  stopJob = () => ac.abort();
  try {
    const r = await studioAsk(lego(), {
      chunks, question: askedText(st), algorithm, maxTokens: opts.maxTokens ?? st.maxTokens, temperature: st.temperature,
      scores: mapTarget(st, useApp.getState().model),
    }, onEvent, { signal: ac.signal });
    patchCard(card.id, { algorithm: r.algorithm, status: r.cancelled ? 'stopped' : 'done', text: r.text, tokens: r.tokens, decodeTokensPerS: r.decodeTokensPerS, first: r.first });
    // A map is kept only while its model and prompt are the current ones (and replaces those of another prompt).
    if (r.map && currentContext() === ctx) {
      studio().set((x) => ({ maps: { ...(x.mapsContext === ctx ? x.maps : {}), [r.algorithm]: r.map! }, sinkGrid: x.mapsContext === ctx ? x.sinkGrid : null, mapsContext: ctx }));
    }
    return r;
  } catch (e) {
    patchCard(card.id, { status: isAbort(e) ? 'stopped' : 'error', error: isAbort(e) ? undefined : describeError(e, 'Asking') });
    return null;
  } finally {
    stopJob = null;
  }
}

async function run(algorithms: string[], opts: { maxTokens?: number; newGroup?: boolean } = {}): Promise<(AskResult | null)[]> {
  const s = studio();
  if (s.busy) return [];
  if (!composerChunks().length) {
    s.set({ error: { message: 'Add chunks to the composer first (add, or drag them in).', at: 'ask' } });
    return [];
  }
  if (!s.settings.question.trim()) {
    s.set({ error: { message: 'Type a question first.', at: 'ask' } });
    return [];
  }
  stopped = false;
  s.set({ busy: 'ask', error: null });
  // Answers to the same model and prompt sit side by side; a new question, chunk order or model starts a new group.
  const last = s.answers[0];
  const ctx = currentContext();
  const group = !opts.newGroup && last && last.context === ctx ? last.group : nextCard;
  const out: (AskResult | null)[] = [];
  try {
    for (const a of algorithms) {
      // Another model, question or chunk order since the run began: the rest would answer a prompt no longer shown.
      if (stopped || currentContext() !== ctx) break;
      out.push(await askWith(a, group, opts));
    }
  } finally {
    studio().set({ busy: null });
    void refreshLibrary();
  }
  return out;
}

/** Asks with the algorithm chosen in the composer. */
export function askSelected() {
  return run([algorithmSpec(studio().settings)]);
}

/** The same question through every Compare algorithm, one after another. */
export function compareAll() {
  return run([...COMPARE_ALGORITHMS], { newGroup: true });
}

/** Asks the two map algorithms again (after changing layer or head). */
export function refreshMaps() {
  return run([...studio().mapPair]);
}

export function askAlgorithms(algorithms: string[], opts: { maxTokens?: number } = {}) {
  return run(algorithms, opts);
}

/**
 * Links the composer's chunks once with `algorithm` and measures, in every layer and head, the question's
 * attention on chunk starts (the demo picks its map from it). Null when stopped or failed (the error is shown).
 */
export async function measureSinkMap(algorithm = 'naive'): Promise<SinkMapResult | null> {
  const s = studio();
  if (s.busy) return null;
  const chunks = composerChunks();
  if (!chunks.length || !s.settings.question.trim()) {
    s.set({ error: { message: 'Add chunks to the composer and type a question first.', at: 'ask' } });
    return null;
  }
  stopped = false;
  s.set({ busy: 'ask', error: null });
  const ctx = currentContext();
  const j = client().call('sink-map', { chunks, question: askedText(s.settings), algorithm });
  stopJob = () => client().cancel(j.id);
  try {
    const grid = await j.result;
    if (currentContext() !== ctx) return null;
    studio().set((x) => ({ sinkGrid: grid, maps: x.mapsContext === ctx ? x.maps : {}, mapsContext: ctx }));
    return grid;
  } catch (e) {
    if (!isAbort(e)) studio().set({ error: { message: describeError(e, 'Measuring the sinks'), at: 'ask' } });
    return null;
  } finally {
    stopJob = null;
    studio().set({ busy: null });
  }
}

export function stopAll() {
  stopped = true;
  stopJob?.();
}

export function clearAnswers() {
  studio().set({ answers: [] });
}

/** TTFT against context length with fixed-size chunks, for the chart. */
export async function runSweep(algorithms: readonly string[] = SWEEP_ALGORITHMS): Promise<void> {
  const s = studio();
  if (s.busy) return;
  const text = s.docs.map((d) => d.text).join('\n\n');
  stopped = false;
  s.set({ busy: 'sweep', error: null, sweep: { points: [], done: 0, total: s.settings.sweepLengths.length * algorithms.length } });
  const j = client().call(
    'sweep',
    { text, chunkTokens: s.settings.sweepChunk, lengths: s.settings.sweepLengths, algorithms: [...algorithms] },
    (ev) => studio().set((x) => ({ sweep: { points: [...x.sweep.points, ev.point], done: ev.done, total: ev.total } })),
  );
  stopJob = () => client().cancel(j.id);
  try {
    const points = await j.result;
    studio().set((x) => ({ sweep: { ...x.sweep, points } }));
  } catch (e) {
    if (!isAbort(e)) studio().set({ error: { message: describeError(e, 'The sweep'), at: 'charts' } });
  } finally {
    stopJob = null;
    studio().set({ busy: null });
    void refreshLibrary();
  }
}
