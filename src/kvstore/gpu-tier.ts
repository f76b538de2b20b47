/**
 * KVStore's hot tier: compiled chunks kept on the GPU (pre-RoPE keys and
 * values, [rows, kvDim] per layer, f32 or halves as the chunk keeps them), so
 * linking them moves no bytes from the host. A byte budget with
 * least-recently-used eviction; entries follow the store (an entry expired,
 * cleared or found corrupt there is dropped here too). The host rows stay
 * referenced for CacheBlend's deviation check.
 *
 * Chunks share slabs: a slab is one key and one value buffer per layer, of
 * the same rows, and a chunk is a run of rows at the same place in all of
 * them. A link then places every chunk of a slab in one launch a layer
 * (kernels/kv_gather.wgsl) instead of copying each chunk's layer through a
 * staging buffer: 64 chunks cost 3840 copies of SmolLM2's 30 layers, which
 * took the H100's host 66 ms to record (gpu-h100-6.json). Slabs are made as
 * chunks need them, as many as the budget holds, and a chunk takes the first
 * run of free rows that fits it.
 *
 * A link holds the chunks it uses (`hold` / `release`) from lookup until its
 * rows are placed: a held chunk is never evicted to make room for another
 * (that chunk then links from host memory instead), and the rows of one
 * dropped while held are not reused until its last release.
 */
import type { CompiledChunk, GpuLayerRows } from '../types/kv';
import type { KVStore } from './store';
import type { HostWrite } from '../engine';

/** Rows a slab holds at most: large enough that a 32K-token link spans a few slabs. */
const SLAB_ROWS = 8192;

/**
 * The default budget's bounds, and the rows a real GPU's default holds where they allow: a 32K-token prompt's, with a
 * quarter more for chunks that leave runs of rows too short for the next.
 */
const TIER_BUDGET = { min: 256 * 2 ** 20, max: 2 ** 30, tokens: 40960 } as const;

/**
 * The tier's default budget for a model whose rows take `tokenBytes` a token (keys and values, every layer): on a
 * real GPU the rows of TIER_BUDGET.tokens tokens, within [256 MiB, 1 GiB] (SmolLM2-135M's f16 rows: 900 MiB;
 * Llama-3.2-1B's: the 1 GiB cap, 32K tokens), so the chunks of a long prompt link with no upload; on a CPU adapter,
 * whose memory is the host's and whose uploads are copies, 256 MiB.
 */
export function defaultTierBudget(realGpu: boolean, tokenBytes: number): number {
  if (!realGpu) return TIER_BUDGET.min;
  return Math.min(TIER_BUDGET.max, Math.max(TIER_BUDGET.min, TIER_BUDGET.tokens * tokenBytes));
}

interface Slab {
  k: GPUBuffer[];
  v: GPUBuffer[];
  /** Runs of free rows, [start, length], sorted by start and never adjacent. */
  free: [number, number][];
}

interface Entry {
  chunk: CompiledChunk;
  bytes: number;
  lastUsed: number;
  slab: Slab;
  row0: number;
  rows: number;
  /** Deleted (or the tier cleared) while its rows were still going up: freed once they are. */
  dropped?: boolean;
}

/**
 * How a put's rows go up: resolves once they are written or submitted ahead of any GPU work recorded after it
 * resolves. The default is queue.writeBuffer; ContextCache passes the engine's upload (Engine.upload), which uses
 * mapped staging buffers where the adapter's writeBuffer is slow (the H100's ran at 1 GB/s against 8).
 */
type RowUpload = (writes: HostWrite[]) => Promise<void>;

/** What every slab's rows are: layers, values a row, and whether they are halves. */
interface Shape {
  layers: number;
  kvDim: number;
  half: boolean;
}

type GpuRows = GpuLayerRows[];

/** Bytes of one row of keys (or values) in slabs of this shape. */
const rowBytes = (s: Shape) => s.kvDim * (s.half ? 2 : 4);

/** What the tier holds (the studio's cache library shows it). */
export interface GpuTierStats {
  /** Bytes of the rows its chunks hold, and how many chunks. */
  bytes: number;
  entries: number;
  budget: number;
  /** The slabs the rows sit in, and the GPU memory they take (never above the budget). */
  slabs: number;
  slabBytes: number;
  hits: number;
  misses: number;
}

export class GpuTier {
  private entries = new Map<string, Entry>();
  /** GPU copies held by running links, with their hold counts. */
  private held = new Map<GpuRows, number>();
  /** Rows of entries dropped while held: freed on their last release. */
  private retired = new Map<GpuRows, Entry>();
  private slabs: Slab[] = [];
  private shape: Shape | null = null;
  private slabRows = 0;
  private clock = 0;
  /** Bytes of the rows the entries hold. */
  bytes = 0;
  hits = 0;
  misses = 0;

  /** Entries whose rows are going up: their rows are taken, and they join `entries` once written. */
  private uploading = new Set<Entry>();

  constructor(
    private device: GPUDevice,
    public budget: number = TIER_BUDGET.min,
    /** Rows a slab holds at most (tests make slabs small to have several). */
    private maxSlabRows = SLAB_ROWS,
    private upload: RowUpload = async (writes) => {
      for (const w of writes) device.queue.writeBuffer(w.dst, w.offset, w.data.buffer, w.data.byteOffset, w.data.byteLength);
    },
  ) {}

  /**
   * A new budget. The slabs are sized to the budget, so every entry goes (a link holding rows keeps them until it
   * releases them) and the next put sizes slabs afresh; the chunks link from the store once and come back.
   */
  setBudget(bytes: number) {
    if (!(bytes > 0)) throw new Error(`GpuTier: a budget of ${bytes} bytes`);
    if (bytes === this.budget) return;
    this.budget = bytes;
    this.clear();
  }

  /** Drops entries the store lets go of. */
  follow(store: KVStore) {
    return store.subscribe((e) => {
      if (e.type === 'evict' && e.tier === 'opfs') this.delete(e.id);
    });
  }

  /** A chunk on the GPU, and with `hold` its GPU copy held (as `hold` does) before anything else can evict it. */
  get(id: string, o: { hold?: boolean } = {}): CompiledChunk | undefined {
    const e = this.entries.get(id);
    if (!e) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    e.lastUsed = ++this.clock;
    if (o.hold) this.hold(e.chunk);
    return e.chunk;
  }

  /**
   * Uploads a chunk's rows; returns the chunk with its GPU copy (the one there already, if the chunk is), or the
   * chunk alone when it cannot fit (or the GPU has no memory for another slab); with `hold`, its copy held before the
   * next put starts. One put at a time: a slab's creation is awaited.
   */
  put(chunk: CompiledChunk, o: { hold?: boolean } = {}): Promise<CompiledChunk> {
    const run = this.putting.then(() => {
      const placed = this.putNow(chunk);
      // Held as it is placed: the next put, which may evict, starts only after this one's result is out.
      return o.hold ? placed.then((c) => (this.hold(c), c)) : placed;
    });
    this.putting = run.then(() => undefined, () => undefined);
    return run;
  }
  private putting: Promise<void> = Promise.resolve();

  private async putNow(chunk: CompiledChunk): Promise<CompiledChunk> {
    // A cache id names its rows (a hash of model, tokens and variant): a chunk already here is not put again (a
    // link that finds in the store a chunk its compile placed, say), only used more recently.
    const have = this.entries.get(chunk.id);
    if (have) {
      have.lastUsed = ++this.clock;
      return have.chunk;
    }
    // Rows kept as f16 (LayerRows.halves) stay halves on the GPU: half the bytes, and never widened on the host.
    const half = chunk.layers.every((l) => l.halves);
    const arrays = chunk.layers.map((l) => (half ? l.halves! : { k: l.k, v: l.v }));
    const n = chunk.tokens.length;
    // Not kept: the chunk links from host memory (never through a GPU copy it may still name from an earlier put).
    const { gpu: _, ...host } = chunk;
    if (!n || !arrays.length) return host;
    const shape = { layers: arrays.length, kvDim: arrays[0].k.length / n, half };
    if (!this.fits(shape)) return host;
    const place = await this.place(n);
    if (!place) return host;
    const { slab, row0 } = place;
    const at = row0 * rowBytes(shape);
    const gpu: GpuRows = arrays.map((_, i) => ({ k: slab.k[i], v: slab.v[i], row0, ...(half ? { f16: true } : {}) }));
    const e: Entry = { chunk: { ...chunk, gpu }, bytes: 2 * arrays.length * n * rowBytes(shape), lastUsed: 0, slab, row0, rows: n };
    // Keys, then values, each layer's in its own slab buffer.
    const writes = arrays.flatMap((l, i) => {
      if (l.k.length !== n * shape.kvDim || l.v.length !== n * shape.kvDim) throw new Error(`GpuTier: layer ${i} of chunk ${chunk.id} has the wrong size`);
      return [{ dst: slab.k[i], offset: at, data: l.k }, { dst: slab.v[i], offset: at, data: l.v }];
    });
    // An entry only once its rows are up: a link that finds it then reads them (the upload is ahead of its work).
    this.uploading.add(e);
    let failure: { error: unknown } | null = null;
    try {
      await this.upload(writes);
    } catch (error) {
      failure = { error };
      e.dropped = true;
    }
    this.uploading.delete(e);
    if (e.dropped) {
      if (this.slabs.includes(slab)) this.free(e);
      this.dropIfIdle();
      if (failure) throw failure.error;
      return host;
    }
    e.lastUsed = ++this.clock;
    this.entries.set(chunk.id, e);
    this.bytes += e.bytes;
    return e.chunk;
  }

  /**
   * Whether slabs of this shape can be used: those there are, or new ones once every slab is idle (another model's
   * rows, or the other precision, dropped first). Sizes the slabs to the budget: as many as it holds, at most
   * maxSlabRows rows each and no more than one buffer can.
   */
  private fits(s: Shape): boolean {
    const same = this.shape && this.shape.layers === s.layers && this.shape.kvDim === s.kvDim && this.shape.half === s.half;
    if (same) return this.slabRows > 0;
    if (this.entries.size || this.retired.size) return false;
    this.dropSlabs();
    this.shape = s;
    const budgetRows = Math.floor(this.budget / (2 * s.layers * rowBytes(s)));
    const bufferRows = Math.floor(this.device.limits.maxStorageBufferBindingSize / rowBytes(s));
    // A budget of several slabs' rows is shared evenly between them, so that slabs use all of it.
    const most = this.maxSlabRows;
    const even = Number.isFinite(budgetRows) ? Math.floor(budgetRows / Math.max(1, Math.ceil(budgetRows / most))) : most;
    this.slabRows = Math.min(bufferRows, even);
    return this.slabRows > 0;
  }

  /**
   * Free rows for a chunk of `n`: the first run that fits, in a new slab if the budget (and the GPU's memory)
   * allows, else after evicting.
   */
  private async place(n: number): Promise<{ slab: Slab; row0: number } | null> {
    if (n > this.slabRows) return null;
    for (;;) {
      for (const slab of this.slabs) {
        const i = slab.free.findIndex(([, len]) => len >= n);
        if (i < 0) continue;
        const [start, len] = slab.free[i];
        if (len === n) slab.free.splice(i, 1);
        else slab.free[i] = [start + n, len - n];
        return { slab, row0: start };
      }
      const slab = (this.slabs.length + 1) * this.slabBytes <= this.budget && this.slabs.length < this.maxSlabs ? await this.newSlab() : null;
      if (slab) this.slabs.push(slab);
      else if (!this.evictOldest()) return null;
    }
  }

  private get slabBytes() {
    return 2 * this.shape!.layers * this.slabRows * rowBytes(this.shape!);
  }

  /**
   * A new slab, or null when the GPU refuses its memory: the tier then keeps to the slabs it has (a hot tier is
   * worth no failed link; chunks it cannot hold link from host memory).
   */
  private async newSlab(): Promise<Slab | null> {
    const s = this.shape!;
    const size = Math.max(16, this.slabRows * rowBytes(s));
    const make = (label: string) => this.device.createBuffer({ label, size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    const id = this.slabs.length;
    this.device.pushErrorScope('out-of-memory');
    const slab: Slab = {
      k: Array.from({ length: s.layers }, (_, l) => make(`tier${id}.k${l}`)),
      v: Array.from({ length: s.layers }, (_, l) => make(`tier${id}.v${l}`)),
      free: [[0, this.slabRows]],
    };
    if (!(await this.device.popErrorScope())) return slab;
    for (const b of [...slab.k, ...slab.v]) b.destroy();
    this.maxSlabs = this.slabs.length;
    return null;
  }
  /** Slabs the GPU gave memory for, once it refused one. */
  private maxSlabs = Infinity;

  /** Returns an entry's rows to its slab's free runs, merging with its neighbours. */
  private free(e: Entry) {
    const f = e.slab.free;
    let i = f.findIndex(([start]) => start > e.row0);
    if (i < 0) i = f.length;
    f.splice(i, 0, [e.row0, e.rows]);
    if (i + 1 < f.length && f[i][0] + f[i][1] === f[i + 1][0]) f.splice(i, 2, [f[i][0], f[i][1] + f[i + 1][1]]);
    if (i > 0 && f[i - 1][0] + f[i - 1][1] === f[i][0]) f.splice(i - 1, 2, [f[i - 1][0], f[i - 1][1] + f[i][1]]);
  }

  has(id: string) {
    return this.entries.has(id);
  }

  delete(id: string) {
    for (const u of this.uploading) if (u.chunk.id === id) u.dropped = true;
    const e = this.entries.get(id);
    if (!e) return;
    const gpu = e.chunk.gpu!;
    if (this.held.has(gpu)) this.retired.set(gpu, e);
    else this.free(e);
    this.entries.delete(id);
    this.bytes -= e.bytes;
  }

  /** Keeps a chunk's GPU rows in place, and in the tier, until `release` (one release per hold). */
  hold(chunk: CompiledChunk) {
    if (chunk.gpu) this.held.set(chunk.gpu, (this.held.get(chunk.gpu) ?? 0) + 1);
  }

  release(chunk: CompiledChunk) {
    const gpu = chunk.gpu;
    const n = gpu && this.held.get(gpu);
    if (!gpu || !n) return;
    if (n > 1) return void this.held.set(gpu, n - 1);
    this.held.delete(gpu);
    const e = this.retired.get(gpu);
    if (!e) return;
    this.retired.delete(gpu);
    this.free(e);
    this.dropIfIdle();
  }

  /** Drops the least recently used entry that no link holds; false when every entry is held. */
  private evictOldest(): boolean {
    let oldest: string | null = null;
    let t = Infinity;
    for (const [id, e] of this.entries) if (e.lastUsed < t && !this.held.has(e.chunk.gpu!)) [oldest, t] = [id, e.lastUsed];
    if (oldest === null) return false;
    this.delete(oldest);
    return true;
  }

  /** Drops every entry, and the slabs' GPU memory once no link holds rows in them. */
  clear() {
    for (const id of [...this.entries.keys()]) this.delete(id);
    for (const u of this.uploading) u.dropped = true;
    this.dropIfIdle();
  }

  /**
   * An empty tier keeps no GPU memory: its slabs go once no entry is left, no link holds rows in them and no put
   * is writing into them.
   */
  private dropIfIdle() {
    if (!this.entries.size && !this.retired.size && !this.uploading.size) this.dropSlabs();
  }

  private dropSlabs() {
    for (const s of this.slabs) for (const b of [...s.k, ...s.v]) b.destroy();
    this.slabs = [];
    this.shape = null;
    this.slabRows = 0;
    this.maxSlabs = Infinity;
  }

  stats(): GpuTierStats {
    return {
      bytes: this.bytes, entries: this.entries.size, budget: this.budget, hits: this.hits, misses: this.misses,
      slabBytes: this.shape ? this.slabs.length * this.slabBytes : 0, slabs: this.slabs.length,
    };
  }
}
