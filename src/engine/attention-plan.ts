/**
 * How attention's work is cut on the host: which kernels can attend for a
 * decode row, the key slices each kernel runs in parallel, and the cache rows
 * each query row needs to scan.
 */

import type { AttentionArgs, AttentionVariant, LongAttention, TiledLanes, TiledWay } from './ops-args';

/** The tiled kernel leaves most of a 64-row workgroup idle below this many query rows: decode keeps 'rows'. */
export const TILED_MIN_ROWS = 32;
/** attention_decode's LANES keeps a head-wide accumulator in each invocation's registers: heads of at most 64. */
export const LANES_MAX_HEAD = 64;
/** attention_decode's widest head (its value groups cover a head with at most 64 invocations). */
export const KEYS_MAX_HEAD = 256;

/** attention_grouped's workgroup holds 64 invocations for each q head of a kv head's group: groups of at most 4 (256 invocations). */
export const GROUPED_MAX = 4;
/** attention_decode's rounds for a kv head's q heads (QG): groups of at most 8 (Qwen2.5-0.5B has 7), its per-head state in registers. */
export const GROUPED_KEYS_MAX = 8;

const DECODE_KERNELS: readonly AttentionVariant[] = ['keys', 'lanes', 'grouped', 'grouped-keys', 'rows'];

/**
 * Whether `variant` can attend for a decode step's row with heads of `HD`, `group` q heads to a kv head (H / NKV;
 * GROUPED_MAX where the group is not known: Ops.attention checks it). Allocation-free: decode asks it every layer.
 */
export function attendsDecodeRow(variant: AttentionVariant, HD: number, group = GROUPED_MAX): boolean {
  switch (variant) {
    case 'keys': return HD <= KEYS_MAX_HEAD;
    case 'lanes': return HD <= LANES_MAX_HEAD;
    case 'grouped': return HD <= LANES_MAX_HEAD && group >= 2 && group <= GROUPED_MAX;
    case 'grouped-keys': return HD <= KEYS_MAX_HEAD && group >= 2 && group <= GROUPED_KEYS_MAX;
    case 'rows': return true;
    default: return false;
  }
}

/** The kernels that can attend for a decode step's row (attendsDecodeRow), in the order the tuner tries them. */
export function decodeAttentionKernels(HD: number, group = 1): AttentionVariant[] {
  return DECODE_KERNELS.filter((v) => attendsDecodeRow(v, HD, group));
}

/**
 * Whether a kernel folds a decode step's RoPE and cache write (AttentionArgs.step) into its launch: attention_decode
 * ('keys', 'lanes', 'grouped-keys'), with a q/k norm too, and attention_grouped, without one.
 */
export function foldsStep(variant: AttentionVariant, qkNorm: boolean): boolean {
  return variant === 'keys' || variant === 'lanes' || variant === 'grouped-keys' || (variant === 'grouped' && !qkNorm);
}

/** Whether a kernel walks its keys in rounds of 64 × keys a thread (attention_decode's 'keys' and 'grouped-keys'). */
export function takesKeysPerThread(variant: AttentionVariant): boolean {
  return variant === 'keys' || variant === 'grouped-keys';
}

/**
 * Whether attention_decode's rounds for `QG` q heads of `HD` at `keysPerThread` fit `storage` bytes of workgroup
 * memory: the q heads, each head's weights for a round, the invocations' maxima and sums for each head, the
 * accumulators' merge, and the step's key and value.
 */
export function groupedKeysFits(HD: number, QG: number, keysPerThread: number, storage: number): boolean {
  return 4 * QG * HD + 4 * QG * 64 * keysPerThread + 8 * QG * 64 + 16 * 64 + 8 * HD <= storage;
}

/**
 * Whether attention_grouped's workgroup for `QG` q heads of `HD` fits a device's limits: 64 invocations a head (at
 * most `invocations`), and `storage` bytes of workgroup memory for the q heads, each invocation's max and sum, two
 * vec4s of its accumulator and a partial sum.
 */
export function groupedFits(HD: number, QG: number, invocations: number, storage: number): boolean {
  return 64 * QG <= invocations && QG * (4 * HD + 64 * (4 + 4 + 32 + 16)) <= storage;
}

/** Ops.longAttention where it applies: decode's few rows, scanning at least its `from` keys, with a kernel that takes heads of HD. */
export function longFor(long: LongAttention | undefined, T: number, HD: number, keys: number | undefined): LongAttention | undefined {
  return long && keys !== undefined && T < TILED_MIN_ROWS && keys >= long.from && attendsDecodeRow(long.attention, HD) ? long : undefined;
}

/**
 * How many slices to split attention's key range into on a real GPU: enough
 * to reach about 8K invocations, never slices under 32 keys, and at most 128
 * (set when attention_combine walked every slice of a row serially). Each invocation
 * walks its slice serially, so a decode row's time is its slice length. On
 * an H100 (gpu-h100-5.json): a Llama-1B decode row against 512 keys took
 * 0.44 ms whole and 0.19 ms in the 2 slices of 256 keys chosen before, 0.07
 * in 32; a row against 32K keys 34 ms whole, 0.47 ms in 128 slices and 2.0
 * ms in 911; 1016 rows against 32K keys (9K invocations already) 31 ms
 * whole, slower in every split (36-92 ms): more slices there only cost.
 */
export function attentionSplits(invocations: number, keys: number): number {
  return Math.max(1, Math.min(Math.ceil(8192 / invocations), Math.floor(keys / 32), 128));
}

/**
 * How many slices a CPU adapter (SwiftShader, llvmpipe) cuts the keys of attention.wgsl's few query rows into:
 * a decode step's row has an invocation per head, which one core would walk serially over every key while the
 * others idle. Enough slices for about 256 invocations (four workgroups, so every core gets some), slices of at
 * least 64 keys, at most 32; prefill's many rows (over 4) keep one. On lavapipe (this host's 2 cores, 9 heads of
 * 64), a row against 512 keys took 0.89 ms whole and 0.53 in 32 slices, against 4096 keys 6.5 ms and 3.9, against
 * 16K keys 30 ms and 15; SwiftShader against 4096 keys 17.8 ms and 9.1.
 */
export function cpuAttentionSplits(rows: number, invocations: number, keys: number): number {
  if (rows > 4) return 1;
  return Math.max(1, Math.min(Math.ceil(256 / invocations), Math.floor(keys / 64), 32));
}

/**
 * Key slices for attention_tiled (a workgroup per 64 rows of a head and slice): none once there are 1024 workgroups
 * or more; below that, enough slices for about 4096 workgroups, while slices keep at least 256 keys (16 tiles) and
 * never number more than 32. On the H100 with 16-key tiles (gpu-h100-9.json): legolink:16's 1016 rows at 32K (144
 * workgroups) took 3.7 ms in the 8 slices that a 1024 target gave, 2.9 in 32; 4096 rows × 8192 keys (576) 5.7 ms in
 * 2 and 4.4 in 8; 2048 rows of 32 heads (1024) 1.75 ms whole and 2.0 in 2 or 4.
 */
export function tiledSplits(workgroups: number, keys: number): number {
  if (workgroups >= 1024) return 1;
  return Math.max(1, Math.min(Math.ceil(4096 / workgroups), Math.floor(keys / 256), 32));
}

/**
 * Key slices for attention_decode (a workgroup of 64 per row, head and slice, each invocation `keysPerThread` keys
 * of a round of 64 * keysPerThread): enough slices for about 4096 workgroups (a full wave of 64-invocation
 * workgroups on an H100's 132 multiprocessors), slices of whole rounds, at most 512 of them. The kernel is bound by
 * each round's latency, not by bandwidth, so more workgroups in flight win: on the H100 (gpu-h100-13.json, one key a
 * thread) 32 heads over 512 keys took 14.1 us in 8 slices, 18.0 in 4 and 48.5 in 1; 9 heads over 32K keys 100 us in
 * 128 slices, 116 in 64, 4.8 ms in 1. Those figures fit about 0.16 us a key of a slice, plus 0.4 us a slice for
 * attention_combine's serial walk then; its workgroup per row and head now merges slices in parallel, so long
 * contexts take more, shorter slices (9 heads over 32K keys: 256 of two rounds). More keys a thread make fewer,
 * longer slices: 512 keys at 8 a thread are one slice, with no attention_combine launch after it. `keys` is what a
 * row scans: a decode step on a sliding-window layer passes its window, not the cache (Gemma 3 270M after 4096
 * cached rows: 8 slices instead of 64 on 15 of its 18 layers, which the output projection then merges itself).
 */
export function keysSplits(rows: number, keys: number, keysPerThread = 1): number {
  const round = 64 * keysPerThread;
  const rounds = Math.max(1, Math.ceil(keys / round / Math.ceil(KEYS_WORKGROUPS / rows)));
  return Math.max(1, Math.min(Math.floor(keys / (rounds * round)), KEYS_MAX_SPLITS));
}

/**
 * Key slices for attention_decode's LANES (each of a workgroup's 64 invocations walks keys of its own, one memory
 * latency a key, with no barrier until one merge at the end): about LANES_WORKGROUPS workgroups, so each GPU core
 * keeps several in flight to hide the latency, each slice at least 64 keys (one an invocation) and at most 512 of
 * them. A guess until a GPU times it: the kit's attention stage times LANES at each slice count.
 */
export function lanesSplits(rows: number, keys: number): number {
  return Math.max(1, Math.min(Math.ceil(LANES_WORKGROUPS / rows), Math.floor(keys / 64), KEYS_MAX_SPLITS));
}
const LANES_WORKGROUPS = 1024;

/** attention_decode's workgroups in flight that keysSplits aims for, and its most slices. */
const KEYS_WORKGROUPS = 4096;
const KEYS_MAX_SPLITS = 512;

/**
 * The cache rows each query needs to scan, as [first, last) pairs. When the
 * cache's positions never decrease, keys after the last position <= q (and,
 * with a window, before the first position > q - window) are skipped;
 * otherwise every row is scanned and the mask alone decides. `sorted` says
 * whether they never decrease, where the caller knows (KVCache.ascending);
 * otherwise the first n are scanned to learn it.
 */
export function keyBounds(kpos: Int32Array, n: number, qpos: ArrayLike<number>, window: number, sorted?: boolean): Uint32Array {
  const out = new Uint32Array(2 * qpos.length);
  if (sorted === undefined) {
    sorted = true;
    for (let j = 1; j < n && sorted; j++) sorted = kpos[j] >= kpos[j - 1];
  }
  // First index in [0, n) whose position is > v.
  const upper = (v: number) => {
    let lo = 0, hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (kpos[mid] <= v) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  for (let t = 0; t < qpos.length; t++) {
    out[2 * t] = sorted && window > 0 ? upper(qpos[t] - window) : 0;
    out[2 * t + 1] = sorted ? upper(qpos[t]) : n;
  }
  return out;
}

/** attn_scores.wgsl marks hidden keys with this; see unmaskScores. */
export const MASKED_SCORE = -3.0e38;

/** Maps the kernel's masked marker to -Infinity, in place. */
export function unmaskScores(s: Float32Array): Float32Array {
  for (let i = 0; i < s.length; i++) if (s[i] <= MASKED_SCORE) s[i] = -Infinity;
  return s;
}

/** Whether attention_tiled runs with `lanes` lanes a row group for heads of HD on a device of these subgroups (TiledLanes). */
export function tiledLanesRun(HD: number, lanes: TiledLanes, subgroupMin: number | null): boolean {
  return lanes === 1 || (subgroupMin !== null && subgroupMin >= lanes && (HD / 4) % lanes === 0);
}

/**
 * attention_tiled's row groups for a call: R lanes and the G rows they hold, as the call asks (where they run), else
 * as tuned where they run for its heads, else one lane a row; and the rows of a block (64, or 64 / R where a row's
 * head is split over R lanes).
 */
export function tiledRowGroups(a: Pick<AttentionArgs, 'HD' | 'tiledLanes' | 'tiledRows'>, tuned: TiledWay | undefined, subgroupMin: number | null) {
  const useTuned = a.tiledLanes === undefined && !!tuned && tiledLanesRun(a.HD, tuned.lanes, subgroupMin);
  const R = a.tiledLanes ?? (useTuned ? tuned!.lanes : 1);
  const G = R === 1 ? 1 : (a.tiledRows ?? (useTuned ? tuned!.rows : undefined) ?? R);
  if (!tiledLanesRun(a.HD, R, subgroupMin)) throw new Error(`attention_tiled: ${R} lanes a row group need subgroups of at least ${R} lanes and heads a multiple of ${4 * R} (subgroups ${subgroupMin ?? 'none'}, head ${a.HD})`);
  if (G !== 1 && G !== R) throw new Error(`attention_tiled: a row group of ${R} lanes holds ${R} rows or 1, not ${G}`);
  return { R, G, blockRows: (64 / R) * G };
}
