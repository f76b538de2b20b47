/**
 * A model's weights on the GPU, in the layout the forward pass wants:
 * q/k/v fused into one [qDim + 2 kvDim, D] matrix (one matmul per layer),
 * gate and up fused into [2I, D], matrices f32, packed f16 or packed ggml
 * blocks, norms and biases f32. A matrix larger than one buffer may be (the adapter's storage
 * binding and buffer limits) is stored as row ranges, each its own buffer,
 * as the plan (gpu-plan.ts) lays them out: typically a large vocabulary's
 * embedding and LM head. Quantized host tensors (a GGUF's blocks) stay packed,
 * repacked into the GPU layout of quant.ts, unless the upload is asked to
 * dequantize them (to the model's dtype, for comparison); fused tensors of
 * different types are stored one part per run of equal types.
 */
import type { LayerKind, ModelConfig } from './config';
import { inverseFrequencies, PositionTable } from './rope';
import type { HostTensor, HostWeights, LayerTensorName } from './weights';
import { layerName, tensorSize } from './weights';
import { floatToHalf, halfToFloat } from '../f16';
import type { StoreDType, WeightDType, WeightMatrix } from '../ops';
import { bufferLimit, matrixParts, paddedBytes, planGpuMemory, storedBytes, type AdapterLimits, type GpuPlan, type PlannedBuffer } from './gpu-plan';
import { dequantizeF16, dequantizeF32 } from '../formats/gguf-quants';
import { isQuant, QUANT, repackForGpu, type QuantType } from '../quant';

export interface UploadOptions {
  /** Dequantize quantized tensors to the model's dtype instead of keeping them packed (default false). */
  dequantize?: boolean;
  /** How the engine will keep keys and values (the plan's KV bytes a token; default f32). */
  kvDtype?: StoreDType;
}

/** The packed type of every quantized tensor that stays packed, by canonical name (what the plan takes). */
export function packedTensors(w: HostWeights, opts: UploadOptions = {}): Map<string, QuantType> {
  const out = new Map<string, QuantType>();
  if (opts.dequantize) return out;
  for (const [name, t] of w) if (isQuant(t.dtype)) out.set(name, t.dtype);
  return out;
}

export interface GpuLayer {
  attnNorm: GPUBuffer; wqkv: WeightMatrix; bqkv?: GPUBuffer;
  /** Gemma 3's q/k norm: the q norm's headDim weights, then the k norm's. */
  qkNorm?: GPUBuffer;
  wo: WeightMatrix; postAttnNorm?: GPUBuffer; ffnNorm: GPUBuffer; wGateUp: WeightMatrix; wDown: WeightMatrix; postFfnNorm?: GPUBuffer;
}

export class OutOfGpuMemoryError extends Error {
  /**
   * @param problems the adapter limits the plan breaks, when the model was refused from its plan before any buffer
   *   was created (empty when an allocation itself failed).
   */
  constructor(message: string, readonly problems: readonly string[] = []) {
    super(message);
    this.name = 'OutOfGpuMemoryError';
  }
}

export class GpuModel {
  bytes = 0;
  /** Bytes of weight matrices by how they are stored (f16, q4_k, ...), padding included. */
  matrixBytes: Partial<Record<WeightDType, number>> = {};
  embed!: WeightMatrix;
  finalNorm!: GPUBuffer;
  lmHead!: WeightMatrix;
  layers: GpuLayer[] = [];
  private buffers: GPUBuffer[] = [];

  private constructor(
    readonly device: GPUDevice,
    readonly config: ModelConfig,
    readonly dtype: StoreDType,
    /** What the upload planned: buffers, parameter count, KV bytes per token. */
    readonly plan: GpuPlan,
  ) {}

  get qDim() {
    return this.config.nHeads * this.config.headDim;
  }
  get kvDim() {
    return this.config.nKvHeads * this.config.headDim;
  }

  /**
   * @param limits the buffer limits to plan by: the device's, or smaller ones (tests force split matrices so).
   */
  static async upload(device: GPUDevice, config: ModelConfig, w: HostWeights, dtype: StoreDType, limits: AdapterLimits = device.limits, opts: UploadOptions = {}): Promise<GpuModel> {
    if (limits.maxStorageBufferBindingSize > device.limits.maxStorageBufferBindingSize || limits.maxBufferSize > device.limits.maxBufferSize) {
      throw new Error('GpuModel.upload: the limits to plan by exceed the device\'s');
    }
    // Every buffer is checked against the adapter's limits before the first is created.
    const plan = planGpuMemory(config, dtype, limits, packedTensors(w, opts), opts.kvDtype);
    if (plan.problems.length) throw new OutOfGpuMemoryError(plan.problems.join(' '), plan.problems);
    const m = new GpuModel(device, config, dtype, plan);
    m.dequantize = !!opts.dequantize;
    device.pushErrorScope('out-of-memory');
    try {
      const get = (name: string): HostTensor => {
        const t = w.get(name);
        if (!t) throw new Error(`model ${config.name} has no tensor ${name}`);
        return t;
      };
      const L = (i: number, n: LayerTensorName) => get(layerName(i, n));
      m.embed = m.matrix('embed', [get('embed')]);
      m.finalNorm = m.vector('final_norm', [get('final_norm')]);
      m.lmHead = config.tiedEmbeddings ? m.embed : m.matrix('lm_head', [get('lm_head')]);
      for (let i = 0; i < config.nLayers; i++) {
        const bias = config.qkvBias ? [L(i, 'bq'), L(i, 'bk'), L(i, 'bv')] : undefined;
        m.layers.push({
          attnNorm: m.vector(`${i}.attn_norm`, [L(i, 'attn_norm')]),
          wqkv: m.matrix(`${i}.wqkv`, [L(i, 'wq'), L(i, 'wk'), L(i, 'wv')]),
          bqkv: bias && m.vector(`${i}.bqkv`, bias),
          qkNorm: config.qkNorm ? m.vector(`${i}.qk_norm`, [L(i, 'q_norm'), L(i, 'k_norm')]) : undefined,
          wo: m.matrix(`${i}.wo`, [L(i, 'wo')]),
          postAttnNorm: config.postNorms ? m.vector(`${i}.post_attn_norm`, [L(i, 'post_attn_norm')]) : undefined,
          ffnNorm: m.vector(`${i}.ffn_norm`, [L(i, 'ffn_norm')]),
          wGateUp: m.matrix(`${i}.w_gate_up`, [L(i, 'w_gate'), L(i, 'w_up')]),
          wDown: m.matrix(`${i}.w_down`, [L(i, 'w_down')]),
          postFfnNorm: config.postNorms ? m.vector(`${i}.post_ffn_norm`, [L(i, 'post_ffn_norm')]) : undefined,
        });
      }
    } catch (e) {
      await device.popErrorScope();
      m.destroy();
      throw e;
    }
    const err = await device.popErrorScope();
    if (err) {
      m.destroy();
      throw new OutOfGpuMemoryError(`Not enough GPU memory for ${config.name} (${(m.bytes / 2 ** 20).toFixed(0)} MiB so far): ${err.message}`);
    }
    return m;
  }

  private alloc(label: string, bytes: number): GPUBuffer {
    const b = this.device.createBuffer({ label, size: paddedBytes(bytes), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC });
    this.buffers.push(b);
    this.bytes += b.size;
    return b;
  }

  private dequantize = false;

  /**
   * Row-concatenation of [out_i, in] matrices, stored in the model's dtype or kept packed: in one buffer, or in
   * the plan's parts (row ranges, runs of equal types) when one buffer cannot hold it.
   */
  private matrix(label: string, tensors: HostTensor[]): WeightMatrix {
    const cols = tensors[0].shape[tensors[0].shape.length - 1];
    const stored = (t: HostTensor): WeightDType => (isQuant(t.dtype) && !this.dequantize ? t.dtype : this.dtype);
    const plan = matrixParts(label, tensors.map((t) => ({ rows: tensorSize(t.shape) / cols, dtype: stored(t) })), cols, this.plan.bufferLimit);
    if (plan.unsplittable !== undefined) throw new Error(`${label}: rows of ${plan.unsplittable} bytes do not fit one buffer`); // the plan refused it already
    const parts = plan.parts.map((p) => ({ row0: p.row0, rows: p.rows, dtype: p.dtype, buffer: this.alloc(p.label, storedBytes(p.dtype, p.rows, cols)) }));
    // Each tensor's rows go to the parts they overlap, converted for the part's dtype; a packed part is repacked
    // from its rows' blocks (its own scale region), gathered from the tensors of its run.
    let first = 0;
    const packed = new Map<GPUBuffer, Uint8Array[]>();
    for (const t of tensors) {
      const end = first + tensorSize(t.shape) / cols;
      const d = stored(t);
      const data = isQuant(d) ? null : d === 'f16' ? toHalves(t) : toFloats(t);
      const rowBytes = isQuant(d) ? (cols / QUANT[d].block) * QUANT[d].bytes : storedBytes(d, 1, cols);
      for (const p of parts) {
        const a = Math.max(first, p.row0), b = Math.min(end, p.row0 + p.rows);
        if (a >= b) continue;
        if (data) this.device.queue.writeBuffer(p.buffer, (a - p.row0) * rowBytes, data.buffer, data.byteOffset + (a - first) * rowBytes, (b - a) * rowBytes);
        else packed.set(p.buffer, [...(packed.get(p.buffer) ?? []), (t.data as Uint8Array).subarray((a - first) * rowBytes, (b - first) * rowBytes)]);
      }
      first = end;
    }
    for (const p of parts) {
      const pieces = packed.get(p.buffer);
      if (!pieces || !isQuant(p.dtype)) continue;
      const raw = pieces.length === 1 ? pieces[0] : concatBytes(pieces);
      const words = repackForGpu(p.dtype, raw, (p.rows * cols) / QUANT[p.dtype].block);
      this.device.queue.writeBuffer(p.buffer, 0, words.buffer, words.byteOffset, words.byteLength);
    }
    this.countBytes(parts);
    const dtype = parts[0].dtype;
    return { rows: first, cols, dtype, parts: parts.map((p) => (p.dtype === dtype ? { buffer: p.buffer, row0: p.row0, rows: p.rows } : p)) };
  }

  private countBytes(parts: { dtype: WeightDType; buffer: GPUBuffer }[]) {
    for (const p of parts) this.matrixBytes[p.dtype] = (this.matrixBytes[p.dtype] ?? 0) + p.buffer.size;
  }

  /** Label and size of every buffer created, in order (what the plan lists). */
  get allocated(): PlannedBuffer[] {
    return this.buffers.map((b) => ({ label: b.label, bytes: b.size }));
  }

  private vector(label: string, parts: HostTensor[]): GPUBuffer {
    const n = parts.reduce((a, p) => a + p.data.length, 0);
    const buf = this.alloc(label, n * 4);
    let off = 0;
    for (const p of parts) {
      const data = toFloats(p);
      this.device.queue.writeBuffer(buf, off, data.buffer, data.byteOffset, data.byteLength);
      off += data.byteLength;
    }
    return buf;
  }

  private positionTables = new Map<LayerKind, PositionTable>();

  /** RoPE's (cos, sin) by position for layers of `kind`, kept on the GPU while the model is (ForwardPass, RowWriter). */
  positionTable(kind: LayerKind): PositionTable {
    let t = this.positionTables.get(kind);
    if (!t) this.positionTables.set(kind, (t = new PositionTable(this.device, inverseFrequencies(this.config, kind), Math.min(64 * 2 ** 20, bufferLimit(this.device.limits)))));
    return t;
  }

  destroy() {
    for (const b of this.buffers) b.destroy();
    this.buffers = [];
    for (const t of this.positionTables.values()) t.destroy();
    this.positionTables.clear();
  }
}

function toFloats(t: HostTensor): Float32Array {
  if (t.dtype === 'f32') return t.data as Float32Array;
  if (isQuant(t.dtype)) return dequantizeF32(QUANT[t.dtype].ggml, t.data as Uint8Array, tensorSize(t.shape));
  const h = t.data as Uint16Array;
  const out = new Float32Array(h.length);
  for (let i = 0; i < h.length; i++) out[i] = halfToFloat(h[i]);
  return out;
}

function toHalves(t: HostTensor): Uint16Array {
  if (t.dtype === 'f16') return t.data as Uint16Array;
  if (isQuant(t.dtype)) return dequantizeF16(QUANT[t.dtype].ggml, t.data as Uint8Array, tensorSize(t.shape));
  const a = t.data as Float32Array;
  const out = new Uint16Array(a.length + (a.length & 1));
  for (let i = 0; i < a.length; i++) out[i] = floatToHalf(a[i]);
  return out;
}

function concatBytes(pieces: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(pieces.reduce((a, p) => a + p.byteLength, 0));
  let o = 0;
  for (const p of pieces) {
    out.set(p, o);
    o += p.byteLength;
  }
  return out;
}
