/**
 * KVStore against the browser's real storage quota: Chromium's quota for the
 * origin is cut to a few MiB over the DevTools protocol
 * (Storage.overrideQuotaForOrigin), and the store (OPFS blobs, IndexedDB
 * index), with byte budgets far above that, fills it. When a write hits the
 * quota, the least recently used entries go first; a cache that cannot fit
 * even in an empty store is refused with a clear StorageFullError; nothing
 * half-written stays, and the index and the files agree afterwards.
 */
import { test, expect } from '@playwright/test';
import type * as KV from '../src/kvstore';
import type { KvTestHelpers } from './pages/kvstore-entry';

type G = { kv: typeof KV; kvTest: KvTestHelpers };

const PAGE = 'e2e/pages/kvstore.html';
const MIB = 2 ** 20;
/** One entry: 4 layers × 128 tokens × 256 values, f32, K and V: 1 MiB of payload. */
const ENTRY = { layers: 4, tokens: 128, kvDim: 256 };

test('at the real OPFS quota: LRU entries go first, then a clear error; nothing half-written, index and files agree', async ({ page, context, baseURL }) => {
  await page.goto(PAGE);
  await expect(page.locator('body[data-ready="1"]')).toBeAttached();
  await page.evaluate(() => (window as unknown as G).kv.createBrowserKVStore().clear());
  const origin = new URL(baseURL!).origin;
  const cdp = await context.newCDPSession(page);
  await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: 3.6 * MIB });
  try {
    const r = await page.evaluate(async ({ ENTRY, MIB }) => {
      const { kv, kvTest } = window as unknown as G;
      // Budgets far above the quota: only the browser's quota limits the store here.
      const store = new kv.KVStore({ blobs: new kv.OpfsBlobBackend(), index: new kv.IdbIndexBackend(), budgets: { opfs: 1e12, ram: 0 } });
      await store.open();
      const evicted: string[] = [];
      store.onEvict((e) => { if (e.tier === 'opfs') evicted.push(e.id); });
      const put = (id: string, seed: number, d = ENTRY) =>
        store.put({ id, modelId: 'm', dtype: 'f32', kvDim: d.kvDim }, kvTest.layers(d.layers, d.tokens, d.kvDim, seed));
      for (const [i, id] of ['a', 'b', 'c'].entries()) await put(id, i + 1);
      await store.get('a'); // a is now the most recently used; b the least
      const before = (await store.list()).map((e) => e.id);
      await put('d', 4); // a fourth MiB does not fit under the 3.6 MiB quota: b goes
      const afterD = (await store.list()).map((e) => e.id);
      const evictedForD = [...evicted];
      let error: { name: string; message: string } | null = null;
      try {
        await put('huge', 5, { layers: 4, tokens: 512, kvDim: 256 }); // 4 MiB: more than the whole quota
      } catch (e) {
        error = { name: (e as Error).name, message: (e as Error).message };
      }
      const index = await new kv.IdbIndexBackend().entries();
      const files = await kvTest.files();
      // A fresh instance reads back what is left, and open() finds nothing to clean.
      const fresh = kv.createBrowserKVStore();
      const report = await fresh.open();
      const reads: Record<string, string> = {};
      for (const e of await fresh.list()) reads[e.id] = (await fresh.get(e.id)).status;
      return {
        before, afterD, evictedForD, evicted, error, files, report, reads,
        indexFiles: index.map(([, rec]) => rec.file).sort(), ids: index.map(([id]) => id).sort(),
      };
    }, { ENTRY, MIB });
    expect(r.before).toEqual(['a', 'c', 'b']);
    // The least recently used entry was evicted first, and only as many as needed.
    expect(r.evictedForD[0]).toBe('b');
    expect(r.afterD[0]).toBe('d');
    expect(r.afterD).not.toContain('b');
    // Then a clear error: the store gave up only once nothing was left to evict.
    expect(r.error?.name).toBe('StorageFullError');
    expect(r.error?.message).toMatch(/^KV store is full: this cache needs 4\.19 MB .*(free on this device|storage quota is reached) even after evicting/);
    // Nothing half-written: no temporary file and no blob that no record names; every record has its blob.
    expect(r.files.some((f) => f.startsWith('tmp-'))).toBe(false);
    expect(r.files).toEqual(r.indexFiles);
    expect(r.ids).not.toContain('huge');
    expect(r.report).toEqual({ entries: r.ids.length, removedBlobs: [], droppedEntries: [] });
    for (const id of r.ids) expect(r.reads[id]).toBe('hit');
  } finally {
    await cdp.send('Storage.overrideQuotaForOrigin', { origin });
    await page.evaluate(() => (window as unknown as G).kv.createBrowserKVStore().clear());
  }
});
