/** A dedicated worker running KVStore on OPFS + IndexedDB, for e2e/kvstore.spec.ts. */
import { createBrowserKVStore, type KVStore } from '../../src/kvstore';
import { layers, maxDiff, type WorkerReply, type WorkerRequest } from './kvstore-fixtures';

let store: KVStore | null = null;

self.onmessage = async (ev: MessageEvent<WorkerRequest>) => {
  const req = ev.data;
  const t0 = performance.now();
  let reply: WorkerReply;
  try {
    if (req.op === 'put') {
      store ??= createBrowserKVStore();
      await store.open();
      const rows = layers(req.dims.layers, req.dims.tokens, req.dims.kvDim, req.seed);
      const t1 = performance.now(); // the put alone
      await store.put({ id: req.id, modelId: 'm', dtype: req.dtype, kvDim: req.dims.kvDim }, rows);
      reply = { ms: performance.now() - t1 };
    } else {
      if (req.fresh || !store) store = createBrowserKVStore();
      const r = await store.get(req.id);
      reply = { ms: performance.now() - t0, status: r.status, tier: r.status === 'hit' ? r.tier : null, timing: r.timing };
      if (r.status === 'hit') reply.diff = maxDiff(r.layers, layers(req.dims.layers, req.dims.tokens, req.dims.kvDim, req.seed));
    }
  } catch (e) {
    reply = { ms: performance.now() - t0, error: String(e) };
  }
  (self as unknown as Worker).postMessage(reply);
};
