/**
 * KVCache's host bookkeeping of positions, on a device that only records: after any mix of writes, growth and
 * truncation, the GPU's copy of the positions is what the host holds, though each upload sends only the rows
 * changed since the last (a decode step's one row, not the whole context); and `ascending` (which lets keyBounds
 * skip keys) is what a scan of every row says.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { KVCache } from '../../src/engine/model/kv-cache';
import { keyBounds } from '../../src/engine/attention-plan';
import { globals } from 'webgpu';

// GPUBufferUsage and the other WebGPU enums the cache names; no device is made.
Object.assign(globalThis, globals);

/** A device whose buffers are host arrays: writeBuffer and copies land in them, and uploads are counted. */
function recordingDevice() {
  const mem = new Map<object, Uint8Array>();
  let uploaded = 0;
  const device = {
    createBuffer(d: GPUBufferDescriptor) {
      const b = { size: d.size, destroy() { mem.delete(b); } };
      mem.set(b, new Uint8Array(d.size));
      return b;
    },
    createCommandEncoder() {
      const copies: (() => void)[] = [];
      return {
        copyBufferToBuffer(src: object, so: number, dst: object, dO: number, size: number) {
          copies.push(() => mem.get(dst)!.set(mem.get(src)!.subarray(so, so + size), dO));
        },
        finish: () => copies,
      };
    },
    queue: {
      submit(list: (() => void)[][]) { for (const c of list) c.forEach((f) => f()); },
      writeBuffer(b: object, offset: number, data: ArrayBuffer, dataOffset: number, size: number) {
        mem.get(b)!.set(new Uint8Array(data, dataOffset, size), offset);
        uploaded += size;
      },
    },
  };
  return {
    device: device as unknown as GPUDevice,
    /** The first n positions as the GPU holds them. */
    gpuPositions: (c: KVCache, n: number) => Array.from(new Int32Array(mem.get(c.kpos)!.buffer, 0, n)),
    takeUploaded() { const u = uploaded; uploaded = 0; return u; },
  };
}

/** What a scan of every row says: positions never decrease. */
const scanAscending = (c: KVCache) => c.positions.subarray(0, c.length).every((p, j, a) => j === 0 || p >= a[j - 1]);

test('a decode step uploads its one position, and the GPU holds every position the host does', () => {
  const r = recordingDevice();
  const c = new KVCache(r.device, 2, 8, 'f32', 16);
  c.setPositions(0, Int32Array.from({ length: 1000 }, (_, i) => i)); // grows 16 → 1024
  c.syncPositions();
  assert.equal(r.takeUploaded(), 4000, 'a prompt of 1000 rows uploads 1000 positions');
  for (let step = 0; step < 30; step++) {
    const row = c.length;
    c.setPositions(row, [c.positions[row - 1] + 1]); // the 25th step grows the cache to 2048 rows
    c.syncPositions();
    const sent = r.takeUploaded();
    if (row === 1024) assert.equal(sent, 1025 * 4, 'growth makes a new positions buffer, which gets every row');
    else assert.equal(sent, 4, `step ${step} uploads its own position alone, not ${sent / 4}`);
    assert.deepEqual(r.gpuPositions(c, c.length), Array.from(c.positions.subarray(0, c.length)));
  }
  c.syncPositions();
  assert.equal(r.takeUploaded(), 0, 'nothing changed, nothing sent');
  c.destroy();
});

test('after random writes, growth and truncation the GPU holds the host\'s positions, and ascending is what a scan says', () => {
  const r = recordingDevice();
  let seed = 7;
  const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) % n;
  const c = new KVCache(r.device, 1, 4, 'f16', 8);
  let ascendingSeen = 0, notSeen = 0;
  for (let i = 0; i < 400; i++) {
    const op = rand(10);
    if (op < 6) {
      // Append a run: mostly in order (decode, a link's chunks), now and then from an earlier position.
      const len = 1 + rand(op === 0 ? 40 : 3);
      const base = c.length ? c.positions[c.length - 1] + (rand(8) ? 1 : -5) : 0;
      c.setPositions(c.length, Int32Array.from({ length: len }, (_, j) => base + j));
    } else if (op < 8 && c.length) {
      // Overwrite rows inside, perhaps past the end too.
      const start = rand(c.length);
      c.setPositions(start, Int32Array.from({ length: 1 + rand(5) }, () => rand(300)));
    } else {
      c.truncate(rand(c.length + 1));
    }
    if (rand(3)) c.syncPositions();
    const want = scanAscending(c);
    assert.equal(c.ascending, want, `step ${i}: ascending`);
    if (want) ascendingSeen++;
    else notSeen++;
    const q = [rand(400)];
    assert.deepEqual(keyBounds(c.positions, c.length, q, 0, c.ascending), keyBounds(c.positions, c.length, q, 0), `step ${i}: the same key bounds as a scan gives`);
  }
  c.syncPositions();
  assert.deepEqual(r.gpuPositions(c, c.length), Array.from(c.positions.subarray(0, c.length)));
  assert.ok(ascendingSeen > 20 && notSeen > 20, `both cases met (${ascendingSeen} ascending, ${notSeen} not)`);
  c.destroy();
});
