/**
 * KVStore's GPU tier keeps chunks in shared slabs: rows placed where a run of free rows fits, slabs sized to the
 * budget and never above it, least-recently-used entries evicted (their runs merged with free neighbours), held
 * chunks never evicted and their rows not reused until released, another shape taken only once the tier is empty,
 * and a slab the GPU has no memory for not made (the tier keeps to the slabs it has).
 * And a link's RowWriter places rows from slabs (kv_gather) exactly as it places the same rows from the host,
 * f32 or halves, whole or mixed with host rows, over several slabs.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openModel } from '../../src/node/session';
import { defaultTierBudget, GpuTier } from '../../src/kvstore/gpu-tier';
import { halfRows, floatsToHalves } from '../../src/engine/f16';
import type { CompiledChunk, LayerRows } from '../../src/types/kv';
import { fakeLayers } from './helpers';
import { until } from '../helpers/until';

const s = await openModel(join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin'));
after(() => s.close());
const c = s.model.config;
const L = c.nLayers, kvDim = c.nKvHeads * c.headDim;
const device = s.engine.gpu.device;

function chunk(id: string, rows: number, seed: number, half = false): CompiledChunk {
  let layers: LayerRows[] = fakeLayers(L, rows, kvDim, seed).map((l) => ({ k: l.k.map((x) => x / 100), v: l.v.map((x) => x / 100) }));
  if (half) layers = layers.map((l) => halfRows(floatsToHalves(l.k), floatsToHalves(l.v)));
  return { id, variant: { kind: 'plain' }, tokens: Array.from({ length: rows }, (_, i) => i), positions: Array.from({ length: rows }, (_, i) => i), layers };
}

/** Bytes of `rows` rows in every layer's keys and values. */
const rowBytes = (rows: number, half = false) => 2 * L * rows * kvDim * (half ? 2 : 4);

test('slabs: first fit, the budget kept, LRU eviction merging free runs, a chunk larger than a slab refused', async () => {
  // Room for 30 rows: one slab of 30.
  const tier = new GpuTier(device, rowBytes(30));
  const [a, b, cc] = await Promise.all([tier.put(chunk('a', 10, 1)), tier.put(chunk('b', 10, 2)), tier.put(chunk('c', 10, 3))]);
  assert.deepEqual([a, b, cc].map((x) => x.gpu?.[0].row0), [0, 10, 20]);
  assert.ok([a, b, cc].every((x) => x.gpu![0].k === a.gpu![0].k), 'one slab');
  assert.equal(tier.stats().slabs, 1);
  assert.ok(tier.stats().slabBytes <= tier.stats().budget);
  tier.get('a'); // a is now used more recently than c
  tier.delete('b');
  // 12 rows: no free run fits (b left 10), so the least recently used (c) goes; its run joins b's.
  const d = await tier.put(chunk('d', 12, 4));
  assert.equal(d.gpu?.[0].row0, 10);
  assert.deepEqual([tier.has('a'), tier.has('c'), tier.has('d')], [true, false, true]);
  // Larger than a slab: linked from the host instead.
  assert.equal((await tier.put(chunk('e', 31, 5))).gpu, undefined);
  assert.equal(tier.has('e'), false);
  // Rows read back from the slab are the chunk's.
  const got = new Float32Array(await s.engine.ops.d.read(d.gpu![2].v, 10 * kvDim * 4, 12 * kvDim * 4));
  assert.deepEqual(got, d.layers[2].v);
  tier.clear();
  assert.deepEqual([tier.stats().slabs, tier.stats().bytes], [0, 0]);
});

test('held chunks are not evicted, and their rows are not reused before release', async () => {
  const tier = new GpuTier(device, rowBytes(20));
  const a = await tier.put(chunk('a', 10, 1));
  await tier.put(chunk('b', 10, 2));
  tier.hold(a);
  // a is the least recently used, but held: b goes instead.
  const x = await tier.put(chunk('x', 10, 3));
  assert.deepEqual([tier.has('a'), tier.has('b'), x.gpu?.[0].row0], [true, false, 10]);
  // a dropped while held: its rows stay taken (x can't be evicted either while held)...
  tier.hold(x);
  tier.delete('a');
  assert.equal((await tier.put(chunk('y', 10, 4))).gpu, undefined, 'no rows free while a and x are held');
  // ...until its last release.
  tier.release(a);
  assert.equal((await tier.put(chunk('z', 10, 5))).gpu?.[0].row0, 0);
  tier.release(x);
  tier.clear();
});

test('another shape (halves after f32) waits for an empty tier; a budget of many slabs is shared evenly', async () => {
  const tier = new GpuTier(device, rowBytes(20000));
  const a = await tier.put(chunk('a', 10, 1));
  assert.equal((await tier.put(chunk('h', 10, 2, true))).gpu, undefined, 'f32 slabs hold no halves');
  tier.delete(a.id);
  const h = await tier.put(chunk('h', 10, 2, true));
  assert.equal(h.gpu?.[0].f16, true);
  assert.equal(tier.stats().bytes, rowBytes(10, true));
  // 40000 rows of halves: 5 slabs of 8000, not 4 of 8192 and a remainder.
  assert.equal(tier.stats().slabBytes, rowBytes(8000, true));
  tier.clear();
});

for (const half of [false, true]) {
  test(`a link places slab rows as it places host rows (${half ? 'halves' : 'f32'}): whole, mixed, over two slabs`, async () => {
    // Slabs of 24 rows: the chunks of 9, 7 and 12 rows take two.
    const tier = new GpuTier(device, rowBytes(48, half), 24);
    const chunks = [chunk('p', 9, 11, half), chunk('q', 7, 12, half), chunk('r', 12, 13, half)];
    const onTier = await Promise.all(chunks.map((x) => tier.put(x)));
    assert.equal(tier.stats().slabs, 2);
    const blocks = [{ start: 0, positions: [0, 1, 2, 3, 4, 5, 6, 7, 8] }, { start: 9, positions: [900, 901, 902, 903, 904, 905, 906] }, { start: 16, positions: Array.from({ length: 12 }, (_, i) => 40 + 3 * i) }];
    const place = async (pick: (i: number, l: number) => LayerRows | NonNullable<CompiledChunk['gpu']>[number]) => {
      const cache = s.engine.newCache(32);
      const w = s.engine.rowWriter(cache, blocks);
      for (let l = 0; l < L; l++) w.layer(l, blocks.map((_, i) => pick(i, l)));
      const out: Float32Array[] = [];
      for (let l = 0; l < L; l++) {
        const r = await s.engine.readRows(cache, l, 0, 28);
        out.push(r.k, r.v);
      }
      cache.destroy();
      return out;
    };
    const host = await place((i, l) => chunks[i].layers[l]);
    assert.deepEqual(await place((i, l) => onTier[i].gpu![l]), host, 'every block from the slabs');
    assert.deepEqual(await place((i, l) => (i === 1 ? chunks[i].layers[l] : onTier[i].gpu![l])), host, 'host rows between slab rows');
    tier.clear();
  });
}

test('a slab the GPU has no memory for: the tier keeps to the slabs it has, evicting instead', async () => {
  // The device's answers, but every slab after the first refused as out of memory.
  let slabs = 0;
  const scopes: string[] = [];
  const oomAfterOne = {
    limits: device.limits, queue: device.queue, createBuffer: (d: GPUBufferDescriptor) => device.createBuffer(d),
    pushErrorScope: (f: GPUErrorFilter) => void scopes.push(f),
    popErrorScope: async () => (scopes.pop() === 'out-of-memory' && slabs++ >= 1 ? ({ message: 'Out of memory' } as GPUError) : null),
  } as unknown as GPUDevice;
  const tier = new GpuTier(oomAfterOne, rowBytes(30), 10);
  const a = await tier.put(chunk('a', 10, 1));
  const b = await tier.put(chunk('b', 10, 2));
  assert.deepEqual([a.gpu?.[0].row0, b.gpu?.[0].row0], [0, 0], 'b takes a\'s rows in the one slab');
  assert.deepEqual([tier.has('a'), tier.has('b'), tier.stats().slabs, slabs], [false, true, 1, 2]);
  // No second try: the next chunk evicts too.
  const c = await tier.put(chunk('c', 10, 3));
  assert.deepEqual([c.gpu?.[0].row0, tier.has('b'), slabs], [0, false, 2]);
  tier.clear();
});

test('a put or get that holds keeps the chunk from the very next put, however the requests interleave', async () => {
  // Room for one chunk: two requests at once, the first holding what it placed before the second puts.
  const tier = new GpuTier(device, rowBytes(10));
  const [a, b] = await Promise.all([tier.put(chunk('a', 10, 1), { hold: true }), tier.put(chunk('b', 10, 2))]);
  assert.deepEqual([a.gpu?.[0].row0, b.gpu, tier.has('a')], [0, undefined, true], 'b could not evict a');
  tier.release(a);
  // The same for a chunk found on the GPU.
  const found = tier.get('a', { hold: true })!;
  assert.equal((await tier.put(chunk('c', 10, 3))).gpu, undefined);
  tier.release(found);
  assert.equal((await tier.put(chunk('c', 10, 3))).gpu?.[0].row0, 0, 'released: evicted for c');
  tier.clear();
});

test('rows go up through the given upload: an entry only once they are up; a delete, a clear or a failure meanwhile frees them', async () => {
  // An upload that waits to be let go, so the test can act while rows are going up.
  const gates: (() => void)[] = [];
  const calls: number[] = [];
  let fail = false;
  const upload = async (writes: { dst: GPUBuffer; offset: number; data: ArrayBufferView }[]) => {
    calls.push(writes.length);
    await new Promise<void>((go) => gates.push(go));
    if (fail) throw new Error('device lost while uploading');
    await s.engine.upload(writes);
  };
  /** Waits until the upload has been called `n` times in all (a fixed sleep fell short on a busy host). */
  const uploading = (n: number) => until(() => calls.length >= n, `upload call ${n}`);
  const letGo = async () => {
    await until(() => gates.length > 0, 'an upload waiting');
    gates.shift()!();
  };
  const tier = new GpuTier(device, rowBytes(20), undefined, upload);
  // A put's keys and values, every layer's, in one call; not found until they are up.
  const putting = tier.put(chunk('a', 10, 1));
  await uploading(1);
  assert.deepEqual([calls, tier.has('a'), tier.get('a')], [[2 * L], false, undefined]);
  await letGo();
  const a = await putting;
  assert.equal(tier.has('a'), true);
  assert.deepEqual(new Float32Array(await s.engine.ops.d.read(a.gpu![1].k, 0, 10 * kvDim * 4)), a.layers[1].k);
  // Deleted while going up: never an entry, and its rows are free for the next chunk.
  const b = tier.put(chunk('b', 10, 2));
  await uploading(2);
  tier.delete('b');
  await letGo();
  assert.equal((await b).gpu, undefined);
  assert.equal(tier.has('b'), false);
  const cc = tier.put(chunk('c', 10, 3));
  await letGo();
  assert.equal((await cc).gpu?.[0].row0, 10, 'b\'s rows were freed');
  // A failed upload: the put fails (it evicted a, the least recently used, for its rows), its rows are freed, and
  // the tier goes on: the next chunk takes them, where it would otherwise have evicted c.
  fail = true;
  const d = tier.put(chunk('d', 10, 4));
  const dFailed = assert.rejects(d, /device lost while uploading/);
  await letGo();
  await dFailed;
  fail = false;
  assert.deepEqual([tier.has('a'), tier.has('d')], [false, false]);
  const e = tier.put(chunk('e', 10, 5));
  await letGo();
  assert.deepEqual([(await e).gpu?.[0].row0, tier.has('c')], [0, true]);
  // Cleared while going up: the slabs stay until the upload is done, then go with the entry never made.
  const f = tier.put(chunk('f', 10, 6));
  await uploading(6);
  tier.clear();
  assert.equal(tier.stats().slabs, 1, 'the slab is still being written');
  await letGo();
  assert.equal((await f).gpu, undefined);
  assert.deepEqual([tier.has('f'), tier.stats().slabs, tier.stats().bytes], [false, 0, 0]);
});

test('Engine.upload through mapped staging buffers, in pieces, writes what writeBuffer writes', async () => {
  const d = s.engine.ops.d;
  const way = d.uploadWay;
  try {
    for (const w of ['mapped', 'write'] as const) {
      d.uploadWay = w;
      // 5 MiB pieces, so 8 MiB batches take one piece each; a small one after.
      const pieces = [5 * 2 ** 20, 5 * 2 ** 20, 4096].map((n, i) => Float32Array.from({ length: n / 4 }, (_, j) => (i + 1) * 1e6 + j));
      const dst = device.createBuffer({ size: pieces.reduce((t, p) => t + p.byteLength, 0), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC });
      let at = 0;
      await s.engine.upload(pieces.map((data) => ({ dst, offset: (at += data.byteLength) - data.byteLength, data })));
      const got = new Float32Array(await d.read(dst, 0, dst.size));
      assert.deepEqual(got.subarray(got.length - 1024), pieces[2], `${w}: the last piece`);
      assert.equal(got[0], 1e6);
      assert.equal(got[pieces[0].length], 2e6, `${w}: the second piece at its offset`);
      dst.destroy();
    }
  } finally {
    d.uploadWay = way;
  }
});

test('the default budget: 40K tokens of the model\'s rows on a real GPU, within 256 MiB and 1 GiB; 256 MiB on a CPU adapter', () => {
  const MiB = 2 ** 20;
  // SmolLM2-135M's f16 rows: 30 layers × 3 kv heads × 64 dims, keys and values, 2 bytes each.
  const smollm2 = 2 * 30 * 3 * 64 * 2;
  assert.equal(defaultTierBudget(true, smollm2), 40960 * smollm2);
  assert.equal(defaultTierBudget(true, smollm2) / MiB, 900);
  // Llama-3.2-1B's f16 rows (16 layers × 8 × 64): capped at 1 GiB, 32K tokens of them.
  assert.equal(defaultTierBudget(true, 2 * 16 * 8 * 64 * 2), 1024 * MiB);
  // stories260K's f32 rows: the 256 MiB floor.
  assert.equal(defaultTierBudget(true, 2 * 5 * 4 * 8 * 4), 256 * MiB);
  assert.equal(defaultTierBudget(false, smollm2), 256 * MiB);
});

test('setBudget: the same budget keeps the tier; another empties it and sizes slabs to it; a budget of nothing is refused', async () => {
  const tier = new GpuTier(device, rowBytes(20));
  await tier.put(chunk('a', 10, 1));
  tier.setBudget(rowBytes(20));
  assert.equal(tier.has('a'), true);
  tier.setBudget(rowBytes(40));
  assert.deepEqual([tier.has('a'), tier.stats().slabs, tier.stats().budget], [false, 0, rowBytes(40)]);
  // Four chunks of 10 rows now fit where two did.
  for (const [i, id] of ['b', 'c', 'd', 'e'].entries()) await tier.put(chunk(id, 10, 2 + i));
  assert.deepEqual(['b', 'c', 'd', 'e'].map((id) => tier.has(id)), [true, true, true, true]);
  assert.throws(() => tier.setBudget(0), /a budget of 0 bytes/);
  tier.clear();
});

test('a chunk already in the tier is not put again: the same GPU copy back, no upload, used more recently', async () => {
  let uploads = 0;
  const tier = new GpuTier(device, rowBytes(20), undefined, async (writes) => {
    uploads++;
    for (const w of writes) device.queue.writeBuffer(w.dst, w.offset, w.data.buffer, w.data.byteOffset, w.data.byteLength);
  });
  const a = await tier.put(chunk('a', 10, 1));
  await tier.put(chunk('b', 10, 2));
  const again = await tier.put(chunk('a', 10, 1));
  assert.deepEqual([uploads, again.gpu === a.gpu], [2, true]);
  // a is now the more recent: a third chunk evicts b.
  await tier.put(chunk('c', 10, 3));
  assert.deepEqual([tier.has('a'), tier.has('b'), tier.has('c')], [true, false, true]);
  tier.clear();
});
