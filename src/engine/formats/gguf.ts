/**
 * GGUF (llama.cpp's model container) header parser: versions 2 and 3,
 * little-endian. Reads only the header through a ByteSource, in growing
 * ranges, so a multi-hundred-megabyte file is never copied whole; tensor data
 * is located (absolute offsets, byte sizes) but not read here.
 *
 * Layout: magic "GGUF", u32 version, u64 tensor count, u64 kv count, the
 * key/values, the tensor infos, padding to `general.alignment` (default 32),
 * then the tensor data. Tensor dims are listed innermost-first (ne0 = the
 * contiguous axis), so a row-major [out, in] matrix has dims [in, out].
 */
import { ModelFormatError, type ByteSource } from './source';

export const GgufValueType = {
  UINT8: 0, INT8: 1, UINT16: 2, INT16: 3, UINT32: 4, INT32: 5, FLOAT32: 6, BOOL: 7,
  STRING: 8, ARRAY: 9, UINT64: 10, INT64: 11, FLOAT64: 12,
} as const;
export type GgufValueType = (typeof GgufValueType)[keyof typeof GgufValueType];

const VALUE_TYPE_NAMES = Object.fromEntries(Object.entries(GgufValueType).map(([k, v]) => [v, k])) as Record<
  number,
  string
>;
export const valueTypeName = (t: number): string => VALUE_TYPE_NAMES[t] ?? `unknown(${t})`;

/** An array value: numeric items in a typed array of the matching width. */
export type GgufArray =
  | { type: 0; items: Uint8Array }
  | { type: 1; items: Int8Array }
  | { type: 2; items: Uint16Array }
  | { type: 3; items: Int16Array }
  | { type: 4; items: Uint32Array }
  | { type: 5; items: Int32Array }
  | { type: 6; items: Float32Array }
  | { type: 7; items: boolean[] }
  | { type: 8; items: string[] }
  | { type: 9; items: GgufArray[] }
  | { type: 10; items: BigUint64Array }
  | { type: 11; items: BigInt64Array }
  | { type: 12; items: Float64Array };

/** A metadata value with its GGUF type; 64-bit integers are bigints. */
export type GgufValue =
  | { type: 0 | 1 | 2 | 3 | 4 | 5 | 6 | 12; value: number }
  | { type: 10 | 11; value: bigint }
  | { type: 7; value: boolean }
  | { type: 8; value: string }
  | { type: 9; value: GgufArray };

export type GgufMetadata = Map<string, GgufValue>;

/** ggml tensor types: elements per block and bytes per block. */
export interface GgmlTypeInfo {
  name: string;
  blockSize: number;
  typeSize: number;
}
export const GGML_TYPES: Readonly<Record<number, GgmlTypeInfo>> = {
  0: { name: 'F32', blockSize: 1, typeSize: 4 },
  1: { name: 'F16', blockSize: 1, typeSize: 2 },
  2: { name: 'Q4_0', blockSize: 32, typeSize: 18 },
  3: { name: 'Q4_1', blockSize: 32, typeSize: 20 },
  6: { name: 'Q5_0', blockSize: 32, typeSize: 22 },
  7: { name: 'Q5_1', blockSize: 32, typeSize: 24 },
  8: { name: 'Q8_0', blockSize: 32, typeSize: 34 },
  9: { name: 'Q8_1', blockSize: 32, typeSize: 40 },
  10: { name: 'Q2_K', blockSize: 256, typeSize: 84 },
  11: { name: 'Q3_K', blockSize: 256, typeSize: 110 },
  12: { name: 'Q4_K', blockSize: 256, typeSize: 144 },
  13: { name: 'Q5_K', blockSize: 256, typeSize: 176 },
  14: { name: 'Q6_K', blockSize: 256, typeSize: 210 },
  15: { name: 'Q8_K', blockSize: 256, typeSize: 292 },
  16: { name: 'IQ2_XXS', blockSize: 256, typeSize: 66 },
  17: { name: 'IQ2_XS', blockSize: 256, typeSize: 74 },
  18: { name: 'IQ3_XXS', blockSize: 256, typeSize: 98 },
  19: { name: 'IQ1_S', blockSize: 256, typeSize: 50 },
  20: { name: 'IQ4_NL', blockSize: 32, typeSize: 18 },
  21: { name: 'IQ3_S', blockSize: 256, typeSize: 110 },
  22: { name: 'IQ2_S', blockSize: 256, typeSize: 82 },
  23: { name: 'IQ4_XS', blockSize: 256, typeSize: 136 },
  24: { name: 'I8', blockSize: 1, typeSize: 1 },
  25: { name: 'I16', blockSize: 1, typeSize: 2 },
  26: { name: 'I32', blockSize: 1, typeSize: 4 },
  27: { name: 'I64', blockSize: 1, typeSize: 8 },
  28: { name: 'F64', blockSize: 1, typeSize: 8 },
  29: { name: 'IQ1_M', blockSize: 256, typeSize: 56 },
  30: { name: 'BF16', blockSize: 1, typeSize: 2 },
  34: { name: 'TQ1_0', blockSize: 256, typeSize: 54 },
  35: { name: 'TQ2_0', blockSize: 256, typeSize: 66 },
  39: { name: 'MXFP4', blockSize: 32, typeSize: 17 },
};
export const ggmlTypeName = (t: number): string => GGML_TYPES[t]?.name ?? `unknown(${t})`;

export interface GgufTensorInfo {
  name: string;
  /** GGUF order, innermost first (ne0, ne1, ...). */
  dims: number[];
  type: number;
  typeName: string;
  nElements: number;
  nBytes: number;
  /** Absolute offset of the tensor's data in the file. */
  offset: number;
}

export interface GgufFile {
  version: number;
  metadata: GgufMetadata;
  tensors: GgufTensorInfo[];
  alignment: number;
  /** Absolute offset where the tensor data section starts. */
  dataOffset: number;
  /** Bytes of header read (up to the data section). */
  headerBytes: number;
}

const MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
const SCALAR_SIZES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };

/** Sequential reader over a ByteSource that fetches larger windows as it goes. */
class HeaderReader {
  private buf: Uint8Array = new Uint8Array(0);
  private view: DataView = new DataView(this.buf.buffer);
  private base = 0; // file offset of buf[0]
  pos = 0; // absolute file offset
  private chunk = 64 * 1024;
  private readonly decoder = new TextDecoder('utf-8', { ignoreBOM: true }); // keep a leading U+FEFF (some tokens start with one)
  what = 'header';

  constructor(private readonly src: ByteSource) {}

  has(n: number): boolean {
    return this.pos + n <= this.base + this.buf.byteLength;
  }

  async fill(n: number): Promise<void> {
    if (this.has(n)) return;
    if (this.pos + n > this.src.size) {
      throw new ModelFormatError(
        `${this.src.name} is truncated: reading the GGUF ${this.what} needs bytes ${this.pos}..${this.pos + n} ` +
          `but the file has ${this.src.size} bytes`,
      );
    }
    const len = Math.min(Math.max(n, this.chunk), this.src.size - this.pos);
    this.chunk = Math.min(this.chunk * 2, 16 * 1024 * 1024);
    const bytes = await this.src.read(this.pos, len);
    this.buf = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.base = this.pos;
  }

  private at(n: number): number {
    const o = this.pos - this.base;
    this.pos += n;
    return o;
  }
  u8(): number { return this.view.getUint8(this.at(1)); }
  i8(): number { return this.view.getInt8(this.at(1)); }
  u16(): number { return this.view.getUint16(this.at(2), true); }
  i16(): number { return this.view.getInt16(this.at(2), true); }
  u32(): number { return this.view.getUint32(this.at(4), true); }
  i32(): number { return this.view.getInt32(this.at(4), true); }
  f32(): number { return this.view.getFloat32(this.at(4), true); }
  f64(): number { return this.view.getFloat64(this.at(8), true); }
  u64(): bigint { return this.view.getBigUint64(this.at(8), true); }
  i64(): bigint { return this.view.getBigInt64(this.at(8), true); }
  /** A u64 that must fit a JS number (counts, lengths, offsets). */
  size(what: string): number {
    const v = this.u64();
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new ModelFormatError(`${this.src.name}: ${what} ${v} is too large (corrupt GGUF header?)`);
    }
    return Number(v);
  }
  bytes(n: number): Uint8Array {
    const o = this.at(n);
    return this.buf.subarray(o, o + n);
  }
  utf8(n: number): string {
    return this.decoder.decode(this.bytes(n));
  }

  async string(what: string): Promise<string> {
    if (!this.has(8)) await this.fill(8);
    const n = this.size(`length of ${what}`);
    if (!this.has(n)) await this.fill(n);
    return this.utf8(n);
  }
}

function scalar(r: HeaderReader, type: number): number | bigint | boolean {
  switch (type) {
    case 0: return r.u8();
    case 1: return r.i8();
    case 2: return r.u16();
    case 3: return r.i16();
    case 4: return r.u32();
    case 5: return r.i32();
    case 6: return r.f32();
    case 7: return r.u8() !== 0;
    case 10: return r.u64();
    case 11: return r.i64();
    case 12: return r.f64();
    default: throw new Error(`not a scalar type ${type}`);
  }
}

const TYPED_ARRAYS = {
  0: Uint8Array, 1: Int8Array, 2: Uint16Array, 3: Int16Array, 4: Uint32Array, 5: Int32Array,
  6: Float32Array, 10: BigUint64Array, 11: BigInt64Array, 12: Float64Array,
} as const;

async function readArray(r: HeaderReader, key: string, src: ByteSource): Promise<GgufArray> {
  if (!r.has(12)) await r.fill(12);
  const type = r.u32();
  const n = r.size(`array length of ${key}`);
  if (type === GgufValueType.STRING) {
    const items: string[] = new Array(n);
    for (let i = 0; i < n; i++) {
      if (!r.has(8)) await r.fill(8);
      const len = r.size(`string length in ${key}`);
      if (!r.has(len)) await r.fill(len);
      items[i] = r.utf8(len);
    }
    return { type, items };
  }
  if (type === GgufValueType.ARRAY) {
    const items: GgufArray[] = [];
    for (let i = 0; i < n; i++) items.push(await readArray(r, key, src));
    return { type, items };
  }
  const width = SCALAR_SIZES[type];
  if (width === undefined) {
    throw new ModelFormatError(`${src.name}: metadata array ${key} has unknown item type ${type}`);
  }
  if (!r.has(n * width)) await r.fill(n * width);
  if (type === GgufValueType.BOOL) {
    return { type, items: Array.from(r.bytes(n), (b) => b !== 0) };
  }
  const Ctor = TYPED_ARRAYS[type as keyof typeof TYPED_ARRAYS];
  // Copy into an aligned buffer: the header bytes are not aligned to the item width.
  const copy = r.bytes(n * width).slice();
  return { type, items: new Ctor(copy.buffer, 0, n) } as GgufArray;
}

async function readValue(r: HeaderReader, type: number, key: string, src: ByteSource): Promise<GgufValue> {
  if (type === GgufValueType.STRING) return { type, value: await r.string(`value of ${key}`) };
  if (type === GgufValueType.ARRAY) return { type, value: await readArray(r, key, src) };
  const width = SCALAR_SIZES[type];
  if (width === undefined) throw new ModelFormatError(`${src.name}: metadata key ${key} has unknown value type ${type}`);
  if (!r.has(width)) await r.fill(width);
  return { type, value: scalar(r, type) } as GgufValue;
}

/** Parses a GGUF header; throws ModelFormatError naming what is wrong. */
export async function parseGguf(src: ByteSource): Promise<GgufFile> {
  const r = new HeaderReader(src);
  if (src.size < 24) {
    throw new ModelFormatError(`${src.name} is truncated: ${src.size} bytes is too short for a GGUF header`);
  }
  await r.fill(24);
  const magic = r.u32();
  if (magic !== MAGIC) {
    const got = Array.from(new Uint8Array([magic & 255, (magic >> 8) & 255, (magic >> 16) & 255, magic >>> 24]))
      .map((b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : `\\x${b.toString(16).padStart(2, '0')}`))
      .join('');
    throw new ModelFormatError(`${src.name} is not a GGUF file: magic is "${got}", expected "GGUF"`);
  }
  const version = r.u32();
  if (version !== 2 && version !== 3) {
    const hint = (version & 0xffff) === 0 && version !== 0 ? ' (a big-endian GGUF, which is not supported)' : '';
    throw new ModelFormatError(
      `${src.name}: GGUF version ${version} is not supported${hint}; LegoKV reads versions 2 and 3`,
    );
  }
  const nTensors = r.size('tensor count');
  const nKv = r.size('metadata count');

  const metadata: GgufMetadata = new Map();
  for (let i = 0; i < nKv; i++) {
    r.what = `metadata entry ${i}`;
    const key = await r.string(`metadata key ${i}`);
    r.what = `metadata value of ${key}`;
    if (!r.has(4)) await r.fill(4);
    const type = r.u32();
    metadata.set(key, await readValue(r, type, key, src));
  }

  const alignEntry = metadata.get('general.alignment');
  let alignment = 32;
  if (alignEntry !== undefined) {
    const a = typeof alignEntry.value === 'number' || typeof alignEntry.value === 'bigint' ? Number(alignEntry.value) : NaN;
    if (!Number.isInteger(a) || a <= 0 || (a & (a - 1)) !== 0) {
      throw new ModelFormatError(`${src.name}: general.alignment must be a positive power of two, got ${a}`);
    }
    alignment = a;
  }

  const raw: { name: string; dims: number[]; type: number; rel: number }[] = [];
  for (let i = 0; i < nTensors; i++) {
    r.what = `tensor info ${i}`;
    const name = await r.string(`tensor name ${i}`);
    r.what = `tensor info of ${name}`;
    if (!r.has(4)) await r.fill(4);
    const nDims = r.u32();
    if (nDims > 8) throw new ModelFormatError(`${src.name}: tensor ${name} has ${nDims} dimensions (corrupt header?)`);
    if (!r.has(8 * nDims + 12)) await r.fill(8 * nDims + 12);
    const dims: number[] = [];
    for (let d = 0; d < nDims; d++) dims.push(r.size(`dimension ${d} of tensor ${name}`));
    const type = r.u32();
    const rel = r.size(`data offset of tensor ${name}`);
    raw.push({ name, dims, type, rel });
  }
  const headerBytes = r.pos;
  const dataOffset = Math.ceil(headerBytes / alignment) * alignment;

  const tensors: GgufTensorInfo[] = raw.map(({ name, dims, type, rel }) => {
    const info = GGML_TYPES[type];
    if (!info) throw new ModelFormatError(`${src.name}: tensor ${name} has unknown ggml type ${type}`);
    const nElements = dims.reduce((a, b) => a * b, 1);
    if ((dims[0] ?? 1) % info.blockSize !== 0) {
      throw new ModelFormatError(
        `${src.name}: tensor ${name} of type ${info.name} has a row of ${dims[0]} elements, ` +
          `not a multiple of its block size ${info.blockSize}`,
      );
    }
    const nBytes = (nElements / info.blockSize) * info.typeSize;
    const offset = dataOffset + rel;
    if (offset + nBytes > src.size) {
      throw new ModelFormatError(
        `${src.name}: data of tensor ${name} (bytes ${offset}..${offset + nBytes}) lies outside the ` +
          `${src.size}-byte file (truncated download?)`,
      );
    }
    return { name, dims, type, typeName: info.name, nElements, nBytes, offset };
  });
  return { version, metadata, tensors, alignment, dataOffset, headerBytes };
}

// ---- typed metadata accessors -------------------------------------------------

/** A numeric metadata value (any integer or float type, bigints converted). */
export function metaNumber(md: GgufMetadata, key: string): number | undefined {
  const e = md.get(key);
  if (e === undefined) return undefined;
  if (typeof e.value === 'number') return e.value;
  if (typeof e.value === 'bigint') return Number(e.value);
  throw new ModelFormatError(`GGUF metadata ${key} should be a number but is ${valueTypeName(e.type)}`);
}

export function metaString(md: GgufMetadata, key: string): string | undefined {
  const e = md.get(key);
  if (e === undefined) return undefined;
  if (e.type !== GgufValueType.STRING) {
    throw new ModelFormatError(`GGUF metadata ${key} should be a string but is ${valueTypeName(e.type)}`);
  }
  return e.value;
}

export function metaBool(md: GgufMetadata, key: string): boolean | undefined {
  const e = md.get(key);
  if (e === undefined) return undefined;
  if (e.type === GgufValueType.BOOL) return e.value;
  if (typeof e.value === 'number') return e.value !== 0;
  throw new ModelFormatError(`GGUF metadata ${key} should be a bool but is ${valueTypeName(e.type)}`);
}

export function metaArray(md: GgufMetadata, key: string): GgufArray | undefined {
  const e = md.get(key);
  if (e === undefined) return undefined;
  if (e.type !== GgufValueType.ARRAY) {
    throw new ModelFormatError(`GGUF metadata ${key} should be an array but is ${valueTypeName(e.type)}`);
  }
  return e.value;
}

/** A number, or a per-layer array of numbers (some models store head counts per layer). */
export function metaNumbers(md: GgufMetadata, key: string): number[] | undefined {
  const e = md.get(key);
  if (e === undefined) return undefined;
  if (e.type === GgufValueType.ARRAY) {
    const a = e.value;
    if (a.type === GgufValueType.STRING || a.type === GgufValueType.BOOL || a.type === GgufValueType.ARRAY) {
      throw new ModelFormatError(`GGUF metadata ${key} should hold numbers but holds ${valueTypeName(a.type)}`);
    }
    return Array.from(a.items as ArrayLike<number | bigint>, Number);
  }
  const v = metaNumber(md, key);
  return v === undefined ? undefined : [v];
}

/** Plain-JS view of a value (typed arrays to arrays, bigints kept) for printing and tests. */
export function plainValue(v: GgufValue | GgufArray): unknown {
  if ('items' in v) return v.type === GgufValueType.ARRAY ? v.items.map(plainValue) : Array.from(v.items as ArrayLike<unknown>);
  return v.type === GgufValueType.ARRAY ? plainValue(v.value) : v.value;
}
