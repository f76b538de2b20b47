/**
 * How a matmul's arguments become a launch, for every matmul kernel alike (they share kernels/matmul_io.wgsl):
 * its bindings, its uniform parameters, and the defines of its weights' storage type.
 */
import type { MatmulArgs, WeightDType } from './ops-args';
import { checkQuantShape, isQuant, QUANT, scaleBase } from './quant';

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

/** gemv_sg's columns a workgroup: one per subgroup of the device's smallest size (256 invocations), 8 to 64. */
export const gemvSgColumns = (subgroupMin: number) => Math.max(8, Math.min(64, Math.floor(256 / subgroupMin)));

/** The workgroup memory gemv takes for itself, beside what a prologue stages: its partial sums, or gemv_sg's column counter. */
export function gemvOwnBytes(T: number, sg: boolean): number {
  return sg ? 4 : 4 * 256 * T;
}
