/**
 * The arguments of Ops' launchers (ops.ts), and the names of their kernel variants and storage types: what a
 * caller of the engine's ops passes, kept apart from how they are launched.
 */
import type { QuantType } from './quant';

export type StoreDType = 'f32' | 'f16';
/** How a weight matrix is stored: f32, packed f16, or packed ggml blocks (quant.ts, kernels/quant.wgsl). */
export type WeightDType = StoreDType | QuantType;

/**
 * Matmul kernels: 'reg' (matmul.wgsl, register tiles, no barriers; what CPU
 * adapters want), and for real GPUs 'tiled' (matmul_tiled.wgsl, 64x64
 * workgroup-memory tiles), 'tiled128' (matmul_tiled128.wgsl, 128x128 tiles
 * for products large enough to fill the GPU with them) and 'gemv'
 * (gemv.wgsl, up to 4 rows of x: decode's matrix-vector products, streaming
 * the weights at memory bandwidth), and 'gemv_sg', the same kernel summing
 * with subgroup operations, on devices with the `subgroups` feature.
 */
export type MatmulVariant = 'reg' | 'tiled' | 'tiled128' | 'gemv' | 'gemv_sg';
export type GemvVariant = 'gemv' | 'gemv_sg';
/** Which family of matmul kernels an adapter gets (Engine picks it from the adapter's profile). */
export type MatmulProfile = 'cpu' | 'gpu';
export interface MatmulArgs {
  x: GPUBuffer; w: GPUBuffer; wDtype: WeightDType; y: GPUBuffer;
  T: number; N: number; K: number; bias?: GPUBuffer; residual?: GPUBuffer; variant?: MatmulVariant;
  /**
   * y's row stride (default N) and the first of the N columns this call writes (default 0): a matrix stored in
   * row parts runs once per part into its own columns. Bias and residual are indexed like y.
   */
  ldy?: number; y0?: number;
  /** What the kernel does to x as it reads it (gemv only, which a call with it gets): see XPrologue. */
  pre?: XPrologue;
  /** The tiled kernels' f16 slices (kernels/matmul_half.wgsl) on or off; default: Ops.half. Needs `shader-f16`. */
  half?: boolean;
}

/**
 * A launch folded into the GEMV that consumes its output (kernels/gemv_x.wgsl), for decode on real GPUs, which
 * is launch-bound: RMSNorm of x's rows (weight `norm`, as RmsNormArgs), the GLU of a gate/up projection
 * (x is then [T, 2K]: gate, then up), or attention_combine's merge of attention's key slices (x is then the
 * slices' part, AttentionSlices). See Ops.fuses and Ops.combineFold.
 */
export type XPrologue = { norm: GPUBuffer; eps: number; plusOne: boolean; post?: PostNorm } | { glu: GluArgs['act'] } | { combine: AttentionSlices };

/**
 * Gemma 3's sandwich norm folded into the next norm's GEMV (with Ops.stageX): x is then the previous product's
 * output, and the norm's input is res + rmsnorm(x; w) (the same eps and 1 + w), which the launch's first workgroup
 * also writes to `out`, the residual stream's next buffer.
 */
export interface PostNorm { w: GPUBuffer; res: GPUBuffer; out: GPUBuffer }

/**
 * Attention's output left in key slices, unmerged (AttentionArgs.leaveSlices): each slice's unnormalised output
 * in `part` ([T, heads, splits, HD]) and its running (max, sum) in `ml` ([T, heads, splits], base 2), as
 * kernels/attention_combine.wgsl reads them.
 */
export interface AttentionSlices { part: GPUBuffer; ml: GPUBuffer; heads: number; splits: number }

/**
 * A weight matrix [rows, cols] (canonical [out, in]) on the GPU: one buffer when it fits the adapter's binding
 * limit, otherwise row ranges [row0, row0 + rows) in buffers of their own (rows are never split). See
 * splitRows in model/gpu-plan.ts.
 */
export interface WeightMatrix {
  rows: number;
  cols: number;
  dtype: WeightDType;
  /** A part's own dtype, where it differs from the matrix's (fused tensors stored in different ggml types). */
  parts: readonly { buffer: GPUBuffer; row0: number; rows: number; dtype?: WeightDType }[];
}
export interface RmsNormArgs {
  x: GPUBuffer; w: GPUBuffer; T: number; D: number; eps: number; plusOne: boolean;
  /** Heads per row (q/k norm), their row stride and start offset in x. */
  G?: number; stride?: number; offset?: number;
  /** Where the D weights start in w (a model keeps its q and k norms in one buffer); default 0. */
  wOffset?: number;
  /** Output (dense [T, G*D]); omitted means in place. */
  y?: GPUBuffer; residual?: GPUBuffer;
  /** A workgroup per row instead of one invocation; default: on GPUs. */
  perRow?: 'invocation' | 'workgroup';
}
export interface AttentionArgs {
  q: GPUBuffer; qStride: number; qOffset: number; k: GPUBuffer; v: GPUBuffer; kvDtype: StoreDType;
  qpos: GPUBuffer; kpos: GPUBuffer; out: GPUBuffer;
  T: number; n: number; H: number; NKV: number; HD: number; window: number; scale: number;
  /** Per query row, [first, last) cache rows worth scanning (see keyBounds). */
  bounds: GPUBuffer;
  /** Slices of the key range run in parallel (flash-decoding); default: chosen for the adapter (see attentionSplits). */
  splits?: number;
  /** Query rows per invocation; default: 4 on CPU adapters (they share key loads), 1 on GPUs (registers, occupancy). */
  rowsPerThread?: 1 | 4;
  /** The kernel (see AttentionVariant); default: chosen for the adapter and the row count (Ops.pickAttention). */
  variant?: AttentionVariant;
  /** The tiled kernel's keys per tile, a multiple of 4 (default 16), capped by what the adapter's workgroup memory holds. */
  keysPerTile?: number;
  /**
   * The tiled kernel's lanes a row group (TiledLanes): 1 is attention_tiled.wgsl, 2 or 4 attention_tiled_sg.wgsl;
   * default: Ops.tiled's, else 1.
   */
  tiledLanes?: TiledLanes;
  /**
   * The rows a row group of more than one lane holds (attention_tiled_sg's G): as many as its lanes, each key read once
   * for them all, or 1, each row's head split over the lanes (fewer registers for wide heads); default: Ops.tiled's
   * where tiledLanes is not given, else the lanes.
   */
  tiledRows?: number;
  /** attention_decode's keys an invocation scores in each round of 64 * keysPerThread (default: Ops.decodeKeysPerThread, else 1; not 'lanes'). */
  keysPerThread?: KeysPerThread;
  /**
   * A decode step's one row (T = 1, attention_decode only: 'keys' or 'lanes') with rope_scatter's work folded in: q is then the row's
   * q/k/v before RoPE (qStride its width), k and v are written as well as read, and qpos and bounds are not read.
   */
  step?: AttentionStep;
  /**
   * Where the key slices number 2 to this many, no attention_combine launch follows: Ops.attention returns the
   * slices (AttentionSlices) for the product that consumes them to merge as it reads them, and `out` is not
   * written. Default 0: always merged into `out`. See Ops.combineFold.
   */
  leaveSlices?: number;
  /** Where this pass's step values sit among those a replayed tape patches (Param.tag): a decode step's. */
  tags?: StepTags;
}
/**
 * The indices, in a decode step's values (ForwardPass.stepValues), of what attention's parameters take from the
 * step: the cache's length, the row's position and cache row, and the keys its layer kind scans.
 */
export interface StepTags { n: number; qp: number; row: number; first: number; last: number }
/** What attention_decode's STEP needs that rope_scatter took from buffers: see AttentionArgs.step. */
export interface AttentionStep {
  /** The model's RoPE table by position (PositionTable), and the row's position: it is rotated by row qp. */
  cs: GPUBuffer; qp: number;
  /** The cache row the step's key and value go into, and the rows its query scans ([first, last), as keyBounds). */
  row: number; first: number; last: number;
  interleaved: boolean;
  /**
   * Gemma 3's q/k norm, done in the same launch before RoPE (what two rmsnorm launches over the row's q and k
   * heads do otherwise): `w` holds the q norm's HD weights then the k norm's, as the model keeps them (qkNorm).
   */
  qkNorm?: { w: GPUBuffer; eps: number; plusOne: boolean };
}
export type KeysPerThread = 1 | 2 | 4 | 8;
/**
 * attention_tiled's lanes a row group: 1, one invocation a row and the whole head (attention_tiled.wgsl); 2 or 4, R
 * subgroup lanes holding R rows, a share of the head each, every key read once for the R rows
 * (attention_tiled_sg.wgsl; devices with `subgroups` of at least R lanes, heads a multiple of 4R).
 */
export type TiledLanes = 1 | 2 | 4;
/**
 * A way of prefill's attention_tiled (Ops.tiled, as Engine.tunePrefill keeps it): lanes a row group, the rows a group
 * holds (its lanes, or 1: each row's head split over them; AttentionArgs.tiledRows), and keys a tile.
 */
export interface TiledWay {
  lanes: TiledLanes;
  rows: number;
  keysPerTile: number;
}
/**
 * The kernel a decode row attends with once it scans at least `from` keys (Ops.longAttention), where a long span
 * wants another than the short one a whole decode step was timed with: Engine.tuneDecode times attention alone
 * over a short and a long span and sets it where the long span's fastest differs.
 */
export interface LongAttention {
  from: number;
  attention: AttentionVariant;
  /** attention_decode's keys an invocation a round, for 'keys' (1 otherwise). */
  keysPerThread: KeysPerThread;
}
/**
 * Attention kernels: 'rows' (attention.wgsl: each invocation a group of query rows, reading every key itself),
 * 'tiled' (attention_tiled.wgsl: a workgroup of 64 rows stages tiles of keys and values in workgroup memory) and
 * 'keys' (attention_decode.wgsl: a workgroup of 64 invocations per row, spread over its keys; for decode) and
 * 'lanes' (attention_decode.wgsl's LANES, heads of at most 64: each of the 64 invocations walks keys of its own
 * with its own online softmax, merged once at the end; for decode at long contexts) and 'grouped'
 * (attention_grouped.wgsl: LANES for a kv head's 2 to 4 q heads in one workgroup, so a key's rows are fetched once
 * for the group; heads of at most 64, no step fold) and 'grouped-keys' (attention_decode.wgsl in rounds with QG: a
 * kv head's q heads in one workgroup, so a key's rows are loaded once for them; any head 'keys' takes, groups of 2
 * to 8, with the step fold and its q/k norm).
 */
export type AttentionVariant = 'rows' | 'tiled' | 'keys' | 'lanes' | 'grouped' | 'grouped-keys';
export interface ScoresArgs extends Omit<AttentionArgs, 'v' | 'out' | 'T' | 'bounds'> {
  rows: GPUBuffer; R: number; head: number; out: GPUBuffer;
}
/** rope_scatter: q and k heads of fused q/k/v rows rotated in place, then k and v into cache rows idx[t]. */
export interface RopeScatterArgs {
  x: GPUBuffer;
  /** RoPE's (cos, sin) rows, and for each pass row the row of `cs` that rotates it (as GatherArgs). */
  cs: GPUBuffer; csRows: GPUBuffer;
  idx: GPUBuffer; dstK: GPUBuffer; dstV: GPUBuffer; dstDtype: StoreDType;
  T: number; H: number; NKV: number; HD: number; stride: number; interleaved: boolean;
}
export interface ScatterArgs {
  src: GPUBuffer; stride: number; offset: number; idx: GPUBuffer; dst: GPUBuffer; dstDtype: StoreDType; T: number; W: number;
}
/**
 * Rows [t0, t0 + T) of a placement (kernels/kv_gather.wgsl): source row srcRows[t] of the slab's keys and values
 * (`k`, `v`, keys before RoPE) goes to cache row idx[t] of dstK/dstV, the key rotated with row t of `cs`.
 */
export interface GatherArgs {
  k: GPUBuffer; v: GPUBuffer; srcDtype: StoreDType; srcRows: GPUBuffer; idx: GPUBuffer;
  /** RoPE's (cos, sin) rows, and for each placement row the row of `cs` that rotates its key. */
  cs: GPUBuffer; csRows: GPUBuffer;
  dstK: GPUBuffer; dstV: GPUBuffer; dstDtype: StoreDType; t0: number; T: number; W: number; HD: number; interleaved: boolean;
}
export interface EmbedArgs {
  tokens: GPUBuffer; table: GPUBuffer; dtype: WeightDType; x: GPUBuffer; T: number; D: number; V: number; scale: number;
  /** The rows of the [V, D] table that `table` holds (default all): only tokens among them are written. */
  row0?: number; rows?: number;
}
export interface GluArgs { gu: GPUBuffer; out: GPUBuffer; T: number; I: number; act: 'silu' | 'gelu_tanh' }

/**
 * The settings of Ops that change which kernels a call gets: each has a default by adapter profile, Engine's tuning
 * (tuneDecode, tunePrefill) keeps what it measured fastest, and tests and the GPU kit force either way.
 */
export interface OpsSettings {
  /**
   * Whether decode folds its RMSNorm and GLU launches into the GEMVs after them (XPrologue), and a step's
   * rope_scatter into attention_decode where that attends (AttentionArgs.step); default: on the 'gpu' profile. CPU adapters keep separate launches: only gemv has the prologues, and its workgroup barriers
   * are what they handle worst (SwiftShader, stories260K decode: 6 tok/s fused against 220 unfused; gemv alone
   * 30-100x slower than the register matmul). Tests (LEGOKV_FUSE=on|off) and the GPU kit force either way.
   */
  fuse?: boolean;
  /** The attention kernel every call that names none gets, instead of pickAttention's choice (the GPU kit times decode both ways). */
  attentionVariant?: AttentionVariant;
  /** The attention kernel pickAttention gives decode's few rows on the 'gpu' profile, where set (Engine.tuneDecode measures it). */
  decodeAttention?: AttentionVariant;
  /** attention_decode's keys an invocation a round where a call names none (default 1; Engine.tuneDecode measures it). */
  decodeKeysPerThread?: KeysPerThread;
  /** attention_tiled's way where a call names none (default: one lane a row, 16 keys a tile; Engine.tunePrefill measures it). */
  tiled?: TiledWay;
  /** Decode's kernel for rows that scan many keys, where it differs from the short spans' (Engine.tuneDecode measures it). */
  longAttention?: LongAttention;
  /**
   * Whether a fused decode step's output projection merges attention's key slices as it reads them (gemv's
   * COMBINE), so no attention_combine launch runs; default on wherever decode fuses. Engine.tuneDecode measures it.
   */
  foldCombine?: boolean;
  /**
   * Whether gemv reads x from workgroup memory, worked out there once a workgroup (a fused RMSNorm's or GLU's, or x
   * as stored: STAGE), rather than from x's buffer in every column's lanes for each weight they read, and the
   * prologue with it; default off. Engine.tuneDecode measures it.
   */
  stageX?: boolean;
  /** The GEMV kernel every product of at most 4 rows gets on the 'gpu' profile, instead of pickGemv's (the GPU kit times decode with each). */
  gemvVariant?: GemvVariant;
  /**
   * Whether gemv reads packed f16 weights 16 bytes a load (W8: twice the bytes in flight for the same lanes, where a
   * GEMV of few columns has too few lanes to fill the memory pipe) rather than 8, where K is a multiple of 8; default
   * off. Engine.tuneDecode measures it.
   */
  gemvWide?: boolean;
  /**
   * Whether the tiled matmuls stage and multiply f16 weights' products in f16 (kernels/matmul_half.wgsl);
   * default: where the device has `shader-f16`. f32 weights always keep f32 math. The GPU kit times both.
   */
  half?: boolean;

}
