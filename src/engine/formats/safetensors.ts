/**
 * safetensors reader: an 8-byte little-endian header length, a JSON header
 * naming every tensor's dtype, shape and byte range, then the raw data.
 * Only the header is read up front; tensors are read one at a time through
 * a ByteSource, so a multi-hundred-megabyte file is never copied whole.
 *
 * F32 stays f32, F16 stays as f16 bit patterns, BF16 widens to f32.
 * Sharded checkpoints are opened through `model.safetensors.index.json`.
 */
import { ModelFormatError, type ByteSource } from './source';
import { tensorSize, type HostTensor } from '../model/weights';

/** Named files of one model folder (a directory, a dropped folder, a URL prefix). */
export interface FolderFiles {
  get(name: string): Promise<ByteSource | undefined>;
}

export interface TensorInfo {
  name: string;
  /** dtype as written in the header, e.g. "BF16". */
  dtype: string;
  shape: number[];
  /** File that holds it, and absolute byte range within that file. */
  source: ByteSource;
  offset: number;
  byteLength: number;
}

/** The tensors of one file or of all shards of a checkpoint. */
export interface TensorStore {
  readonly tensors: ReadonlyMap<string, TensorInfo>;
  /** `__metadata__` of the (first) file. */
  readonly metadata: Record<string, string>;
  load(name: string): Promise<HostTensor>;
}

export const SUPPORTED_DTYPES = ['F32', 'F16', 'BF16'] as const;

/** Element sizes of every dtype safetensors defines, to validate byte ranges. */
const DTYPE_BYTES: Record<string, number> = {
  BOOL: 1, U8: 1, I8: 1, F8_E5M2: 1, F8_E4M3: 1, F8_E8M0: 1,
  I16: 2, U16: 2, F16: 2, BF16: 2,
  I32: 4, U32: 4, F32: 4,
  I64: 8, U64: 8, F64: 8,
};

/** Headers larger than this are treated as corrupt rather than allocated. */
const MAX_HEADER_BYTES = 100 * 1024 * 1024;
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** Reads and validates the header of one safetensors file. */
export async function readSafetensorsHeader(
  source: ByteSource,
): Promise<{ tensors: Map<string, TensorInfo>; metadata: Record<string, string> }> {
  const file = source.name;
  if (source.size < 8) {
    throw new ModelFormatError(`${file} is truncated: ${source.size} bytes, too short for a safetensors header`);
  }
  const lenBytes = await source.read(0, 8);
  const dv = new DataView(lenBytes.buffer, lenBytes.byteOffset, 8);
  const headerLen = Number(dv.getBigUint64(0, true));
  if (headerLen > MAX_HEADER_BYTES) {
    throw new ModelFormatError(`${file} is not a safetensors file: header length ${headerLen} is implausible`);
  }
  if (8 + headerLen > source.size) {
    throw new ModelFormatError(
      `${file} is truncated: the header needs ${8 + headerLen} bytes but the file has ${source.size}`,
    );
  }
  const headerText = new TextDecoder().decode(await source.read(8, headerLen));
  let header: unknown;
  try {
    header = JSON.parse(headerText);
  } catch (e) {
    throw new ModelFormatError(`${file} has a bad safetensors header: invalid JSON (${(e as Error).message})`);
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) {
    throw new ModelFormatError(`${file} has a bad safetensors header: expected a JSON object`);
  }

  const dataStart = 8 + headerLen;
  const dataSize = source.size - dataStart;
  const tensors = new Map<string, TensorInfo>();
  let metadata: Record<string, string> = {};
  for (const [name, raw] of Object.entries(header as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (raw && typeof raw === 'object') metadata = raw as Record<string, string>;
      continue;
    }
    const bad = (why: string): never => {
      throw new ModelFormatError(`${file} has a bad safetensors header: tensor "${name}" ${why}`);
    };
    if (!raw || typeof raw !== 'object') bad('is not an object');
    const e = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
    if (typeof e.dtype !== 'string') bad('has no dtype');
    if (!Array.isArray(e.shape) || !e.shape.every((d) => Number.isInteger(d) && d >= 0)) bad('has a bad shape');
    const offs = e.data_offsets;
    if (!Array.isArray(offs) || offs.length !== 2 || !offs.every((o) => Number.isInteger(o) && o >= 0)) {
      bad('has bad data_offsets');
    }
    const [begin, end] = offs as number[];
    const dtype = e.dtype as string;
    const shape = e.shape as number[];
    if (end < begin) bad(`has data_offsets [${begin}, ${end}] that end before they begin`);
    if (end > dataSize) {
      throw new ModelFormatError(
        `${file}: tensor "${name}" has data_offsets [${begin}, ${end}] outside the file ` +
          `(${dataSize} data bytes after the header; the file may be truncated)`,
      );
    }
    const elemBytes = DTYPE_BYTES[dtype];
    if (elemBytes !== undefined && (end - begin) !== tensorSize(shape) * elemBytes) {
      bad(`(${dtype} [${shape.join(', ')}]) needs ${tensorSize(shape) * elemBytes} bytes but spans ${end - begin}`);
    }
    tensors.set(name, { name, dtype, shape: [...shape], source, offset: dataStart + begin, byteLength: end - begin });
  }
  return { tensors, metadata };
}

/** An aligned, exclusively owned copy of `bytes` (or `bytes` itself when it already is one). */
function ownedBuffer(bytes: Uint8Array): ArrayBuffer {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) {
    return bytes.buffer;
  }
  return bytes.slice().buffer as ArrayBuffer;
}

/** Widens bf16 bit patterns to f32 (exact: bf16 is the top half of an f32). */
export function bf16ToF32(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  const out32 = new Uint32Array(out.buffer);
  for (let i = 0; i < bits.length; i++) out32[i] = bits[i] << 16;
  return out;
}

/** Converts a tensor's raw little-endian bytes to a HostTensor. */
export function decodeTensor(info: Pick<TensorInfo, 'name' | 'dtype' | 'shape' | 'source'>, bytes: Uint8Array): HostTensor {
  if (!LITTLE_ENDIAN) throw new ModelFormatError('safetensors loading needs a little-endian platform');
  const shape = [...info.shape];
  switch (info.dtype) {
    case 'F32':
      return { shape, dtype: 'f32', data: new Float32Array(ownedBuffer(bytes)) };
    case 'F16':
      return { shape, dtype: 'f16', data: new Uint16Array(ownedBuffer(bytes)) };
    case 'BF16':
      return { shape, dtype: 'f32', data: bf16ToF32(new Uint16Array(ownedBuffer(bytes))) };
    default:
      throw new ModelFormatError(
        `${info.source.name}: tensor "${info.name}" has dtype ${info.dtype}, which is not supported ` +
          `(supported: ${SUPPORTED_DTYPES.join(', ')})`,
      );
  }
}

export async function loadTensor(info: TensorInfo): Promise<HostTensor> {
  if (!(SUPPORTED_DTYPES as readonly string[]).includes(info.dtype)) return decodeTensor(info, new Uint8Array(0));
  return decodeTensor(info, await info.source.read(info.offset, info.byteLength));
}

function storeOf(tensors: Map<string, TensorInfo>, metadata: Record<string, string>): TensorStore {
  return {
    tensors,
    metadata,
    async load(name) {
      const info = tensors.get(name);
      if (!info) throw new ModelFormatError(`No tensor named "${name}" in the checkpoint`);
      return loadTensor(info);
    },
  };
}

/** Opens one safetensors file. */
export async function openSafetensorsFile(source: ByteSource): Promise<TensorStore> {
  const { tensors, metadata } = await readSafetensorsHeader(source);
  return storeOf(tensors, metadata);
}

export const SAFETENSORS_INDEX = 'model.safetensors.index.json';
export const SAFETENSORS_SINGLE = 'model.safetensors';

export async function readJson(source: ByteSource): Promise<unknown> {
  const text = new TextDecoder().decode(await source.read(0, source.size));
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ModelFormatError(`${source.name} is not valid JSON (${(e as Error).message})`);
  }
}

/**
 * Opens the weights of a Hugging Face folder: `model.safetensors.index.json`
 * and its shards when present, else `model.safetensors`.
 */
export async function openSafetensorsFolder(files: FolderFiles): Promise<TensorStore> {
  const indexSrc = await files.get(SAFETENSORS_INDEX);
  if (!indexSrc) {
    const single = await files.get(SAFETENSORS_SINGLE);
    if (!single) {
      throw new ModelFormatError(`The folder has neither ${SAFETENSORS_SINGLE} nor ${SAFETENSORS_INDEX}`);
    }
    return openSafetensorsFile(single);
  }
  const index = (await readJson(indexSrc)) as { weight_map?: unknown };
  const weightMap = index?.weight_map;
  if (!weightMap || typeof weightMap !== 'object' || Array.isArray(weightMap)) {
    throw new ModelFormatError(`${indexSrc.name} has no "weight_map" object`);
  }
  const entries = Object.entries(weightMap as Record<string, unknown>);
  const shardNames = [...new Set(entries.map(([, f]) => f))];
  for (const f of shardNames) {
    if (typeof f !== 'string') throw new ModelFormatError(`${indexSrc.name} maps a tensor to a non-string shard`);
  }
  const missing: string[] = [];
  const shards = new Map<string, ByteSource>();
  for (const f of shardNames as string[]) {
    const src = await files.get(f);
    if (src) shards.set(f, src);
    else missing.push(f);
  }
  if (missing.length) {
    throw new ModelFormatError(`Missing shard file(s) listed in ${indexSrc.name}: ${missing.join(', ')}`);
  }
  const tensors = new Map<string, TensorInfo>();
  let metadata: Record<string, string> = {};
  for (const [f, src] of shards) {
    const header = await readSafetensorsHeader(src);
    if (tensors.size === 0) metadata = header.metadata;
    for (const [name, info] of header.tensors) {
      if (tensors.has(name)) throw new ModelFormatError(`Tensor "${name}" appears in more than one shard (${f})`);
      tensors.set(name, info);
    }
  }
  for (const [name, f] of entries) {
    const info = tensors.get(name);
    if (!info) throw new ModelFormatError(`${indexSrc.name} lists "${name}" in ${f}, but no shard contains it`);
    if (info.source !== shards.get(f as string)) {
      throw new ModelFormatError(`${indexSrc.name} lists "${name}" in ${f}, but it is in ${info.source.name}`);
    }
  }
  return storeOf(tensors, metadata);
}
