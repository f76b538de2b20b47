/**
 * A model's weights on the GPU, in the layout the forward pass wants:
 * q/k/v fused into one [qDim + 2 kvDim, D] matrix (one matmul per layer),
 * gate and up fused into [2I, D], matrices f32 or packed f16, norms and
 * biases f32. A matrix larger than one buffer may be (the adapter's storage
 * binding and buffer limits) is stored as row ranges, each its own buffer,
 * as the plan (gpu-plan.ts) lays them out: typically a large vocabulary's
 * embedding and LM head.
 */
import type { ModelConfig } from './config';
import type { HostTensor, HostWeights, LayerTensorName } from './weights';
import { layerName } from './weights';
import { floatToHalf, halfToFloat } from '../f16';
import type { StoreDType, WeightMatrix } from '../ops';
import { paddedBytes, partLabel, planGpuMemory, splitRows, type AdapterLimits, type GpuPlan, type PlannedBuffer } from './gpu-plan';

export interface GpuLayer {
  attnNorm: GPUBuffer; wqkv: WeightMatrix; bqkv?: GPUBuffer; qNorm?: GPUBuffer; kNorm?: GPUBuffer;
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
  static async upload(device: GPUDevice, config: ModelConfig, w: HostWeights, dtype: StoreDType, limits: AdapterLimits = device.limits): Promise<GpuModel> {
    if (limits.maxStorageBufferBindingSize > device.limits.maxStorageBufferBindingSize || limits.maxBufferSize > device.limits.maxBufferSize) {
      throw new Error('GpuModel.upload: the limits to plan by exceed the device\'s');
    }
    // Every buffer is checked against the adapter's limits before the first is created.
    const plan = planGpuMemory(config, dtype, limits);
    if (plan.problems.length) throw new OutOfGpuMemoryError(plan.problems.join(' '), plan.problems);
    const m = new GpuModel(device, config, dtype, plan);
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
          qNorm: config.qkNorm ? m.vector(`${i}.q_norm`, [L(i, 'q_norm')]) : undefined,
          kNorm: config.qkNorm ? m.vector(`${i}.k_norm`, [L(i, 'k_norm')]) : undefined,
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

  /**
   * Row-concatenation of [out_i, in] matrices, stored in the model's dtype: in one buffer, or in the plan's row
   * ranges when it is larger than one buffer may be.
   */
  private matrix(label: string, tensors: HostTensor[]): WeightMatrix {
    const cols = tensors[0].shape[tensors[0].shape.length - 1];
    const rows = tensors.reduce((a, t) => a + t.data.length / cols, 0);
    const rowBytes = cols * (this.dtype === 'f16' ? 2 : 4);
    const ranges = splitRows(rows, rowBytes, this.plan.bufferLimit);
    if (!ranges) throw new Error(`${label}: rows of ${rowBytes} bytes do not fit one buffer`); // the plan refused it already
    const parts = ranges.map((r, i) => ({ ...r, buffer: this.alloc(partLabel(label, i, ranges.length), r.rows * rowBytes) }));
    if (parts.length === 1) {
      // Whole: each tensor as converted (an odd f16 count padded by toHalves).
      let off = 0;
      for (const t of tensors) {
        const data = this.dtype === 'f16' ? toHalves(t) : toFloats(t);
        this.device.queue.writeBuffer(parts[0].buffer, off, data.buffer, data.byteOffset, data.byteLength);
        off += data.byteLength;
      }
    } else {
      // Each tensor's rows go to the parts they overlap.
      let first = 0;
      for (const t of tensors) {
        const data = this.dtype === 'f16' ? toHalves(t) : toFloats(t);
        const end = first + t.data.length / cols;
        for (const p of parts) {
          const a = Math.max(first, p.row0), b = Math.min(end, p.row0 + p.rows);
          if (a >= b) continue;
          this.device.queue.writeBuffer(p.buffer, (a - p.row0) * rowBytes, data.buffer, data.byteOffset + (a - first) * rowBytes, (b - a) * rowBytes);
        }
        first = end;
      }
    }
    return { rows, cols, dtype: this.dtype, parts };
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

  destroy() {
    for (const b of this.buffers) b.destroy();
    this.buffers = [];
  }
}

function toFloats(t: HostTensor): Float32Array {
  if (t.dtype === 'f32') return t.data as Float32Array;
  const h = t.data as Uint16Array;
  const out = new Float32Array(h.length);
  for (let i = 0; i < h.length; i++) out[i] = halfToFloat(h[i]);
  return out;
}

function toHalves(t: HostTensor): Uint16Array {
  if (t.dtype === 'f16') return t.data as Uint16Array;
  const a = t.data as Float32Array;
  const out = new Uint16Array(a.length + (a.length & 1));
  for (let i = 0; i < a.length; i++) out[i] = floatToHalf(a[i]);
  return out;
}
