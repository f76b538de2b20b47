/** IEEE half and bfloat16 conversions, used by loaders, uploads and references. */
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
  const x = u32[0];
  const sign = (x >>> 16) & 0x8000;
  const exp = (x >>> 23) & 0xff;
  let mant = x & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0);
  let e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && h & 1)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && h & 1)) h++;
  return sign | h;
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
  const out = new Float32Array(h.length);
  for (let i = 0; i < h.length; i++) out[i] = halfToFloat(h[i]);
  return out;
}

export function floatsToHalves(a: Float32Array): Uint16Array {
  const out = new Uint16Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = floatToHalf(a[i]);
  return out;
}
