/** Page state (zustand): adapter, models (loaded, bundled, cached), load progress, the streamed answer. */
import { create } from 'zustand';
import type { AdapterSummary } from '../engine/gpu/device';
import type { BundledModelRef, CachedModel, GenerateStats, ModelInfo } from '../worker/protocol';

export interface Progress {
  stage: string;
  loaded: number;
  total: number;
  /** When this stage started (performance.now()), for the ETA. */
  startedAt: number;
  file?: string;
}

export type BundledModel = BundledModelRef & { label: string };

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
