/**
 * KVStore: compiled chunk caches in two tiers, each with a byte budget and
 * least-recently-used eviction.
 *
 *  - OPFS tier: every entry, as one blob (see blob.ts) named by its index
 *    record; the index (id → record) is the source of truth and the commit
 *    point of every write (see commit.ts). Budget counts blob bytes.
 *  - RAM tier: decoded f32 host copies of recently used entries (filled on put
 *    and on every OPFS hit). Budget counts f32 bytes. Dropping a RAM copy
 *    keeps the entry.
 *
 * Recency is `lastUsedAt`, set by put, get and touch from a clock that never
 * repeats a value. Operations run one at a time (and, where the backend
 * offers it, under a lock shared by the origin's pages and workers). One
 * store instance per origin is expected to own the data; others see its
 * writes on their next `open()`.
 *
 * An upper tier (GPU-resident caches) can `subscribe` to evictions, lookups
 * and puts, `touch` entries it served itself, and `pin` entries it is using so
 * that neither tier evicts them.
 */
import { layerValues, type LayerRows } from '../types/kv';
import { decodeBlob, encodeBlob } from './blob';
import { writeBlobAtomically } from './commit';
import { rowBytes, StoreCore, type Budgets, type OpenReport } from './core';
import {
  CorruptBlobError, StorageFullError, type EntryInfo, type EntryMeta, type GetResult, type IndexRecord, type PutMeta,
  type ReadTiming, type StoreEvent, type StoreStats, type Tier,
} from './types';

export { DEFAULT_BUDGETS, type Budgets, type KVStoreOptions, type OpenReport } from './core';

const publicMeta = ({ format: _f, file: _n, ...m }: IndexRecord): EntryMeta => structuredClone(m);

export class KVStore extends StoreCore {

  /** Loads the index and removes what interrupted writes left behind. Idempotent; other calls open first. */
  open(): Promise<OpenReport> {
    this.opening ??= this.run(() => this.load()).catch((e) => {
      this.opening = null;
      throw e;
    });
    return this.opening;
  }

  async has(id: string): Promise<boolean> {
    await this.open();
    return this.entries.has(id);
  }

  /**
   * The cache of `id`: a hit (promoted to RAM unless `promote` is false), a miss, or corrupt (dropped: compile
   * again). The returned arrays are shared with the RAM tier: read them, do not modify or transfer them.
   */
  async get(id: string, opts: { promote?: boolean } = {}): Promise<GetResult> {
    await this.open();
    return this.run(async () => {
      const t0 = performance.now();
      const timing = (tier: Tier | null, bytes: number, readMs = 0, decodeMs = 0): ReadTiming =>
        ({ tier, ms: performance.now() - t0, readMs, decodeMs, bytes });
      const rec = this.entries.get(id);
      if (!rec) {
        this.counts.misses++;
        return this.lookup(id, { status: 'miss', timing: timing(null, 0) });
      }
      const ram = this.ram.get(id);
      if (ram) {
        await this.markUsed(rec);
        this.counts.hits++;
        this.counts.ramHits++;
        return this.lookup(id, { status: 'hit', tier: 'ram', layers: ram.layers, meta: publicMeta(rec), timing: timing('ram', ram.bytes) });
      }
      const bytes = await this.blobs.read(rec.file);
      const t1 = performance.now();
      let layers: LayerRows[];
      try {
        if (!bytes) throw new CorruptBlobError('its blob file is missing');
        const d = decodeBlob(bytes);
        const m = d.meta;
        if (m.id !== rec.id || m.modelId !== rec.modelId || m.dtype !== rec.dtype || m.layers !== rec.layers || m.tokens !== rec.tokens || m.kvDim !== rec.kvDim) {
          throw new CorruptBlobError('its header does not match the index');
        }
        layers = d.layers;
      } catch (e) {
        if (!(e instanceof CorruptBlobError)) throw e;
        this.counts.corrupt++;
        await this.drop(rec, bytes ? 'corrupt' : 'missing');
        return this.lookup(id, { status: 'corrupt', reason: e.message, timing: timing('opfs', bytes?.length ?? 0, t1 - t0) });
      }
      const t2 = performance.now();
      await this.markUsed(rec);
      if (opts.promote !== false) this.toRam(rec, layers);
      this.counts.hits++;
      this.counts.opfsHits++;
      return this.lookup(id, { status: 'hit', tier: 'opfs', layers, meta: publicMeta(rec), timing: timing('opfs', bytes!.length, t1 - t0, t2 - t1) });
    });
  }

  /** Stores a compiled cache (replacing any entry of the same id); throws StorageFullError when it cannot fit. */
  async put(meta: PutMeta, layers: LayerRows[]): Promise<EntryMeta> {
    if (typeof meta.id !== 'string' || !meta.id) throw new Error('KVStore.put: the cache id must be a non-empty string');
    if (typeof meta.modelId !== 'string') throw new Error('KVStore.put: modelId must be a string');
    const bytes = encodeBlob(meta, layers, meta.dtype);
    await this.open();
    return this.run(async () => {
      const { id } = meta;
      if (bytes.length > this.budgets.opfs) throw new StorageFullError(bytes.length, this.budgets.opfs, 'fit in the OPFS tier budget');
      const old = this.entries.get(id);
      const keep = (r: IndexRecord) => r.id === id;
      while (this.opfsBytes() - (old?.bytes ?? 0) + bytes.length > this.budgets.opfs) {
        if (!(await this.evictOne('opfs', keep))) {
          throw new StorageFullError(bytes.length, this.budgets.opfs - this.opfsBytes() + (old?.bytes ?? 0), 'remain in the OPFS tier budget');
        }
      }
      const { file, readBack } = await writeBlobAtomically(this.blobs, id, bytes, async () => {
        if (await this.evictOne('opfs', keep)) return true;
        const free = (await this.blobs.available?.()) ?? this.budgets.opfs - this.opfsBytes();
        // The browser may count more space free than its quota for this site lets a write use (incognito does).
        if (free >= bytes.length) throw new StorageFullError(bytes.length, NaN, "the browser refused to write it: this site's storage quota is reached");
        throw new StorageFullError(bytes.length, free, 'are free on this device');
      });
      const t = this.tick();
      const rec: IndexRecord = {
        format: 1, file, id, modelId: meta.modelId, dtype: meta.dtype, layers: layers.length,
        tokens: layerValues(layers[0]) / meta.kvDim, kvDim: meta.kvDim, bytes: bytes.length, createdAt: t, lastUsedAt: t,
        hits: 0, variant: meta.variant ?? '', meta: structuredClone(meta.meta ?? {}),
      };
      // The commit point. If it fails the blob stays: whether the record landed is unknown, and open() removes
      // the blob if it did not.
      await this.index.set(id, rec);
      this.entries.set(id, rec);
      if (old) {
        this.dropRam(id, 'replaced');
        this.emit({ type: 'evict', id, tier: 'opfs', reason: 'replaced' });
        await this.blobs.delete(old.file).catch(() => {});
      }
      // The read-back was compared with what was written: its payload needs no second checksum.
      if (rowBytes(rec) <= this.budgets.ram) this.toRam(rec, decodeBlob(readBack, { payloadChecked: true }).layers);
      this.emit({ type: 'put', id, bytes: bytes.length });
      return publicMeta(rec);
    });
  }

  /** Removes an entry from every tier; false when there was none. */
  async expire(id: string): Promise<boolean> {
    await this.open();
    return this.run(async () => {
      const rec = this.entries.get(id);
      if (rec) await this.drop(rec, 'expire');
      return !!rec;
    });
  }

  async clear(): Promise<void> {
    await this.open();
    return this.run(async () => {
      for (const rec of [...this.entries.values()]) await this.drop(rec, 'clear');
      for (const name of await this.blobs.list()) await this.blobs.delete(name);
    });
  }

  /** Marks an entry used (an upper tier served it): its recency and hit count, not the store-wide counters. False when unknown. */
  async touch(id: string): Promise<boolean> {
    await this.open();
    return this.run(async () => {
      const rec = this.entries.get(id);
      if (rec) await this.markUsed(rec);
      return !!rec;
    });
  }

  /** Protects an entry from eviction in both tiers until as many `unpin`s (expire and clear still remove it). */
  pin(id: string) {
    this.pins.set(id, (this.pins.get(id) ?? 0) + 1);
  }

  unpin(id: string) {
    const n = (this.pins.get(id) ?? 0) - 1;
    if (n > 0) this.pins.set(id, n);
    else this.pins.delete(id);
  }

  /** Entries, most recently used first. */
  async list(): Promise<EntryInfo[]> {
    await this.open();
    return [...this.entries.values()]
      .sort((a, b) => b.lastUsedAt - a.lastUsedAt)
      .map((r) => ({ ...publicMeta(r), inRam: this.ram.has(r.id), pinned: this.pins.has(r.id) }));
  }

  async stats(): Promise<StoreStats> {
    await this.open();
    let ramBytes = 0;
    for (const r of this.ram.values()) ramBytes += r.bytes;
    return {
      ram: { bytes: ramBytes, entries: this.ram.size, budget: this.budgets.ram },
      opfs: { bytes: this.opfsBytes(), entries: this.entries.size, budget: this.budgets.opfs },
      ...this.counts,
    };
  }

  /** Changes budgets, evicting at once what no longer fits. */
  async setBudgets(b: Partial<Budgets>): Promise<void> {
    await this.open();
    return this.run(async () => {
      this.budgets = { ...this.budgets, ...b };
      while (this.ramBytes() > this.budgets.ram && (await this.evictOne('ram'))) { /* evicting */ }
      while (this.opfsBytes() > this.budgets.opfs && (await this.evictOne('opfs'))) { /* evicting */ }
    });
  }

  getBudgets(): Budgets {
    return { ...this.budgets };
  }

  /** Listens to evictions, lookups and puts; returns the unsubscribe function. */
  subscribe(fn: (e: StoreEvent) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  onEvict(fn: (e: Extract<StoreEvent, { type: 'evict' }>) => void): () => void {
    return this.subscribe((e) => e.type === 'evict' && fn(e));
  }
}
