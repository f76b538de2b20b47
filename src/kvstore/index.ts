/** KVStore: compiled chunk caches in RAM and OPFS tiers, indexed in IndexedDB. See docs/KVSTORE.md. */
import { IdbIndexBackend } from './idb';
import { OpfsBlobBackend } from './opfs';
import { KVStore, type Budgets } from './store';

export { KVStore, DEFAULT_BUDGETS, type Budgets, type KVStoreOptions, type OpenReport } from './store';
export { encodeBlob, decodeBlob, verifyBlob, readBlobHeader, payloadBytes, sameBytes, BLOB_MAGIC, BLOB_VERSION, type BlobMeta } from './blob';
export { crc32 } from './crc32';
export { BLOB_SUFFIX, TMP_PREFIX, fileKey } from './commit';
export { OpfsBlobBackend } from './opfs';
export { IdbIndexBackend } from './idb';
export { MemoryBlobBackend, MemoryIndexBackend, SimulatedCrash } from './memory';
export * from './types';

/** The store over OPFS (`kvstore/`) and IndexedDB (`legokv-kvstore`), in a page or a worker; call `open()`. */
export function createBrowserKVStore(opts: { budgets?: Partial<Budgets>; folder?: string; dbName?: string } = {}): KVStore {
  return new KVStore({
    blobs: new OpfsBlobBackend(opts.folder),
    index: new IdbIndexBackend(opts.dbName),
    budgets: opts.budgets,
  });
}
