/**
 * Models of real shape with random weights, for throughput benchmarks where
 * the real weights cannot travel (a GPU machine takes 64 MiB a call) or are
 * not at hand. The shapes are the public models' config.json values
 * (shapes.json, also read by the PyTorch reference in scripts/gpu/); the
 * weights are uniform noise from a seed, already packed as f16 in the
 * engine's canonical [out, in] layout, with norms at 1. Throughput does not
 * depend on the values; the text they produce means nothing.
 */
import { expectedShapes, hfConfigToModelConfig, floatToHalf, noiseBlocks, QUANT, type QuantType, type ModelConfig, type HostTensor, type HostWeights } from '../engine';
import SHAPES from './shapes.json';

export type ShapeName = Exclude<keyof typeof SHAPES, '_about'>;
export const SHAPE_NAMES = Object.keys(SHAPES).filter((k) => k !== '_about') as ShapeName[];

export function shapeConfig(name: string): ModelConfig {
  const raw = (SHAPES as Record<string, unknown>)[name];
  if (!raw || name === '_about') throw new Error(`unknown model shape ${JSON.stringify(name)}; known: ${SHAPE_NAMES.join(', ')}`);
  const r = raw as { attention_bias?: boolean; tie_word_embeddings?: boolean };
  return hfConfigToModelConfig(raw, { hasQkvBias: !!r.attention_bias, hasLmHead: !r.tie_word_embeddings }, name);
}

/** xorshift32 values in [-scale, scale) as f16 bit patterns. */
function halfNoise(n: number, seed: number, scale: number): Uint16Array {
  const out = new Uint16Array(n);
  let s = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    out[i] = floatToHalf(((s / 4294967296) * 2 - 1) * scale);
  }
  return out;
}

/**
 * Random weights for `c`: matrices are tiled from one seeded pool of f16
 * noise (each tensor starts at its own offset), so a 3B model is built in
 * seconds; vectors (norms) are 1 and biases 0, in f32. With `quant`, every
 * matrix whose rows are whole blocks of that type is instead tiled from a pool
 * of random GGUF blocks (quant.ts's noiseBlocks), as a quantized GGUF would
 * load: kept packed on the GPU. Others stay f16 (as llama.cpp also falls back).
 */
export function syntheticWeights(c: ModelConfig, seed = 1, quant?: QuantType): HostWeights {
  const POOL = 1 << 20;
  // Uniform in ±sqrt(3)/sqrt(fan-in) keeps activations near unit scale whatever the width.
  const pool = halfNoise(POOL + 4096, seed, Math.sqrt(3 / c.hidden));
  const w: HostWeights = new Map();
  let k = 0;
  for (const [name, shape] of expectedShapes(c)) {
    const n = shape.reduce((a, b) => a * b, 1);
    let t: HostTensor;
    if (shape.length === 1) {
      const bias = /\.b[qkv]$/.test(name);
      t = { shape, dtype: 'f32', data: new Float32Array(n).fill(bias ? 0 : 1) };
    } else if (quant && shape[1] % QUANT[quant].block === 0) {
      t = { shape, dtype: quant, data: tileBlocks(quant, n / QUANT[quant].block, seed, Math.sqrt(3 / c.hidden), k++) };
    } else {
      const data = new Uint16Array(n);
      const start = (k++ * 977) % 4096;
      for (let o = 0; o < n; o += POOL) data.set(pool.subarray(start, start + Math.min(POOL, n - o)), o);
      t = { shape, dtype: 'f16', data };
    }
    w.set(name, t);
  }
  return w;
}

const blockPools = new Map<string, Uint8Array>();

/** `nBlocks` random blocks of type q, tiled from a seeded pool of 2^16 blocks, starting at block `salt`·977 of it. */
function tileBlocks(q: QuantType, nBlocks: number, seed: number, amplitude: number, salt: number): Uint8Array {
  const POOL = 1 << 16;
  const key = `${q}:${seed}:${amplitude}`;
  let pool = blockPools.get(key);
  if (!pool) blockPools.set(key, (pool = noiseBlocks(q, POOL + 4096, seed, amplitude)));
  const B = QUANT[q].bytes;
  const out = new Uint8Array(nBlocks * B);
  const start = ((salt * 977) % 4096) * B;
  for (let o = 0; o < out.length; o += POOL * B) out.set(pool.subarray(start, start + Math.min(POOL * B, out.length - o)), o);
  return out;
}
