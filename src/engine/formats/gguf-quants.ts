/**
 * Dequantization of ggml tensor types to f32, or to IEEE f16 bit patterns.
 *
 * Written from the ggml block layouts (each block: scales first or last, then
 * packed quants; all little-endian). Arithmetic follows ggml's f32 order of
 * operations (e.g. Q4_K: (d·sc)·q − (dmin·m)), using Math.fround on
 * intermediates, so the f32 results are bit-identical to ggml's reference
 * dequantizers.
 */
import { GGML_TYPES, ggmlTypeName } from './gguf';
import { ModelFormatError } from './source';

export const GgmlType = {
  F32: 0, F16: 1, Q4_0: 2, Q4_1: 3, Q5_0: 6, Q5_1: 7, Q8_0: 8, Q4_K: 12, Q5_K: 13, Q6_K: 14, BF16: 30,
} as const;

import { f16ToF32Table, f32ArrayToF16 } from '../f16';

const fr = Math.fround;

// ---- block dequantizers: (bytes, nBlocks, out) ------------------------------

type Dequant = (b: Uint8Array, nBlocks: number, y: Float32Array) => void;

const deqQ4_0: Dequant = (b, nb, y) => {
  const T = f16ToF32Table();
  for (let i = 0, o = 0, p = 0; i < nb; i++, o += 18, p += 32) {
    const d = T[b[o]! | (b[o + 1]! << 8)]!;
    for (let j = 0; j < 16; j++) {
      const q = b[o + 2 + j]!;
      y[p + j] = d * ((q & 15) - 8);
      y[p + j + 16] = d * ((q >> 4) - 8);
    }
  }
};

const deqQ4_1: Dequant = (b, nb, y) => {
  const T = f16ToF32Table();
  for (let i = 0, o = 0, p = 0; i < nb; i++, o += 20, p += 32) {
    const d = T[b[o]! | (b[o + 1]! << 8)]!;
    const m = T[b[o + 2]! | (b[o + 3]! << 8)]!;
    for (let j = 0; j < 16; j++) {
      const q = b[o + 4 + j]!;
      y[p + j] = fr(d * (q & 15)) + m;
      y[p + j + 16] = fr(d * (q >> 4)) + m;
    }
  }
};

const deqQ5: (withMin: boolean) => Dequant = (withMin) => (b, nb, y) => {
  const T = f16ToF32Table();
  const size = withMin ? 24 : 22;
  const qhAt = withMin ? 4 : 2;
  const off = withMin ? 0 : 16;
  for (let i = 0, o = 0, p = 0; i < nb; i++, o += size, p += 32) {
    const d = T[b[o]! | (b[o + 1]! << 8)]!;
    const m = withMin ? T[b[o + 2]! | (b[o + 3]! << 8)]! : 0;
    const h = o + qhAt;
    const qh = (b[h]! | (b[h + 1]! << 8) | (b[h + 2]! << 16) | (b[h + 3]! << 24)) >>> 0;
    for (let j = 0; j < 16; j++) {
      const q = b[o + qhAt + 4 + j]!;
      const x0 = ((q & 15) | (((qh >>> j) & 1) << 4)) - off;
      const x1 = ((q >> 4) | (((qh >>> (j + 16)) & 1) << 4)) - off;
      if (withMin) {
        y[p + j] = fr(d * x0) + m;
        y[p + j + 16] = fr(d * x1) + m;
      } else {
        y[p + j] = d * x0;
        y[p + j + 16] = d * x1;
      }
    }
  }
};

const deqQ8_0: Dequant = (b, nb, y) => {
  const T = f16ToF32Table();
  const s = new Int8Array(b.buffer, b.byteOffset, b.byteLength);
  for (let i = 0, o = 0, p = 0; i < nb; i++, o += 34, p += 32) {
    const d = T[b[o]! | (b[o + 1]! << 8)]!;
    for (let j = 0; j < 32; j++) y[p + j] = d * s[o + 2 + j]!;
  }
};

/** The 6-bit scales and mins of Q4_K/Q5_K, packed in 12 bytes at `s`. */
function scaleMinK4(b: Uint8Array, s: number, j: number, out: Int32Array): void {
  if (j < 4) {
    out[0] = b[s + j]! & 63;
    out[1] = b[s + j + 4]! & 63;
  } else {
    out[0] = (b[s + j + 4]! & 15) | ((b[s + j - 4]! >> 6) << 4);
    out[1] = (b[s + j + 4]! >> 4) | ((b[s + j]! >> 6) << 4);
  }
}

const deqQ45K: (five: boolean) => Dequant = (five) => (b, nb, y) => {
  const T = f16ToF32Table();
  const sm = new Int32Array(2);
  const size = five ? 176 : 144;
  for (let i = 0, o = 0, p = 0; i < nb; i++, o += size, p += 256) {
    const d = T[b[o]! | (b[o + 1]! << 8)]!;
    const dmin = T[b[o + 2]! | (b[o + 3]! << 8)]!;
    const qh = o + 16; // Q5_K only: 32 bytes of high bits
    const qs = o + (five ? 48 : 16);
    for (let g = 0; g < 4; g++) {
      scaleMinK4(b, o + 4, 2 * g, sm);
      const d1 = fr(d * sm[0]!), m1 = fr(dmin * sm[1]!);
      scaleMinK4(b, o + 4, 2 * g + 1, sm);
      const d2 = fr(d * sm[0]!), m2 = fr(dmin * sm[1]!);
      const q0 = qs + 32 * g, out = p + 64 * g;
      if (five) {
        const s1 = 2 * g, s2 = 2 * g + 1;
        for (let l = 0; l < 32; l++) {
          const q = b[q0 + l]!, h = b[qh + l]!;
          y[out + l] = fr(d1 * ((q & 15) | (((h >> s1) & 1) << 4))) - m1;
          y[out + 32 + l] = fr(d2 * ((q >> 4) | (((h >> s2) & 1) << 4))) - m2;
        }
      } else {
        for (let l = 0; l < 32; l++) {
          const q = b[q0 + l]!;
          y[out + l] = fr(d1 * (q & 15)) - m1;
          y[out + 32 + l] = fr(d2 * (q >> 4)) - m2;
        }
      }
    }
  }
};

const deqQ6_K: Dequant = (b, nb, y) => {
  const T = f16ToF32Table();
  for (let i = 0, o = 0, p = 0; i < nb; i++, o += 210, p += 256) {
    const d = T[b[o + 208]! | (b[o + 209]! << 8)]!;
    for (let half = 0; half < 2; half++) {
      const ql = o + 64 * half, qh = o + 128 + 32 * half, sc = o + 192 + 8 * half, out = p + 128 * half;
      for (let l = 0; l < 32; l++) {
        const is = l >> 4;
        const a = b[ql + l]!, c = b[ql + l + 32]!, h = b[qh + l]!;
        y[out + l] = fr(d * ((b[sc + is]! << 24) >> 24)) * (((a & 15) | ((h & 3) << 4)) - 32);
        y[out + l + 32] = fr(d * ((b[sc + is + 2]! << 24) >> 24)) * (((c & 15) | (((h >> 2) & 3) << 4)) - 32);
        y[out + l + 64] = fr(d * ((b[sc + is + 4]! << 24) >> 24)) * (((a >> 4) | (((h >> 4) & 3) << 4)) - 32);
        y[out + l + 96] = fr(d * ((b[sc + is + 6]! << 24) >> 24)) * (((c >> 4) | (((h >> 6) & 3) << 4)) - 32);
      }
    }
  }
};

const deqF32: Dequant = (b, n, y) => {
  if (b.byteOffset % 4 === 0) y.set(new Float32Array(b.buffer, b.byteOffset, n));
  else y.set(new Float32Array(b.slice(0, 4 * n).buffer));
};

const deqF16: Dequant = (b, n, y) => {
  const T = f16ToF32Table();
  for (let i = 0; i < n; i++) y[i] = T[b[2 * i]! | (b[2 * i + 1]! << 8)]!;
};

const bfU32 = new Uint32Array(1);
const bfF32 = new Float32Array(bfU32.buffer);
const deqBF16: Dequant = (b, n, y) => {
  for (let i = 0; i < n; i++) {
    bfU32[0] = ((b[2 * i]! | (b[2 * i + 1]! << 8)) << 16) >>> 0;
    y[i] = bfF32[0]!;
  }
};

const DEQUANT: Record<number, Dequant> = {
  [GgmlType.F32]: deqF32,
  [GgmlType.F16]: deqF16,
  [GgmlType.BF16]: deqBF16,
  [GgmlType.Q4_0]: deqQ4_0,
  [GgmlType.Q4_1]: deqQ4_1,
  [GgmlType.Q5_0]: deqQ5(false),
  [GgmlType.Q5_1]: deqQ5(true),
  [GgmlType.Q8_0]: deqQ8_0,
  [GgmlType.Q4_K]: deqQ45K(false),
  [GgmlType.Q5_K]: deqQ45K(true),
  [GgmlType.Q6_K]: deqQ6_K,
};

export const SUPPORTED_GGML_TYPES: readonly string[] = Object.keys(DEQUANT).map((t) => ggmlTypeName(Number(t)));
export const canDequantize = (type: number): boolean => type in DEQUANT;

function check(type: number, bytes: Uint8Array, n: number, what: string): { dq: Dequant; nBlocks: number } {
  const dq = DEQUANT[type];
  const info = GGML_TYPES[type];
  if (!dq || !info) {
    throw new ModelFormatError(
      `${what}: ggml type ${ggmlTypeName(type)} cannot be dequantized (supported: ${SUPPORTED_GGML_TYPES.join(', ')})`,
    );
  }
  if (n % info.blockSize !== 0) throw new ModelFormatError(`${what}: ${n} elements is not a whole number of ${info.name} blocks`);
  const nBlocks = n / info.blockSize;
  if (bytes.byteLength < nBlocks * info.typeSize) {
    throw new ModelFormatError(`${what}: ${info.name} data is ${bytes.byteLength} bytes, expected ${nBlocks * info.typeSize}`);
  }
  return { dq, nBlocks };
}

/** Dequantizes `n` elements of ggml type `type` to f32. */
export function dequantizeF32(type: number, bytes: Uint8Array, n: number, what = 'tensor'): Float32Array {
  const { dq, nBlocks } = check(type, bytes, n, what);
  const out = new Float32Array(n);
  dq(bytes, nBlocks, out);
  return out;
}

const CHUNK_BLOCKS = 256; // K-quant blocks per scratch chunk (64 Ki elements)

/** Dequantizes `n` elements of ggml type `type` to IEEE f16 bits (via f32, round-to-nearest-even). */
export function dequantizeF16(type: number, bytes: Uint8Array, n: number, what = 'tensor'): Uint16Array {
  const { dq, nBlocks } = check(type, bytes, n, what);
  const out = new Uint16Array(n);
  if (type === GgmlType.F16) {
    for (let i = 0; i < n; i++) out[i] = bytes[2 * i]! | (bytes[2 * i + 1]! << 8);
    return out;
  }
  const info = GGML_TYPES[type]!;
  const blocksPerChunk = Math.max(1, Math.floor((CHUNK_BLOCKS * 256) / info.blockSize));
  const scratch = new Float32Array(blocksPerChunk * info.blockSize);
  for (let b0 = 0; b0 < nBlocks; b0 += blocksPerChunk) {
    const nb = Math.min(blocksPerChunk, nBlocks - b0);
    const src = bytes.subarray(b0 * info.typeSize, (b0 + nb) * info.typeSize);
    const part = nb === blocksPerChunk ? scratch : scratch.subarray(0, nb * info.blockSize);
    dq(src, nb, part);
    f32ArrayToF16(part, out, b0 * info.blockSize);
  }
  return out;
}
