/** The IndexedDB index backend (idb-keyval; database `legokv-kvstore`, store `entries`), for pages and workers. */
import { createStore, del, entries, get, set, type UseStore } from 'idb-keyval';
import type { IndexBackend, IndexRecord } from './types';

export class IdbIndexBackend implements IndexBackend {
  private readonly store: UseStore;

  constructor(readonly dbName = 'legokv-kvstore', readonly storeName = 'entries') {
    this.store = createStore(dbName, storeName);
  }

  get(key: string): Promise<IndexRecord | undefined> {
    return get<IndexRecord>(key, this.store);
  }
  set(key: string, value: IndexRecord): Promise<void> {
    return set(key, value, this.store);
  }
  del(key: string): Promise<void> {
    return del(key, this.store);
  }
  entries(): Promise<[string, IndexRecord][]> {
    return entries<string, IndexRecord>(this.store);
  }
}
