/**
 * Host-to-GPU uploads (Dispatcher.upload), both ways: writeBuffer, and staging buffers the host fills while mapped,
 * copied on the GPU. Pieces land where they belong in several buffers, in order with the work recorded around them
 * (a copy recorded before an upload sees the old bytes), end-to-end pieces are copied in one piece, and a staging
 * buffer is mapped again and reused once the GPU is done with it. A link's host rows written either way give the
 * same cache, byte for byte. Engine.tuneUpload: on the 'cpu' profile nothing is timed and writeBuffer stays; on the
 * 'gpu' profile both ways are timed and the faster kept.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { harness } from '../helpers/gpu';
import { openModel } from '../../src/node/session';
import type { KVCache } from '../../src/engine/model/kv-cache';

const h = await harness();
const d = h.ops.d;
const dev = h.gpu.device;

/** Every byte a buffer holds. */
const bytesOf = async (b: GPUBuffer) => new Uint8Array(await d.read(b, 0, b.size));
const pattern = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed * 7) & 255);

/** Counts createBuffer calls while `fn` runs. */
async function counting<T>(fn: () => Promise<T>): Promise<{ value: T; created: number }> {
  const real = dev.createBuffer.bind(dev);
  let created = 0;
  dev.createBuffer = (desc: GPUBufferDescriptor) => (created++, real(desc));
  try {
    return { value: await fn(), created };
  } finally {
    dev.createBuffer = real;
  }
}

/** Runs `fn` with uploads going `way`, then back to writeBuffer (the harness's default). */
async function uploading<T>(way: 'write' | 'mapped', fn: () => Promise<T>): Promise<T> {
  d.uploadWay = way;
  try {
    return await fn();
  } finally {
    d.uploadWay = 'write';
  }
}

for (const way of ['write', 'mapped'] as const) {
  test(`${way}: pieces land in their buffers, after work recorded before them`, () => uploading(way, async () => {
    const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const a = h.upload(pattern(256, 1)), b = h.upload(pattern(128, 2));
    const snapshot = dev.createBuffer({ size: 256, usage });
    // Recorded before the upload: must copy a's old bytes.
    d.commandEncoder().copyBufferToBuffer(a, 0, snapshot, 0, 256);
    const p1 = pattern(64, 3), p2 = pattern(32, 4), p3 = pattern(16, 5), p4 = pattern(48, 6);
    // p1 and p2 lie end to end in a; p3 goes elsewhere in a; p4 into b.
    d.upload([{ dst: a, offset: 16, data: p1 }, { dst: a, offset: 80, data: p2 }, { dst: a, offset: 200, data: p3 }, { dst: b, offset: 64, data: p4 }]);
    const wantA = pattern(256, 1);
    wantA.set(p1, 16), wantA.set(p2, 80), wantA.set(p3, 200);
    const wantB = pattern(128, 2);
    wantB.set(p4, 64);
    assert.deepEqual(await bytesOf(snapshot), pattern(256, 1), 'work recorded before the upload saw the old bytes');
    assert.deepEqual(await bytesOf(a), wantA);
    assert.deepEqual(await bytesOf(b), wantB);
    for (const x of [a, b, snapshot]) x.destroy();
  }));
}

test('mapped: a staging buffer is mapped again once copied from, and reused', () => uploading('mapped', async () => {
  const dst = h.upload(new Uint8Array(4096));
  const first = await counting(async () => {
    d.upload([{ dst, offset: 0, data: pattern(4096, 7) }]);
    return bytesOf(dst);
  });
  assert.deepEqual(first.value, pattern(4096, 7));
  // The first upload makes a staging buffer (and the read its own); once copied from, it is mapped again.
  await d.uploadsSettled();
  const second = await counting(async () => {
    d.upload([{ dst, offset: 0, data: pattern(4096, 8) }]);
    return bytesOf(dst);
  });
  assert.deepEqual(second.value, pattern(4096, 8));
  assert.equal(second.created, 0, 'the second upload reused the first one\'s staging buffer');
  assert.ok(first.created >= 1);
  dst.destroy();
}));

test('mapped: uploads that wait for room (a link\'s layers) reuse their staging buffers; a loop that never waits makes one each', () => uploading('mapped', async () => {
  const dst = h.upload(new Uint8Array(8192));
  // An earlier link's staging buffers, too small for these uploads, fill the pool: they must make way.
  for (let i = 0; i < 6; i++) {
    d.upload([{ dst, offset: 0, data: pattern(256, i) }]);
    d.flush();
  }
  await d.uploadsSettled();
  // A loop like a link's: upload, submit, and no other await in between.
  const waiting = await counting(async () => {
    for (let i = 0; i < 12; i++) {
      await d.uploadRoom();
      d.upload([{ dst, offset: 0, data: pattern(8192, i) }]);
      d.flush();
    }
    return bytesOf(dst);
  });
  assert.deepEqual(waiting.value, pattern(8192, 11), 'the last upload landed');
  // Three staging buffers in flight at most, and the read's own buffer.
  assert.ok(waiting.created <= 4, `${waiting.created} buffers made for 12 uploads`);
  await d.uploadsSettled();
  const never = await counting(async () => {
    for (let i = 0; i < 12; i++) {
      d.upload([{ dst, offset: 0, data: pattern(8192, i) }]);
      d.flush();
    }
    return bytesOf(dst);
  });
  assert.deepEqual(never.value, pattern(8192, 11));
  assert.ok(never.created >= 8, `without waiting, ${never.created} buffers made for 12 uploads`);
  await d.uploadsSettled();
  dst.destroy();
}));

test('writeBuffer uploads never wait for room', async () => {
  d.uploadWay = 'write';
  let done = false;
  const room = d.uploadRoom().then(() => (done = true));
  await Promise.resolve();
  assert.ok(done, 'resolved at once');
  await room;
});

const s = await openModel(join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin'));
after(() => s.close());

test('a link\'s host rows written by mapped staging give the cache writeBuffer gives, byte for byte', async () => {
  const e = s.engine;
  const prompt = s.model.tokenizer.encode('Lily had a red ball and a blue kite', { addBos: true });
  const src = e.newCache(prompt.length);
  const rows = await e.exportRows(src, await e.prefill(src, prompt, undefined, { logits: 'none', capturePreRopeK: true }), 0, prompt.length);
  const at = Array.from({ length: prompt.length }, (_, i) => 100 + i);
  const caches: KVCache[] = [];
  for (const way of ['write', 'mapped'] as const) {
    e.ops.d.uploadWay = way;
    const c = e.newCache(prompt.length + 8);
    // Two blocks, as a link of two chunks places them.
    const half = prompt.length >> 1;
    const w = e.rowWriter(c, [{ start: 0, positions: at.slice(0, half) }, { start: half, positions: at.slice(half) }]);
    for (let l = 0; l < e.config.nLayers; l++) {
      w.layer(l, [0, 1].map((b) => {
        const [a, z] = b ? [half, prompt.length] : [0, half];
        const W = e.model!.kvDim;
        return { k: rows[l].k.slice(a * W, z * W), v: rows[l].v.slice(a * W, z * W) };
      }));
    }
    await e.sync();
    caches.push(c);
  }
  e.ops.d.uploadWay = 'write';
  for (let l = 0; l < e.config.nLayers; l++) {
    const [x, y] = await Promise.all(caches.map((c) => e.readRows(c, l, 0, prompt.length)));
    assert.deepEqual(y.k, x.k, `layer ${l} keys`);
    assert.deepEqual(y.v, x.v, `layer ${l} values`);
    assert.ok(x.k.some((v) => v !== 0), 'rows were written');
  }
  for (const c of [src, ...caches]) c.destroy();
});

test('tuneUpload: nothing on the cpu profile; on the gpu profile both ways timed and the faster kept', async () => {
  const e = s.engine;
  const saved = e.ops.matmulProfile;
  try {
    e.ops.matmulProfile = 'cpu';
    assert.equal(await e.tuneUpload(), null);
    assert.equal(e.ops.d.uploadWay, 'write');
    e.ops.matmulProfile = 'gpu';
    const t = (await e.tuneUpload({ bytes: 4 << 20, reps: 2 }))!;
    assert.ok(t.gbPerS.write > 0 && Number.isFinite(t.gbPerS.write) && t.gbPerS.mapped > 0 && Number.isFinite(t.gbPerS.mapped), JSON.stringify(t.gbPerS));
    assert.equal(t.chosen, t.gbPerS.mapped > t.gbPerS.write * 1.1 ? 'mapped' : 'write');
    assert.equal(e.ops.d.uploadWay, t.chosen);
    assert.equal(t.bytes, 4 << 20);
  } finally {
    e.ops.matmulProfile = saved;
    e.ops.d.uploadWay = 'write';
  }
});
