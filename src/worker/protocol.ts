/** Messages between the page and the inference worker. */
import type { AdapterSummary } from '../engine/gpu/device';

export interface BundledModelRef {
  kind: 'url';
  id: string;
  /** Base URL of the model's folder and the files to fetch from it. */
  base: string;
  files: string[];
}

export interface GenerateRequest {
  prompt: string;
  /** Positions including the prompt, as llama2.c's -n. */
  steps: number;
  temperature: number;
  topP?: number;
  chat?: boolean;
}

export type Request =
  | { id: number; type: 'init' }
  | { id: number; type: 'load'; model: BundledModelRef; weightDtype?: 'f32' | 'f16' }
  | { id: number; type: 'generate'; req: GenerateRequest }
  | { id: number; type: 'cancel'; target: number };

export interface ModelInfo {
  id: string;
  arch: string;
  params: number;
  layers: number;
  hidden: number;
  vocab: number;
  gpuBytes: number;
  hasChatTemplate: boolean;
}

export interface GenerateStats {
  promptTokens: number;
  generatedTokens: number;
  ttftMs: number;
  decodeTokensPerS: number;
}

export type Event =
  | { id: number; type: 'progress'; stage: string; loaded: number; total: number }
  | { id: number; type: 'token'; text: string }
  | { id: number; type: 'done'; result: unknown }
  | { id: number; type: 'error'; name: string; message: string }
  | { id: -1; type: 'device-lost'; message: string };

export type InitResult = { adapter: AdapterSummary };
export type LoadResult = ModelInfo;
export type GenerateResult = { text: string; stats: GenerateStats; cancelled: boolean };
