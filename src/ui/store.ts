/** Page state (zustand): adapter, models (loaded, bundled, cached), load progress, the streamed answer. */
import { create } from 'zustand';
import type { AdapterSummary } from '../engine';
import type { SplitMode } from '../kvsplit/types';
import type { BundledModelRef, CachedModel, GenerateStats, ModelInfo } from '../worker/protocol';
import { catalogueEntry } from '../worker/model-catalogue';

export interface Progress {
  stage: string;
  loaded: number;
  total: number;
  /** When this stage started (performance.now()), for the ETA. */
  startedAt: number;
  file?: string;
}

/** How a bundled model wants questions put (public/models/index.json). */
export interface PromptProfile {
  /** The uncached text after the chunks; `{question}` stands for what the user typed. */
  framing: string;
  /** A question that fits the model's sample documents. */
  example: string;
  /** Documents written (or generated) for the model, under public/samples/, and how to cut them. */
  samples?: { mode: SplitMode; files: { file: string; title: string }[] };
}

export type BundledModel = BundledModelRef & {
  label: string;
  /** What it answers, in a phrase (shown in the studio's model list). */
  use?: string;
  /** The model the studio offers for the user's own documents (SmolLM2-135M-Instruct, where it was fetched). */
  ownDocuments?: boolean;
  prompt?: PromptProfile;
};

/** The prompt profile of a bundled model or a catalogue entry (worker/model-catalogue.ts), by id (none for other models). */
export const promptFor = (bundled: readonly BundledModel[], id: string | undefined): PromptProfile | undefined =>
  bundled.find((m) => m.id === id)?.prompt ?? catalogueEntry(id)?.prompt;

export interface AppState {
  adapter: AdapterSummary | null;
  fatal: { title: string; message: string } | null;
  notice: string | null;
  model: ModelInfo | null;
  /** Models served with the app (public/models/index.json). */
  bundled: BundledModel[];
  /** Models in the browser's OPFS cache. */
  cached: CachedModel[];
  /** Set while a model loads. */
  progress: Progress | null;
  /** Why the last load (or cache action) failed. */
  loadError: string | null;
  output: string;
  running: boolean;
  stats: GenerateStats | null;
  set: (p: Partial<AppState>) => void;
}

export const useApp = create<AppState>((set) => ({
  adapter: null,
  fatal: null,
  notice: null,
  model: null,
  bundled: [],
  cached: [],
  progress: null,
  loadError: null,
  output: '',
  running: false,
  stats: null,
  set: (p) => set(p),
}));
