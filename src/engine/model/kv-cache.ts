/**
 * A sequence's working KV cache on the GPU: per layer, K (after RoPE) and V
 * as [capacity, kvDim] in f32 or packed f16, plus the position id of every
 * row. Rows are addressed by index; positions need not be contiguous or
 * increasing, since attention masks by position id. Grows by doubling.
 */
import type { StoreDType } from '../ops';

export class KVCache {
  k: GPUBuffer[] = [];
  v: GPUBuffer[] = [];
  /** Position id of each row in [0, length). */
  positions: Int32Array;
  kpos: GPUBuffer;
  length = 0;
  private posDirty = true;

  constructor(
    readonly device: GPUDevice,
    readonly nLayers: number,
    readonly kvDim: number,
    readonly dtype: StoreDType,
    public capacity: number,
  ) {
    this.positions = new Int32Array(capacity);
    this.kpos = this.makePos(capacity);
    for (let l = 0; l < nLayers; l++) {
      this.k.push(this.makeKV(capacity, `k${l}`));
      this.v.push(this.makeKV(capacity, `v${l}`));
    }
  }

  get rowBytes() {
    return this.kvDim * (this.dtype === 'f16' ? 2 : 4);
  }

  get bytes() {
    return 2 * this.nLayers * this.capacity * this.rowBytes;
  }

  private makeKV(rows: number, label: string) {
    return this.device.createBuffer({
      label, size: Math.max(16, rows * this.rowBytes),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
  }

  private makePos(rows: number) {
    return this.device.createBuffer({ size: Math.max(16, rows * 4), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  }

  /** Makes room for `rows` rows, keeping contents (one copy per buffer). */
  reserve(rows: number) {
    if (rows <= this.capacity) return;
    let cap = this.capacity;
    while (cap < rows) cap *= 2;
    const enc = this.device.createCommandEncoder();
    const grow = (old: GPUBuffer, label: string) => {
      const b = this.makeKV(cap, label);
      enc.copyBufferToBuffer(old, 0, b, 0, this.length * this.rowBytes || 0);
      return b;
    };
    const oldK = this.k;
    const oldV = this.v;
    this.k = oldK.map((b, l) => grow(b, `k${l}`));
    this.v = oldV.map((b, l) => grow(b, `v${l}`));
    this.device.queue.submit([enc.finish()]);
    for (const b of [...oldK, ...oldV]) b.destroy();
    const pos = new Int32Array(cap);
    pos.set(this.positions);
    this.positions = pos;
    this.kpos.destroy();
    this.kpos = this.makePos(cap);
    this.posDirty = true;
    this.capacity = cap;
  }

  /** Sets the positions of rows [start, start + p.length) and extends length to cover them. */
  setPositions(start: number, p: ArrayLike<number>) {
    this.reserve(start + p.length);
    this.positions.set(p, start);
    this.length = Math.max(this.length, start + p.length);
    this.posDirty = true;
  }

  /** Uploads changed positions before a pass reads them. */
  syncPositions() {
    if (!this.posDirty) return;
    this.device.queue.writeBuffer(this.kpos, 0, this.positions.buffer, 0, Math.max(4, this.length * 4));
    this.posDirty = false;
  }

  truncate(length: number) {
    this.length = Math.min(this.length, length);
  }

  destroy() {
    for (const b of [...this.k, ...this.v, this.kpos]) b.destroy();
    this.k = [];
    this.v = [];
  }
}
