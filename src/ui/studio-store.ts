/**
 * The studio's state (zustand): documents and their chunks, the composer,
 * answers, attention maps, the cache library, the TTFT sweep, settings.
 * Documents, chunks, the composer and settings persist (persist.ts).
 */
import { create } from 'zustand';
import { promptFor, type BundledModel } from './store';
import type { SplitMode } from '../kvsplit/types';
import type {
  AskFirst, AttentionMap, ChunkInfo, ChunkTable, LibraryResult, SinkMapResult, SweepPoint,
} from '../worker/studio-protocol';
import { chunkAt } from '../worker/chunk-table';
import type { Normalization } from '../analysis/attention-math';
import { ALGORITHM_CATALOGUE, COMPARE_ALGORITHMS, algorithmInfo, specFor, type AlgorithmKind } from '../kvlink/catalogue';

/** What Compare runs side by side: the two references (the ordinary prompt, full recompute) and the linking algorithms. */
export { COMPARE_ALGORITHMS };

export type DocKind = 'txt' | 'md' | 'html' | 'pdf' | 'paste' | 'sample';

export interface StudioDoc {
  id: string;
  name: string;
  kind: DocKind;
  text: string;
  mode: SplitMode;
  addedAt: number;
  /** The encoding a text file was read in, when it was not UTF-8 (Windows-1252). */
  encoding?: string;
}

/** A document's chunks for one model (tokenizer) and split mode. */
export interface DocSplit {
  modelKey: string;
  modeKey: string;
  /** Packed (chunk-table.ts): a large document has tens of thousands of chunks. */
  chunks: ChunkTable;
  totalTokens: number;
}

export interface Settings {
  defaultMode: SplitMode;
  /** Algorithm kind (prompt, naive, full, cacheblend, legolink, attnlink, legolink0, promptcache) and its parameters. */
  algorithm: string;
  k: number;
  r: number;
  maxTokens: number;
  temperature: number;
  question: string;
  /** The model whose sample or demo question filled `question` (unset once the user types): a model change replaces it. */
  questionFor?: string;
  /** Question framing per model id, where the user changed it from the model's own (see framingFor). */
  framings: Record<string, string>;
  layer: number;
  head: number;
  norm: Normalization;
  contrast: 'linear' | 'sqrt';
  sinkTokens: number;
  sweepChunk: number;
  sweepLengths: number[];
  /** The GPU tier's budget in MiB the user chose in the cache library, or null for the loaded model's default. */
  gpuTierMiB: number | null;
}

export type ErrorPlace = 'documents' | 'ask' | 'charts' | 'library';

export type AnswerStatus = 'compiling' | 'linking' | 'streaming' | 'done' | 'stopped' | 'error';

export interface AnswerCard {
  id: number;
  /** Cards of one Compare run share a group. */
  group: number;
  algorithm: string;
  question: string;
  chunkLabels: string[];
  /** The model and prompt it answered (promptContext): with the algorithm, the key its numbers belong to. */
  context: string;
  status: AnswerStatus;
  text: string;
  first?: AskFirst;
  tokens?: number;
  decodeTokensPerS?: number;
  error?: string;
}

export interface CompileState {
  running: boolean;
  /** The last compile was cancelled (Cancel, or a reload of the engine) before its last chunk. */
  cancelled?: boolean;
  done: number;
  total: number;
  /** Chunks compiled now, and chunks found already stored (counts: a large document has tens of thousands). */
  compiled: number;
  reused: number;
  current: string | null;
}

export interface StudioState {
  hydrated: boolean;
  docs: StudioDoc[];
  splits: Record<string, DocSplit>;
  /** Why a document could not be split (per document id). */
  splitErrors: Record<string, string>;
  /** Chunk keys (`docId#index`) in link order. */
  composer: string[];
  settings: Settings;
  /** Problems with files the user added (each shown as an alert until dismissed). */
  importErrors: { id: number; message: string }[];
  /** What a model change did to the composer and the question, said beside them until dismissed. */
  composerNote: string | null;
  /** A problem (storage full, lost device, a failed request), shown in the panel it came from. */
  error: { message: string; at: ErrorPlace } | null;
  busy: 'compile' | 'ask' | 'sweep' | null;
  compile: CompileState;
  library: LibraryResult | null;
  answers: AnswerCard[];
  /** Latest attention map per algorithm, all for the prompt `mapsContext` names. */
  maps: Record<string, AttentionMap>;
  /** The sink map measured over every layer and head (the guided demo's pick), for `mapsContext` too. */
  sinkGrid: SinkMapResult | null;
  /** The model and prompt the maps and the sink map belong to (promptContext); they are cleared when it changes. */
  mapsContext: string | null;
  /** The two algorithms whose maps are shown side by side. */
  mapPair: [string, string];
  sweep: { points: SweepPoint[]; done: number; total: number };
  set: (p: Partial<StudioState> | ((s: StudioState) => Partial<StudioState>)) => void;
}

export const DEFAULT_SETTINGS: Settings = {
  defaultMode: { kind: 'semantic', maxTokens: 48 },
  algorithm: 'legolink',
  k: algorithmInfo('legolink')!.param!.default,
  r: algorithmInfo('cacheblend')!.param!.default,
  maxTokens: 24,
  temperature: 0,
  question: '',
  framings: {},
  layer: 2,
  head: 6,
  norm: 'softmax',
  contrast: 'sqrt',
  sinkTokens: 4,
  sweepChunk: 32,
  sweepLengths: [64, 128, 256, 384],
  gpuTierMiB: null,
};

export const useStudio = create<StudioState>((set) => ({
  hydrated: false,
  docs: [],
  splits: {},
  splitErrors: {},
  composer: [],
  settings: DEFAULT_SETTINGS,
  importErrors: [],
  composerNote: null,
  error: null,
  busy: null,
  compile: { running: false, done: 0, total: 0, compiled: 0, reused: 0, current: null },
  library: null,
  answers: [],
  maps: {},
  sinkGrid: null,
  mapsContext: null,
  mapPair: ['naive', specFor('legolink')],
  sweep: { points: [], done: 0, total: 0 },
  set: (p) => set(p),
}));

export const studio = () => useStudio.getState();

export const chunkKey = (docId: string, index: number) => `${docId}#${index}`;

export function modeKey(m: SplitMode): string {
  switch (m.kind) {
    case 'fixed':
      return `fixed:${m.tokens}`;
    case 'semantic':
      return `semantic:${m.maxTokens}`;
    case 'document':
      return 'document';
    case 'boundaries':
      return `boundaries:${m.offsets.join(',')}`;
  }
}

/**
 * The layer and head the attention maps capture: the chosen ones, kept inside the loaded model (one with fewer
 * layers or heads than the last leaves the settings pointing past its end). Derived, so the settings keep the choice.
 */
export function mapTarget(st: Pick<Settings, 'layer' | 'head'>, model: { layers: number; heads: number } | null): { layer: number; head: number } {
  if (!model) return { layer: st.layer, head: st.head };
  return { layer: Math.min(st.layer, model.layers - 1), head: Math.min(st.head, model.heads - 1) };
}

const QUESTION = '{question}';

/** The framing for the loaded model: the user's own, else the bundled model's, else the question as typed. */
export function framingFor(settings: Pick<Settings, 'framings'>, modelId: string | undefined, bundled: readonly BundledModel[]): string {
  if (!modelId) return QUESTION;
  return settings.framings[modelId] ?? promptFor(bundled, modelId)?.framing ?? QUESTION;
}

/** The text that follows the chunks: the framing with the question put in (appended when the framing has no slot). */
export function frameQuestion(framing: string, question: string): string {
  return framing.includes(QUESTION) ? framing.split(QUESTION).join(question) : framing + question;
}

/**
 * Names the prompt an ask links: the model (weights, precision, tokenizer), the composer's chunks (their cache
 * ids, which hash model and tokens) and the text after them. Maps and sink shares hold for one such prompt only.
 */
export function promptContext(
  s: Pick<StudioState, 'docs' | 'splits' | 'composer' | 'settings'>, modelKey: string | undefined, framing: string,
): string {
  const chunks = s.composer.flatMap((k) => { const c = resolveChunk(s, k); return c ? [c.chunk.ids.plain] : []; });
  return JSON.stringify([modelKey ?? null, chunks, frameQuestion(framing, s.settings.question)]);
}

/** The algorithms the composer offers: every KVLink algorithm of the catalogue (its parameter k or r is set beside it). */
export const ALGORITHMS: { value: Settings['algorithm']; label: string }[] = ALGORITHM_CATALOGUE.map((a) => ({ value: a.kind, label: a.menu }));

/** The algorithm spec of the settings: kind plus its parameter, kept in the catalogue's range. */
export function algorithmSpec(s: Pick<Settings, 'algorithm' | 'k' | 'r'>): string {
  const param = algorithmInfo(s.algorithm)?.param;
  return param ? specFor(s.algorithm as AlgorithmKind, s[param.name]) : s.algorithm;
}

export interface ResolvedChunk {
  key: string;
  doc: StudioDoc;
  chunk: ChunkInfo;
  label: string;
  text: string;
}

/** The chunk a composer key (`docId#index`) names, under the documents' current splits; undefined if it is gone. */
export function resolveChunk(s: Pick<StudioState, 'docs' | 'splits'>, key: string): ResolvedChunk | undefined {
  const at = key.lastIndexOf('#');
  const docId = key.slice(0, at);
  const doc = s.docs.find((d) => d.id === docId);
  const sp = doc && s.splits[docId];
  const index = key.slice(at + 1);
  const chunk = sp && /^\d+$/.test(index) ? chunkAt(sp.chunks, Number(index)) : undefined;
  if (!doc || !chunk) return undefined;
  return { key, doc, chunk, label: `${doc.name} · ${chunk.index + 1}`, text: doc.text.slice(chunk.start, chunk.end) };
}

/** The keys of a document's chunks, in order (none while it is not split). */
export function docChunkKeys(s: Pick<StudioState, 'splits'>, docId: string): string[] {
  return Array.from({ length: s.splits[docId]?.chunks.count ?? 0 }, (_, i) => chunkKey(docId, i));
}
