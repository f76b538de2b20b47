/**
 * KVStore's hot tier: compiled chunks kept on the GPU (pre-RoPE keys and
 * values, f32 [rows, kvDim] per layer), so linking them moves no bytes from
 * the host. A byte budget with least-recently-used eviction; entries follow
 * the store (an entry expired, cleared or found corrupt there is dropped
 * here too). The host rows stay referenced for CacheBlend's deviation check.
 *
 * A link holds the chunks it uses (`hold` / `release`) from lookup until its
 * rows are copied: a held chunk is never evicted to make room for another
 * (that chunk then links from host memory instead), and one dropped while
 * held keeps its buffers until the last release. Without this, a link whose
 * chunks outgrow the budget destroyed buffers its own copies still needed.
 */
import type { CompiledChunk } from '../types/kv';
import type { KVStore } from './store';

interface Entry {
  chunk: CompiledChunk;
  bytes: number;
  lastUsed: number;
}

type GpuRows = NonNullable<CompiledChunk['gpu']>;

export class GpuTier {
  private entries = new Map<string, Entry>();
  /** GPU copies held by running links, with their hold counts. */
  private held = new Map<GpuRows, number>();
  /** Copies dropped while held: destroyed on their last release. */
  private retired = new Set<GpuRows>();
  private clock = 0;
  bytes = 0;
  hits = 0;
  misses = 0;

  constructor(
    private device: GPUDevice,
    public budget = 256 * 2 ** 20,
  ) {}

  /** Drops entries the store lets go of. */
  follow(store: KVStore) {
    return store.subscribe((e) => {
      if (e.type === 'evict' && e.tier === 'opfs') this.delete(e.id);
    });
  }

  get(id: string): CompiledChunk | undefined {
    const e = this.entries.get(id);
    if (!e) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    e.lastUsed = ++this.clock;
    return e.chunk;
  }

  /** Uploads a chunk's rows; returns the chunk with its GPU copy, or the chunk alone when it cannot fit. */
  put(chunk: CompiledChunk): CompiledChunk {
    this.delete(chunk.id);
    // Rows kept as f16 (LayerRows.halves) stay halves on the GPU: half the bytes, and never widened on the host.
    const half = chunk.layers.every((l) => l.halves);
    const arrays = chunk.layers.map((l) => (half ? l.halves! : { k: l.k, v: l.v }));
    const bytes = arrays.reduce((n, l) => n + l.k.byteLength + l.v.byteLength, 0);
    if (bytes > this.budget) return chunk;
    while (this.bytes + bytes > this.budget) if (!this.evictOldest()) return chunk;
    const upload = (a: Float32Array | Uint16Array) => {
      // A row is kvDim values and kvDim is a multiple of 4, so halves fill whole 4-byte words.
      const b = this.device.createBuffer({ size: Math.max(16, Math.ceil(a.byteLength / 4) * 4), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
      this.device.queue.writeBuffer(b, 0, a.buffer, a.byteOffset, a.byteLength);
      return b;
    };
    const gpu = arrays.map((l) => ({ k: upload(l.k), v: upload(l.v), ...(half ? { f16: true } : {}) }));
    const withGpu = { ...chunk, gpu };
    this.entries.set(chunk.id, { chunk: withGpu, bytes, lastUsed: ++this.clock });
    this.bytes += bytes;
    return withGpu;
  }

  has(id: string) {
    return this.entries.has(id);
  }

  delete(id: string) {
    const e = this.entries.get(id);
    if (!e) return;
    const gpu = e.chunk.gpu;
    if (gpu && this.held.has(gpu)) this.retired.add(gpu);
    else if (gpu) destroy(gpu);
    this.entries.delete(id);
    this.bytes -= e.bytes;
  }

  /** Keeps a chunk's GPU copy alive and in the tier until `release` (one release per hold). */
  hold(chunk: CompiledChunk) {
    if (chunk.gpu) this.held.set(chunk.gpu, (this.held.get(chunk.gpu) ?? 0) + 1);
  }

  release(chunk: CompiledChunk) {
    const gpu = chunk.gpu;
    const n = gpu && this.held.get(gpu);
    if (!gpu || !n) return;
    if (n > 1) return void this.held.set(gpu, n - 1);
    this.held.delete(gpu);
    if (this.retired.delete(gpu)) destroy(gpu);
  }

  /** Drops the least recently used entry that no link holds; false when every entry is held. */
  private evictOldest(): boolean {
    let oldest: string | null = null;
    let t = Infinity;
    for (const [id, e] of this.entries) if (e.lastUsed < t && !(e.chunk.gpu && this.held.has(e.chunk.gpu))) [oldest, t] = [id, e.lastUsed];
    if (oldest === null) return false;
    this.delete(oldest);
    return true;
  }

  clear() {
    for (const id of [...this.entries.keys()]) this.delete(id);
  }

  stats() {
    return { bytes: this.bytes, entries: this.entries.size, budget: this.budget, hits: this.hits, misses: this.misses };
  }
}

function destroy(gpu: GpuRows) {
  for (const l of gpu) {
    l.k.destroy();
    l.v.destroy();
  }
}
