/**
 * Host-side weights in the engine's canonical layout, before upload to the GPU.
 *
 * Every matrix is row-major [out, in] (the layout of llama2.c, PyTorch's
 * nn.Linear and GGUF), so a projection is y = x · Wᵀ. Vectors are [n].
 * Values are either f32 or f16 bit patterns; loaders convert bf16 and
 * quantized formats to one of these on load.
 */
export interface HostTensor {
  shape: number[];
  dtype: 'f32' | 'f16';
  /** f32 values, or IEEE f16 bit patterns. */
  data: Float32Array | Uint16Array;
}

/** Canonical names. Per-layer names are `layers.{i}.{name}`. */
export const GLOBAL_TENSORS = ['embed', 'final_norm', 'lm_head'] as const;
export const LAYER_TENSORS = [
  'attn_norm', 'wq', 'wk', 'wv', 'bq', 'bk', 'bv', 'q_norm', 'k_norm', 'wo', 'post_attn_norm',
  'ffn_norm', 'w_gate', 'w_up', 'w_down', 'post_ffn_norm',
] as const;
export type LayerTensorName = (typeof LAYER_TENSORS)[number];

export type HostWeights = Map<string, HostTensor>;

export const layerName = (i: number, n: LayerTensorName) => `layers.${i}.${n}`;

export function tensorSize(shape: number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}
