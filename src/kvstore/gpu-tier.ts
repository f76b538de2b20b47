/**
 * KVStore's hot tier: compiled chunks kept on the GPU (pre-RoPE keys and
 * values, f32 [rows, kvDim] per layer), so linking them moves no bytes from
 * the host. A byte budget with least-recently-used eviction; entries follow
 * the store (an entry expired, cleared or found corrupt there is dropped
 * here too). The host rows stay referenced for CacheBlend's deviation check.
 */
import type { CompiledChunk } from '../kvcompile/compile';
import type { KVStore } from './store';

interface Entry {
  chunk: CompiledChunk;
  bytes: number;
  lastUsed: number;
}

export class GpuTier {
  private entries = new Map<string, Entry>();
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
    const bytes = chunk.layers.reduce((n, l) => n + l.k.byteLength + l.v.byteLength, 0);
    if (bytes > this.budget) return chunk;
    while (this.bytes + bytes > this.budget) this.evictOldest();
    const upload = (a: Float32Array) => {
      const b = this.device.createBuffer({ size: Math.max(16, a.byteLength), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
      this.device.queue.writeBuffer(b, 0, a.buffer, a.byteOffset, a.byteLength);
      return b;
    };
    const gpu = chunk.layers.map((l) => ({ k: upload(l.k), v: upload(l.v) }));
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
    for (const l of e.chunk.gpu ?? []) {
      l.k.destroy();
      l.v.destroy();
    }
    this.entries.delete(id);
    this.bytes -= e.bytes;
  }

  private evictOldest() {
    let oldest: string | null = null;
    let t = Infinity;
    for (const [id, e] of this.entries) if (e.lastUsed < t) [oldest, t] = [id, e.lastUsed];
    if (oldest !== null) this.delete(oldest);
  }

  clear() {
    for (const id of [...this.entries.keys()]) this.delete(id);
  }

  stats() {
    return { bytes: this.bytes, entries: this.entries.size, budget: this.budget, hits: this.hits, misses: this.misses };
  }
}
