/**
 * Messages between the page and the inference worker: one map from each call's
 * type to its arguments, its result and the events it streams (`Calls`).
 * A request is `{ id, type, args }`; the worker answers with events, then
 * `done` with the result or `error` with a serialised error (errors.ts).
 * ContextCache's calls carry its own request and event types: the page's
 * RemoteContextCache (remote.ts) implements ContextCacheApi over them.
 */
import type { AdapterSummary } from '../engine';
import type { CompileOptions, CompileProgress, CompletionEvent, CompletionRequest } from '../api/context-cache';
import type { SplitMode } from '../kvsplit/types';
import type { SerializedError } from './errors';
import type { LibraryResult, SinkMapRequest, SinkMapResult, SplitResult, SweepPoint, SweepRequest } from './studio-protocol';

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
  /** How keys and values are kept (GPU cache, browser storage, links): f16 above 50M weights (kvDtypeFor). */
  kvDtype: 'f32' | 'f16';
  /** GPU memory the KV cache takes per context token (keys and values of every layer, as kvDtype). */
  kvBytesPerToken: number;
  hasChatTemplate: boolean;
  /** The chat template questions are wrapped in: `ChatML`, `Gemma`, `its own` (a Hugging Face template), or null. */
  chatTemplate: string | null;
  /** Names weights, precision and tokenizer in cache ids (the studio's chunks are cut and hashed for it). */
  cacheKey: string;
  /** Decode's kernels as timed on this GPU at load (Engine.tuneDecode); null on CPU adapters, which are not tuned. */
  decodeTuning: DecodeTuningInfo | null;
  /** How a link's host rows go up, as timed on this GPU at load (Engine.tuneUpload); null on CPU adapters. */
  uploadTuning: UploadTuningInfo | null;
  /** Prefill's attention as timed on this GPU at load (Engine.tunePrefill); null on CPU adapters. */
  prefillTuning: PrefillTuningInfo | null;
}

/**
 * Prefill's attention way chosen by timing `ways` ways at load, in words, with its µs a layer for `rows` rows over
 * `keys` keys and the default way's, and the ways refused; or why timing failed (the default kept).
 */
export type PrefillTuningInfo =
  | {
      chosen: string; us: number; defaults: string; defaultUs: number; ways: number; rows: number; keys: number; ms: number;
      /** Ways not timed because their output differed from the default way's on this GPU, each with why. */
      refused: string[];
    }
  | { error: string };

/** Which way host rows go up to the GPU, chosen by timing both at load, or why timing failed (writeBuffer kept). */
export type UploadTuningInfo = { chosen: 'writeBuffer' | 'mapped staging'; writeGBps: number; mappedGBps: number; ms: number } | { error: string };

/** What timing decode's kernels at load chose, in words, or why it failed (the defaults are kept then). */
export type DecodeTuningInfo =
  | {
      chosen: string; msPerStep: number; defaults: string; defaultMsPerStep: number; ways: number; ms: number;
      /**
       * The attention kernel kept for decode rows that scan `from` keys or more, in words, where it differs from the
       * short spans' (Ops.longAttention): over `span` keys it took `us` µs a layer, the short spans' kernel `shortUs`.
       */
      long: { attention: string; from: number; span: number; us: number; shortUs: number } | null;
      /** Why timing attention alone over a long span failed, where it did (no long spans' kernel then). */
      longError?: string;
    }
  | { error: string };

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
export type LoadStage = 'download' | 'cache' | 'parse' | 'upload' | 'tune';

export type InitResult = { adapter: AdapterSummary };
export type GenerateResult = { text: string; stats: GenerateStats; cancelled: boolean };
export interface LoadProgress {
  stage: LoadStage;
  loaded: number;
  total: number;
  file?: string;
}

/** A call's arguments, result, and the events it streams before the result. */
interface Call<A, R, E = never> {
  args: A;
  result: R;
  event: E;
}

/** What crosses postMessage: no functions, no AbortSignal (a `cancel` message aborts a call by id). */
export type WireCompileOptions = Omit<CompileOptions, 'onProgress' | 'signal'>;
export type WireCompletionRequest = Omit<CompletionRequest, 'signal'>;

/** The kernels the engine picks after 'set-kernels'. */
export interface KernelChoice {
  profile: 'cpu' | 'gpu';
  fused: boolean;
  gemv: 'gemv' | 'gemv_sg';
  subgroupMin: number | null;
  /** Whether the tiled matmuls multiply f16 and quantized weights' slices in f16 (kernels/matmul_half.wgsl; needs shader-f16). */
  half: boolean;
  /** Greedy decode steps a call records ahead of the GPU (Engine.decodeAhead): 1 is step by step. */
  decodeAhead: number;
}

export interface Calls {
  init: Call<null, InitResult>;
  /** The weights' precision is the worker's choice by size unless given. */
  load: Call<{ model: ModelSource; weightDtype?: 'f32' | 'f16' }, ModelInfo, LoadProgress>;
  /** Destroys the GPU device, as a driver reset would (for testing recovery). */
  'simulate-device-loss': Call<null, null>;
  /** Waits `ms` after every decoded token of a studio answer: slow motion, to watch (and test) streaming and Stop. */
  'set-decode-delay': Call<{ ms: number }, null>;
  /**
   * Forces the kernel profile ('gpu': shared-memory tiles, attention_tiled and attention_decode, gemv or gemv_sg,
   * fused decode), decode's fused launches and the tiled matmuls' f16 slices (null: the adapter decides), so the
   * kernels a GPU runs can be run, tested and compared on any adapter; answers what the engine then uses and the
   * device's smallest subgroup size. f16 slices on a device without shader-f16 are refused.
   */
  'set-kernels': Call<{ profile: 'cpu' | 'gpu' | null; fuse: boolean | null; half: boolean | null }, KernelChoice>;
  'list-cached': Call<null, CachedModel[]>;
  'delete-cached': Call<{ key: string }, boolean>;
  generate: Call<GenerateRequest, GenerateResult, { text: string }>;
  // ContextCache's surface (ContextCacheApi).
  'compile-context': Call<{ chunks: (string | number[])[]; opts: WireCompileOptions }, string[], CompileProgress>;
  'chat-completion': Call<WireCompletionRequest, null, CompletionEvent>;
  'expire-cache': Call<{ id: string }, boolean>;
  tokenize: Call<{ text: string }, number[]>;
  'token-pieces': Call<{ tokens: number[] }, string[]>;
  // The studio's documents, library and measurements (studio.ts).
  split: Call<{ docId: string; text: string; mode: SplitMode }, SplitResult>;
  library: Call<null, LibraryResult>;
  'clear-library': Call<null, null>;
  /** The GPU tier's budget in bytes (null: the model's default); the library as it then is. */
  'gpu-budget': Call<{ bytes: number | null }, LibraryResult>;
  'sink-map': Call<SinkMapRequest, SinkMapResult>;
  sweep: Call<SweepRequest, SweepPoint[], { point: SweepPoint; done: number; total: number }>;
}

export type CallType = keyof Calls;

export type Request =
  | { [K in CallType]: { id: number; type: K; args: Calls[K]['args'] } }[CallType]
  | { id: number; type: 'cancel'; target: number };

export type Reply =
  | { [K in CallType]: { id: number; type: 'event'; call: K; event: Calls[K]['event'] } }[CallType]
  | { [K in CallType]: { id: number; type: 'done'; call: K; result: Calls[K]['result'] } }[CallType]
  | { id: number; type: 'error'; error: SerializedError }
  | { id: -1; type: 'device-lost'; message: string };
