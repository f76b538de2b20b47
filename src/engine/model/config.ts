/**
 * The one model description every loader produces and the engine consumes.
 * Loaders (llama2.c, Hugging Face folders, GGUF) translate their own metadata
 * into this shape; nothing downstream looks at a source format again.
 */
export type Arch = 'llama' | 'qwen2' | 'gemma3';

/** Which pairs RoPE rotates: llama2.c and GGUF-llama rotate adjacent pairs
 * (2i, 2i+1); Hugging Face (and GGUF qwen2/gemma3) rotate (i, i + d/2). */
export type RopeStyle = 'interleaved' | 'half';

export interface RopeScalingLlama3 {
  type: 'llama3';
  factor: number;
  lowFreqFactor: number;
  highFreqFactor: number;
  originalMaxPositionEmbeddings: number;
}
export interface RopeScalingLinear {
  type: 'linear';
  factor: number;
}
export type RopeScaling = RopeScalingLlama3 | RopeScalingLinear;

export type LayerKind = 'global' | 'local';

export interface ModelConfig {
  arch: Arch;
  /** Human-readable name, e.g. "stories260K" or a Hub id. */
  name: string;
  vocabSize: number;
  hidden: number;
  intermediate: number;
  nLayers: number;
  nHeads: number;
  nKvHeads: number;
  headDim: number;
  rmsEps: number;
  /** RMSNorm multiplies by (1 + w) instead of w (Gemma in HF layout). */
  normPlusOne: boolean;
  ropeStyle: RopeStyle;
  /** Base of the global (full-attention) layers. */
  ropeTheta: number;
  /** Base of sliding-window layers (Gemma 3), defaults to ropeTheta. */
  ropeLocalTheta?: number;
  /** Scaling applied to global layers only (as in HF Gemma 3 and Llama 3). */
  ropeScaling?: RopeScaling;
  /** q/k/v projections carry a bias (Qwen2). */
  qkvBias: boolean;
  /** RMSNorm over each head of q and k before RoPE (Gemma 3). */
  qkNorm: boolean;
  /** Extra norms after attention and after the FFN (Gemma 3 sandwich norms). */
  postNorms: boolean;
  /** Gate activation of the gated FFN. */
  activation: 'silu' | 'gelu_tanh';
  /** Multiply token embeddings by this (sqrt(hidden) for Gemma). */
  embedScale: number;
  /** Attention scores are multiplied by this (1/sqrt(headDim) unless the model says otherwise). */
  attnScale: number;
  /** Per-layer kind; 'local' layers use a sliding window of `slidingWindow` keys. */
  layerKinds: LayerKind[];
  slidingWindow: number;
  tiedEmbeddings: boolean;
  /** Longest sequence the model was trained for (advisory). */
  maxPositions: number;
  bosId: number | null;
  eosIds: number[];
}

export class UnsupportedModelError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsupportedModelError';
  }
}

/** Checks invariants a loader might get wrong; throws a message that names the problem. */
export function validateConfig(c: ModelConfig): void {
  const bad = (why: string) => {
    throw new UnsupportedModelError(`Invalid model config for ${c.name}: ${why}`);
  };
  for (const k of ['vocabSize', 'hidden', 'intermediate', 'nLayers', 'nHeads', 'nKvHeads', 'headDim'] as const) {
    if (!Number.isInteger(c[k]) || c[k] <= 0) bad(`${k} must be a positive integer, got ${c[k]}`);
  }
  if (c.nHeads % c.nKvHeads !== 0) bad(`nHeads (${c.nHeads}) is not a multiple of nKvHeads (${c.nKvHeads})`);
  // Kernels read heads in vec4s, and kv_gather rotates the half-heads of RoPE in vec4s.
  if (c.headDim % 8 !== 0) bad(`headDim (${c.headDim}) must be a multiple of 8`);
  if (c.layerKinds.length !== c.nLayers) bad(`layerKinds has ${c.layerKinds.length} entries for ${c.nLayers} layers`);
  if (c.layerKinds.includes('local') && !(c.slidingWindow > 0)) bad('local layers need a positive slidingWindow');
}
