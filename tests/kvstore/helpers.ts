/** Fake caches and a store over memory backends for the KVStore tests. */
import type { LayerRows } from '../../src/types/kv';
import { KVStore, MemoryBlobBackend, MemoryIndexBackend, type Budgets, type PutMeta, type StoreEvent } from '../../src/kvstore';

/** `nLayers` layers of `[tokens, kvDim]` pseudo-random values (deterministic in `seed`), some large, some tiny. */
export function fakeLayers(nLayers: number, tokens: number, kvDim: number, seed = 1): LayerRows[] {
  let x = seed * 2654435761;
  const rnd = () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0) / 2 ** 32) * 2 - 1;
  const arr = () => Float32Array.from({ length: tokens * kvDim }, (_, i) => rnd() * (i % 7 === 0 ? 300 : i % 5 === 0 ? 1e-3 : 4));
  return Array.from({ length: nLayers }, () => ({ k: arr(), v: arr() }));
}

export const DIMS = { layers: 2, tokens: 8, kvDim: 16 };
export const f32Bytes = (d = DIMS) => d.layers * 2 * d.tokens * d.kvDim * 4;

export function putMeta(id: string, extra: Partial<PutMeta> = {}): PutMeta {
  return { id, modelId: 'stories260K', dtype: 'f32', kvDim: DIMS.kvDim, variant: 'plain', meta: { preview: `text of ${id}`, docId: 'd1' }, ...extra };
}

/** A store, its backends (kept across "reloads") and the events it emitted. */
export class Rig {
  blobs: MemoryBlobBackend;
  index = new MemoryIndexBackend();
  store!: KVStore;
  events: StoreEvent[] = [];
  private t = 1000;

  constructor(readonly budgets: Partial<Budgets> = {}, blobOpts: ConstructorParameters<typeof MemoryBlobBackend>[0] = {}) {
    this.blobs = new MemoryBlobBackend(blobOpts);
    this.reload();
  }

  /** A new store over the same backends, as after a page reload. */
  reload(): KVStore {
    this.blobs.revive();
    this.index.revive();
    this.store = new KVStore({ blobs: this.blobs, index: this.index, budgets: this.budgets, now: () => this.t });
    this.events = [];
    this.store.subscribe((e) => this.events.push(e));
    return this.store;
  }

  put(id: string, seed = 1, extra: Partial<PutMeta> = {}) {
    return this.store.put(putMeta(id, extra), fakeLayers(DIMS.layers, DIMS.tokens, DIMS.kvDim, seed));
  }

  evictions() {
    return this.events.flatMap((e) => (e.type === 'evict' ? [`${e.tier}:${e.id}:${e.reason}`] : []));
  }

  files() {
    return [...this.blobs.files.keys()].sort();
  }
}
