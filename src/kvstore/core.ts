/**
 * The state and bookkeeping behind KVStore (see store.ts): the in-memory view
 * of the index, the RAM tier, pins, counters, the operation queue, recency
 * clock, LRU victims and event emission.
 */
import type { LayerRows } from '../types/kv';
import type {
  BlobBackend, EvictReason, GetResult, IndexBackend, IndexRecord, StoreEvent, Tier,
} from './types';

export interface Budgets {
  ram: number;
  opfs: number;
}

export const DEFAULT_BUDGETS: Budgets = { ram: 256 * 2 ** 20, opfs: 2 * 2 ** 30 };

export interface KVStoreOptions {
  blobs: BlobBackend;
  index: IndexBackend;
  budgets?: Partial<Budgets>;
  /** Wall clock in ms (default Date.now). */
  now?: () => number;
}

export interface OpenReport {
  entries: number;
  /** Blob files no committed entry names (interrupted writes), deleted. */
  removedBlobs: string[];
  /** Index records whose blob was missing or that were malformed, dropped. */
  droppedEntries: string[];
}

/** What an entry's RAM copy takes: f16 entries are kept as halves (LayerRows.halves), which nothing widens on the host. */
export const rowBytes = (r: IndexRecord) => r.layers * 2 * r.tokens * r.kvDim * (r.dtype === 'f16' ? 2 : 4);
const isRecord = (r: IndexRecord | undefined, key: string): r is IndexRecord =>
  !!r && r.format === 1 && r.id === key && typeof r.file === 'string' && r.layers > 0 && r.kvDim > 0 && r.bytes > 0;

export abstract class StoreCore {
  protected readonly blobs: BlobBackend;
  protected readonly index: IndexBackend;
  protected readonly now: () => number;
  protected budgets: Budgets;
  protected entries = new Map<string, IndexRecord>();
  protected ram = new Map<string, { layers: LayerRows[]; bytes: number }>();
  protected pins = new Map<string, number>();
  protected listeners = new Set<(e: StoreEvent) => void>();
  protected counts = { hits: 0, ramHits: 0, opfsHits: 0, misses: 0, corrupt: 0, evictions: 0 };
  protected chain: Promise<unknown> = Promise.resolve();
  protected opening: Promise<OpenReport> | null = null;
  protected lastTick = 0;

  constructor(opts: KVStoreOptions) {
    this.blobs = opts.blobs;
    this.index = opts.index;
    this.now = opts.now ?? Date.now;
    this.budgets = { ...DEFAULT_BUDGETS, ...opts.budgets };
  }

  protected run<T>(fn: () => Promise<T>): Promise<T> {
    const go = () => (this.blobs.exclusive ? this.blobs.exclusive(fn) : fn());
    const p = this.chain.then(go, go);
    this.chain = p.catch(() => {});
    return p;
  }

  protected async load(): Promise<OpenReport> {
    const report: OpenReport = { entries: 0, removedBlobs: [], droppedEntries: [] };
    const names = new Set(await this.blobs.list());
    this.entries.clear();
    this.ram.clear();
    for (const [key, rec] of await this.index.entries()) {
      if (isRecord(rec, key) && names.has(rec.file)) {
        this.entries.set(key, rec);
        this.lastTick = Math.max(this.lastTick, rec.lastUsedAt, rec.createdAt);
      } else {
        await this.index.del(key);
        report.droppedEntries.push(key);
      }
    }
    const live = new Set([...this.entries.values()].map((r) => r.file));
    for (const name of names) {
      if (!live.has(name)) {
        await this.blobs.delete(name);
        report.removedBlobs.push(name);
      }
    }
    while (this.opfsBytes() > this.budgets.opfs && (await this.evictOne('opfs'))) { /* evicting */ }
    report.entries = this.entries.size;
    return report;
  }

  protected tick(): number {
    this.lastTick = Math.max(this.now(), this.lastTick + 1);
    return this.lastTick;
  }

  protected async markUsed(rec: IndexRecord) {
    rec.lastUsedAt = this.tick();
    rec.hits++;
    await this.index.set(rec.id, rec);
  }

  protected opfsBytes(): number {
    let n = 0;
    for (const r of this.entries.values()) n += r.bytes;
    return n;
  }

  protected ramBytes(): number {
    let n = 0;
    for (const r of this.ram.values()) n += r.bytes;
    return n;
  }

  /** The least recently used unpinned entry held in `tier`, other than `keep`. */
  protected victim(tier: Tier, keep: (r: IndexRecord) => boolean): IndexRecord | null {
    let victim: IndexRecord | null = null;
    for (const r of this.entries.values()) {
      if (keep(r) || this.pins.has(r.id) || (tier === 'ram' && !this.ram.has(r.id))) continue;
      if (!victim || r.lastUsedAt < victim.lastUsedAt) victim = r;
    }
    return victim;
  }

  /** Evicts the LRU entry of `tier` (from RAM: only its copy; from OPFS: the entry); false when none can go. */
  protected async evictOne(tier: Tier, keep: (r: IndexRecord) => boolean = () => false): Promise<boolean> {
    const v = this.victim(tier, keep);
    if (!v) return false;
    this.counts.evictions++;
    if (tier === 'ram') this.dropRam(v.id, 'lru');
    else await this.drop(v, 'lru');
    return true;
  }

  /** Removes an entry: the index record first (so a crash leaves only an orphan blob), then its blob. */
  protected async drop(rec: IndexRecord, reason: EvictReason) {
    this.dropRam(rec.id, reason);
    this.entries.delete(rec.id);
    await this.index.del(rec.id);
    await this.blobs.delete(rec.file).catch(() => {});
    this.emit({ type: 'evict', id: rec.id, tier: 'opfs', reason });
  }

  protected dropRam(id: string, reason: EvictReason) {
    if (this.ram.delete(id)) this.emit({ type: 'evict', id, tier: 'ram', reason });
  }

  protected toRam(rec: IndexRecord, layers: LayerRows[]) {
    const bytes = rowBytes(rec);
    if (bytes > this.budgets.ram) return;
    this.ram.delete(rec.id);
    while (this.ramBytes() + bytes > this.budgets.ram) {
      const v = this.victim('ram', (r) => r.id === rec.id);
      if (!v) return;
      this.counts.evictions++;
      this.dropRam(v.id, 'lru');
    }
    this.ram.set(rec.id, { layers, bytes });
  }

  protected lookup<R extends GetResult>(id: string, r: R): R {
    this.emit({ type: 'lookup', id, status: r.status, timing: r.timing });
    return r;
  }

  protected emit(e: StoreEvent) {
    for (const fn of this.listeners) {
      try {
        fn(e);
      } catch (err) {
        console.error('KVStore listener failed', err);
      }
    }
  }
}
