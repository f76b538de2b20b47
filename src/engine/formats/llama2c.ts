/**
 * llama2.c legacy checkpoints (`run.c`'s format): a header of seven int32
 * (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len; a
 * negative vocab_size means the classifier is stored separately), then f32
 * arrays, each stacked over layers: token_embedding [V, D], rms_att [L, D],
 * wq [L, D, D], wk [L, KV, D], wv [L, KV, D], wo [L, D, D], rms_ffn [L, D],
 * w1 [L, H, D], w2 [L, D, H], w3 [L, H, D], rms_final [D], two unused
 * freq_cis tables [seq_len, hs/2], and wcls [V, D] when not shared.
 * RoPE rotates adjacent pairs with theta 10000; RMSNorm eps is 1e-5.
 */
import type { ModelConfig } from '../model/config';
import { validateConfig } from '../model/config';
import type { HostTensor, HostWeights } from '../model/weights';
import { layerName } from '../model/weights';
import { ModelFormatError, type ByteSource } from './source';

export async function loadLlama2c(src: ByteSource, name = src.name): Promise<{ config: ModelConfig; weights: HostWeights }> {
  if (src.size < 28) throw new ModelFormatError(`${src.name} is too small (${src.size} bytes) to be a llama2.c checkpoint`);
  const head = new DataView((await src.read(0, 28)).slice().buffer);
  const [dim, hidden, nLayers, nHeads, nKv, vocabRaw, seqLen] = Array.from({ length: 7 }, (_, i) => head.getInt32(4 * i, true));
  const shared = vocabRaw > 0;
  const vocab = Math.abs(vocabRaw);
  const sane = (v: number, max: number) => Number.isInteger(v) && v > 0 && v <= max;
  if (!(sane(dim, 1 << 16) && sane(hidden, 1 << 18) && sane(nLayers, 1024) && sane(nHeads, 1024) && sane(nKv, 1024) &&
    sane(vocab, 1 << 22) && sane(seqLen, 1 << 24)) || dim % nHeads !== 0) {
    throw new ModelFormatError(
      `${src.name} does not look like a llama2.c checkpoint (header dim=${dim} hidden=${hidden} layers=${nLayers} ` +
        `heads=${nHeads} kv_heads=${nKv} vocab=${vocabRaw} seq_len=${seqLen})`,
    );
  }
  const hs = dim / nHeads;
  const kvDim = nKv * hs;
  const parts: [string, number[]][] = [
    ['embed', [vocab, dim]], ['rms_att', [nLayers, dim]], ['wq', [nLayers, dim, dim]], ['wk', [nLayers, kvDim, dim]],
    ['wv', [nLayers, kvDim, dim]], ['wo', [nLayers, dim, dim]], ['rms_ffn', [nLayers, dim]], ['w1', [nLayers, hidden, dim]],
    ['w2', [nLayers, dim, hidden]], ['w3', [nLayers, hidden, dim]], ['rms_final', [dim]],
    ['freq_real', [seqLen, hs / 2]], ['freq_imag', [seqLen, hs / 2]],
  ];
  if (!shared) parts.push(['wcls', [vocab, dim]]);
  const count = parts.reduce((a, [, s]) => a + s.reduce((x, y) => x * y, 1), 0);
  const expected = 28 + 4 * count;
  if (src.size !== expected) {
    throw new ModelFormatError(
      `${src.name} is ${src.size < expected ? 'truncated' : 'longer than its header says'}: ` +
        `the header describes ${expected} bytes, the file has ${src.size}`,
    );
  }
  const bytes = await src.read(28, 4 * count);
  const all = new Float32Array(bytes.slice().buffer);
  const arrays = new Map<string, Float32Array>();
  let off = 0;
  for (const [n, s] of parts) {
    const len = s.reduce((x, y) => x * y, 1);
    arrays.set(n, all.subarray(off, off + len));
    off += len;
  }
  const weights: HostWeights = new Map();
  const put = (key: string, shape: number[], data: Float32Array) => weights.set(key, { shape, dtype: 'f32', data } as HostTensor);
  const perLayer = (n: string, i: number, shape: number[]) => {
    const len = shape.reduce((x, y) => x * y, 1);
    return arrays.get(n)!.subarray(i * len, (i + 1) * len);
  };
  put('embed', [vocab, dim], arrays.get('embed')!);
  put('final_norm', [dim], arrays.get('rms_final')!);
  if (!shared) put('lm_head', [vocab, dim], arrays.get('wcls')!);
  for (let i = 0; i < nLayers; i++) {
    put(layerName(i, 'attn_norm'), [dim], perLayer('rms_att', i, [dim]));
    put(layerName(i, 'wq'), [dim, dim], perLayer('wq', i, [dim, dim]));
    put(layerName(i, 'wk'), [kvDim, dim], perLayer('wk', i, [kvDim, dim]));
    put(layerName(i, 'wv'), [kvDim, dim], perLayer('wv', i, [kvDim, dim]));
    put(layerName(i, 'wo'), [dim, dim], perLayer('wo', i, [dim, dim]));
    put(layerName(i, 'ffn_norm'), [dim], perLayer('rms_ffn', i, [dim]));
    put(layerName(i, 'w_gate'), [hidden, dim], perLayer('w1', i, [hidden, dim]));
    put(layerName(i, 'w_down'), [dim, hidden], perLayer('w2', i, [dim, hidden]));
    put(layerName(i, 'w_up'), [hidden, dim], perLayer('w3', i, [hidden, dim]));
  }
  const config: ModelConfig = {
    arch: 'llama', name, vocabSize: vocab, hidden: dim, intermediate: hidden, nLayers, nHeads, nKvHeads: nKv, headDim: hs,
    rmsEps: 1e-5, normPlusOne: false, ropeStyle: 'interleaved', ropeTheta: 10000, qkvBias: false, qkNorm: false,
    postNorms: false, activation: 'silu', embedScale: 1, attnScale: 1 / Math.sqrt(hs),
    layerKinds: Array(nLayers).fill('global'), slidingWindow: 0, tiedEmbeddings: shared, maxPositions: seqLen,
    // llama2.c ends a sample when the model emits BOS (id 1), which delimits stories in its training data.
    bosId: 1, eosIds: [1],
  };
  validateConfig(config);
  return { config, weights };
}
