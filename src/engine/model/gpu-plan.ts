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
 *
 * Quantized tensors (a GGUF's Q4_K, Q8_0, ...) stay packed (quant.ts): the
 * plan takes their types by canonical tensor name. A fused matrix whose
 * tensors are stored in different types (q/k/v of Q5_0 and Q8_0) becomes one
 * matrix per run of equal types, `0.wqkv/0`, `0.wqkv/1`, each split as above.
 */
import type { ModelConfig } from './config';
import type { StoreDType, WeightDType } from '../ops-args';
import { gpuWords, QUANT, type QuantType } from '../quant';

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
  /** How keys and values are kept (cache, store, links), and their bytes for every layer, per context token. */
  kvDtype: StoreDType;
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

/**
 * The keys and values the app keeps for `c` (cache, store and links alike), by the same rule as its weights:
 * f32 for the small models (exact, and what their tests pin), f16 above 50M weights, as llama.cpp and the
 * papers' systems keep them: half the GPU memory a context takes, half the browser storage a chunk takes and
 * half the bytes a link loads.
 */
export function kvDtypeFor(c: ModelConfig): StoreDType {
  return weightDtypeFor(c);
}

/** Bytes of `rows` rows of `cols` weights stored as `d` (unpadded). */
export function storedBytes(d: WeightDType, rows: number, cols: number): number {
  return d === 'f32' ? rows * cols * 4 : d === 'f16' ? rows * cols * 2 : 4 * gpuWords(d, (rows * cols) / QUANT[d].block);
}

/** One buffer of a stored matrix: rows [row0, row0 + rows), of dtype `dtype`. */
export interface PlannedPart extends RowRange, PlannedBuffer {
  dtype: WeightDType;
}

/**
 * How GpuModel stores the row-concatenation of `tensors` ([rows_i, cols] each, stored as `dtype` each): the
 * buffers, in order, or `unsplittable` with the bytes of one row when a row alone exceeds the limit.
 */
export function matrixParts(label: string, tensors: { rows: number; dtype: WeightDType }[], cols: number, limit: number): { parts: PlannedPart[]; unsplittable?: number } {
  const runs: { row0: number; rows: number; dtype: WeightDType }[] = [];
  let row0 = 0;
  for (const t of tensors) {
    const last = runs[runs.length - 1];
    if (last && last.dtype === t.dtype) last.rows += t.rows;
    else runs.push({ row0, rows: t.rows, dtype: t.dtype });
    row0 += t.rows;
  }
  const parts: PlannedPart[] = [];
  let unsplittable: number | undefined;
  runs.forEach((run, k) => {
    const runLabel = runs.length === 1 ? label : `${label}/${k}`;
    const q = run.dtype !== 'f32' && run.dtype !== 'f16';
    // A packed part may hold up to 2 bytes more than its rows (the scale region's last word): split with room for them.
    const rowBytes = q ? Math.ceil(storedBytes(run.dtype, 1, cols) / 4) * 4 : storedBytes(run.dtype, 1, cols);
    const ranges = splitRows(run.rows, rowBytes, q ? limit - 16 : limit);
    if (!ranges) {
      unsplittable = Math.max(unsplittable ?? 0, rowBytes);
      parts.push({ label: runLabel, row0: run.row0, rows: run.rows, dtype: run.dtype, bytes: paddedBytes(storedBytes(run.dtype, run.rows, cols)) });
      return;
    }
    ranges.forEach((r, i) => parts.push({
      label: partLabel(runLabel, i, ranges.length), row0: run.row0 + r.row0, rows: r.rows, dtype: run.dtype, bytes: paddedBytes(storedBytes(run.dtype, r.rows, cols)),
    }));
  });
  return unsplittable === undefined ? { parts } : { parts, unsplittable };
}

/**
 * @param quant the packed type of each quantized tensor that stays packed, by canonical name (`embed`,
 *   `layers.0.wq`, ...); every other matrix is stored as `dtype`.
 */
export function planGpuMemory(c: ModelConfig, dtype: StoreDType, limits: AdapterLimits, quant: ReadonlyMap<string, QuantType> = new Map(), kvDtype: StoreDType = 'f32'): GpuPlan {
  const H = c.hidden, Q = c.nHeads * c.headDim, KV = c.nKvHeads * c.headDim, I = c.intermediate;
  const limit = bufferLimit(limits);
  const buffers: PlannedBuffer[] = [];
  // Matrices with rows too large for one buffer: the refusal names the one with the largest rows.
  const unsplittable: { label: string; rowBytes: number }[] = [];
  const matrix = (label: string, cols: number, tensors: [string, number][]) => {
    const m = matrixParts(label, tensors.map(([name, rows]) => ({ rows, dtype: quant.get(name) ?? dtype })), cols, limit);
    if (m.unsplittable !== undefined) unsplittable.push({ label, rowBytes: m.unsplittable });
    for (const p of m.parts) buffers.push({ label: p.label, bytes: p.bytes });
  };
  const vector = (label: string, n: number) => buffers.push({ label, bytes: paddedBytes(n * 4) });
  matrix('embed', H, [['embed', c.vocabSize]]);
  vector('final_norm', H);
  if (!c.tiedEmbeddings) matrix('lm_head', H, [['lm_head', c.vocabSize]]);
  for (let i = 0; i < c.nLayers; i++) {
    const L = (n: string) => `layers.${i}.${n}`;
    vector(`${i}.attn_norm`, H);
    matrix(`${i}.wqkv`, H, [[L('wq'), Q], [L('wk'), KV], [L('wv'), KV]]);
    if (c.qkvBias) vector(`${i}.bqkv`, Q + 2 * KV);
    if (c.qkNorm) vector(`${i}.qk_norm`, 2 * c.headDim);
    matrix(`${i}.wo`, Q, [[L('wo'), H]]);
    if (c.postNorms) vector(`${i}.post_attn_norm`, H);
    vector(`${i}.ffn_norm`, H);
    matrix(`${i}.w_gate_up`, H, [[L('w_gate'), I], [L('w_up'), I]]);
    matrix(`${i}.w_down`, I, [[L('w_down'), H]]);
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
    kvDtype, kvBytesPerToken: kvBytesPerToken(c, kvDtype),
  };
}

/** Bytes one token's keys and values take in every layer, as the cache (and a compiled chunk) keeps them. */
export function kvBytesPerToken(c: ModelConfig, kvDtype: StoreDType): number {
  return c.nLayers * 2 * c.nKvHeads * c.headDim * (kvDtype === 'f16' ? 2 : 4);
}
