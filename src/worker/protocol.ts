/** Messages between the page and the inference worker. */
import type { AdapterSummary } from '../engine';
import type { StudioEvent, StudioRequest } from './studio-protocol';

/** A model served with the app: a URL folder and the files to fetch from it. */
export interface BundledModelRef {
  kind: 'url';
  id: string;
  /** Base URL of the model's folder and the files to fetch from it. */
  base: string;
  files: string[];
}

/** A Hugging Face repository id (`org/name`), a Hub page URL, or the URL of one `.gguf` file. */
export interface HubModelRef {
  kind: 'hub';
  input: string;
  /** Branch, tag or commit; `main` when absent. */
  revision?: string;
  /** Hub base URL; `https://huggingface.co` when absent (tests point it at a local server). */
  endpoint?: string;
}

/** A file picked or dropped in the page, with its path relative to the model's folder. */
export interface LocalFile {
  path: string;
  file: File;
}

/** Files from the user's disk (File objects are structured-cloned to the worker, not copied). */
export interface LocalModelRef {
  kind: 'files';
  name: string;
  files: LocalFile[];
  /** Also keep a copy in the browser's private storage (OPFS). */
  cache?: boolean;
}

/** A model already in the browser's cache, by its folder key. */
export interface CachedModelRef {
  kind: 'cached';
  key: string;
}

export type ModelSource = BundledModelRef | HubModelRef | LocalModelRef | CachedModelRef;

/** One model folder in the OPFS cache. */
export interface CachedModel {
  /** Folder name under `models/`, e.g. `HuggingFaceTB--SmolLM2-135M-Instruct@main`. */
  key: string;
  id: string;
  revision: string;
  /** Where it came from: a Hub folder URL, or `local`. */
  origin: string;
  bytes: number;
  files: number;
  /** ISO date of the download; empty for an incomplete folder. */
  date: string;
  /** False for a folder an interrupted download left behind (never loaded; delete it). */
  complete: boolean;
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
  | { id: number; type: 'load'; model: ModelSource; weightDtype?: 'f32' | 'f16' }
  /** Destroys the GPU device, as a driver reset would (for testing recovery). */
  | { id: number; type: 'simulate-device-loss' }
  /** Waits `ms` after every decoded token of a studio answer: slow motion, to watch (and test) streaming and Stop. */
  | { id: number; type: 'set-decode-delay'; ms: number }
  | { id: number; type: 'list-cached' }
  | { id: number; type: 'delete-cached'; key: string }
  | { id: number; type: 'generate'; req: GenerateRequest }
  | { id: number; type: 'cancel'; target: number }
  | ({ id: number } & StudioRequest);

export interface ModelInfo {
  id: string;
  /** How it was obtained: bundled, Hugging Face Hub, browser cache, local files. */
  source: string;
  arch: string;
  params: number;
  layers: number;
  /** Query heads per layer (the attention maps pick one). */
  heads: number;
  hidden: number;
  vocab: number;
  gpuBytes: number;
  /** Precision the weights are stored in on the GPU. */
  weightDtype: 'f32' | 'f16';
  /** GPU memory the KV cache takes per context token (f32 keys and values, every layer). */
  kvBytesPerToken: number;
  hasChatTemplate: boolean;
  /** The chat template questions are wrapped in: `ChatML`, `Gemma`, `its own` (a Hugging Face template), or null. */
  chatTemplate: string | null;
  /** Names weights, precision and tokenizer in cache ids (the studio's chunks are cut and hashed for it). */
  cacheKey: string;
}

export interface GenerateStats {
  promptTokens: number;
  generatedTokens: number;
  ttftMs: number;
  decodeTokensPerS: number;
}

/**
 * Stages of a load, in order: `download` (network, bytes), `cache` (copying
 * local files into OPFS, bytes), `parse` (reading the model files), `upload`
 * (weights to the GPU). A load from the cache starts at `parse`.
 */
export type LoadStage = 'download' | 'cache' | 'parse' | 'upload';

export type Event =
  | { id: number; type: 'progress'; stage: LoadStage; loaded: number; total: number; file?: string }
  | { id: number; type: 'token'; text: string }
  | { id: number; type: 'studio'; ev: StudioEvent }
  | { id: number; type: 'done'; result: unknown }
  | { id: number; type: 'error'; name: string; message: string }
  | { id: -1; type: 'device-lost'; message: string };

export type InitResult = { adapter: AdapterSummary };
export type LoadResult = ModelInfo;
export type ListCachedResult = CachedModel[];
export type GenerateResult = { text: string; stats: GenerateStats; cancelled: boolean };
