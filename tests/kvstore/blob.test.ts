/** The KV cache blob format: round trips, f16 rounding, and detection of any damage. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { floatsToHalves, roundToHalf } from '../../src/engine/f16';
import { CorruptBlobError, crc32, decodeBlob, encodeBlob, payloadBytes, readBlobHeader, sameBytes, verifyBlob } from '../../src/kvstore';
import { crc32Bytewise } from '../../src/kvstore/crc32';
import { fakeLayers } from './helpers';

const meta = { id: 'c0ffee', modelId: 'stories260K', kvDim: 16 };

test('crc32 is CRC-32/IEEE', () => {
  assert.equal(crc32(new TextEncoder().encode('123456789')), 0xcbf43926);
  assert.equal(crc32(new Uint8Array()), 0);
  const b = new TextEncoder().encode('The quick brown fox jumps over the lazy dog');
  assert.equal(crc32(b), 0x414fa339);
  assert.equal(crc32(b.subarray(11), crc32(b.subarray(0, 11))), 0x414fa339, 'continues from an earlier value');
  assert.equal(crc32Bytewise(b), 0x414fa339);
});

test('crc32 reads words where it can: every start offset and length agrees with the bytewise reference', () => {
  const buf = new Uint8Array(4099);
  let x = 12345;
  for (let i = 0; i < buf.length; i++) buf[i] = (x = (Math.imul(x, 1103515245) + 12345) >>> 0) >>> 24;
  for (let off = 0; off < 8; off++) {
    for (const len of [0, 1, 3, 4, 5, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 4091]) {
      const s = buf.subarray(off, off + len);
      assert.equal(crc32(s), crc32Bytewise(s), `offset ${off}, ${len} bytes`);
      const cut = len >> 1 | 1;
      if (cut < len) assert.equal(crc32(s.subarray(cut), crc32(s.subarray(0, cut))), crc32Bytewise(s), `offset ${off}, ${len} bytes, continued at ${cut}`);
    }
  }
  // A flipped bit anywhere changes it.
  const s = buf.subarray(1, 1001);
  const want = crc32(s);
  for (const at of [0, 2, 3, 500, 997, 999]) {
    s[at] ^= 0x10;
    assert.notEqual(crc32(s), want, `bit flipped at ${at}`);
    s[at] ^= 0x10;
  }
});

test('f32 round trip is exact; header fields', () => {
  const layers = fakeLayers(3, 5, 16);
  const blob = encodeBlob(meta, layers, 'f32');
  const { meta: m, layers: out } = decodeBlob(blob);
  assert.deepEqual({ ...m, checksum: 0 }, { id: 'c0ffee', modelId: 'stories260K', dtype: 'f32', layers: 3, tokens: 5, kvDim: 16, checksum: 0, bytes: blob.length });
  assert.equal(blob.length, 60 + payloadBytes(3, 5, 16, 'f32'), '40 bytes + id (6) + model id (11), padded to 60');
  assert.equal(new TextDecoder().decode(blob.subarray(0, 4)), 'LKVC');
  out.forEach((l, i) => {
    assert.deepEqual(l.k, layers[i].k);
    assert.deepEqual(l.v, layers[i].v);
  });
  assert.equal(readBlobHeader(blob).checksum, verifyBlob(blob).checksum);
});

test('f16 round trip equals rounding to half; odd sizes are padded; unicode ids', () => {
  for (const [tokens, kvDim] of [[5, 16], [3, 3], [1, 1]]) {
    const layers = fakeLayers(2, tokens, kvDim, 7);
    const blob = encodeBlob({ id: 'ünï-😀', modelId: 'модель', kvDim }, layers, 'f16');
    assert.equal(blob.length % 4, 0);
    const { meta: m, layers: out } = decodeBlob(blob);
    assert.equal(m.id, 'ünï-😀');
    assert.equal(m.modelId, 'модель');
    assert.equal(m.dtype, 'f16');
    out.forEach((l, i) => {
      // Kept as the stored halves (what an upload takes), widened to the same values when read.
      assert.deepEqual(l.halves?.k, floatsToHalves(layers[i].k));
      assert.deepEqual(l.halves?.v, floatsToHalves(layers[i].v));
      assert.deepEqual(l.k, roundToHalf(layers[i].k));
      assert.deepEqual(l.v, roundToHalf(layers[i].v));
      for (let j = 0; j < l.k.length; j++) {
        const want = layers[i].k[j];
        assert.ok(Math.abs(l.k[j] - want) <= Math.max(Math.abs(want) * 2 ** -11, 2 ** -25), `${want} -> ${l.k[j]}`);
      }
    });
  }
  // Half the payload of f32.
  assert.equal(payloadBytes(4, 10, 8, 'f16') * 2, payloadBytes(4, 10, 8, 'f32'));
});

test('rows kept as halves go into an f16 blob as they are, never widened on the host, and into an f32 one widened', () => {
  const layers = fakeLayers(2, 5, 16, 9);
  const halves = layers.map((l) => ({ k: floatsToHalves(l.k), v: floatsToHalves(l.v) }));
  const untouched = halves.map((h) => ({
    halves: h,
    get k(): Float32Array { throw new Error('read k of rows kept as halves'); },
    get v(): Float32Array { throw new Error('read v of rows kept as halves'); },
  }));
  // The same bytes as encoding the f32 rows they round from.
  assert.deepEqual(encodeBlob(meta, untouched, 'f16'), encodeBlob(meta, layers, 'f16'));
  const rounded = layers.map((l) => ({ k: roundToHalf(l.k), v: roundToHalf(l.v) }));
  assert.deepEqual(encodeBlob(meta, halves.map((h, i) => ({ halves: h, ...rounded[i] })), 'f32'), encodeBlob(meta, rounded, 'f32'));
});

test('every single-byte change, truncation or extension is detected', () => {
  const blob = encodeBlob(meta, fakeLayers(2, 2, 16, 3), 'f16');
  for (let i = 0; i < blob.length; i++) {
    for (const flip of [0x01, 0x80]) {
      const bad = blob.slice();
      bad[i] ^= flip;
      assert.throws(() => decodeBlob(bad), CorruptBlobError, `byte ${i} ^ ${flip}`);
    }
  }
  assert.throws(() => decodeBlob(blob.subarray(0, blob.length - 4)), /blob has \d+ bytes, its header says \d+/);
  assert.throws(() => decodeBlob(Uint8Array.from([...blob, 0, 0, 0, 0])), CorruptBlobError);
  assert.throws(() => decodeBlob(blob.subarray(0, 10)), /too short/);
  assert.throws(() => decodeBlob(new TextEncoder().encode('PK\x03\x04 not a cache blob at all, just some other bytes')), /bad magic/);
  const payloadFlip = blob.slice();
  payloadFlip[blob.length - 1] ^= 4;
  assert.throws(() => decodeBlob(payloadFlip), /payload checksum mismatch/);
  const v2 = blob.slice();
  v2[4] = 2;
  assert.throws(() => decodeBlob(v2), /format version 2 is not supported/);
});

test('a write\'s read-back check: sameBytes sees any changed byte, aligned or not, and any length change; decoding it then skips only the payload checksum', () => {
  const blob = encodeBlob(meta, fakeLayers(2, 5, 16, 3), 'f16');
  assert.equal(sameBytes(blob, blob.slice()), true);
  // Unaligned views of the same bytes (the byte loop), beside aligned ones (four at a time).
  const shifted = new Uint8Array(blob.length + 1);
  shifted.set(blob, 1);
  assert.equal(sameBytes(shifted.subarray(1), blob), true);
  for (const i of [0, 1, 37, blob.length - 2, blob.length - 1]) {
    for (const view of [(b: Uint8Array) => b, (b: Uint8Array) => { const s = new Uint8Array(b.length + 1); s.set(b, 1); return s.subarray(1); }]) {
      const bad = blob.slice();
      bad[i] ^= 0x10;
      assert.equal(sameBytes(view(bad), blob), false, `byte ${i}`);
    }
  }
  assert.equal(sameBytes(blob.subarray(0, blob.length - 4), blob), false);
  assert.equal(sameBytes(Uint8Array.from([...blob, 0]), blob), false);
  // A payload the caller vouches for decodes to the same rows without its checksum; the header is still checked.
  const payloadFlip = blob.slice();
  payloadFlip[blob.length - 1] ^= 4;
  assert.throws(() => decodeBlob(payloadFlip), /payload checksum mismatch/);
  assert.doesNotThrow(() => decodeBlob(payloadFlip, { payloadChecked: true }));
  assert.deepEqual(decodeBlob(blob, { payloadChecked: true }).layers.map((l) => [...l.halves!.k]), decodeBlob(blob).layers.map((l) => [...l.halves!.k]));
  const headerFlip = blob.slice();
  headerFlip[20] ^= 1;
  assert.throws(() => decodeBlob(headerFlip, { payloadChecked: true }), CorruptBlobError);
});

test('encodeBlob refuses inconsistent input', () => {
  const layers = fakeLayers(2, 3, 16);
  assert.throws(() => encodeBlob({ ...meta, kvDim: 5 }, layers, 'f32'), /not whole rows of 5/);
  assert.throws(() => encodeBlob(meta, [layers[0], { k: layers[1].k, v: layers[1].v.subarray(1) }], 'f32'), /layer 1 has/);
  assert.throws(() => encodeBlob(meta, [], 'f32'), /no layers/);
  assert.throws(() => encodeBlob(meta, layers, 'bf16' as 'f32'), /dtype must be f32 or f16/);
});
