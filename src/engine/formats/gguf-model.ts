/**
 * Loads a GGUF model (llama, qwen2, gemma3) into the canonical ModelConfig,
 * host weights and tokenizer.
 *
 * Facts this mapping relies on (checked against llama.cpp's converter and
 * loader):
 * - GGUF dims are innermost-first, so a tensor with dims [in, out] is the
 *   row-major [out, in] matrix the engine wants: shapes are just reversed.
 * - llama: the converter permutes wq/wk so RoPE rotates adjacent pairs
 *   (llama.cpp's "norm" rope) -> 'interleaved'. qwen2/gemma3 use NeoX
 *   rotation of (i, i + d/2) -> 'half'.
 * - gemma3: the converter adds 1 to every `*norm.weight` (incl. q/k norms), so
 *   RMSNorm multiplies by w as stored -> normPlusOne false. Embeddings are
 *   scaled by sqrt(hidden); attention scale is 1/sqrt(key_length) (27B:
 *   1/sqrt(hidden/heads), as llama.cpp does); with a sliding window, every 6th
 *   layer ((i+1) % 6 == 0) is global (unless `gemma3.attention.sliding_window_pattern`
 *   says otherwise), the rest local with rope base 10000
 *   (`gemma3.rope.freq_base_swa` if present); rope scaling applies to global
 *   layers only.
 */
import { validateConfig, UnsupportedModelError, type Arch, type LayerKind, type ModelConfig, type RopeScaling } from '../model/config';
import { layerName, type HostTensor, type HostWeights, type LayerTensorName } from '../model/weights';
import { createGgufTokenizer, tokenizerSpecFromGguf, type GgufTokenizer } from '../tokenizer/gguf';
import { GgufValueType, metaNumber, metaNumbers, metaString, parseGguf, type GgufFile, type GgufMetadata, type GgufTensorInfo } from './gguf';
import { canDequantize, dequantizeF16, dequantizeF32, SUPPORTED_GGML_TYPES } from './gguf-quants';
import { ModelFormatError, type ByteSource } from './source';
import { quantOfGgml } from '../quant';

export interface GgufLoadOptions {
  /** Element type of matrices (default 'f16'); vectors (norms, biases) always load as f32. */
  dtype?: 'f32' | 'f16' | undefined;
  /**
   * Matrices of a type the GPU reads packed (quant.ts: Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q6_K) keep their GGUF
   * blocks (default 'packed'; GpuModel uploads them packed unless asked to dequantize), or are dequantized here
   * to `dtype` like every other type ('dequantize').
   */
  quant?: 'packed' | 'dequantize' | undefined;
  onProgress?: ((doneBytes: number, totalBytes: number, tensor: string) => void) | undefined;
}

export interface GgufModelInfo {
  name: string;
  architecture: Arch;
  finetune?: string | undefined;
  basename?: string | undefined;
  sizeLabel?: string | undefined;
  /** llama.cpp file type (general.file_type), e.g. 15 = Q4_K_M. */
  fileType?: number | undefined;
  hasChatTemplate: boolean;
  tensorTypes: Record<string, number>;
}

export interface GgufModel {
  config: ModelConfig;
  weights: HostWeights;
  tokenizer: GgufTokenizer;
  metadata: GgufMetadata;
  info: GgufModelInfo;
  gguf: GgufFile;
}

const SUPPORTED_ARCHS: readonly Arch[] = ['llama', 'qwen2', 'gemma3'];

const GLOBAL_NAMES: Record<string, string> = {
  'token_embd.weight': 'embed',
  'output_norm.weight': 'final_norm',
  'output.weight': 'lm_head',
};
const LAYER_NAMES: Record<string, LayerTensorName> = {
  'attn_norm.weight': 'attn_norm',
  'attn_q.weight': 'wq',
  'attn_k.weight': 'wk',
  'attn_v.weight': 'wv',
  'attn_q.bias': 'bq',
  'attn_k.bias': 'bk',
  'attn_v.bias': 'bv',
  'attn_q_norm.weight': 'q_norm',
  'attn_k_norm.weight': 'k_norm',
  'attn_output.weight': 'wo',
  'post_attention_norm.weight': 'post_attn_norm',
  'ffn_norm.weight': 'ffn_norm',
  'ffn_gate.weight': 'w_gate',
  'ffn_up.weight': 'w_up',
  'ffn_down.weight': 'w_down',
  'post_ffw_norm.weight': 'post_ffn_norm',
};
/** Tensors llama.cpp also ignores (or that this loader reads into the config). */
const IGNORED = new Set(['rope_freqs.weight']);
const IGNORED_LAYER = new Set(['attn_rot_embd.weight']);

/** Canonical name of a GGUF tensor, null for ignored ones; throws for unknown tensors. */
export function canonicalTensorName(gguf: string, nLayers: number): string | null {
  if (gguf in GLOBAL_NAMES) return GLOBAL_NAMES[gguf]!;
  if (IGNORED.has(gguf)) return null;
  const m = /^blk\.(\d+)\.(.+)$/.exec(gguf);
  if (m) {
    const i = Number(m[1]);
    if (IGNORED_LAYER.has(m[2]!)) return null;
    const n = LAYER_NAMES[m[2]!];
    if (n !== undefined && i < nLayers) return layerName(i, n);
  }
  throw new UnsupportedModelError(`GGUF tensor ${gguf} is not supported by LegoKV's model layout`);
}

/** A float setting; f32 values become the shortest decimal with the same f32 (1e-6, not 9.99999997e-7). */
function metaFloat(md: GgufMetadata, key: string): number | undefined {
  const v = metaNumber(md, key);
  if (v === undefined || md.get(key)?.type !== 6) return v;
  for (let p = 1; p <= 9; p++) {
    const y = Number(v.toPrecision(p));
    if (Math.fround(y) === v) return y;
  }
  return v;
}

function required(md: GgufMetadata, key: string): number {
  const v = metaNumber(md, key);
  if (v === undefined) throw new ModelFormatError(`GGUF metadata ${key} is missing`);
  return v;
}

/** One value for all layers (GGUF may store per-layer arrays); throws if layers differ. */
function uniform(md: GgufMetadata, key: string): number | undefined {
  const v = metaNumbers(md, key);
  if (v === undefined) return undefined;
  if (v.some((x) => x !== v[0])) {
    throw new UnsupportedModelError(`GGUF ${key} differs between layers (${v.join(', ')}); LegoKV needs one value`);
  }
  return v[0];
}

/** Recovers Llama 3 rope scaling parameters from the `rope_freqs` factors the converter writes. */
function llama3ScalingFromFactors(factors: Float32Array, headDim: number, theta: number): RopeScaling {
  const factor = Math.max(...factors);
  const guess: RopeScaling = { type: 'llama3', factor, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192 };
  const lowWl = guess.originalMaxPositionEmbeddings / guess.lowFreqFactor;
  const highWl = guess.originalMaxPositionEmbeddings / guess.highFreqFactor;
  for (let i = 0; i < factors.length; i++) {
    const wl = 2 * Math.PI * theta ** ((2 * i) / headDim);
    let f = factor;
    if (wl < highWl) f = 1;
    else if (wl <= lowWl) {
      const smooth = (guess.originalMaxPositionEmbeddings / wl - 1) / (4 - 1);
      f = 1 / ((1 - smooth) / factor + smooth);
    }
    if (Math.abs(f - factors[i]!) > 1e-3 * f) {
      throw new UnsupportedModelError(
        'GGUF rope_freqs does not match Llama 3 scaling with low/high freq factors 1/4 and 8192 original positions',
      );
    }
  }
  return guess;
}

export async function loadGguf(src: ByteSource, opts: GgufLoadOptions = {}): Promise<GgufModel> {
  const dtype = opts.dtype ?? 'f16';
  const file = await parseGguf(src);
  const md = file.metadata;
  const archName = metaString(md, 'general.architecture');
  if (!archName) throw new ModelFormatError(`${src.name}: GGUF metadata general.architecture is missing`);
  if (!SUPPORTED_ARCHS.includes(archName as Arch)) {
    throw new UnsupportedModelError(
      `GGUF architecture "${archName}" is not supported (supported: ${SUPPORTED_ARCHS.join(', ')})`,
    );
  }
  const arch = archName as Arch;
  const k = (s: string) => `${arch}.${s}`;
  const byName = new Map<string, GgufTensorInfo>(file.tensors.map((t) => [t.name, t]));

  for (const t of file.tensors) {
    if (!canDequantize(t.type)) {
      throw new ModelFormatError(
        `${src.name}: tensor ${t.name} has ggml type ${t.typeName}, which LegoKV cannot dequantize ` +
          `(supported: ${SUPPORTED_GGML_TYPES.join(', ')})`,
      );
    }
  }
  const embed = byName.get('token_embd.weight');
  if (!embed || embed.dims.length !== 2) throw new ModelFormatError(`${src.name}: token_embd.weight is missing or not 2-D`);
  if (byName.has('blk.0.attn_qkv.weight')) {
    throw new UnsupportedModelError(`${src.name}: fused attn_qkv tensors are not supported`);
  }

  const hidden = required(md, k('embedding_length'));
  const nLayers = required(md, k('block_count'));
  const nHeads = uniform(md, k('attention.head_count'));
  if (nHeads === undefined) throw new ModelFormatError(`GGUF metadata ${k('attention.head_count')} is missing`);
  const nKvHeads = uniform(md, k('attention.head_count_kv')) ?? nHeads;
  const intermediate = uniform(md, k('feed_forward_length'));
  if (intermediate === undefined) throw new ModelFormatError(`GGUF metadata ${k('feed_forward_length')} is missing`);
  const headDim = metaNumber(md, k('attention.key_length')) ?? hidden / nHeads;
  const valueDim = metaNumber(md, k('attention.value_length')) ?? headDim;
  if (valueDim !== headDim) throw new UnsupportedModelError(`GGUF value_length ${valueDim} != key_length ${headDim}`);
  const ropeDims = metaNumber(md, k('rope.dimension_count'));
  if (ropeDims !== undefined && ropeDims !== headDim) {
    throw new UnsupportedModelError(`partial rotary embeddings (rope.dimension_count ${ropeDims} of head dim ${headDim})`);
  }
  const ropeTheta = metaFloat(md, k('rope.freq_base')) ?? 10000;

  let ropeScaling: RopeScaling | undefined;
  const scalingType = metaString(md, k('rope.scaling.type'));
  const scalingFactor = metaFloat(md, k('rope.scaling.factor'));
  if (scalingType === 'linear' && scalingFactor !== undefined && scalingFactor !== 1) {
    ropeScaling = { type: 'linear', factor: scalingFactor };
  } else if (scalingType !== undefined && scalingType !== 'none' && scalingType !== 'linear') {
    throw new UnsupportedModelError(`GGUF rope scaling type "${scalingType}" is not supported`);
  }
  const ropeFreqs = byName.get('rope_freqs.weight');
  if (ropeFreqs) {
    const bytes = await src.read(ropeFreqs.offset, ropeFreqs.nBytes);
    ropeScaling = llama3ScalingFromFactors(dequantizeF32(ropeFreqs.type, bytes, ropeFreqs.nElements, ropeFreqs.name), headDim, ropeTheta);
  }

  const tokSpec = tokenizerSpecFromGguf(md);
  const tokenizer = createGgufTokenizer(tokSpec);

  const gemma = arch === 'gemma3';
  let layerKinds: LayerKind[] = Array(nLayers).fill('global');
  let slidingWindow = 0;
  let attnScale = 1 / Math.sqrt(headDim);
  if (gemma) {
    const sw = metaNumber(md, k('attention.sliding_window')) ?? 0;
    if (sw > 0) {
      slidingWindow = sw;
      // llama.cpp: a period p makes layer i local when i % p < p - 1 (Gemma 3: p = 6); newer
      // converters may write the pattern as a period or as per-layer booleans (true = local).
      const pat = md.get(k('attention.sliding_window_pattern'));
      if (pat?.type === GgufValueType.ARRAY && pat.value.type === GgufValueType.BOOL) {
        const flags = pat.value.items;
        if (flags.length !== nLayers) throw new ModelFormatError(`${k('attention.sliding_window_pattern')} has ${flags.length} entries for ${nLayers} layers`);
        layerKinds = flags.map((local) => (local ? 'local' : 'global'));
      } else {
        const p = metaNumber(md, k('attention.sliding_window_pattern')) ?? 6;
        layerKinds = layerKinds.map((_, i) => (p === 0 || i % p < p - 1 ? 'local' : 'global'));
      }
    }
    if (nLayers === 62) attnScale = 1 / Math.sqrt(hidden / nHeads); // Gemma 3 27B: query_pre_attn_scalar = hidden/heads
    const softcap = metaNumber(md, k('final_logit_softcapping')) ?? 0;
    if (softcap !== 0) throw new UnsupportedModelError(`final logit soft-capping (${softcap}) is not supported`);
  }

  const config: ModelConfig = {
    arch,
    name: metaString(md, 'general.name') ?? src.name,
    vocabSize: embed.dims[1]!,
    hidden,
    intermediate,
    nLayers,
    nHeads,
    nKvHeads,
    headDim,
    rmsEps: metaFloat(md, k('attention.layer_norm_rms_epsilon')) ?? 1e-6,
    normPlusOne: false,
    ropeStyle: arch === 'llama' ? 'interleaved' : 'half',
    ropeTheta,
    ...(gemma && slidingWindow > 0 ? { ropeLocalTheta: metaFloat(md, k('rope.freq_base_swa')) ?? 10000 } : {}),
    ...(ropeScaling ? { ropeScaling } : {}),
    qkvBias: byName.has('blk.0.attn_q.bias'),
    qkNorm: byName.has('blk.0.attn_q_norm.weight'),
    postNorms: byName.has('blk.0.post_attention_norm.weight'),
    activation: gemma ? 'gelu_tanh' : 'silu',
    embedScale: gemma ? Math.sqrt(hidden) : 1,
    attnScale,
    layerKinds,
    slidingWindow,
    tiedEmbeddings: !byName.has('output.weight'),
    maxPositions: metaNumber(md, k('context_length')) ?? 2048,
    bosId: tokSpec.bosId,
    eosIds: [...tokenizer.eosIds],
  };
  validateConfig(config);

  const needed: LayerTensorName[] = ['attn_norm', 'wq', 'wk', 'wv', 'wo', 'ffn_norm', 'w_gate', 'w_up', 'w_down'];
  if (config.qkvBias) needed.push('bq', 'bk', 'bv');
  if (gemma) needed.push('q_norm', 'k_norm', 'post_attn_norm', 'post_ffn_norm');

  const weights: HostWeights = new Map();
  const total = file.tensors.reduce((a, t) => a + t.nBytes, 0);
  let done = 0;
  for (const t of file.tensors) {
    const name = canonicalTensorName(t.name, nLayers);
    done += t.nBytes;
    if (name === null) continue;
    const bytes = await src.read(t.offset, t.nBytes);
    const shape = [...t.dims].reverse();
    const asF16 = dtype === 'f16' && shape.length >= 2;
    const packed = opts.quant !== 'dequantize' && shape.length === 2 ? quantOfGgml(t.type) : undefined;
    const tensor: HostTensor = packed
      ? { shape, dtype: packed, data: bytes }
      : asF16
      ? { shape, dtype: 'f16', data: dequantizeF16(t.type, bytes, t.nElements, t.name) }
      : { shape, dtype: 'f32', data: dequantizeF32(t.type, bytes, t.nElements, t.name) };
    weights.set(name, tensor);
    opts.onProgress?.(done, total, t.name);
  }

  const expectShape = (name: string, shape: number[]) => {
    const t = weights.get(name);
    if (!t) throw new ModelFormatError(`${src.name}: tensor for ${name} is missing`);
    if (t.shape.join('x') !== shape.join('x')) {
      throw new ModelFormatError(`${src.name}: ${name} has shape [${t.shape}], expected [${shape}]`);
    }
  };
  const q = nHeads * headDim, kv = nKvHeads * headDim;
  expectShape('embed', [config.vocabSize, hidden]);
  expectShape('final_norm', [hidden]);
  if (!config.tiedEmbeddings) expectShape('lm_head', [config.vocabSize, hidden]);
  const layerShapes: Partial<Record<LayerTensorName, number[]>> = {
    attn_norm: [hidden], wq: [q, hidden], wk: [kv, hidden], wv: [kv, hidden], wo: [hidden, q], ffn_norm: [hidden],
    w_gate: [intermediate, hidden], w_up: [intermediate, hidden], w_down: [hidden, intermediate], bq: [q], bk: [kv],
    bv: [kv], q_norm: [headDim], k_norm: [headDim], post_attn_norm: [hidden], post_ffn_norm: [hidden],
  };
  for (let i = 0; i < nLayers; i++) for (const n of needed) expectShape(layerName(i, n), layerShapes[n]!);

  const tensorTypes: Record<string, number> = {};
  for (const t of file.tensors) tensorTypes[t.typeName] = (tensorTypes[t.typeName] ?? 0) + 1;
  const info: GgufModelInfo = {
    name: config.name,
    architecture: arch,
    finetune: metaString(md, 'general.finetune'),
    basename: metaString(md, 'general.basename'),
    sizeLabel: metaString(md, 'general.size_label'),
    fileType: metaNumber(md, 'general.file_type'),
    hasChatTemplate: md.has('tokenizer.chat_template'),
    tensorTypes,
  };
  return { config, weights, tokenizer, metadata: md, info, gguf: file };
}
