/**
 * The on-disk form of one compiled chunk cache (format version 1).
 *
 * All numbers little-endian. Header (40 bytes, then two strings, then zero
 * padding to a multiple of 4 bytes):
 *
 *   off  size  field
 *     0     4  magic "LKVC"
 *     4     2  format version (1)
 *     6     1  dtype: 0 = f32, 1 = f16
 *     7     1  reserved, 0
 *     8     4  header length H in bytes (the payload starts there; H % 4 == 0)
 *    12     4  layers
 *    16     4  tokens (rows)
 *    20     4  kvDim
 *    24     4  payload length in bytes
 *    28     4  CRC-32 of the payload
 *    32     4  CRC-32 of the header bytes [0, H) with this field zeroed
 *    36     2  byte length of the cache id (UTF-8)
 *    38     2  byte length of the model id (UTF-8)
 *    40        cache id, model id, zero padding
 *
 * Payload: for each layer, K then V, each `tokens * kvDim` values (keys before
 * RoPE), f32 or IEEE half (two halves per u32, as `pack2x16float` packs them),
 * each array zero-padded to a multiple of 4 bytes.
 */
import { layerValues, type LayerRows } from '../types/kv';
import { f32ArrayToF16, halfRows } from '../engine';
import { crc32 } from './crc32';
import { CorruptBlobError, type KvDtype } from './types';

export const BLOB_MAGIC = 0x43564b4c; // "LKVC" read as a little-endian u32
export const BLOB_VERSION = 1;
const FIXED = 40;

export interface BlobMeta {
  id: string;
  modelId: string;
  dtype: KvDtype;
  layers: number;
  tokens: number;
  kvDim: number;
  /** CRC-32 of the payload. */
  checksum: number;
  /** Length of the whole blob. */
  bytes: number;
}

if (new Uint8Array(Uint16Array.of(1).buffer)[0] !== 1) throw new Error('KVStore blobs need a little-endian platform');

const align4 = (n: number) => (n + 3) & ~3;
const elemBytes = (dtype: KvDtype) => (dtype === 'f16' ? 2 : 4);
const arrayBytes = (tokens: number, kvDim: number, dtype: KvDtype) => align4(tokens * kvDim * elemBytes(dtype));

/** Payload length of a cache of these dimensions. */
export function payloadBytes(layers: number, tokens: number, kvDim: number, dtype: KvDtype): number {
  return layers * 2 * arrayBytes(tokens, kvDim, dtype);
}

/** The blob of one chunk cache. `layers[l].k` / `.v` are `[tokens, kvDim]` f32; an f16 blob copies rows kept as halves as they are. */
export function encodeBlob(meta: { id: string; modelId: string; kvDim: number }, layers: LayerRows[], dtype: KvDtype): Uint8Array {
  const { kvDim } = meta;
  if (dtype !== 'f32' && dtype !== 'f16') throw new Error(`encodeBlob: dtype must be f32 or f16, not ${dtype}`);
  if (!Number.isInteger(kvDim) || kvDim < 1) throw new Error(`encodeBlob: bad kvDim ${kvDim}`);
  if (layers.length < 1) throw new Error('encodeBlob: no layers');
  const n = layerValues(layers[0]);
  if (n % kvDim) throw new Error(`encodeBlob: ${n} values are not whole rows of ${kvDim}`);
  const tokens = n / kvDim;
  // Halves are copied only into an f16 blob; an f32 blob of such rows widens them.
  const rows = layers.map((l) => (dtype === 'f16' && l.halves ? l.halves : { k: l.k, v: l.v }));
  rows.forEach(({ k, v }, l) => {
    if (k.length !== n || v.length !== n) throw new Error(`encodeBlob: layer ${l} has ${k.length}/${v.length} values, expected ${n}`);
  });
  const te = new TextEncoder();
  const id = te.encode(meta.id);
  const model = te.encode(meta.modelId);
  if (id.length > 0xffff || model.length > 0xffff) throw new Error('encodeBlob: id or model id too long');
  const H = align4(FIXED + id.length + model.length);
  const arr = arrayBytes(tokens, kvDim, dtype);
  const payload = payloadBytes(layers.length, tokens, kvDim, dtype);
  const out = new Uint8Array(H + payload);
  const dv = new DataView(out.buffer);
  let off = H;
  for (const { k, v } of rows) {
    for (const a of [k, v]) {
      if (dtype === 'f32' || a instanceof Uint16Array) out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), off);
      else f32ArrayToF16(a, new Uint16Array(out.buffer, off, n));
      off += arr;
    }
  }
  dv.setUint32(0, BLOB_MAGIC, true);
  dv.setUint16(4, BLOB_VERSION, true);
  dv.setUint8(6, dtype === 'f16' ? 1 : 0);
  dv.setUint32(8, H, true);
  dv.setUint32(12, layers.length, true);
  dv.setUint32(16, tokens, true);
  dv.setUint32(20, kvDim, true);
  dv.setUint32(24, payload, true);
  dv.setUint32(28, crc32(out.subarray(H)), true);
  dv.setUint16(36, id.length, true);
  dv.setUint16(38, model.length, true);
  out.set(id, FIXED);
  out.set(model, FIXED + id.length);
  dv.setUint32(32, crc32(out.subarray(0, H)), true);
  return out;
}

/** The header of a blob, checked (magic, version, header checksum, sizes), without reading the payload. */
export function readBlobHeader(bytes: Uint8Array): BlobMeta {
  const bad = (why: string): never => {
    throw new CorruptBlobError(why);
  };
  if (bytes.length < FIXED) bad(`${bytes.length} bytes is too short for a KV cache blob`);
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (dv.getUint32(0, true) !== BLOB_MAGIC) bad('not a LegoKV cache blob (bad magic)');
  const version = dv.getUint16(4, true);
  if (version !== BLOB_VERSION) bad(`format version ${version} is not supported (expected ${BLOB_VERSION})`);
  const dt = dv.getUint8(6);
  if (dt > 1) bad(`unknown dtype code ${dt}`);
  const H = dv.getUint32(8, true);
  const idLen = dv.getUint16(36, true);
  const modelLen = dv.getUint16(38, true);
  if (H % 4 || H !== align4(FIXED + idLen + modelLen) || H > bytes.length) bad(`bad header length ${H}`);
  const header = bytes.slice(0, H);
  new DataView(header.buffer).setUint32(32, 0, true);
  if (crc32(header) !== dv.getUint32(32, true)) bad('header checksum mismatch');
  const dtype: KvDtype = dt === 1 ? 'f16' : 'f32';
  const layers = dv.getUint32(12, true);
  const tokens = dv.getUint32(16, true);
  const kvDim = dv.getUint32(20, true);
  const payload = dv.getUint32(24, true);
  if (layers < 1 || kvDim < 1) bad(`bad dimensions ${layers} layers × ${kvDim}`);
  if (payload !== payloadBytes(layers, tokens, kvDim, dtype)) bad(`payload length ${payload} does not match ${layers} layers × ${tokens} tokens × ${kvDim}`);
  if (bytes.length !== H + payload) bad(`blob has ${bytes.length} bytes, its header says ${H + payload}`);
  const td = new TextDecoder();
  return {
    id: td.decode(bytes.subarray(FIXED, FIXED + idLen)),
    modelId: td.decode(bytes.subarray(FIXED + idLen, FIXED + idLen + modelLen)),
    dtype, layers, tokens, kvDim,
    checksum: dv.getUint32(28, true),
    bytes: bytes.length,
  };
}

/** Header and payload checksum verified, without decoding: throws CorruptBlobError on any mismatch. */
export function verifyBlob(bytes: Uint8Array): BlobMeta {
  const meta = readBlobHeader(bytes);
  const H = bytes.length - payloadBytes(meta.layers, meta.tokens, meta.kvDim, meta.dtype);
  if (crc32(bytes.subarray(H)) !== meta.checksum) throw new CorruptBlobError('payload checksum mismatch');
  return meta;
}

/**
 * The cache in a blob, after every check: f32 rows as stored, or f16 rows as halves (LayerRows.halves), widened
 * to f32 only where something reads them (an upload takes the halves as they are). `payloadChecked`: the caller
 * has already checked these very bytes (a write's read-back, compared with what was written), so the payload's
 * checksum is not worked out again; the header still is.
 */
export function decodeBlob(bytes: Uint8Array, opts: { payloadChecked?: boolean } = {}): { meta: BlobMeta; layers: LayerRows[] } {
  const meta = opts.payloadChecked ? readBlobHeader(bytes) : verifyBlob(bytes);
  const { tokens, kvDim, dtype } = meta;
  const n = tokens * kvDim;
  const arr = arrayBytes(tokens, kvDim, dtype);
  let off = bytes.length - payloadBytes(meta.layers, tokens, kvDim, dtype);
  // A view of the blob where the payload is aligned, else a copy.
  const halves = (): Uint16Array => {
    const at = bytes.byteOffset + off;
    off += arr;
    return at % 2 ? new Uint16Array(bytes.slice(at - bytes.byteOffset, at - bytes.byteOffset + 2 * n).buffer) : new Uint16Array(bytes.buffer, at, n);
  };
  const floats = (): Float32Array => {
    // f32 rows: a copy (aligned for Float32Array whatever the header length).
    const at = bytes.byteOffset + off;
    off += arr;
    return new Float32Array(bytes.slice(at - bytes.byteOffset, at - bytes.byteOffset + 4 * n).buffer);
  };
  const layers: LayerRows[] = [];
  for (let l = 0; l < meta.layers; l++) {
    if (dtype === 'f16') {
      const k = halves();
      layers.push(halfRows(k, halves()));
    } else layers.push({ k: floats(), v: floats() });
  }
  return { meta, layers };
}

/** Whether two byte arrays hold the same bytes (four at a time where both are aligned for it). */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let n4 = 0;
  if (a.byteOffset % 4 === 0 && b.byteOffset % 4 === 0) {
    n4 = a.length >> 2;
    const a4 = new Uint32Array(a.buffer, a.byteOffset, n4), b4 = new Uint32Array(b.buffer, b.byteOffset, n4);
    for (let i = 0; i < n4; i++) if (a4[i] !== b4[i]) return false;
  }
  for (let i = 4 * n4; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
