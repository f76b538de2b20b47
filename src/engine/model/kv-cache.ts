/**
 * A sequence's working KV cache on the GPU: per layer, K (after RoPE) and V
 * as [capacity, kvDim] in f32 or packed f16, plus the position id of every
 * row. Rows are addressed by index; positions need not be contiguous or
 * increasing, since attention masks by position id. Grows by doubling.
 */
import type { StoreDType } from '../ops';

/** One cache's buffers: K and V of every layer, and the positions. */
interface KVBuffers {
  k: GPUBuffer[];
  v: GPUBuffer[];
  kpos: GPUBuffer;
  capacity: number;
  dtype: StoreDType;
  kvDim: number;
}

/**
 * The buffers of the last cache destroyed, kept for the next cache of about its size. A link makes a cache for
 * every prompt, and at 32K rows on the H100 making one took 19 ms of createBuffer (a CPU profile of the kit's
 * link stage, beside gpu-h100-13). Kept only while no later cache took them; Engine drops them with its model.
 */
export class KVSpare {
  private kept: KVBuffers | null = null;

  /** The spare buffers, if they hold `capacity` rows of this layout without being more than twice too big. */
  take(nLayers: number, kvDim: number, dtype: StoreDType, capacity: number): KVBuffers | null {
    const s = this.kept;
    if (!s || s.k.length !== nLayers || s.kvDim !== kvDim || s.dtype !== dtype || s.capacity < capacity || s.capacity > 2 * Math.max(capacity, 256)) return null;
    this.kept = null;
    return s;
  }

  give(b: KVBuffers) {
    this.clear();
    this.kept = b;
  }

  clear() {
    if (this.kept) for (const b of [...this.kept.k, ...this.kept.v, this.kept.kpos]) b.destroy();
    this.kept = null;
  }
}

export class KVCache {
  k: GPUBuffer[] = [];
  v: GPUBuffer[] = [];
  /** Position id of each row in [0, length). */
  positions: Int32Array;
  kpos: GPUBuffer;
  length = 0;
  /** Bumped whenever the buffers are replaced (reserve, destroy): work recorded before binds the old ones. */
  version = 0;
  /** Rows [dirtyFrom, dirtyTo) hold positions the GPU's copy lacks: the next pass uploads them alone. */
  private dirtyFrom = 0;
  private dirtyTo = 0;
  /** Positions [0, orderedTo) are known never to decrease (see `ascending`). */
  private orderedTo = 0;

  constructor(
    readonly device: GPUDevice,
    readonly nLayers: number,
    readonly kvDim: number,
    readonly dtype: StoreDType,
    public capacity: number,
    /** Where destroy leaves the buffers for the next cache, and where this one looks for some first. */
    private spare?: KVSpare,
  ) {
    const kept = spare?.take(nLayers, kvDim, dtype, capacity);
    if (kept) {
      // Rows past `length` are never read, so the earlier cache's contents need no clearing.
      ({ k: this.k, v: this.v, kpos: this.kpos, capacity: this.capacity } = kept);
      this.positions = new Int32Array(this.capacity);
      return;
    }
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
    this.markDirty(0, this.length);
    this.capacity = cap;
    this.version++;
  }

  /** Sets the positions of rows [start, start + p.length) and extends length to cover them. */
  setPositions(start: number, p: ArrayLike<number>) {
    this.reserve(start + p.length);
    this.positions.set(p, start);
    this.length = Math.max(this.length, start + p.length);
    this.markDirty(start, start + p.length);
    this.orderedTo = Math.min(this.orderedTo, start);
  }

  private markDirty(from: number, to: number) {
    if (to <= from) return;
    if (this.dirtyTo <= this.dirtyFrom) [this.dirtyFrom, this.dirtyTo] = [from, to];
    else [this.dirtyFrom, this.dirtyTo] = [Math.min(this.dirtyFrom, from), Math.max(this.dirtyTo, to)];
  }

  /**
   * Whether the positions of rows [0, length) never decrease, which lets attention skip keys by binary search
   * (keyBounds). Known incrementally: a decode step adds a row and checks it alone, where a scan of every row
   * each step would cost O(length) on the host per token.
   */
  get ascending(): boolean {
    const p = this.positions;
    let j = Math.max(1, this.orderedTo);
    while (j < this.length && p[j] >= p[j - 1]) j++;
    this.orderedTo = j;
    return j >= this.length;
  }

  /** Uploads the positions changed since the last upload (a decode step's one row) before a pass reads them. */
  syncPositions() {
    const from = this.dirtyFrom, to = Math.min(this.dirtyTo, this.length);
    if (to > from) this.device.queue.writeBuffer(this.kpos, from * 4, this.positions.buffer, from * 4, (to - from) * 4);
    this.dirtyFrom = this.dirtyTo = 0;
  }

  truncate(length: number) {
    this.length = Math.min(this.length, length);
  }

  destroy() {
    if (!this.k.length) return;
    if (this.spare) this.spare.give({ k: this.k, v: this.v, kpos: this.kpos, capacity: this.capacity, dtype: this.dtype, kvDim: this.kvDim });
    else for (const b of [...this.k, ...this.v, this.kpos]) b.destroy();
    this.k = [];
    this.v = [];
    this.version++;
  }
}
