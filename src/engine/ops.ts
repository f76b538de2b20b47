/**
 * Typed launchers for the WGSL kernels in kernels/, one method per op.
 * Every op has a plain TypeScript twin in reference.ts with the same
 * argument names; tests/engine/kernels.test.ts, attention-kernels.test.ts and their siblings hold them to each other.
 * Sizes are in elements; buffers are f32 unless a dtype says packed f16.
 * The launchers' arguments and the variant names are in ops-args.ts.
 */
import type { Dispatcher, Param } from './gpu/dispatcher';
import type { KernelLibrary } from './gpu/kernels';
import { Scratch } from './model/scratch';
import { checkQuantShape, isQuant, QUANT, scaleBase, type QuantType } from './quant';
import { COMBINE_MAX, gemvDefines, gemvKey, gemvOwnBytes, gemvSgColumns, matmulBindings, matmulParams, stagedVec4s, tiledVariant, wDefines, yRange } from './matmul-launch';
import { attendsDecodeRow, attentionSplits, tiledLanesRun, tiledRowGroups, cpuAttentionSplits, decodeAttentionKernels, foldsStep, GROUPED_KEYS_MAX, GROUPED_MAX, groupedFits, groupedKeysFits, keysSplits, KEYS_MAX_HEAD, LANES_MAX_HEAD, lanesSplits, longFor, TILED_MIN_ROWS, tiledSplits } from './attention-plan';

import type {
  AttentionArgs, AttentionVariant, EmbedArgs, GatherArgs, GemvVariant, GluArgs, MatmulArgs, MatmulProfile, MatmulVariant, RmsNormArgs, RopeScatterArgs,
  KeysPerThread, AttentionSlices, AttentionStep, LongAttention, OpsSettings, ScatterArgs, ScoresArgs, StoreDType, TiledLanes, TiledWay, WeightDType, WeightMatrix, XPrologue,
} from './ops-args';

export { attentionSplits, decodeAttentionKernels, foldsStep, GROUPED_KEYS_MAX, GROUPED_MAX, groupedKeysFits, takesKeysPerThread, keyBounds, keysSplits, LANES_MAX_HEAD, MASKED_SCORE, tiledSplits, unmaskScores } from './attention-plan';
export { COMBINE_MAX, gemvSgColumns, takesWideLoads } from './matmul-launch';
export type {
  AttentionArgs, AttentionVariant, EmbedArgs, GatherArgs, GemvVariant, GluArgs, MatmulArgs, MatmulProfile, MatmulVariant, RmsNormArgs, RopeScatterArgs,
  KeysPerThread, AttentionSlices, AttentionStep, LongAttention, ScatterArgs, ScoresArgs, StoreDType, TiledLanes, TiledWay, WeightDType, WeightMatrix, XPrologue, StepTags, OpsSettings,
} from './ops-args';

const u = (v: number) => ({ u32: v });
const f = (v: number) => ({ f32: v });

const isGemv = (v: MatmulVariant | undefined): v is GemvVariant => v === 'gemv' || v === 'gemv_sg';

/** Ops has the settings of OpsSettings (ops-args.ts): what tuning keeps and tests force. */
export interface Ops extends OpsSettings {}

export class Ops {
  /** The matmul family used when a call names no variant; chosen per adapter (see Engine). */
  matmulProfile: MatmulProfile = 'cpu';
  /**
   * The device's smallest subgroup size where it has the `subgroups` feature (createGpuContext enables it where
   * the adapter offers it), else null: gemv_sg needs it.
   */
  readonly subgroupMin: number | null;
  /** Whether the device has `shader-f16` (createGpuContext enables it where the adapter offers it). */
  readonly shaderF16: boolean;
  constructor(
    readonly lib: KernelLibrary,
    readonly d: Dispatcher,
  ) {
    this.temps = new Scratch(lib.device, () => d.flush());
    this.maxBinding = lib.device.limits.maxStorageBufferBindingSize;
    this.wgStorage = lib.device.limits.maxComputeWorkgroupStorageSize;
    this.wgInvocations = Math.min(lib.device.limits.maxComputeInvocationsPerWorkgroup, lib.device.limits.maxComputeWorkgroupSizeX);
    const info = (lib.device as GPUDevice & { adapterInfo?: GPUAdapterInfo }).adapterInfo;
    // A device without adapterInfo (older browsers) gets 32, the common size on GPUs; gemv_sg is right at any size.
    this.subgroupMin = lib.device.features.has('subgroups') ? (info?.subgroupMinSize ?? 32) : null;
    this.shaderF16 = lib.device.features.has('shader-f16');
  }

  /** The adapter's largest storage binding, read once (attention's slice partials must fit in one). */
  private readonly maxBinding: number;
  /** The adapter's workgroup memory in bytes, read once (attention_tiled's tiles, gemv's COMBINE). */
  private readonly wgStorage: number;
  /** The most invocations a one-dimensional workgroup may have here, read once (attention_grouped's groups). */
  private readonly wgInvocations: number;

  /** Whether a pass of T rows gets the fused launches (see fuse): only the gemv kernel has the prologues. */
  fuses(T: number): boolean {
    return T <= 4 && (this.fuse ?? this.matmulProfile === 'gpu');
  }

  /** Whether a post-norm (PostNorm) folds into the GEMV of T rows, K wide, that reads its output: where x is staged. */
  foldsPostNorm(T: number, K: number): boolean {
    // Either GEMV kernel may read it: the register kernel's own sums take the more workgroup memory.
    return this.fuses(T) && this.stageX === true && stagedVec4s(T, K, false, true, this.wgStorage) > 0;
  }

  /**
   * The most key slices the output projection of T rows, K wide in `heads` heads, merges as it reads them
   * (AttentionArgs.leaveSlices), or 0: where decode fuses and foldCombine is not off, and its merged x and the
   * slices' weights fit the workgroup memory beside the GEMV's own sums. Up to COMBINE_MAX: every workgroup
   * reads every slice, so the fold pays where slices are few (long contexts' many slices keep the launch).
   */
  combineFold(T: number, K: number, heads: number): number {
    if (!this.fuses(T) || this.foldCombine === false || K % (4 * heads) !== 0) return 0;
    const bytes = 4 * (T * K + T * heads * COMBINE_MAX) + gemvOwnBytes(T, this.pickGemv() === 'gemv_sg');
    return bytes <= this.wgStorage ? COMBINE_MAX : 0;
  }

  /** The variants that can compute a [T, K]·[K, N] product (bench:engine and the GPU kit time each). */
  matmulVariants(T = 64): MatmulVariant[] {
    return T <= 4 ? ['reg', 'gemv', ...(this.subgroupMin ? ['gemv_sg' as const] : [])] : T < 16 ? ['reg'] : ['reg', 'tiled', 'tiled128'];
  }

  /**
   * The GEMV kernel for decode's products: gemv_sg where the device has subgroups (its sums need no workgroup
   * memory or barrier), else gemv. Not yet timed on a GPU: the kit's matmul and profile stages time both.
   */
  pickGemv(): GemvVariant {
    return this.gemvVariant ?? (this.subgroupMin ? 'gemv_sg' : 'gemv');
  }

  /** The variant a product [T, K]·[K, N] gets when the call names none: GEMV, register or tiled (tiledVariant). */
  pickMatmul(T: number, N: number, K = Infinity): MatmulVariant {
    if (this.matmulProfile === 'cpu') return 'reg';
    if (T <= 4) return this.pickGemv();
    // Small row counts would leave most of a 64-row tile idle.
    return T < 16 ? 'reg' : tiledVariant(T, N, K);
  }

  matmul(a: MatmulArgs) {
    if (a.K % 4 !== 0) throw new Error(`matmul needs K % 4 == 0, got K=${a.K}`);
    // An explicit tiled variant on fewer than 16 rows falls back to the register kernel: a 64-row tile would idle.
    if (a.pre && a.variant !== undefined && !isGemv(a.variant)) throw new Error(`matmul: only gemv reads x through a prologue, not ${a.variant}`);
    const variant = a.variant === undefined ? (a.pre ? this.pickGemv() : this.pickMatmul(a.T, a.N, a.K)) : !isGemv(a.variant) && a.T < 16 ? 'reg' : a.variant;
    if (isGemv(variant)) return this.gemv(a, variant === 'gemv_sg');
    if (variant !== 'reg') return this.matmulTiled(a, variant === 'tiled128' ? 128 : 64);
    const TM = a.T >= 4 ? 4 : 1;
    const pipe = this.lib.pipeline('matmul', { TM4: TM === 4, ...wDefines(a.wDtype), BIAS: !!a.bias, RESIDUAL: !!a.residual, Y_RANGE: yRange(a) });
    this.d.run(pipe, matmulParams(a), matmulBindings(a), [Math.ceil(a.N / 4 / 64), Math.ceil(a.T / TM), 1]);
  }

  /**
   * y = x · wᵀ for a matrix in row parts: one matmul per part, each writing its columns of y ([T, w.rows]). `pre`,
   * where given, replaces a.pre. Each part's arguments are written out rather than spread from `a`: decode runs this
   * for every product of every step, and spreading was a tenth of the host's recording time.
   */
  matmulParts(a: Omit<MatmulArgs, 'w' | 'wDtype' | 'N' | 'ldy' | 'y0'> & { w: WeightMatrix }, pre = a.pre) {
    const w = a.w;
    if (w.cols !== a.K) throw new Error(`matmul: the matrix has ${w.cols} columns, K is ${a.K}`);
    for (const p of w.parts) {
      this.matmul({
        x: a.x, w: p.buffer, wDtype: p.dtype ?? w.dtype, y: a.y, T: a.T, N: p.rows, K: a.K, bias: a.bias, residual: a.residual,
        variant: a.variant, ldy: w.rows, y0: p.row0, pre, half: a.half,
      });
    }
  }

  /** Whether tiled products of f16 and quantized weights get HALF when a call does not say: Ops.half, else where the device has `shader-f16`. */
  halfByDefault(): boolean {
    return this.shaderF16 && (this.half ?? true);
  }

  /** Whether a tiled product gets HALF: asked for (or halfByDefault) and not f32 weights. */
  private halfFor(a: MatmulArgs): boolean {
    if (a.half && !this.shaderF16) throw new Error('matmul half needs a device with the shader-f16 feature');
    if (a.half && a.wDtype === 'f32') throw new Error('matmul half is for f16 and quantized weights; f32 weights keep f32 math');
    return a.wDtype !== 'f32' && (a.half ?? this.halfByDefault());
  }

  private matmulTiled(a: MatmulArgs, tile: 64 | 128) {
    const defines = { ...wDefines(a.wDtype), BIAS: !!a.bias, RESIDUAL: !!a.residual, Y_RANGE: yRange(a), HALF: this.halfFor(a) };
    const pipe = this.lib.pipeline(tile === 128 ? 'matmul_tiled128' : 'matmul_tiled', defines);
    this.d.run(pipe, matmulParams(a), matmulBindings(a), [Math.ceil(a.N / tile), Math.ceil(a.T / tile), 1]);
  }

  private gemv(a: MatmulArgs, sg: boolean) {
    if (a.T > 4) throw new Error(`gemv takes at most 4 rows of x, got T=${a.T}`);
    if (sg && !this.subgroupMin) throw new Error('gemv_sg needs a device with the subgroups feature');
    const comb = a.pre && 'combine' in a.pre ? a.pre.combine : null;
    if (comb && (comb.splits < 1 || comb.splits > COMBINE_MAX || a.K % (4 * comb.heads) !== 0)) throw new Error(`gemv: merges 1 to ${COMBINE_MAX} key slices of heads a multiple of 4 wide, not ${comb.splits} of ${a.K} / ${comb.heads}`);
    const cols = sg ? gemvSgColumns(this.subgroupMin!) : 8;
    const xk4 = !comb && this.stageX === true ? stagedVec4s(a.T, a.K, sg, !!a.pre && 'norm' in a.pre, this.wgStorage) : 0;
    if (a.pre && 'norm' in a.pre && a.pre.post && !xk4) throw new Error('gemv: a post-norm folds in only where x is staged (Ops.stageX, workgroup memory for it)');
    const o = { sg, cols, xk4, wide: this.gemvWide === true };
    const pipe = this.lib.keyed('gemv', gemvKey(a, o), () => gemvDefines(a, o));
    // One workgroup (of 256) per `cols` output columns.
    this.d.run1d(pipe, matmulParams(a), matmulBindings(a), Math.ceil(a.N / cols) * 64);
  }

  rmsnorm(a: RmsNormArgs) {
    const G = a.G ?? 1;
    const inPlace = !a.y;
    const wg = (a.perRow ?? (this.matmulProfile === 'gpu' ? 'workgroup' : 'invocation')) === 'workgroup';
    const pipe = this.lib.pipeline('rmsnorm', { IN_PLACE: inPlace, ADD_RESIDUAL: !!a.residual, WG: wg });
    const b: Record<number, GPUBuffer> = { 1: a.x, 2: a.w };
    if (a.y) b[3] = a.y;
    if (a.residual) b[4] = a.residual;
    const params = [u(a.T), u(G), u(a.D), u(a.stride ?? G * a.D), u(a.offset ?? 0), f(a.eps), u(a.plusOne ? 1 : 0), u(G * a.D), u(a.wOffset ?? 0)];
    this.d.run1d(pipe, params, b, a.T * G * (wg ? 64 : 1));
  }

  /** RoPE on the q and k heads of fused q/k/v rows, and k and v into the cache, in one launch (rope_scatter.wgsl). */
  ropeScatter(a: RopeScatterArgs) {
    if (a.HD % 8 !== 0) throw new Error(`rope_scatter: heads of ${a.HD} (a multiple of 8)`);
    const pipe = this.lib.pipeline('rope_scatter', { INTERLEAVED: a.interleaved, DST_F16: a.dstDtype === 'f16' });
    const params = [u(a.T), u(a.H), u(a.NKV), u(a.HD), u(a.stride), u(0), u(0), u(0)];
    this.d.run1d(pipe, params, { 1: a.x, 2: a.cs, 3: a.idx, 4: a.dstK, 5: a.dstV, 6: a.csRows }, (a.T * (a.H + 2 * a.NKV) * a.HD) / 8);
  }

  /**
   * The attention kernel a call gets when it names none: on real GPUs, tiled once the rows fill a workgroup and a
   * workgroup per row below that (decode), unless decodeAttention says otherwise; CPU adapters keep attention.wgsl.
   */
  pickAttention(T: number, HD: number, keys?: number): AttentionVariant {
    if (this.matmulProfile !== 'gpu') return 'rows';
    const long = longFor(this.longAttention, T, HD, keys);
    if (long) return long.attention;
    const tuned = this.decodeAttention;
    if (T < TILED_MIN_ROWS && tuned && attendsDecodeRow(tuned, HD)) return tuned;
    if (T >= TILED_MIN_ROWS && this.attentionTile(HD) >= 4) return 'tiled';
    return HD <= KEYS_MAX_HEAD ? 'keys' : 'rows';
  }

  /**
   * The kernels that can attend for a decode row on this device, heads of `HD` in groups of `group` q heads to a kv
   * head: decodeAttentionKernels, less attention_grouped where a group's workgroup breaks the device's limits (the
   * compatibility level's 128 invocations).
   */
  decodeKernels(HD: number, group: number): AttentionVariant[] {
    return decodeAttentionKernels(HD, group).filter((v) => (v !== 'grouped' || groupedFits(HD, group, this.wgInvocations, this.wgStorage)) && (v !== 'grouped-keys' || groupedKeysFits(HD, group, 1, this.wgStorage)));
  }

  /** The keys a thread `variant` runs when `keysPerThread` is tuned, not asked: a group's rounds halve it until their weights fit. */
  keysPerThreadRun(variant: AttentionVariant, HD: number, group: number, keysPerThread: KeysPerThread): KeysPerThread {
    let k = keysPerThread;
    while (variant === 'grouped-keys' && k > 1 && !groupedKeysFits(HD, group, k, this.wgStorage)) k = (k / 2) as KeysPerThread;
    return k;
  }

  /**
   * Keys per tile of attention_tiled: its key and value tiles (f32) and positions must fit the adapter's workgroup
   * memory (16 KiB guaranteed: 28 keys of a 64-wide head; 32 KiB: 32). 16 by default: on the H100 it was never slower
   * than 32 and much faster where workgroups' key ranges differ or heads are many (gpu-h100-7/8.json: legolink:16's
   * rows at 32K 3.7 ms against 5.4, 2048 rows of 32 heads 1.75 against 2.67, all 32K keys seen 5.8 against 6.0).
   */
  attentionTile(HD: number, want = 16): number {
    return Math.min(want, 4 * Math.floor(this.wgStorage / (2 * HD * 4 + 4) / 4));
  }

  /** Whether attention_tiled runs here with `lanes` lanes a row group, for heads of HD (see TiledLanes). */
  takesTiledLanes(HD: number, lanes: TiledLanes): boolean {
    return tiledLanesRun(HD, lanes, this.subgroupMin);
  }

  /** Attends; returns the key slices where they are left for the consumer to merge (AttentionArgs.leaveSlices), else null. */
  attention(a: AttentionArgs): AttentionSlices | null {
    const s = a.step, t = a.tags;
    const l = this.attentionLaunch(a);
    const params = [
      u(a.T), { u32: a.n, tag: t?.n }, u(a.H), u(a.NKV), u(a.qStride), u(a.qOffset), u(a.window), f(a.scale), u(l.splits),
      ...(s ? [{ i32: s.qp, tag: t?.qp }, { u32: s.row, tag: t?.row }, { u32: s.first, tag: t?.first }, { u32: s.last, tag: t?.last }] : []),
      ...(s?.qkNorm ? [f(s.qkNorm.eps), f(s.qkNorm.plusOne ? 1 : 0)] : []),
    ];
    const b: Record<number, GPUBuffer> = s ? { 1: a.q, 2: a.k, 3: a.v, 4: s.cs, 5: a.kpos, 6: a.out } : { 1: a.q, 2: a.k, 3: a.v, 4: a.qpos, 5: a.kpos, 6: a.out, 7: a.bounds };
    if (s?.qkNorm) b[9] = s.qkNorm.w;
    return this.attentionRun(a, l.pipe, params, b, l.splits, l.invocations);
  }

  /**
   * How `a` attends, as a string: its kernel and defines, key slices and workgroups, and whether the slices are
   * left to the consumer. Equal for two calls that launch alike (a decode step's replay depends on it: ForwardPass.stepKey).
   */
  attentionKey(a: AttentionArgs): string {
    const l = this.attentionLaunch(a);
    return `${l.pipe.label}/${l.splits}/${l.invocations}/${l.splits > 1 && l.splits <= (a.leaveSlices ?? 0) ? 'left' : 'merged'}`;
  }

  /** The kernel attention runs for `a`, its key slices and its invocations (Ops.attention launches it). */
  private attentionLaunch(a: AttentionArgs): { pipe: GPUComputePipeline; splits: number; invocations: number } {
    checkAligned(a.qStride, a.qOffset, a.HD);
    // The slices' partial outputs are one binding: never more slices than it can hold.
    const fit = Math.max(1, Math.floor(this.maxBinding / (a.T * a.H * a.HD * 4)));
    const kv = { HD4: a.HD / 4 };
    const s = a.step;
    // A step knows the keys its row scans: a sliding-window layer's (Gemma 3) are its window, not the cache.
    const keys = s ? Math.max(1, s.last - s.first) : a.n;
    // The long spans' kernel where it applies (looked up once: decode calls this every layer).
    const long = longFor(this.longAttention, a.T, a.HD, keys);
    const variant = a.variant ?? this.attentionVariant ?? long?.attention ?? this.pickAttention(a.T, a.HD);
    const decode = variant === 'keys' || variant === 'lanes' || variant === 'grouped-keys';
    if (s && (!foldsStep(variant, !!s.qkNorm) || a.T !== 1 || a.HD % 8 !== 0)) throw new Error(`attention: a step folds RoPE into attention_decode, or attention_grouped without a q/k norm, for one row and heads of a multiple of 8, not ${variant}${s.qkNorm ? ' with a q/k norm' : ''} for ${a.T} rows of ${a.HD}`);
    if (decode) {
      const lanes = variant === 'lanes';
      // 'grouped-keys': a workgroup for each kv head's group of q heads.
      const QG = variant === 'grouped-keys' ? a.H / a.NKV : 1;
      const grouped = variant === 'grouped-keys';
      if (!attendsDecodeRow(variant, a.HD, QG)) throw new Error(`attention_decode${lanes ? "'s lanes" : grouped ? ' for a kv head\'s q heads' : ''}: a head of ${a.HD}${grouped ? ` in groups of ${QG}` : ''} (at most ${lanes ? LANES_MAX_HEAD : KEYS_MAX_HEAD}${grouped ? `, in groups of 2 to ${GROUPED_KEYS_MAX}` : ''})`);
      const rows = (a.T * a.H) / QG;
      const tuned = lanes ? 1 : (long?.attention === variant ? long.keysPerThread : this.decodeKeysPerThread) ?? 1;
      const KPT = a.keysPerThread ?? this.keysPerThreadRun(variant, a.HD, QG, tuned);
      if (![1, 2, 4, 8].includes(KPT)) throw new Error(`attention_decode: ${KPT} keys an invocation (1, 2, 4 or 8)`);
      if (QG > 1 && !groupedKeysFits(a.HD, QG, KPT, this.wgStorage)) throw new Error(`attention_decode: ${QG} q heads of ${a.HD} at ${KPT} keys a thread need more than the device's ${this.wgStorage} B of workgroup memory`);
      const splits = Math.min(fit, a.splits ?? (lanes ? lanesSplits(rows, keys) : keysSplits(rows, keys, KPT)));
      const pipe = this.lib.pipeline('attention_decode', { HD4: kv.HD4, KPT, QG, LANES: lanes, KV_F16: a.kvDtype === 'f16', SPLIT: splits > 1, STEP: !!s, INTERLEAVED: !!s?.interleaved, QKNORM: !!s?.qkNorm });
      return { pipe, splits, invocations: rows * splits * 64 };
    }
    if (variant === 'grouped') {
      // A workgroup of 64 invocations for each q head of a kv head's group (tuned models only: Ops.decodeAttention).
      const QG = a.H / a.NKV;
      if (!attendsDecodeRow('grouped', a.HD, QG) || !groupedFits(a.HD, QG, this.wgInvocations, this.wgStorage)) throw new Error(`attention_grouped: heads of ${a.HD} in groups of ${QG} (at most ${LANES_MAX_HEAD}, in groups of 2 to ${GROUPED_MAX} that the device's workgroups hold)`);
      // LANES' slices for the same heads: as many invocations, QG times fewer and larger workgroups.
      const splits = Math.min(fit, a.splits ?? lanesSplits(a.T * a.H, keys));
      const pipe = this.lib.pipeline('attention_grouped', { HD4: kv.HD4, QG, WGS: 64 * QG, KV_F16: a.kvDtype === 'f16', SPLIT: splits > 1, STEP: !!s, INTERLEAVED: !!s?.interleaved });
      return { pipe, splits, invocations: a.T * a.NKV * splits * 64 };
    }
    if (variant === 'tiled') {
      const BK = this.attentionTile(a.HD, a.keysPerTile ?? this.tiled?.keysPerTile);
      if (BK < 4 || BK % 4 !== 0) throw new Error(`attention_tiled: ${BK} keys a tile (head ${a.HD}, ${this.wgStorage} B of workgroup memory)`);
      const { R, G, blockRows } = tiledRowGroups(a, this.tiled, this.subgroupMin);
      const groups = Math.ceil(a.T / blockRows) * a.H;
      const splits = Math.min(fit, a.splits ?? tiledSplits(groups, a.n));
      const defines = { ...kv, BK, KV_F16: a.kvDtype === 'f16', SPLIT: splits > 1 };
      const pipe = R === 1 ? this.lib.pipeline('attention_tiled', defines) : this.lib.pipeline('attention_tiled_sg', { ...defines, R, G, R4: R === 4 });
      return { pipe, splits, invocations: groups * splits * 64 };
    }
    // On CPU adapters several query rows per invocation share key loads; large heads keep one row to spare
    // registers. GPUs keep one row per invocation: four rows' accumulators would spill and cut occupancy.
    const TQ = a.T >= 4 && a.HD <= 64 && (a.rowsPerThread ?? (this.matmulProfile === 'cpu' ? 4 : 1)) === 4 ? 4 : 1;
    const work = Math.ceil(a.T / TQ) * a.H;
    const splits = Math.min(fit, a.splits ?? (this.matmulProfile === 'gpu' ? attentionSplits(work, a.n) : cpuAttentionSplits(a.T, work, a.n)));
    const pipe = this.lib.pipeline('attention', { ...kv, TQ, KV_F16: a.kvDtype === 'f16', SPLIT: splits > 1 });
    return { pipe, splits, invocations: work * splits };
  }

  /** Launches an attention kernel over `invocations`; with key slices, into partials that attention_combine merges. */
  private attentionRun(a: AttentionArgs, pipe: GPUComputePipeline, params: Param[], b: Record<number, GPUBuffer>, splits: number, invocations: number): AttentionSlices | null {
    if (splits === 1) {
      this.d.run1d(pipe, params, b, invocations);
      return null;
    }
    // Each slice's unnormalised output and (max, sum).
    const slots = a.T * a.H * splits;
    b[6] = this.temps.get('attention.part', slots * a.HD * 4);
    b[8] = this.temps.get('attention.ml', slots * 8);
    this.d.run1d(pipe, params, b, invocations);
    if (splits <= (a.leaveSlices ?? 0)) return { part: b[6], ml: b[8], heads: a.H, splits };
    // A workgroup of 64 for each row and head.
    const combine = this.lib.pipeline('attention_combine', { HD4: a.HD / 4 });
    this.d.run1d(combine, [u(a.T), u(a.H), u(splits), u(0)], { 1: b[6], 2: b[8], 3: a.out }, a.T * a.H * 64);
    return null;
  }

  /** Working buffers of the ops themselves (attention's slice partials), kept between calls and grown as needed. */
  private temps: Scratch;

  /** Bumped whenever one of the ops' own buffers is made or replaced (Scratch.version; ForwardPass.stepKey). */
  get tempsVersion(): number {
    return this.temps.version;
  }

  destroy() {
    this.temps.destroy();
    this.d.destroy();
  }

  attnScores(a: ScoresArgs) {
    checkAligned(a.qStride, a.qOffset, a.HD);
    const pipe = this.lib.pipeline('attn_scores', { HD4: a.HD / 4, KV_F16: a.kvDtype === 'f16' });
    const params = [
      u(a.R), u(a.n), u(a.H), u(a.NKV), u(a.qStride), u(a.qOffset), u(a.window), f(a.scale), u(a.head), u(0), u(0), u(0),
    ];
    this.d.run1d(pipe, params, { 1: a.q, 2: a.k, 3: a.rows, 4: a.qpos, 5: a.kpos, 6: a.out }, a.R * a.n);
  }

  scatter(a: ScatterArgs) {
    checkAligned(a.stride, a.offset, a.W);
    const pipe = this.lib.pipeline('kv_scatter', { DST_F16: a.dstDtype === 'f16' });
    this.d.run1d(pipe, [u(a.T), u(a.W / 4), u(a.stride), u(a.offset)], { 1: a.src, 2: a.idx, 3: a.dst }, (a.T * a.W) / 4);
  }

  gather(a: GatherArgs) {
    if (a.HD % 8 !== 0 || a.W % a.HD !== 0) throw new Error(`kv_gather: rows of ${a.W} in heads of ${a.HD} (a multiple of 8)`);
    const pipe = this.lib.pipeline('kv_gather', { SRC_F16: a.srcDtype === 'f16', DST_F16: a.dstDtype === 'f16', INTERLEAVED: a.interleaved });
    const b = { 1: a.k, 2: a.v, 3: a.srcRows, 4: a.idx, 5: a.cs, 6: a.dstK, 7: a.dstV, 8: a.csRows };
    this.d.run1d(pipe, [u(a.T), u(a.W / 4), u(a.HD), u(a.t0)], b, (a.T * a.W) / 4);
  }

  embed(a: EmbedArgs) {
    if (a.D % 4 !== 0) throw new Error(`embed needs D % 4 == 0, got ${a.D}`);
    const rowRange = (a.row0 ?? 0) !== 0 || (a.rows ?? a.V) !== a.V;
    const rows = a.rows ?? a.V;
    const q = isQuant(a.dtype) ? a.dtype : null;
    if (q) checkQuantShape(q, a.D, 'embed');
    const pipe = this.lib.pipeline('embed', { E_F16: a.dtype === 'f16', ...(q ? { E_Q: true, [q.toUpperCase()]: true } : {}), ROW_RANGE: rowRange });
    const sbase = q ? scaleBase(q, (rows * a.D) / QUANT[q].block) : 0;
    const params = [u(a.T), u(a.D / 4), u(a.V), f(a.scale), u(a.row0 ?? 0), u(rows), u(sbase), u(0)];
    this.d.run1d(pipe, params, { 1: a.tokens, 2: a.table, 3: a.x }, (a.T * a.D) / 4);
  }

  /**
   * Embedding lookup in a table stored in row parts: one launch per part, each filling the rows of x whose
   * token lies in it. With the token ids at hand (`ids`), parts that hold none of them are not launched.
   */
  embedParts(a: Omit<EmbedArgs, 'table' | 'dtype' | 'V' | 'D' | 'row0' | 'rows'> & { table: WeightMatrix; ids?: ArrayLike<number> }) {
    const { table, ids, ...rest } = a;
    const V = table.rows;
    const used = (p: WeightMatrix['parts'][number]) => {
      if (!ids || table.parts.length === 1) return true;
      for (let i = 0; i < ids.length; i++) {
        const t = Math.min(ids[i], V - 1); // the kernel's clamp
        if (t >= p.row0 && t < p.row0 + p.rows) return true;
      }
      return false;
    };
    for (const p of table.parts) {
      if (used(p)) this.embed({ ...rest, table: p.buffer, dtype: p.dtype ?? table.dtype, D: table.cols, V, row0: p.row0, rows: p.rows });
    }
  }

  /** out[r] = the index of row r's largest of V values in x (first on ties): greedy sampling without reading logits. */
  argmax(a: { x: GPUBuffer; out: GPUBuffer; R: number; V: number }) {
    this.d.run(this.lib.pipeline('argmax'), [u(a.R), u(a.V)], { 1: a.x, 2: a.out }, [a.R, 1, 1]);
  }

  glu(a: GluArgs) {
    const pipe = this.lib.pipeline('glu', { GELU_TANH: a.act === 'gelu_tanh' });
    this.d.run1d(pipe, [u(a.T), u(a.I), u(0), u(0)], { 1: a.gu, 2: a.out }, a.T * a.I);
  }
}

function checkAligned(...vals: number[]) {
  for (const v of vals) if (v % 4 !== 0) throw new Error(`kernel needs multiples of 4, got ${vals.join(', ')}`);
}
