/** Page state (zustand): adapter, model, prompt and the streamed answer. */
import { create } from 'zustand';
import type { AdapterSummary } from '../engine/gpu/device';
import type { GenerateStats, ModelInfo } from '../worker/protocol';

export interface Progress {
  stage: string;
  loaded: number;
  total: number;
  startedAt: number;
}

export interface AppState {
  adapter: AdapterSummary | null;
  fatal: { title: string; message: string } | null;
  notice: string | null;
  model: ModelInfo | null;
  progress: Progress | null;
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
  progress: null,
  output: '',
  running: false,
  stats: null,
  set: (p) => set(p),
}));
