/**
 * How a matmul's arguments become a launch, for every matmul kernel alike (they share kernels/matmul_io.wgsl):
 * its bindings, its uniform parameters, and the defines of its weights' storage type.
 */
import type { MatmulArgs, WeightDType } from './ops-args';
import { checkQuantShape, isQuant, QUANT, scaleBase, vec4Blocks } from './quant';

/** The most key slices gemv's COMBINE merges (Ops.combineFold). */
export const COMBINE_MAX = 8;

const u = (v: number) => ({ u32: v });
const f = (v: number) => ({ f32: v });

/** The bindings every matmul kernel shares (matmul_io.wgsl). */
export function matmulBindings(a: MatmulArgs): Record<number, GPUBuffer> {
  const b: Record<number, GPUBuffer> = { 1: a.x, 2: a.w, 3: a.y };
  if (a.bias) b[4] = a.bias;
  if (a.residual) b[5] = a.residual;
  if (a.pre && 'norm' in a.pre) {
    b[6] = a.pre.norm;
    if (a.pre.post) Object.assign(b, { 9: a.pre.post.res, 10: a.pre.post.w, 11: a.pre.post.out });
  }
  if (a.pre && 'combine' in a.pre) b[7] = a.pre.combine.ml;
  return b;
}

/** Whether a matmul writes a column range of a wider output (a part of a split matrix): its own pipeline. */
export const yRange = (a: MatmulArgs) => (a.ldy ?? a.N) !== a.N || (a.y0 ?? 0) !== 0;

/** The uniform parameters of matmul_io.wgsl's Params, in order. */
export function matmulParams(a: MatmulArgs) {
  const y0 = a.y0 ?? 0, ldy = a.ldy ?? a.N;
  if (y0 + a.N > ldy) throw new Error(`matmul: columns [${y0}, ${y0 + a.N}) do not fit rows of ${ldy}`);
  let sbase = 0;
  if (isQuant(a.wDtype)) {
    checkQuantShape(a.wDtype, a.K, 'matmul');
    sbase = scaleBase(a.wDtype, (a.N * a.K) / QUANT[a.wDtype].block);
  }
  const norm = a.pre && 'norm' in a.pre ? a.pre : null;
  const comb = a.pre && 'combine' in a.pre ? a.pre.combine : null;
  return [u(a.T), u(a.N), u(a.K / 4), u(ldy), u(y0), u(sbase), f(norm?.eps ?? 0), u(norm?.plusOne ? 1 : 0), u(comb?.heads ?? 0), u(comb?.splits ?? 0)];
}

/** The matmul kernels' defines for a weight dtype: W_F16, or W_Q and the type's flag (quant.wgsl). */
export function wDefines(d: WeightDType): Record<string, boolean> {
  return isQuant(d) ? { W_F16: false, W_Q: true, [d.toUpperCase()]: true } : { W_F16: d === 'f16' };
}

/** Whether gemv reads a matrix of `d` weights, K wide, 16 bytes a load where asked (W8): packed f16, K a multiple of 8. */
export const takesWideLoads = (d: WeightDType, K: number) => d === 'f16' && K % 8 === 0;

/**
 * gemv.wgsl's defines for a launch of `a` (Ops.gemv): with subgroups (`sg`) `cols` columns a workgroup, `xk4` vec4s
 * of each row of x staged (STAGE; 0: none), and `wide` asking for 16-byte loads, which f16 weights with K a
 * multiple of 8 take (W8).
 */
export function gemvDefines(a: MatmulArgs, o: { sg: boolean; cols: number; xk4: number; wide: boolean }): Record<string, boolean | number> {
  const glu = a.pre && 'glu' in a.pre ? a.pre.glu : null;
  const comb = a.pre && 'combine' in a.pre ? a.pre.combine : null;
  const norm = !!a.pre && 'norm' in a.pre;
  return {
    TX: a.T, SG: o.sg, ...(o.sg ? { COLS: o.cols } : { PARTS: 256 * a.T }), ...wDefines(a.wDtype), W8: o.wide && takesWideLoads(a.wDtype, a.K),
    BIAS: !!a.bias, RESIDUAL: !!a.residual, Y_RANGE: yRange(a), NORM: norm, GLU: !!glu, GELU_TANH: glu === 'gelu_tanh',
    COMBINE: !!comb, ...(comb ? { XS: (a.T * a.K) / 4, WTS: a.T * comb.heads * COMBINE_MAX } : {}), QW4: isQuant(a.wDtype) && vec4Blocks(a.wDtype),
    STAGE: o.xk4 > 0, ...(o.xk4 ? { XK4: o.xk4 } : {}), POST: norm && !!(a.pre as { post?: unknown }).post,
  };
}

/**
 * A key equal for two launches whenever gemvDefines gives them the same defines: every input it reads (K whole,
 * where it reads K % 8 and T·K). Ops.gemv keeps its pipelines by it, since building the defines and comparing them
 * with each pipeline's was a seventh of the host's time recording SmolLM2's decode step (bench:record).
 */
export function gemvKey(a: MatmulArgs, o: { sg: boolean; cols: number; xk4: number; wide: boolean }): string {
  const p = a.pre;
  const pre = !p ? '-' : 'glu' in p ? `g${p.glu}` : 'combine' in p ? `c${p.combine.heads}` : p.post ? 'np' : 'n';
  return `${a.T} ${a.wDtype} ${a.K} ${a.bias ? 1 : 0}${a.residual ? 1 : 0}${yRange(a) ? 1 : 0} ${pre} ${o.sg ? o.cols : 0} ${o.xk4} ${o.wide ? 1 : 0}`;
}

/** gemv_sg's columns a workgroup: one per subgroup of the device's smallest size (256 invocations), 8 to 64. */
export const gemvSgColumns = (subgroupMin: number) => Math.max(8, Math.min(64, Math.floor(256 / subgroupMin)));

/** The workgroup memory gemv takes for itself, beside what a prologue stages: its partial sums, or gemv_sg's column counter. */
export function gemvOwnBytes(T: number, sg: boolean): number {
  return sg ? 4 : 4 * 256 * T;
}

/**
 * The vec4s of each of T rows of a K-wide x that gemv's STAGE keeps in workgroup memory (`wgStorage` bytes): all of
 * them where they fit beside the kernel's own sums (and NORM's reduction), else as many as fit (the rest are read on
 * the fly).
 */
export function stagedVec4s(T: number, K: number, sg: boolean, norm: boolean, wgStorage: number): number {
  const reserved = gemvOwnBytes(T, sg) + (norm ? 4 * (256 + 2 * T) : 0) + 64;
  return Math.max(0, Math.min(K / 4, Math.floor((wgStorage - reserved) / (16 * T))));
}

/** 128x128 tiles only pay once a product has this many of them (an H100 has 132 multiprocessors). */
const TILES128_MIN = 256;

/**
 * The tiled kernel for a product [T, K]·[K, N] of 16 rows or more. On an H100 (gpu-h100-4.json, -6.json) the
 * 128-row tiles won on Llama-1B's gate/up (2048 tiles, K 2048: 33 against 31 TFLOP/s) and down products (256
 * tiles, K 8192: 33 against 29) but lost on its q/k/v (384 tiles, K 2048: 25 against 29). They also won on its
 * output product (256 tiles, K 2048: 32 against 29), which this rule gives the 64-row tiles: the costlier of the
 * two misses the old rule (>= 256 tiles) and this one make (0.07 against 0.17 ms a layer).
 */
export function tiledVariant(T: number, N: number, K: number): 'tiled' | 'tiled128' {
  const tiles = Math.ceil(T / 128) * Math.ceil(N / 128);
  return tiles >= TILES128_MIN && (K >= 4096 || tiles >= 4 * TILES128_MIN) ? 'tiled128' : 'tiled';
}
