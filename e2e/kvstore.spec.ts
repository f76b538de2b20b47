/**
 * KVStore in real headless Chromium, on the real backends (OPFS blobs, an
 * IndexedDB index through idb-keyval): entries survive a reload and a browser
 * restart, a blob damaged in OPFS is dropped, and writes cut short by a reload
 * (before the rename, before the index commit) leave nothing behind; a
 * dedicated worker (which reads through sync access handles) and the page
 * share the entries.
 * The page e2e/pages/kvstore.html (built into dist-e2e with the app, vite.config.ts) puts the module on `window`.
 */
import { test, expect, chromium, type Page } from '@playwright/test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as KV from '../src/kvstore';
import type { KvTestHelpers } from './pages/kvstore-entry';

/** What the test page puts on `window` (used inside page.evaluate). */
type G = { kv: typeof KV; kvTest: KvTestHelpers };

const PAGE = 'e2e/pages/kvstore.html';

async function ready(page: Page) {
  await expect(page.locator('body[data-ready="1"]')).toBeAttached();
}

const SMALL = { layers: 2, tokens: 8, kvDim: 16 };
const BIG = { layers: 6, tokens: 512, kvDim: 256 }; // 3 MiB as f16

test('entries persist across reloads and read back; a blob damaged in OPFS is dropped', async ({ page }) => {
  await page.goto(PAGE);
  await ready(page);
  const put = await page.evaluate(async ({ SMALL, BIG }) => {
    const { kv, kvTest } = window as unknown as G;
    const store = kv.createBrowserKVStore();
    await store.open();
    await store.clear();
    const t0 = performance.now();
    for (const [id, seed] of [['a', 1], ['b', 2]] as const) {
      await store.put({ id, modelId: 'stories260K', dtype: 'f32', kvDim: SMALL.kvDim, meta: { preview: `chunk ${id}` } }, kvTest.layers(SMALL.layers, SMALL.tokens, SMALL.kvDim, seed));
    }
    const rows = kvTest.layers(BIG.layers, BIG.tokens, BIG.kvDim, 3);
    const t1 = performance.now();
    await store.put({ id: 'big', modelId: 'stories260K', dtype: 'f16', kvDim: BIG.kvDim, variant: 'sinks4' }, rows);
    const t2 = performance.now();
    return { ids: (await store.list()).map((e) => e.id), files: await kvTest.files(), move: !!new kv.OpfsBlobBackend().rename, smallMs: t1 - t0, bigMs: t2 - t1 };
  }, { SMALL, BIG });
  expect(put.ids.sort()).toEqual(['a', 'b', 'big']);
  expect(put.files).toHaveLength(3);
  expect(put.files.every((f) => f.endsWith('.lkv'))).toBe(true);
  console.log(`puts: two small in ${put.smallMs.toFixed(1)} ms, 3 MiB f16 in ${put.bigMs.toFixed(1)} ms; OPFS move(): ${put.move}`);

  await page.reload();
  await ready(page);
  const after = await page.evaluate(async ({ SMALL, BIG }) => {
    const { kv, kvTest } = window as unknown as G;
    const store = kv.createBrowserKVStore();
    const report = await store.open();
    const out: Record<string, { status: string; tier: string | null; diff?: number; ms: number; readMs: number; decodeMs: number; bytes: number }> = {};
    for (const [id, seed, d] of [['a', 1, SMALL], ['b', 2, SMALL], ['big', 3, BIG], ['big', 3, BIG]] as const) {
      const r = await store.get(id);
      const key = out[id] ? `${id}-again` : id;
      out[key] = { status: r.status, ...r.timing };
      if (r.status === 'hit') Object.assign(out[key], { tier: r.tier, diff: kvTest.maxDiff(r.layers, kvTest.layers(d.layers, d.tokens, d.kvDim, seed)) });
    }
    const list = (await store.list()).map((e) => ({ id: e.id, variant: e.variant, preview: e.meta.preview, hits: e.hits, dtype: e.dtype }));
    return { report, out, list };
  }, { SMALL, BIG });
  expect(after.report).toEqual({ entries: 3, removedBlobs: [], droppedEntries: [] });
  expect(after.out.a).toMatchObject({ status: 'hit', tier: 'opfs', diff: 0 });
  expect(after.out.b).toMatchObject({ status: 'hit', tier: 'opfs', diff: 0 });
  expect(after.out.big).toMatchObject({ status: 'hit', tier: 'opfs' });
  expect(after.out.big.diff).toBeLessThan(13 * 2 ** -11); // f16 rounding of values up to 13
  expect(after.out['big-again']).toMatchObject({ status: 'hit', tier: 'ram' });
  expect(after.list.find((e) => e.id === 'a')).toEqual({ id: 'a', variant: '', preview: 'chunk a', hits: 1, dtype: 'f32' });
  const big = after.out.big;
  console.log(`get 3 MiB f16 from OPFS: ${big.ms.toFixed(1)} ms (read ${big.readMs.toFixed(1)}, check+decode (halves kept) ${big.decodeMs.toFixed(1)}), ` +
    `${(big.bytes / 2 ** 20 / (big.ms / 1000)).toFixed(0)} MiB/s; again from RAM: ${after.out['big-again'].ms.toFixed(2)} ms`);

  const corrupt = await page.evaluate(async () => {
    const { kv, kvTest } = window as unknown as G;
    const rec = (await new kv.IdbIndexBackend().get('b'))!;
    await kvTest.flipByte(rec.file, rec.bytes - 5);
    const store = kv.createBrowserKVStore(); // a fresh instance: nothing in its RAM tier
    await store.open();
    const r = await store.get('b');
    return { status: r.status, reason: r.status === 'corrupt' ? r.reason : '', ids: (await store.list()).map((e) => e.id), files: await kvTest.files(), file: rec.file };
  });
  expect(corrupt.status).toBe('corrupt');
  expect(corrupt.reason).toMatch(/payload checksum mismatch/);
  expect(corrupt.ids.sort()).toEqual(['a', 'big']);
  expect(corrupt.files).not.toContain(corrupt.file);

  await page.reload();
  await ready(page);
  const final = await page.evaluate(async () => {
    const { kv } = window as unknown as G;
    const store = kv.createBrowserKVStore();
    await store.open();
    return { b: (await store.get('b')).status, a: (await store.get('a')).status };
  });
  expect(final).toEqual({ b: 'miss', a: 'hit' });
});

test('writes cut short by a reload leave nothing visible and are cleaned up on open', async ({ page }) => {
  await page.goto(PAGE);
  await ready(page);
  // 1. The page goes away after the tmp blob is written, before its rename.
  // 2. It goes away after the rename, before the index record is written.
  for (const [id, hang] of [['half1', 'rename'], ['half2', 'index']] as const) {
    await page.evaluate(async ({ id, hang, SMALL }) => {
      const { kv, kvTest } = window as unknown as G;
      const blobs = new kv.OpfsBlobBackend();
      const index = new kv.IdbIndexBackend();
      const never = () => new Promise<never>(() => {});
      if (hang === 'rename') Object.assign(blobs, { rename: never });
      else Object.assign(index, { set: never });
      const store = new kv.KVStore({ blobs, index });
      await store.open();
      void store.put({ id, modelId: 'm', dtype: 'f32', kvDim: SMALL.kvDim }, kvTest.layers(SMALL.layers, SMALL.tokens, SMALL.kvDim, 1));
      const want = hang === 'rename' ? new RegExp(`^tmp-${id}\\.`) : new RegExp(`^${id}\\..*\\.lkv$`);
      for (let i = 0; i < 400; i++) {
        if ((await kvTest.files()).some((f) => want.test(f))) return;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error(`${id}: the blob never appeared`);
    }, { id, hang, SMALL });
    await page.reload();
    await ready(page);
    const r = await page.evaluate(async (id) => {
      const { kv, kvTest } = window as unknown as G;
      const store = kv.createBrowserKVStore();
      const report = await store.open();
      return { report, has: await store.has(id), get: (await store.get(id)).status, files: await kvTest.files() };
    }, id);
    expect(r.report.removedBlobs).toHaveLength(1);
    expect(r.report.removedBlobs[0]).toMatch(hang === 'rename' ? /^tmp-half1\./ : /^half2\.\w+\.lkv$/);
    expect(r).toMatchObject({ has: false, get: 'miss', files: [] });
  }
  // 3. An index record whose blob never made it is dropped.
  const ghost = await page.evaluate(async () => {
    const { kv } = window as unknown as G;
    const rec = { format: 1 as const, file: 'ghost.x.lkv', id: 'ghost', modelId: 'm', dtype: 'f32' as const, layers: 1, tokens: 1, kvDim: 4, bytes: 100, createdAt: 1, lastUsedAt: 1, hits: 0, variant: '', meta: {} };
    await new kv.IdbIndexBackend().set('ghost', rec);
    return (await kv.createBrowserKVStore().open()).droppedEntries;
  });
  expect(ghost).toEqual(['ghost']);
});

test('entries survive a browser restart (persistent profile)', async ({}, testInfo) => {
  const { baseURL, launchOptions } = testInfo.project.use;
  const dir = mkdtempSync(join(tmpdir(), 'legokv-kvstore-'));
  const launch = () => chromium.launchPersistentContext(dir, { ...launchOptions, baseURL, headless: true });
  try {
    let ctx = await launch();
    let page = ctx.pages()[0] ?? (await ctx.newPage());
    await page.goto(PAGE);
    await ready(page);
    await page.evaluate(async (SMALL) => {
      const { kv, kvTest } = window as unknown as G;
      const store = kv.createBrowserKVStore();
      await store.clear();
      await store.put({ id: 'persist', modelId: 'm', dtype: 'f16', kvDim: SMALL.kvDim, meta: { docId: 'story.txt' } }, kvTest.layers(SMALL.layers, SMALL.tokens, SMALL.kvDim, 4));
    }, SMALL);
    await ctx.close();

    ctx = await launch();
    page = ctx.pages()[0] ?? (await ctx.newPage());
    await page.goto(PAGE);
    await ready(page);
    const r = await page.evaluate(async (SMALL) => {
      const { kv, kvTest } = window as unknown as G;
      const store = kv.createBrowserKVStore();
      const report = await store.open();
      const got = await store.get('persist');
      return { report, status: got.status, tier: got.status === 'hit' ? got.tier : null, doc: got.status === 'hit' ? got.meta.meta.docId : null,
        diff: got.status === 'hit' ? kvTest.maxDiff(got.layers, kvTest.layers(SMALL.layers, SMALL.tokens, SMALL.kvDim, 4)) : -1 };
    }, SMALL);
    await ctx.close();
    expect(r).toMatchObject({ report: { entries: 1, removedBlobs: [], droppedEntries: [] }, status: 'hit', tier: 'opfs', doc: 'story.txt' });
    expect(r.diff).toBeLessThan(13 * 2 ** -11);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a dedicated worker and the page share entries', async ({ page }) => {
  await page.goto(PAGE);
  await ready(page);
  const r = await page.evaluate(async ({ SMALL, BIG }) => {
    const { kv, kvTest } = window as unknown as G;
    await kv.createBrowserKVStore().clear();
    const put = await kvTest.worker({ op: 'put', id: 'w', seed: 5, dims: BIG, dtype: 'f16' });
    const workerGet = await kvTest.worker({ op: 'get', id: 'w', seed: 5, dims: BIG, fresh: true });
    const pageStore = kv.createBrowserKVStore();
    const pageGet = await pageStore.get('w');
    await pageStore.put({ id: 'p', modelId: 'm', dtype: 'f32', kvDim: SMALL.kvDim }, kvTest.layers(SMALL.layers, SMALL.tokens, SMALL.kvDim, 6));
    const fromPage = await kvTest.worker({ op: 'get', id: 'p', seed: 6, dims: SMALL, fresh: true });
    // The worker reads through a read-only sync access handle: a byte damaged in the file is found there too.
    const file = (await kvTest.files()).find((f) => f.startsWith('p.'))!;
    await kvTest.flipByte(file, 100);
    const damaged = await kvTest.worker({ op: 'get', id: 'p', seed: 6, dims: SMALL, fresh: true });
    return {
      put, workerGet, fromPage, damaged, filesAfter: await kvTest.files(),
      pageGet: { status: pageGet.status, diff: pageGet.status === 'hit' ? kvTest.maxDiff(pageGet.layers, kvTest.layers(BIG.layers, BIG.tokens, BIG.kvDim, 5)) : -1 },
    };
  }, { SMALL, BIG });
  expect(r.put.error).toBeUndefined();
  expect(r.workerGet).toMatchObject({ status: 'hit', tier: 'opfs' });
  expect(r.workerGet.diff).toBeLessThan(13 * 2 ** -11);
  expect(r.pageGet.status).toBe('hit');
  expect(r.pageGet.diff).toBe(r.workerGet.diff);
  expect(r.fromPage).toMatchObject({ status: 'hit', tier: 'opfs', diff: 0 });
  expect(r.damaged.status).toBe('corrupt');
  expect(r.filesAfter.filter((f) => f.startsWith('p.'))).toEqual([]);
  const t = r.workerGet.timing!;
  console.log(`worker: put 3 MiB f16 in ${r.put.ms.toFixed(1)} ms; get from OPFS ${t.ms.toFixed(1)} ms (read ${t.readMs.toFixed(1)}, check+decode (halves kept) ${t.decodeMs.toFixed(1)})`);
});
