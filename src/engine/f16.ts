/** IEEE half and bfloat16 conversions, used by loaders, uploads and references. */
import type { LayerRows } from '../types/kv';
const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** f16 bits → f32 value (exact). */
export function halfToFloat(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** f32 value → f16 bits, rounding to nearest even (as WGSL's pack2x16float and numpy do). */
export function floatToHalf(v: number): number {
  f32[0] = v;
  return f32BitsToF16Bits(u32[0]);
}

/** IEEE f16 bits of the f32 with bits `x`, round-to-nearest-even. */
function f32BitsToF16Bits(x: number): number {
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  const mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  const e = exp - 112; // rebias 127 -> 15
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const m = mant | 0x800000;
    const shift = 14 - e;
    let h = m >>> shift;
    const rem = m & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && h & 1)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && h & 1)) h++; // a carry correctly rolls into the exponent
  return sign | h;
}

let f16Table: Float32Array | null = null;
/** f32 value of every f16 bit pattern (256 KiB, built on first use). */
export function f16ToF32Table(): Float32Array {
  if (!f16Table) {
    f16Table = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) f16Table[h] = halfToFloat(h);
  }
  return f16Table;
}

/** Converts f32 values to f16 bits into `out` (fast path for normal values). */
export function f32ArrayToF16(src: Float32Array, out: Uint16Array, outOffset = 0): void {
  // Int32 view: keeps values in V8's small-integer range (Uint32 values above 2^31 are boxed doubles).
  const bits = new Int32Array(src.buffer, src.byteOffset, src.length);
  for (let i = 0; i < bits.length; i++) {
    const x = bits[i] | 0;
    const e = (x >> 23) & 0xff;
    if (e > 112 && e < 143) {
      // Normal f16 range: add the round-to-nearest-even bias, drop 13 mantissa bits, rebias the
      // exponent (a mantissa carry rolls into the exponent, up to infinity).
      const r = x + 0xfff + ((x >> 13) & 1);
      out[outOffset + i] = ((x >> 16) & 0x8000) | ((((r >> 13) & 0x3ffff) - (112 << 10)) & 0x7fff);
    } else out[outOffset + i] = f32BitsToF16Bits(x >>> 0);
  }
}

/** bf16 bits → f32 value (exact). */
export function bf16ToFloat(b: number): number {
  u32[0] = b << 16;
  return f32[0];
}

/** Rounds every value to the nearest f16 (what packed f16 storage keeps). */
export function roundToHalf(a: Float32Array): Float32Array {
  return a.map((v) => halfToFloat(floatToHalf(v)));
}

export function halvesToFloats(h: Uint16Array): Float32Array {
  const t = f16ToF32Table();
  const out = new Float32Array(h.length);
  for (let i = 0; i < h.length; i++) out[i] = t[h[i]];
  return out;
}

/**
 * Rows kept as halves (see LayerRows.halves): k and v are widened to f32 on first read, and only then, so a
 * chunk that is only uploaded is never widened on the host.
 */
export function halfRows(k16: Uint16Array, v16: Uint16Array): LayerRows {
  let k: Float32Array | undefined;
  let v: Float32Array | undefined;
  return {
    halves: { k: k16, v: v16 },
    get k() {
      return (k ??= halvesToFloats(k16));
    },
    get v() {
      return (v ??= halvesToFloats(v16));
    },
  };
}

export function floatsToHalves(a: Float32Array): Uint16Array {
  const out = new Uint16Array(a.length);
  f32ArrayToF16(a, out);
  return out;
}
