/**
 * A whole-model forward pass on the host, built from the kernel twins in
 * src/engine/reference.ts: the slow, obvious model the GPU engine is
 * checked against, for every architecture the engine supports.
 */
import type { ModelConfig } from '../../src/engine/model/config';
import type { HostTensor, HostWeights, LayerTensorName } from '../../src/engine/model/weights';
import { layerName } from '../../src/engine/model/weights';
import { halvesToFloats } from '../../src/engine/f16';
import { inverseFrequencies, ropeTable } from '../../src/engine/model/rope';
import * as ref from '../../src/engine/reference';

const floats = (t: HostTensor) => (t.dtype === 'f32' ? (t.data as Float32Array) : halvesToFloats(t.data as Uint16Array));

/** What referenceForward shows an observer of its products: the weight's name, x [T, K] and w [N, K]. */
export type MatmulObserver = (name: string, x: Float32Array, w: Float32Array, T: number, N: number, K: number) => void;

export interface ReferenceOptions {
  /** Sees every product's operands (tests/engine/half-model.test.ts measures the sums the f16 fast path would form). */
  observe?: MatmulObserver;
  /** Logits of every row (the default), or of the last alone, as a prefill asks for them: [1, V]. */
  logits?: 'all' | 'last';
}

/** Logits [T, V] (or [1, V]: opts.logits) of `tokens` at `positions`, each attending by position id to all tokens. */
export function referenceForward(c: ModelConfig, w: HostWeights, tokens: number[], positions: number[], opts: ReferenceOptions = {}): Float32Array {
  const { observe } = opts;
  const get = (n: string) => {
    const t = w.get(n);
    if (!t) throw new Error(`missing ${n}`);
    return floats(t);
  };
  const L = (i: number, n: LayerTensorName) => get(layerName(i, n));
  const matmul = (name: string, x: Float32Array, wt: Float32Array, T: number, N: number, K: number, bias?: Float32Array) => {
    observe?.(name, x, wt, T, N, K);
    return ref.matmul(x, wt, T, N, K, bias);
  };
  const T = tokens.length, D = c.hidden, HD = c.headDim, qDim = c.nHeads * HD, kvDim = c.nKvHeads * HD;
  let x = ref.embed(Uint32Array.from(tokens), get('embed'), T, D, c.vocabSize, c.embedScale);
  const pos = Int32Array.from(positions);
  const tables = {
    global: ropeTable(inverseFrequencies(c, 'global'), positions),
    local: ropeTable(inverseFrequencies(c, 'local'), positions),
  };
  const norm = (v: Float32Array, wt: Float32Array, rows: number, dim: number) => ref.rmsnorm(v, wt, rows, dim, c.rmsEps, c.normPlusOne);
  for (let l = 0; l < c.nLayers; l++) {
    const xn = norm(x, L(l, 'attn_norm'), T, D);
    let q = matmul('wq', xn, L(l, 'wq'), T, qDim, D, c.qkvBias ? L(l, 'bq') : undefined);
    let k = matmul('wk', xn, L(l, 'wk'), T, kvDim, D, c.qkvBias ? L(l, 'bk') : undefined);
    const v = matmul('wv', xn, L(l, 'wv'), T, kvDim, D, c.qkvBias ? L(l, 'bv') : undefined);
    if (c.qkNorm) {
      q = norm(q, L(l, 'q_norm'), T * c.nHeads, HD);
      k = norm(k, L(l, 'k_norm'), T * c.nKvHeads, HD);
    }
    const kind = c.layerKinds[l];
    const interleaved = c.ropeStyle === 'interleaved';
    q = ref.rope(q, tables[kind], T, c.nHeads, HD, qDim, 0, interleaved);
    k = ref.rope(k, tables[kind], T, c.nKvHeads, HD, kvDim, 0, interleaved);
    const att = ref.attention({
      q, qStride: qDim, qOffset: 0, k, v, qpos: pos, kpos: pos, T, n: T, H: c.nHeads, NKV: c.nKvHeads, HD,
      window: kind === 'local' ? c.slidingWindow : 0, scale: c.attnScale,
    });
    let o = matmul('wo', att, L(l, 'wo'), T, D, qDim);
    if (c.postNorms) o = norm(o, L(l, 'post_attn_norm'), T, D);
    x = x.map((vx, i) => vx + o[i]);
    const hn = norm(x, L(l, 'ffn_norm'), T, D);
    const g = matmul('w_gate', hn, L(l, 'w_gate'), T, c.intermediate, D);
    const u = matmul('w_up', hn, L(l, 'w_up'), T, c.intermediate, D);
    const gu = new Float32Array(T * 2 * c.intermediate);
    for (let t = 0; t < T; t++) {
      gu.set(g.subarray(t * c.intermediate, (t + 1) * c.intermediate), t * 2 * c.intermediate);
      gu.set(u.subarray(t * c.intermediate, (t + 1) * c.intermediate), (t * 2 + 1) * c.intermediate);
    }
    let d = matmul('w_down', ref.glu(gu, T, c.intermediate, c.activation), L(l, 'w_down'), T, D, c.intermediate);
    if (c.postNorms) d = norm(d, L(l, 'post_ffn_norm'), T, D);
    x = x.map((vx, i) => vx + d[i]);
  }
  const R = opts.logits === 'last' ? 1 : T;
  const xn = norm(x.subarray((T - R) * D), get('final_norm'), R, D);
  return matmul('lm_head', xn, get(c.tiedEmbeddings ? 'embed' : 'lm_head'), R, c.vocabSize, D);
}
