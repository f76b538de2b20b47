/**
 * Hugging Face model folders: config.json + safetensors weights (single file
 * or sharded) → the engine's ModelConfig and canonical HostWeights.
 *
 * Supported `model_type`s: llama, qwen2, gemma3_text, and gemma3 (the text
 * part of the multimodal checkpoint; vision weights are ignored). Both config
 * dialects are read: transformers v4 (`rope_theta`, `rope_scaling`,
 * `rope_local_base_freq`) and v5 (`rope_parameters`, flat or per layer type).
 */
import {
  UnsupportedModelError, validateConfig,
  type Arch, type LayerKind, type ModelConfig, type RopeScaling,
} from '../model/config';
import { GLOBAL_TENSORS, LAYER_TENSORS, layerName, type HostWeights, type LayerTensorName } from '../model/weights';
import { ModelFormatError } from './source';
import { openSafetensorsFolder, readJson, type FolderFiles, type TensorStore } from './safetensors';
import { loadHfTokenizer, type HfTokenizer } from '../tokenizer/hf';

export type { FolderFiles } from './safetensors';

type Json = Record<string, unknown>;

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Gemma3TextConfig defaults: multimodal gemma3 configs on the Hub omit many text fields. */
const GEMMA3_DEFAULTS: Json = {
  vocab_size: 262208, hidden_size: 2304, intermediate_size: 9216, num_hidden_layers: 26,
  num_attention_heads: 8, num_key_value_heads: 4, head_dim: 256, hidden_activation: 'gelu_pytorch_tanh',
  max_position_embeddings: 131072, rms_norm_eps: 1e-6, bos_token_id: 2, eos_token_id: 1,
  tie_word_embeddings: true, query_pre_attn_scalar: 256, sliding_window: 4096,
  rope_theta: 1_000_000, rope_local_base_freq: 10_000,
};
const LLAMA_DEFAULTS: Json = {
  hidden_act: 'silu', max_position_embeddings: 2048, rms_norm_eps: 1e-6, tie_word_embeddings: false,
  rope_theta: 10_000, bos_token_id: 1, eos_token_id: 2,
};
const QWEN2_DEFAULTS: Json = {
  hidden_act: 'silu', max_position_embeddings: 32768, rms_norm_eps: 1e-6, tie_word_embeddings: false,
  rope_theta: 10_000,
};

/** The text-model part of config.json, with architecture defaults filled in. */
function textConfig(raw: Json): { arch: Arch; c: Json; modelType: string } {
  const modelType = String(raw.model_type ?? '');
  switch (modelType) {
    case 'llama':
      return { arch: 'llama', c: { ...LLAMA_DEFAULTS, ...raw }, modelType };
    case 'qwen2':
      return { arch: 'qwen2', c: { ...QWEN2_DEFAULTS, ...raw }, modelType };
    case 'gemma3_text':
      return { arch: 'gemma3', c: { ...GEMMA3_DEFAULTS, ...raw }, modelType };
    case 'gemma3': {
      const text = isObj(raw.text_config) ? raw.text_config : {};
      const c: Json = { ...GEMMA3_DEFAULTS, ...text };
      // Special-token ids usually live at the top level of multimodal configs.
      for (const k of ['bos_token_id', 'eos_token_id'] as const) if (!(k in text) && k in raw) c[k] = raw[k];
      return { arch: 'gemma3', c, modelType };
    }
    default:
      throw new UnsupportedModelError(
        `Unsupported model_type "${modelType || '(none)'}" in config.json ` +
          '(supported: llama, qwen2, gemma3_text, gemma3)',
      );
  }
}

function num(c: Json, key: string): number {
  const v = c[key];
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    throw new ModelFormatError(`config.json: "${key}" is ${v === undefined ? 'missing' : `not a number (${JSON.stringify(v)})`}`);
  }
  return v;
}

function ids(v: unknown): number[] {
  if (typeof v === 'number') return [v];
  if (Array.isArray(v)) return v.filter((x): x is number => typeof x === 'number');
  return [];
}

function scalingOf(p: Json, maxPositions: number, where: string): RopeScaling | undefined {
  const type = String(p.rope_type ?? p.type ?? 'default');
  const prf = p.partial_rotary_factor;
  if (typeof prf === 'number' && prf !== 1) {
    throw new UnsupportedModelError(`${where}: partial_rotary_factor ${prf} is not supported`);
  }
  if (type === 'default') return undefined;
  if (type === 'linear') return { type: 'linear', factor: num(p, 'factor') };
  if (type === 'llama3') {
    const omax = p.original_max_position_embeddings;
    return {
      type: 'llama3',
      factor: num(p, 'factor'),
      lowFreqFactor: num(p, 'low_freq_factor'),
      highFreqFactor: num(p, 'high_freq_factor'),
      originalMaxPositionEmbeddings: typeof omax === 'number' ? omax : maxPositions,
    };
  }
  throw new UnsupportedModelError(`${where}: RoPE scaling type "${type}" is not supported (supported: llama3, linear)`);
}

interface Rope { theta: number; localTheta?: number; scaling?: RopeScaling }

function ropeOf(c: Json, arch: Arch, maxPositions: number): Rope {
  const rp = isObj(c.rope_parameters) ? c.rope_parameters : undefined;
  const legacy = isObj(c.rope_scaling) ? c.rope_scaling : {};
  if (arch === 'gemma3') {
    const nested = rp && (isObj(rp.full_attention) || isObj(rp.sliding_attention));
    const full: Json = { rope_theta: c.rope_theta, ...legacy, ...(nested && isObj(rp.full_attention) ? rp.full_attention : {}) };
    const local: Json = {
      rope_theta: c.rope_local_base_freq,
      ...(nested && isObj(rp.sliding_attention) ? rp.sliding_attention : {}),
    };
    if (scalingOf(local, maxPositions, 'sliding-attention rope')) {
      throw new UnsupportedModelError('RoPE scaling on sliding-window layers is not supported');
    }
    return {
      theta: num(full, 'rope_theta'),
      localTheta: num(local, 'rope_theta'),
      scaling: scalingOf(full, maxPositions, 'rope'),
    };
  }
  const p: Json = { rope_theta: c.rope_theta, ...(rp ?? legacy) };
  return { theta: num(p, 'rope_theta'), scaling: scalingOf(p, maxPositions, 'rope') };
}

function layerKindsOf(c: Json, arch: Arch, nLayers: number): LayerKind[] {
  if (Array.isArray(c.layer_types)) {
    return c.layer_types.map((t) => {
      if (t === 'full_attention') return 'global';
      if (t === 'sliding_attention') return 'local';
      throw new UnsupportedModelError(`Layer type "${String(t)}" is not supported`);
    });
  }
  if (arch === 'gemma3') {
    const pattern = Number(c.sliding_window_pattern ?? c._sliding_window_pattern ?? 6);
    return Array.from({ length: nLayers }, (_, i) => ((i + 1) % pattern ? 'local' : 'global'));
  }
  if (arch === 'qwen2' && c.use_sliding_window === true) {
    const first = Number(c.max_window_layers ?? 28);
    return Array.from({ length: nLayers }, (_, i) => (i >= first ? 'local' : 'global'));
  }
  return Array.from({ length: nLayers }, () => 'global');
}

/** What the weights tell the config: which optional tensors exist. */
export interface TensorPresence {
  hasQkvBias: boolean;
  hasLmHead: boolean;
}

/** Maps a parsed config.json to ModelConfig (throws UnsupportedModelError/ModelFormatError). */
export function hfConfigToModelConfig(
  raw: unknown,
  presence: TensorPresence = { hasQkvBias: false, hasLmHead: true },
  name?: string,
): ModelConfig {
  if (!isObj(raw)) throw new ModelFormatError('config.json is not a JSON object');
  const { arch, c, modelType } = textConfig(raw);
  const gemma = arch === 'gemma3';
  const hidden = num(c, 'hidden_size');
  const nHeads = num(c, 'num_attention_heads');
  const nLayers = num(c, 'num_hidden_layers');
  const headDim = typeof c.head_dim === 'number' ? c.head_dim : hidden / nHeads;
  const maxPositions = num(c, 'max_position_embeddings');

  const act = String(gemma ? (c.hidden_activation ?? c.hidden_act) : c.hidden_act);
  const okAct = gemma ? ['gelu_pytorch_tanh', 'gelu_new'] : ['silu', 'swish'];
  if (!okAct.includes(act)) throw new UnsupportedModelError(`Activation "${act}" is not supported for ${modelType}`);
  if (c.attention_bias === true && arch !== 'qwen2') {
    throw new UnsupportedModelError(`attention_bias=true is not supported for ${modelType}`);
  }
  if (c.mlp_bias === true) throw new UnsupportedModelError('mlp_bias=true is not supported');
  for (const k of ['final_logit_softcapping', 'attn_logit_softcapping']) {
    if (c[k] != null) throw new UnsupportedModelError(`${k}=${String(c[k])} is not supported`);
  }
  if (c.use_bidirectional_attention === true) {
    throw new UnsupportedModelError('use_bidirectional_attention=true is not supported');
  }

  const rope = ropeOf(c, arch, maxPositions);
  const layerKinds = layerKindsOf(c, arch, nLayers);
  const hasLocal = layerKinds.includes('local');
  // An explicit tie_word_embeddings wins; without one, a missing lm_head means tied.
  const explicitTie = [modelType === 'gemma3' ? raw.text_config : undefined, raw]
    .map((o) => (isObj(o) && typeof o.tie_word_embeddings === 'boolean' ? o.tie_word_embeddings : undefined))
    .find((v) => v !== undefined);
  const tiedEmbeddings = explicitTie ?? (Boolean(c.tie_word_embeddings) || !presence.hasLmHead);

  const config: ModelConfig = {
    arch,
    name: name ?? String(raw._name_or_path ?? (Array.isArray(raw.architectures) ? raw.architectures[0] : modelType)),
    vocabSize: num(c, 'vocab_size'),
    hidden,
    intermediate: num(c, 'intermediate_size'),
    nLayers,
    nHeads,
    nKvHeads: typeof c.num_key_value_heads === 'number' ? c.num_key_value_heads : nHeads,
    headDim,
    rmsEps: num(c, 'rms_norm_eps'),
    normPlusOne: gemma,
    ropeStyle: 'half',
    ropeTheta: rope.theta,
    ...(rope.localTheta !== undefined ? { ropeLocalTheta: rope.localTheta } : {}),
    ...(rope.scaling ? { ropeScaling: rope.scaling } : {}),
    qkvBias: presence.hasQkvBias,
    qkNorm: gemma,
    postNorms: gemma,
    activation: gemma ? 'gelu_tanh' : 'silu',
    embedScale: gemma ? Math.sqrt(hidden) : 1,
    attnScale: gemma ? num(c, 'query_pre_attn_scalar') ** -0.5 : headDim ** -0.5,
    layerKinds,
    slidingWindow: hasLocal ? num(c, 'sliding_window') : 0,
    tiedEmbeddings,
    maxPositions,
    bosId: typeof c.bos_token_id === 'number' ? c.bos_token_id : null,
    eosIds: ids(c.eos_token_id),
  };
  validateConfig(config);
  return config;
}

/** Strips the wrappers of multimodal checkpoints; undefined for tensors the text model does not use. */
function textTensorName(hf: string): string | undefined {
  if (/^(model\.)?(vision_tower|multi_modal_projector)\./.test(hf)) return undefined;
  if (hf.endsWith('.rotary_emb.inv_freq')) return undefined;
  return hf
    .replace(/^model\.language_model\./, 'model.')
    .replace(/^language_model\.model\./, 'model.')
    .replace(/^language_model\.lm_head\./, 'lm_head.');
}

const LAYER_SUFFIXES: Record<string, LayerTensorName> = {
  'input_layernorm.weight': 'attn_norm',
  'self_attn.q_proj.weight': 'wq', 'self_attn.k_proj.weight': 'wk', 'self_attn.v_proj.weight': 'wv',
  'self_attn.q_proj.bias': 'bq', 'self_attn.k_proj.bias': 'bk', 'self_attn.v_proj.bias': 'bv',
  'self_attn.o_proj.weight': 'wo',
  'self_attn.q_norm.weight': 'q_norm', 'self_attn.k_norm.weight': 'k_norm',
  'pre_feedforward_layernorm.weight': 'ffn_norm',
  'post_feedforward_layernorm.weight': 'post_ffn_norm',
  'mlp.gate_proj.weight': 'w_gate', 'mlp.up_proj.weight': 'w_up', 'mlp.down_proj.weight': 'w_down',
};

/** Canonical name of a (text-normalized) HF tensor name, or undefined if unknown. */
export function canonicalTensorName(hf: string, arch: Arch): string | undefined {
  if (hf === 'model.embed_tokens.weight') return 'embed';
  if (hf === 'model.norm.weight') return 'final_norm';
  if (hf === 'lm_head.weight') return 'lm_head';
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(hf);
  if (!m) return undefined;
  const i = Number(m[1]);
  if (m[2] === 'post_attention_layernorm.weight') {
    return layerName(i, arch === 'gemma3' ? 'post_attn_norm' : 'ffn_norm');
  }
  const t = LAYER_SUFFIXES[m[2]];
  return t ? layerName(i, t) : undefined;
}

/** Expected shape of every canonical tensor the config calls for. */
export function expectedShapes(c: ModelConfig): Map<string, number[]> {
  const H = c.hidden, Q = c.nHeads * c.headDim, KV = c.nKvHeads * c.headDim, I = c.intermediate;
  const out = new Map<string, number[]>();
  for (const g of GLOBAL_TENSORS) {
    if (g === 'lm_head' && c.tiedEmbeddings) continue;
    out.set(g, g === 'final_norm' ? [H] : [c.vocabSize, H]);
  }
  const layer: Partial<Record<LayerTensorName, number[]>> = {
    attn_norm: [H], wq: [Q, H], wk: [KV, H], wv: [KV, H], wo: [H, Q],
    ffn_norm: [H], w_gate: [I, H], w_up: [I, H], w_down: [H, I],
    ...(c.qkvBias ? { bq: [Q], bk: [KV], bv: [KV] } : {}),
    ...(c.qkNorm ? { q_norm: [c.headDim], k_norm: [c.headDim] } : {}),
    ...(c.postNorms ? { post_attn_norm: [H], post_ffn_norm: [H] } : {}),
  };
  for (let i = 0; i < c.nLayers; i++) {
    for (const t of LAYER_TENSORS) {
      const s = layer[t];
      if (s) out.set(layerName(i, t), s);
    }
  }
  return out;
}

export interface HfLoadOptions {
  name?: string;
  onProgress?: (loaded: number, total: number, tensor: string) => void;
}

/** Loads a Hugging Face model folder into the engine's canonical config and weights. */
export async function loadHfFolder(
  files: FolderFiles,
  opts: HfLoadOptions = {},
): Promise<{ config: ModelConfig; weights: HostWeights }> {
  const configSrc = await files.get('config.json');
  if (!configSrc) throw new ModelFormatError('The model folder has no config.json');
  const raw = await readJson(configSrc);
  if (!isObj(raw)) throw new ModelFormatError('config.json is not a JSON object');
  const { arch } = textConfig(raw); // rejects unsupported model types before touching weights
  const store: TensorStore = await openSafetensorsFolder(files);

  // canonical name → HF name
  const byCanonical = new Map<string, string>();
  const unknown: string[] = [];
  for (const hf of store.tensors.keys()) {
    const text = textTensorName(hf);
    if (text === undefined) continue;
    const canon = canonicalTensorName(text, arch);
    if (!canon) {
      unknown.push(hf);
      continue;
    }
    const prev = byCanonical.get(canon);
    if (prev) throw new ModelFormatError(`Tensors "${prev}" and "${hf}" both map to ${canon}`);
    byCanonical.set(canon, hf);
  }
  if (unknown.length) {
    const list = unknown.slice(0, 8).join(', ') + (unknown.length > 8 ? `, … (${unknown.length} in all)` : '');
    throw new UnsupportedModelError(`The checkpoint has tensors the ${arch} engine does not use: ${list}`);
  }

  let generationEos: number[] = [];
  const genSrc = await files.get('generation_config.json');
  if (genSrc) {
    const gen = await readJson(genSrc);
    if (isObj(gen)) generationEos = ids(gen.eos_token_id);
  }
  const config = hfConfigToModelConfig(
    raw,
    { hasQkvBias: byCanonical.has(layerName(0, 'bq')), hasLmHead: byCanonical.has('lm_head') },
    opts.name,
  );
  for (const id of generationEos) if (!config.eosIds.includes(id)) config.eosIds.push(id);

  const expected = expectedShapes(config);
  const problems: string[] = [];
  for (const [canon, shape] of expected) {
    const hf = byCanonical.get(canon);
    const info = hf === undefined ? undefined : store.tensors.get(hf);
    if (!info) {
      problems.push(`missing ${canon} (${hfNameHint(canon, arch)})`);
    } else if (info.shape.join(',') !== shape.join(',')) {
      problems.push(`${canon} (${hf}) has shape [${info.shape.join(', ')}], expected [${shape.join(', ')}]`);
    }
  }
  if (problems.length) {
    throw new ModelFormatError(`The weights do not match config.json: ${problems.join('; ')}`);
  }

  const weights: HostWeights = new Map();
  let loaded = 0;
  for (const canon of expected.keys()) {
    weights.set(canon, await store.load(byCanonical.get(canon)!));
    opts.onProgress?.(++loaded, expected.size, canon);
  }
  return { config, weights };
}

/** The usual HF name of a canonical tensor, for error messages. */
function hfNameHint(canon: string, arch: Arch): string {
  if (canon === 'embed') return 'model.embed_tokens.weight';
  if (canon === 'final_norm') return 'model.norm.weight';
  if (canon === 'lm_head') return 'lm_head.weight';
  const m = /^layers\.(\d+)\.(.+)$/.exec(canon)!;
  let suffix = Object.entries(LAYER_SUFFIXES).find(([, t]) => t === m[2])?.[0];
  if (m[2] === 'post_attn_norm' || (m[2] === 'ffn_norm' && arch !== 'gemma3')) suffix = 'post_attention_layernorm.weight';
  return `model.layers.${m[1]}.${suffix}`;
}

/**
 * Weights, config and tokenizer of a Hugging Face folder (tokenizer.json is
 * required; the model's eos ids are added to the tokenizer's).
 */
export async function loadHfModel(
  files: FolderFiles,
  opts: HfLoadOptions = {},
): Promise<{ config: ModelConfig; weights: HostWeights; tokenizer: HfTokenizer }> {
  const { config, weights } = await loadHfFolder(files, opts);
  const tokenizer = await loadHfTokenizer(files, { eosIds: config.eosIds });
  return { config, weights, tokenizer };
}
