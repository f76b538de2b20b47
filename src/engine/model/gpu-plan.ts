/**
 * What a model will need on the GPU, computed from its config alone, before
 * a byte of weights is read or downloaded: the buffers GpuModel.upload will
 * create (same labels, same sizes), their total, the KV cache per token, and
 * whether the model fits the adapter's limits. A matrix larger than one
 * buffer may be (a storage binding, and a buffer) is stored as row ranges in
 * buffers of their own, `embed[0]`, `embed[1]`, ... (splitRows); a model is
 * refused only when a single row, or one token's logits, will not fit one
 * buffer. The page uses it to warn that a model will not fit; GpuModel.upload
 * checks it before allocating.
 */
import type { ModelConfig } from './config';
import type { StoreDType } from '../ops';

export interface PlannedBuffer {
  label: string;
  bytes: number;
}

export interface AdapterLimits {
  maxStorageBufferBindingSize: number;
  maxBufferSize: number;
}

export interface GpuPlan {
  weightDtype: StoreDType;
  params: number;
  buffers: PlannedBuffer[];
  /** Sum of the weight buffers. */
  weightBytes: number;
  largest: PlannedBuffer;
  /** The most bytes one buffer may hold (bufferLimit): what larger matrices were split by. */
  bufferLimit: number;
  /** f32 keys and values of every layer, per context token. */
  kvBytesPerToken: number;
  /** One sentence per limit the model breaks; empty when it fits. */
  problems: string[];
}

/** Buffers are padded to 16 bytes, as GpuModel allocates them. */
export const paddedBytes = (bytes: number) => Math.max(16, Math.ceil(bytes / 16) * 16);

/** The most bytes one buffer the kernels read whole may have: one storage binding, one buffer, in 16-byte units. */
export function bufferLimit(limits: AdapterLimits): number {
  return Math.floor(Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize) / 16) * 16;
}

/** Rows [row0, row0 + rows) of a matrix. */
export interface RowRange {
  row0: number;
  rows: number;
}

/**
 * How a matrix of `rows` rows of `rowBytes` bytes each is stored when one buffer may hold `limit` bytes: whole
 * when it fits (padded as GpuModel pads), otherwise as the fewest row ranges that fit, of near-equal size. Rows
 * are never split: null when one row alone is larger than the limit (or, for a split, not a whole number of
 * 4-byte words, which a buffer write needs).
 */
export function splitRows(rows: number, rowBytes: number, limit: number): RowRange[] | null {
  if (paddedBytes(rows * rowBytes) <= limit) return [{ row0: 0, rows }];
  const fit = Math.floor(Math.floor(limit / 16) * 16 / rowBytes);
  if (fit < 1 || rowBytes % 4 !== 0) return null;
  const count = Math.ceil(rows / fit);
  const per = Math.ceil(rows / count);
  const out: RowRange[] = [];
  for (let row0 = 0; row0 < rows; row0 += per) out.push({ row0, rows: Math.min(per, rows - row0) });
  return out;
}

/** The label of part i of a matrix stored in `count` parts (the matrix's own label when whole). */
export const partLabel = (label: string, i: number, count: number) => (count === 1 ? label : `${label}[${i}]`);

/** The matrices a plan stores in several parts, with their part counts, in plan order. */
export function splitMatrices(plan: GpuPlan): { label: string; parts: number }[] {
  const out: { label: string; parts: number }[] = [];
  for (const b of plan.buffers) {
    const m = /^(.*)\[(\d+)\]$/.exec(b.label);
    if (!m) continue;
    if (m[2] === '0') out.push({ label: m[1], parts: 0 });
    out[out.length - 1].parts++;
  }
  return out;
}

/** "embed in 3 parts, lm_head in 3 parts (one buffer holds at most 128.0 MiB)", or '' when nothing is split. */
export function describeSplit(plan: GpuPlan): string {
  const split = splitMatrices(plan);
  if (!split.length) return '';
  return `${split.map((s) => `${s.label} in ${s.parts} parts`).join(', ')} (one buffer holds at most ${sizeText(plan.bufferLimit)})`;
}

const sizeText = (b: number) =>
  b < 2 ** 10 ? `${b} bytes` : b < 2 ** 20 ? `${(b / 2 ** 10).toFixed(1)} KiB` : `${(b / 2 ** 20).toFixed(1)} MiB`;

/** Weight count from the config (the same tensors as the loaders' expected shapes). */
export function paramCount(c: ModelConfig): number {
  const H = c.hidden, Q = c.nHeads * c.headDim, KV = c.nKvHeads * c.headDim, I = c.intermediate;
  let perLayer = H + (Q + 2 * KV) * H + H * Q + H + 2 * I * H + H * I;
  if (c.qkvBias) perLayer += Q + 2 * KV;
  if (c.qkNorm) perLayer += 2 * c.headDim;
  if (c.postNorms) perLayer += 2 * H;
  return c.vocabSize * H * (c.tiedEmbeddings ? 1 : 2) + H + c.nLayers * perLayer;
}

/** The precision the app stores weights in unless asked otherwise: f32 (exact) for small models, f16 above 50M weights. */
export function weightDtypeFor(c: ModelConfig): StoreDType {
  return paramCount(c) > 50e6 ? 'f16' : 'f32';
}

export function planGpuMemory(c: ModelConfig, dtype: StoreDType, limits: AdapterLimits): GpuPlan {
  const H = c.hidden, Q = c.nHeads * c.headDim, KV = c.nKvHeads * c.headDim, I = c.intermediate;
  const w = dtype === 'f16' ? 2 : 4;
  const limit = bufferLimit(limits);
  const buffers: PlannedBuffer[] = [];
  // Matrices with rows too large for one buffer: the refusal names the one with the largest rows.
  const unsplittable: { label: string; rowBytes: number }[] = [];
  const matrix = (label: string, rows: number, cols: number) => {
    const parts = splitRows(rows, cols * w, limit);
    if (!parts) {
      unsplittable.push({ label, rowBytes: cols * w });
      buffers.push({ label, bytes: paddedBytes(rows * cols * w) });
      return;
    }
    parts.forEach((p, i) => buffers.push({ label: partLabel(label, i, parts.length), bytes: paddedBytes(p.rows * cols * w) }));
  };
  const vector = (label: string, n: number) => buffers.push({ label, bytes: paddedBytes(n * 4) });
  matrix('embed', c.vocabSize, H);
  vector('final_norm', H);
  if (!c.tiedEmbeddings) matrix('lm_head', c.vocabSize, H);
  for (let i = 0; i < c.nLayers; i++) {
    vector(`${i}.attn_norm`, H);
    matrix(`${i}.wqkv`, Q + 2 * KV, H);
    if (c.qkvBias) vector(`${i}.bqkv`, Q + 2 * KV);
    if (c.qkNorm) {
      vector(`${i}.q_norm`, c.headDim);
      vector(`${i}.k_norm`, c.headDim);
    }
    matrix(`${i}.wo`, H, Q);
    if (c.postNorms) vector(`${i}.post_attn_norm`, H);
    vector(`${i}.ffn_norm`, H);
    matrix(`${i}.w_gate_up`, 2 * I, H);
    matrix(`${i}.w_down`, H, I);
    if (c.postNorms) vector(`${i}.post_ffn_norm`, H);
  }
  const largest = buffers.reduce((a, b) => (b.bytes > a.bytes ? b : a));
  const problems: string[] = [];
  if (unsplittable.length) {
    const bad = unsplittable.reduce((a, b) => (b.rowBytes > a.rowBytes ? b : a));
    problems.push(
      `Tensor ${bad.label} of ${c.name} needs ${sizeText(bad.rowBytes)} for one row, and rows are not split; ` +
        `this adapter allows ${sizeText(limit)} in one buffer` + (dtype === 'f32' && bad.rowBytes / 2 <= limit ? ' (try f16 weights)' : ''),
    );
  }
  // The LM head writes one token's logits (f32) into one buffer.
  if (paddedBytes(c.vocabSize * 4) > limit) {
    problems.push(`The logits of ${c.name} need ${sizeText(c.vocabSize * 4)} per token in one buffer; this adapter allows ${sizeText(limit)}`);
  }
  return {
    weightDtype: dtype, params: paramCount(c), buffers, largest, problems, bufferLimit: limit,
    weightBytes: buffers.reduce((a, b) => a + b.bytes, 0),
    kvBytesPerToken: c.nLayers * 2 * KV * 4,
  };
}
