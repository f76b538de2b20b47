/** KVStore's public types, errors and backend interfaces. */
import type { LayerRows } from '../types/kv';

export type KvDtype = 'f32' | 'f16';
export type Tier = 'ram' | 'opfs';

/** What the store knows about one compiled chunk cache (kept in the index). */
export interface EntryMeta {
  /** Content-hash cache id, chosen by the caller. */
  id: string;
  modelId: string;
  dtype: KvDtype;
  layers: number;
  tokens: number;
  kvDim: number;
  /** Size of the stored blob (the OPFS tier's unit of account). */
  bytes: number;
  createdAt: number;
  lastUsedAt: number;
  hits: number;
  /** How the cache was compiled (e.g. "plain", "sinks4"); free-form. */
  variant: string;
  /** JSON data for the UI: chunk text preview, document id, ... */
  meta: Record<string, unknown>;
}

/** What `put` needs; the rest is derived. */
export interface PutMeta {
  id: string;
  modelId: string;
  dtype: KvDtype;
  kvDim: number;
  variant?: string;
  meta?: Record<string, unknown>;
}

/** How long a lookup took and how much it moved. */
export interface ReadTiming {
  tier: Tier | null;
  /** Wall time of the whole get, milliseconds. */
  ms: number;
  /** Reading the blob (OPFS only). */
  readMs: number;
  /** Checking and decoding it (OPFS only): f32 rows are copied out; f16 rows stay halves, widened later where read. */
  decodeMs: number;
  /** Bytes read from the tier: the blob for OPFS, the rows for RAM. */
  bytes: number;
}

export type GetResult =
  | { status: 'hit'; tier: Tier; layers: LayerRows[]; meta: EntryMeta; timing: ReadTiming }
  | { status: 'miss'; timing: ReadTiming }
  /** The entry was stored but its blob is damaged or gone: it has been dropped; compile the chunk again. */
  | { status: 'corrupt'; reason: string; timing: ReadTiming };

export interface EntryInfo extends EntryMeta {
  /** Whether a decoded copy is held in the RAM tier. */
  inRam: boolean;
  pinned: boolean;
}

export interface TierStats {
  bytes: number;
  entries: number;
  budget: number;
}

export interface StoreStats {
  ram: TierStats;
  opfs: TierStats;
  hits: number;
  ramHits: number;
  opfsHits: number;
  misses: number;
  corrupt: number;
  evictions: number;
}

export type EvictReason = 'lru' | 'expire' | 'clear' | 'corrupt' | 'missing' | 'replaced';

/** Notifications for an upper tier (e.g. GPU-resident caches) that mirrors this store. */
export type StoreEvent =
  /**
   * `tier: 'opfs'`: the entry is gone from the store (for reason 'replaced': its previous version is, a new one
   * of the same id was put); `tier: 'ram'`: only its host copy was dropped. An upper tier should drop its copy
   * on the first kind.
   */
  | { type: 'evict'; id: string; tier: Tier; reason: EvictReason }
  | { type: 'lookup'; id: string; status: GetResult['status']; timing: ReadTiming }
  | { type: 'put'; id: string; bytes: number };

/** Blob storage by flat file name (OPFS in browsers, memory in tests). */
export interface BlobBackend {
  /** Creates or replaces `name` with `data`; rejects with a QuotaExceededError when space runs out. */
  write(name: string, data: Uint8Array): Promise<void>;
  /** The bytes of `name`, or null when it does not exist. */
  read(name: string): Promise<Uint8Array | null>;
  /** Removes `name`; no error when it does not exist. */
  delete(name: string): Promise<void>;
  list(): Promise<string[]>;
  /** Renames `from` to `to` (which does not exist), when the backend can. */
  rename?(from: string, to: string): Promise<void>;
  /** Bytes still free on the device for this origin, when known. */
  available?(): Promise<number | null>;
  /** Runs `fn` holding a lock shared with other pages and workers of the origin. */
  exclusive?<T>(fn: () => Promise<T>): Promise<T>;
}

/** One stored index record: the entry plus the name of its committed blob. */
export interface IndexRecord extends EntryMeta {
  format: 1;
  file: string;
}

/** The index (IndexedDB through idb-keyval in browsers, memory in tests). */
export interface IndexBackend {
  get(key: string): Promise<IndexRecord | undefined>;
  set(key: string, value: IndexRecord): Promise<void>;
  del(key: string): Promise<void>;
  entries(): Promise<[string, IndexRecord][]>;
}

export class CorruptBlobError extends Error {
  constructor(reason: string) {
    super(`Corrupt KV cache blob: ${reason}`);
    this.name = 'CorruptBlobError';
  }
}

const mb = (n: number) => `${(n / 1e6).toFixed(n < 1e7 ? 2 : 1)} MB`;

export class StorageFullError extends Error {
  constructor(readonly needed: number, readonly available: number, where: string) {
    // An unknown `available` (NaN): `where` says why the space ran out.
    super(
      `KV store is full: this cache needs ${mb(needed)} (${needed} bytes) but ` +
        (Number.isNaN(available) ? where : `only ${mb(Math.max(0, available))} (${Math.max(0, available)} bytes) ${where}`) +
        ' even after evicting every other unpinned entry',
    );
    this.name = 'StorageFullError';
  }
}

/** Whether `e` is the browser's (or a backend's) out-of-space error. */
export function isQuotaError(e: unknown): boolean {
  const x = e as { name?: string; code?: number } | null;
  return !!x && (x.name === 'QuotaExceededError' || x.code === 22);
}
