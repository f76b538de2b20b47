/**
 * Rotary embedding angles, computed on the host in the same f32 steps as the
 * references (llama2.c's `pos * freq`, Hugging Face's `inv_freq @ position_ids`),
 * then cos/sin taken in f64 so no GPU trig error enters. Each row gets the
 * angles of its own position id, which is what lets a cached chunk be placed
 * anywhere.
 */
import type { LayerKind, ModelConfig } from './config';

const fr = Math.fround;

export function inverseFrequencies(c: ModelConfig, kind: LayerKind): Float32Array {
  const half = c.headDim / 2;
  const theta = kind === 'local' ? (c.ropeLocalTheta ?? c.ropeTheta) : c.ropeTheta;
  const inv = new Float32Array(half);
  for (let i = 0; i < half; i++) inv[i] = fr(1 / fr(theta ** fr((2 * i) / c.headDim)));
  const s = kind === 'global' ? c.ropeScaling : undefined;
  if (s?.type === 'linear') {
    for (let i = 0; i < half; i++) inv[i] = fr(inv[i] / s.factor);
  } else if (s?.type === 'llama3') {
    // Llama 3.1: long wavelengths slow down by `factor`, short ones stay, a smooth band between.
    const lowWavelen = s.originalMaxPositionEmbeddings / s.lowFreqFactor;
    const highWavelen = s.originalMaxPositionEmbeddings / s.highFreqFactor;
    for (let i = 0; i < half; i++) {
      const f = inv[i];
      const wavelen = (2 * Math.PI) / f;
      if (wavelen > lowWavelen) inv[i] = fr(f / s.factor);
      else if (wavelen >= highWavelen) {
        const smooth = (s.originalMaxPositionEmbeddings / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
        inv[i] = fr((1 - smooth) * (f / s.factor) + smooth * f);
      }
    }
  }
  return inv;
}

/** (cos, sin) for every (row, frequency): [T, HD/2, 2]. Negative `sign` rotates backwards. */
export function ropeTable(inv: Float32Array, positions: ArrayLike<number>, sign = 1): Float32Array {
  const half = inv.length;
  const cs = new Float32Array(positions.length * half * 2);
  for (let t = 0; t < positions.length; t++) {
    for (let i = 0; i < half; i++) {
      const ang = fr(positions[t] * inv[i]);
      cs[2 * (t * half + i)] = Math.cos(ang);
      cs[2 * (t * half + i) + 1] = sign * Math.sin(ang);
    }
  }
  return cs;
}

/**
 * RoPE's (cos, sin) for every position in [0, rows), one row of ropeTable a position, kept in a GPU buffer from
 * pass to pass: a forward pass or a link's placement of a chunk's rows then costs no trigonometry and no table
 * upload, only each row's position (ForwardPass, rope_scatter; RowWriter, kv_gather: both read row `position`).
 * Callers fetch `buffer` when they launch, since another caller's `covering` may have grown it. At 32K positions the table for SmolLM2's 32 frequencies takes
 * 26 ms to compute on this project's host and 8 MiB to upload, once. It grows by doubling to cover the largest
 * position asked for, up to `maxBytes`; past that `covering` returns null and the caller makes a table of its own
 * rows.
 */
export class PositionTable {
  private buf: GPUBuffer | null = null;
  private rows = 0;
  /** Bumped whenever the buffer is replaced (work recorded before binds the old one: Dispatcher.replay). */
  version = 0;

  constructor(
    private device: GPUDevice,
    readonly inv: Float32Array,
    private maxBytes: number,
  ) {}

  /** The table as it is now (callers that hold on to it across a `covering` that grew it would hold a destroyed one). */
  get buffer(): GPUBuffer | null {
    return this.buf;
  }

  /** The table covering positions [0, maxPos], or null past maxBytes; `beforeReplace` submits work using the old one. */
  covering(maxPos: number, beforeReplace: () => void): GPUBuffer | null {
    if (maxPos < this.rows) return this.buf;
    let rows = Math.max(4096, this.rows);
    while (rows <= maxPos) rows *= 2;
    const bytes = rows * this.inv.length * 8;
    if (bytes > this.maxBytes) return null;
    const table = ropeTable(this.inv, Int32Array.from({ length: rows }, (_, i) => i));
    beforeReplace();
    this.buf?.destroy();
    this.buf = this.device.createBuffer({ label: 'rope by position', size: bytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    this.device.queue.writeBuffer(this.buf, 0, table.buffer, table.byteOffset, table.byteLength);
    this.rows = rows;
    this.version++;
    return this.buf;
  }

  destroy() {
    this.buf?.destroy();
    this.buf = null;
    this.rows = 0;
    this.version++;
  }
}
