/**
 * Quantized weight matrices kept packed on the GPU: which ggml block types
 * stay packed, and the u32-aligned layout they are repacked into on upload
 * (kernels/quant.wgsl dequantizes it in registers; its header shows the same
 * layout word by word).
 *
 * GGUF blocks are not all a whole number of 4-byte words (Q4_0 is 18 bytes,
 * Q5_0 22, Q8_0 34, Q6_K 210), and WGSL here reads storage only as u32. So a
 * matrix [rows, cols] of nb = rows·cols/BS blocks, row-major, becomes:
 *   - Q4_1, Q4_K (20 and 144 bytes, already word-aligned): the GGUF blocks
 *     unchanged, QW = 5 and 36 words each;
 *   - Q4_0, Q5_0, Q8_0, Q6_K: the block without its f16 scale d, QW words each
 *     (4, 5, 8, 52), for all nb blocks; then the nb scales d, two f16 per word
 *     (block 2j in the low half), starting at word nb·QW ("sbase").
 * Either way the buffer holds the file's bytes and at most 2 more: a 1B model's
 * Q4_K matrices take about 0.56 bytes a weight instead of f16's 2.
 */
import { GGML_TYPES } from './formats/gguf';
import { GgmlType } from './formats/gguf-quants';
import { floatToHalf } from './f16';

export type QuantType = 'q4_0' | 'q4_1' | 'q5_0' | 'q8_0' | 'q4_k' | 'q6_k';

export interface QuantInfo {
  ggml: number;
  /** Weights per block. */
  block: 32 | 256;
  /** Bytes of a GGUF block. */
  bytes: number;
  /** Words a block keeps in the quant region (scale d excluded where `dAt` is set). */
  qw: number;
  /** Byte offset of the f16 scale d that moves to the scale region; null when the block stays whole. */
  dAt: number | null;
}

export const QUANT: Readonly<Record<QuantType, QuantInfo>> = {
  q4_0: { ggml: GgmlType.Q4_0, block: 32, bytes: 18, qw: 4, dAt: 0 },
  q4_1: { ggml: GgmlType.Q4_1, block: 32, bytes: 20, qw: 5, dAt: null },
  q5_0: { ggml: GgmlType.Q5_0, block: 32, bytes: 22, qw: 5, dAt: 0 },
  q8_0: { ggml: GgmlType.Q8_0, block: 32, bytes: 34, qw: 8, dAt: 0 },
  q4_k: { ggml: GgmlType.Q4_K, block: 256, bytes: 144, qw: 36, dAt: null },
  q6_k: { ggml: GgmlType.Q6_K, block: 256, bytes: 210, qw: 52, dAt: 208 },
};
export const QUANT_TYPES = Object.keys(QUANT) as QuantType[];

export const isQuant = (t: string): t is QuantType => t in QUANT;

/**
 * Whether a type's blocks lie on 16-byte boundaries in the GPU layout (a whole number of vec4s each: Q4_0, Q8_0,
 * Q4_K, Q6_K), so gemv reads them 16 bytes a load (kernels/quant.wgsl's QW4, which each of them implements).
 */
export const vec4Blocks = (q: QuantType) => QUANT[q].qw % 4 === 0;

/** The packed type a ggml tensor type stays in on the GPU, or undefined (dequantized on load). */
export function quantOfGgml(type: number): QuantType | undefined {
  return QUANT_TYPES.find((q) => QUANT[q].ggml === type);
}

export const ggmlOfQuant = (q: QuantType) => QUANT[q].ggml;

/** Bytes of `rows` rows of `cols` weights in the GGUF file. */
export function ggufBytes(q: QuantType, rows: number, cols: number): number {
  return (rows * cols / QUANT[q].block) * QUANT[q].bytes;
}

/** Words the GPU layout of `nBlocks` blocks takes. */
export function gpuWords(q: QuantType, nBlocks: number): number {
  const i = QUANT[q];
  return nBlocks * i.qw + (i.dAt === null ? 0 : Math.ceil(nBlocks / 2));
}

/** Where the scale region starts (words), for a buffer of `nBlocks` blocks; 0 for types without one. */
export function scaleBase(q: QuantType, nBlocks: number): number {
  return QUANT[q].dAt === null ? 0 : nBlocks * QUANT[q].qw;
}

/** Checks a [rows, cols] matrix can be stored as `q`: whole blocks per row. */
export function checkQuantShape(q: QuantType, cols: number, what: string) {
  if (cols % QUANT[q].block !== 0) throw new Error(`${what}: ${cols} columns is not a whole number of ${q} blocks (${QUANT[q].block})`);
}

/** GGUF blocks (bytes) -> the GPU layout described above. */
export function repackForGpu(q: QuantType, bytes: Uint8Array, nBlocks: number): Uint32Array {
  const i = QUANT[q];
  if (bytes.byteLength < nBlocks * i.bytes) throw new Error(`${q}: ${bytes.byteLength} bytes for ${nBlocks} blocks`);
  const out = new Uint32Array(gpuWords(q, nBlocks));
  const o8 = new Uint8Array(out.buffer);
  if (i.dAt === null) {
    o8.set(bytes.subarray(0, nBlocks * i.bytes));
    return out;
  }
  const qBytes = 4 * i.qw;
  const s16 = new Uint16Array(out.buffer, 4 * nBlocks * i.qw);
  for (let b = 0, src = 0, dst = 0; b < nBlocks; b++, src += i.bytes, dst += qBytes) {
    const d = src + i.dAt;
    s16[b] = bytes[d]! | (bytes[d + 1]! << 8);
    if (i.dAt === 0) o8.set(bytes.subarray(src + 2, src + i.bytes), dst);
    else o8.set(bytes.subarray(src, d), dst);
  }
  return out;
}

/** About the largest |value| / d of each type's blocks (with noiseBlocks' min or dmin). */
const SPAN: Record<QuantType, number> = { q4_0: 8, q4_1: 8, q5_0: 16, q8_0: 128, q4_k: 63 * 8, q6_k: 128 * 32 };

/**
 * Random GGUF blocks: quants uniform noise from a seed, every scale d chosen
 * so values stay within about ±amplitude (a per-block factor in [0.5, 1)), with
 * the min (Q4_1) or dmin (Q4_K) centring them on 0. For parity tests and the
 * GPU kit's real-shape models; a type's dequantizer reads them like any file's.
 */
export function noiseBlocks(q: QuantType, nBlocks: number, seed: number, amplitude: number): Uint8Array {
  const scale = amplitude / SPAN[q];
  const i = QUANT[q];
  const out = new Uint8Array(nBlocks * i.bytes);
  let s = seed >>> 0 || 1;
  const next = () => {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    return s;
  };
  for (let o = 0; o < out.length; o += 4) {
    const r = next();
    out[o] = r; out[o + 1] = r >>> 8; out[o + 2] = r >>> 16; out[o + 3] = r >>> 24;
  }
  const put16 = (at: number, v: number) => {
    const h = floatToHalf(v);
    out[at] = h & 255;
    out[at + 1] = h >> 8;
  };
  for (let b = 0, o = 0; b < nBlocks; b++, o += i.bytes) {
    const d = scale * (0.5 + (next() / 4294967296) * 0.5);
    put16(o + (i.dAt ?? 0), d);
    if (q === 'q4_1') put16(o + 2, -8 * d); // y = d·q + m
    if (q === 'q4_k') put16(o + 2, 7.5 * d); // y = d·sc·q − dmin·m
  }
  return out;
}

/** GGML_TYPES' block facts agree with the table above (checked once, at import). */
for (const q of QUANT_TYPES) {
  const g = GGML_TYPES[QUANT[q].ggml];
  if (!g || g.blockSize !== QUANT[q].block || g.typeSize !== QUANT[q].bytes) throw new Error(`quant table disagrees with ggml for ${q}`);
}
