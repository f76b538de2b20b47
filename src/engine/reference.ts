/**
 * Plain TypeScript twins of the WGSL kernels (see ops.ts for the argument
 * meanings). They are slow and obvious on purpose: the parity tests compare
 * every kernel against them, and the reference forward pass in
 * tests/engine/reference-model.ts is built from them.
 */
import { floatToHalf, halfToFloat } from './f16';

/**
 * y = x · wᵀ (+ bias) (+ residual), into a new [T, N] array, or, with `out`, into columns [y0, y0 + N) of
 * out.y ([T, ldy]; bias and residual indexed like it), which is returned.
 */
export function matmul(
  x: Float32Array, w: Float32Array, T: number, N: number, K: number, bias?: Float32Array, residual?: Float32Array,
  out?: { y: Float32Array; ldy: number; y0: number },
) {
  const { y, ldy, y0 } = out ?? { y: new Float32Array(T * N), ldy: N, y0: 0 };
  for (let t = 0; t < T; t++) {
    for (let n = 0; n < N; n++) {
      let s = 0;
      for (let k = 0; k < K; k++) s += x[t * K + k] * w[n * K + k];
      const i = t * ldy + y0 + n;
      y[i] = s + (bias ? bias[y0 + n] : 0) + (residual ? residual[i] : 0);
    }
  }
  return y;
}

const toHalf = (v: number) => halfToFloat(floatToHalf(v));
/** The largest finite f16: matmul_half.wgsl clamps x to it before rounding. */
const HALF_MAX = 65504;

/**
 * matmul as the tiled kernels compute it with HALF (kernels/matmul_half.wgsl): x clamped to f16's range and
 * rounded to f16, w rounded to f16, each 16-deep slice's products rounded to f16 and summed in f16, the slices'
 * sums in f32. The kernel may fuse a product and its sum (one rounding where this rounds twice): the parity
 * test's bound covers that.
 */
export function matmulHalf(x: Float32Array, w: Float32Array, T: number, N: number, K: number, bias?: Float32Array, residual?: Float32Array) {
  const x16 = x.map((v) => toHalf(Math.min(HALF_MAX, Math.max(-HALF_MAX, v))));
  const w16 = w.map(toHalf);
  const y = new Float32Array(T * N);
  for (let t = 0; t < T; t++) {
    for (let n = 0; n < N; n++) {
      let acc = 0;
      for (let k0 = 0; k0 < K; k0 += 16) {
        let part = 0;
        for (let k = k0; k < Math.min(K, k0 + 16); k++) part = toHalf(part + toHalf(x16[t * K + k] * w16[n * K + k]));
        acc = Math.fround(acc + part);
      }
      y[t * N + n] = acc + (bias ? bias[n] : 0) + (residual ? residual[t * N + n] : 0);
    }
  }
  return y;
}

/** Returns the normalised rows densely as [T, G*D] (the non-in-place form). */
export function rmsnorm(
  x: Float32Array, w: Float32Array, T: number, D: number, eps: number, plusOne: boolean,
  G = 1, stride = G * D, offset = 0, residual?: Float32Array,
) {
  const y = new Float32Array(T * G * D);
  for (let t = 0; t < T; t++) {
    for (let g = 0; g < G; g++) {
      const base = t * stride + offset + g * D;
      let ss = 0;
      for (let i = 0; i < D; i++) ss += x[base + i] ** 2;
      const inv = 1 / Math.sqrt(ss / D + eps);
      for (let i = 0; i < D; i++) {
        const o = (t * G + g) * D + i;
        y[o] = x[base + i] * inv * (w[i] + (plusOne ? 1 : 0)) + (residual ? residual[o] : 0);
      }
    }
  }
  return y;
}

/** In place on a copy; cs holds (cos, sin) pairs per row and frequency. */
export function rope(
  x: Float32Array, cs: Float32Array, T: number, H: number, HD: number, stride: number, offset: number, interleaved: boolean,
) {
  const y = x.slice();
  const half = HD / 2;
  for (let t = 0; t < T; t++) {
    for (let h = 0; h < H; h++) {
      const base = t * stride + offset + h * HD;
      for (let i = 0; i < half; i++) {
        const ia = interleaved ? base + 2 * i : base + i;
        const ib = interleaved ? ia + 1 : ia + half;
        const c = cs[2 * (t * half + i)];
        const s = cs[2 * (t * half + i) + 1];
        const a = x[ia];
        const b = x[ib];
        y[ia] = a * c - b * s;
        y[ib] = a * s + b * c;
      }
    }
  }
  return y;
}

export function visible(qp: number, kp: number, window: number) {
  return kp <= qp && (window <= 0 || qp - kp < window);
}

export interface RefAttention {
  q: Float32Array; qStride: number; qOffset: number; k: Float32Array; v: Float32Array;
  qpos: Int32Array; kpos: Int32Array; T: number; n: number; H: number; NKV: number; HD: number; window: number; scale: number;
}

/** Raw scores (masked entries -Infinity) for query row t, head h. */
export function scores(a: RefAttention, t: number, h: number): Float64Array {
  const kvh = Math.floor(h / (a.H / a.NKV));
  const s = new Float64Array(a.n);
  for (let j = 0; j < a.n; j++) {
    if (!visible(a.qpos[t], a.kpos[j], a.window)) {
      s[j] = -Infinity;
      continue;
    }
    let d = 0;
    for (let i = 0; i < a.HD; i++) {
      d += a.q[t * a.qStride + a.qOffset + h * a.HD + i] * a.k[(j * a.NKV + kvh) * a.HD + i];
    }
    s[j] = d * a.scale;
  }
  return s;
}

export function softmax(s: ArrayLike<number>): Float64Array {
  let m = -Infinity;
  for (let i = 0; i < s.length; i++) m = Math.max(m, s[i]);
  const p = new Float64Array(s.length);
  let l = 0;
  for (let i = 0; i < s.length; i++) l += p[i] = s[i] === -Infinity ? 0 : Math.exp(s[i] - m);
  for (let i = 0; i < s.length; i++) p[i] /= l;
  return p;
}

export function attention(a: RefAttention) {
  const out = new Float32Array(a.T * a.H * a.HD);
  for (let t = 0; t < a.T; t++) {
    for (let h = 0; h < a.H; h++) {
      const p = softmax(scores(a, t, h));
      const kvh = Math.floor(h / (a.H / a.NKV));
      for (let i = 0; i < a.HD; i++) {
        let acc = 0;
        for (let j = 0; j < a.n; j++) if (p[j]) acc += p[j] * a.v[(j * a.NKV + kvh) * a.HD + i];
        out[(t * a.H + h) * a.HD + i] = acc;
      }
    }
  }
  return out;
}

/** Returns the destination after writing T source rows into rows idx[t]. */
export function scatter(src: Float32Array, stride: number, offset: number, idx: Uint32Array, dst: Float32Array, T: number, W: number) {
  const out = dst.slice();
  for (let t = 0; t < T; t++) for (let c = 0; c < W; c++) out[idx[t] * W + c] = src[t * stride + offset + c];
  return out;
}

/**
 * kv_gather: for t in [t0, t0 + T), slab row srcRows[t] of `k` (rotated with row csRows[t] of `cs`) and of `v` into
 * cache rows idx[t] of copies of dstK and dstV, which are returned.
 */
export function gather(
  k: Float32Array, v: Float32Array, srcRows: Uint32Array, idx: Uint32Array, cs: Float32Array, csRows: Uint32Array, t0: number, T: number,
  W: number, HD: number, interleaved: boolean, dstK: Float32Array, dstV: Float32Array,
) {
  const ok = dstK.slice(), ov = dstV.slice();
  for (let t = t0; t < t0 + T; t++) {
    const s = srcRows[t] * W;
    // The row rotated alone, with its own row of the table.
    const half = HD / 2;
    const rowCs = cs.subarray(2 * csRows[t] * half, 2 * (csRows[t] + 1) * half);
    const rotated = rope(k.subarray(s, s + W), rowCs, 1, W / HD, HD, W, 0, interleaved);
    ok.set(rotated, idx[t] * W);
    ov.set(v.subarray(s, s + W), idx[t] * W);
  }
  return { k: ok, v: ov };
}

/**
 * x[t] = table[tokens[t]] * scale into a new [T, D] array, or, with `part`, where `table` holds only rows
 * [row0, row0 + rows) of the [V, D] table: the rows of part.x whose token is among them (returned).
 */
export function embed(
  tokens: Uint32Array, table: Float32Array, T: number, D: number, V: number, scale: number,
  part?: { row0: number; rows: number; x: Float32Array },
) {
  const { x, row0, rows } = part ?? { x: new Float32Array(T * D), row0: 0, rows: V };
  for (let t = 0; t < T; t++) {
    const tok = Math.min(tokens[t], V - 1);
    if (tok < row0 || tok >= row0 + rows) continue;
    for (let d = 0; d < D; d++) x[t * D + d] = table[(tok - row0) * D + d] * scale;
  }
  return x;
}

export function gelu_tanh(x: number) {
  return 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
}
export function silu(x: number) {
  return x / (1 + Math.exp(-x));
}

export function glu(gu: Float32Array, T: number, I: number, act: 'silu' | 'gelu_tanh') {
  const fn = act === 'silu' ? silu : gelu_tanh;
  const out = new Float32Array(T * I);
  for (let t = 0; t < T; t++) for (let i = 0; i < I; i++) out[t * I + i] = fn(gu[t * 2 * I + i]) * gu[t * 2 * I + I + i];
  return out;
}

/** Each row's index of its largest value, the first on ties (argmax.wgsl; the same rule as sampling.ts). */
export function argmax(x: Float32Array, R: number, V: number): Uint32Array {
  const out = new Uint32Array(R);
  for (let r = 0; r < R; r++) {
    let best = 0;
    for (let j = 1; j < V; j++) if (x[r * V + j] > x[r * V + best]) best = j;
    out[r] = best;
  }
  return out;
}
