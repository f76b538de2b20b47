import type { QuantType } from '../quant';

/**
 * Host-side weights in the engine's canonical layout, before upload to the GPU.
 *
 * Every matrix is row-major [out, in] (the layout of llama2.c, PyTorch's
 * nn.Linear and GGUF), so a projection is y = x · Wᵀ. Vectors are [n].
 * Values are f32 or f16 bit patterns (loaders convert bf16 and most other
 * formats to one of these on load), or, for matrices of a type the GPU reads
 * packed (quant.ts: Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q6_K), the GGUF blocks as
 * stored in the file.
 */
export interface HostTensor {
  shape: number[];
  dtype: 'f32' | 'f16' | QuantType;
  /** f32 values, IEEE f16 bit patterns, or ggml blocks (bytes). */
  data: Float32Array | Uint16Array | Uint8Array;
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
