/**
 * Decode's kernels chosen by measurement on the adapter at hand (Engine.tuneDecode); and, at the end of this
 * file, how a link's host rows go up (Engine.tuneUpload).
 *
 * On the 'gpu' profile seven choices shape a decode step, and which way pays
 * depends on the GPU, its driver and the model's widths: the GEMV kernel
 * (gemv, or gemv_sg where the device has subgroups), whether RMSNorm and GLU
 * are folded into the GEMVs after them and RoPE with the cache write into
 * attention_decode (Ops.fuse), the kernel that attends
 * for the step's one row (attention_decode's 'keys', its 'lanes' for heads of
 * at most 64, attention_grouped's 'grouped' and attention_decode's 'grouped-keys' for a kv head's q heads at
 * once, or attention.wgsl's 'rows'), and, for 'keys' and 'grouped-keys', how many keys each of its invocations scores a
 * round (more make fewer rounds and key slices, down to none to combine, but
 * fewer workgroups in flight); and, where decode fuses, whether the output
 * projection merges attention's few key slices as it reads them or an
 * attention_combine launch does (Ops.foldCombine: every one of its workgroups
 * reads every slice); and whether the GEMVs read x (a fused RMSNorm's or
 * GLU's, or as stored) from workgroup memory, worked out there once a
 * workgroup, or from its buffer in every column's lanes (Ops.stageX); and,
 * for f16 weights, whether gemv reads them 16 bytes a load or 8 (Ops.gemvWide). Ops'
 * defaults are reasoned guesses; users' GPUs (integrated, Apple, AMD,
 * NVIDIA) differ more than any guess. So the engine
 * times whole greedy decode steps, recorded ahead as the app decodes, each
 * way, one choice at a time from the defaults (coordinate descent: each
 * choice's alternatives tried with the others at their best so far), and
 * keeps the fastest. An alternative replaces the best only when it is faster
 * by more than MARGIN, so timing noise never trades a default for an equal.
 *
 * A GPU's speed drifts while it is timed: an idle H100 clocks down, and its
 * first tenth of a second of work ran at half speed (gpu-h100-7.json: the
 * defaults, timed first, measured 6.8 ms a step against 3.2 for a way the
 * same run's side-by-side found slower). So the defaults first run untimed for
 * WARM_MS, and each alternative is timed in turns with the best so far (one
 * run of each, `reps` times), each way's figure the fastest of all its runs:
 * drift then slows both alike instead of whichever came first.
 *
 * Every way computes the same tokens (each kernel has its parity test), so
 * tuning changes speed only. CPU adapters are not tuned: their profile has
 * one way (register kernels, unfused; see Ops.fuse).
 */
import { takesWideLoads, type AttentionVariant, type GemvVariant, type KeysPerThread, type Ops } from '../ops';
import type { GpuModel } from './gpu-model';
import { takesKeysPerThread } from '../attention-plan';
import type { ModelConfig } from './config';
import type { KVCache } from './kv-cache';
import { greedySteps, type Stepper } from './greedy-steps';
import { describeAttentionWay, tuneLongAttention, type AttentionTunable, type AttentionWay, type LongAttentionTuning } from './tune-attention';

/** The choices that shape a decode step on the 'gpu' profile. */
export interface DecodeSettings {
  gemv: GemvVariant;
  fuse: boolean;
  attention: AttentionVariant;
  /**
   * attention_decode's keys an invocation a round (Ops.decodeKeysPerThread; it matters only for 'keys'): always
   * set by tuning, absent in results written before it was a choice (read as 1).
   */
  keysPerThread?: KeysPerThread;
  /**
   * Whether a fused step's output projection merges attention's key slices (Ops.foldCombine; it matters only
   * where fused): always set by tuning, absent in results written before it was a choice (which had no fold).
   */
  foldCombine?: boolean;
  /**
   * Whether the step's GEMVs read x from workgroup memory, worked out there once a workgroup (Ops.stageX): always
   * set by tuning, absent in results written before it was a choice (read as off).
   */
  stageX?: boolean;
  /**
   * Whether gemv reads packed f16 weights 16 bytes a load (Ops.gemvWide): set by tuning, absent in results written
   * before it was a choice (read as off).
   */
  wide?: boolean;
}

/** One way timed: its settings and its best wall milliseconds a step. */
export interface DecodeTrial {
  settings: DecodeSettings;
  msPerStep: number;
}

export interface DecodeTuning {
  /** The settings kept (now the engine's). */
  chosen: DecodeSettings;
  /** What Ops would have used untuned. */
  defaults: DecodeSettings;
  /** Every way timed, the defaults first. */
  trials: DecodeTrial[];
  /** Cached rows each step attended to; steps timed per run, runs per way. */
  context: number;
  steps: number;
  reps: number;
  /**
   * Attention alone timed over the short span and a long one, and the kernel kept for long spans (Ops.longAttention),
   * if any; null where the model's positions never reach a long span (tune-attention.ts); absent in results
   * written before it was timed.
   */
  long?: LongAttentionTuning | null;
  /** Why timing attention alone failed, where it did (the step's choices are kept, with no long spans' kernel). */
  longError?: string;
  /** Wall milliseconds the tuning took, pipelines built included. */
  ms: number;
}

export interface TuneOptions {
  /** Rows already in the cache when the timed steps start (default 512): decode's attention reads them all. */
  context?: number;
  /** Steps a timed run takes (default 8), and runs per way (default 3; the fastest counts). */
  steps?: number;
  reps?: number;
  /**
   * Times one run of one way (ms a step); default: greedy steps recorded ahead on a scratch cache, a way's first
   * run preceded by two untimed steps that build its pipelines. Tests inject a clock.
   */
  measure?: (s: DecodeSettings) => Promise<number>;
  /** Milliseconds the defaults run untimed before any timing (default WARM_MS; tests with a clock pass 0). */
  warmMs?: number;
  /** Called once timing starts (never on the 'cpu' profile): a caller's progress report. */
  onStart?: () => void;
  /** Keys of the long span attention alone is timed over (default: LONG_SPAN, or the model's positions where fewer). */
  longContext?: number;
  /** Times attention alone, one way over `keys` keys (µs a layer): tests inject a clock. */
  measureAttention?: (w: AttentionWay, keys: number) => Promise<number>;
}

/** How much faster than the best so far an alternative must be to replace it. */
export const MARGIN = 0.03;

/** How long the defaults run untimed first, so the GPU's clocks have risen before anything is timed. */
export const WARM_MS = 300;

/** What tuning needs of the engine: a stepper, a scratch cache, and what timing attention alone needs. */
export interface Tunable extends Stepper, AttentionTunable {
  newCache(capacity: number): KVCache;
  /** The loaded model's matrices: gemv's wide loads are a choice only where some of decode's take them. */
  readonly model?: Pick<GpuModel, 'lmHead' | 'layers'> | null;
}

/** Whether any of decode's products would read its weights 16 bytes a load where asked (takesWideLoads). */
export function takesWideLoadsAny(m: Pick<GpuModel, 'lmHead' | 'layers'> | null | undefined): boolean {
  if (!m) return false;
  const all = [m.lmHead, ...m.layers.flatMap((l) => [l.wqkv, l.wo, l.wGateUp, l.wDown])];
  return all.some((w) => w.parts.some((p) => takesWideLoads(p.dtype ?? w.dtype, w.cols)));
}

/** The settings Ops would use now for a one-row step. */
export function currentSettings(ops: Ops, c: ModelConfig): DecodeSettings {
  return { gemv: ops.pickGemv(), fuse: ops.fuses(1), attention: ops.pickAttention(1, c.headDim), keysPerThread: ops.decodeKeysPerThread ?? 1, foldCombine: ops.foldCombine !== false, stageX: ops.stageX === true, wide: ops.gemvWide === true };
}

/**
 * A way in words, by its kernels' names: "gemv_sg, fused, attention_decode" (", 4 keys a thread" past one;
 * ", attention_combine launched" where a fused step does not fold it; ", x staged" where the GEMVs stage x).
 */
export function describeSettings(s: DecodeSettings): string {
  const combine = s.fuse && s.foldCombine === false ? ', attention_combine launched' : '';
  const staged = s.stageX === true ? ', x staged' : '';
  const wide = s.wide === true ? ', 16-byte loads' : '';
  return `${s.gemv}${wide}, ${s.fuse ? 'fused' : 'unfused'}, ${describeAttentionWay({ attention: s.attention, keysPerThread: s.keysPerThread ?? 1 })}${combine}${staged}`;
}

/** Makes `s` the engine's settings for decode. */
export function applySettings(ops: Ops, s: DecodeSettings) {
  ops.gemvVariant = s.gemv;
  ops.fuse = s.fuse;
  ops.decodeAttention = s.attention;
  ops.decodeKeysPerThread = s.keysPerThread;
  ops.foldCombine = s.foldCombine;
  ops.stageX = s.stageX;
  ops.gemvWide = s.wide;
}

/** Each choice's possible values on this device and model, in the order they are tried. */
function choices(ops: Ops, c: ModelConfig, f16: boolean): { [K in keyof DecodeSettings]-?: NonNullable<DecodeSettings[K]>[] } {
  return {
    gemv: ops.subgroupMin ? ['gemv_sg', 'gemv'] : ['gemv'],
    fuse: [true, false],
    attention: ops.decodeKernels(c.headDim, c.nHeads / c.nKvHeads),
    keysPerThread: [1, 2, 4, 8],
    foldCombine: [true, false],
    stageX: [false, true],
    wide: f16 ? [false, true] : [false],
  };
}

/** Whether a choice changes anything with the others as in `s`: keys a thread only with attention_decode, the fold only fused. */
const matters = (key: keyof DecodeSettings, s: DecodeSettings) => (key !== 'keysPerThread' || takesKeysPerThread(s.attention)) && (key !== 'foldCombine' || s.fuse);

/** Times decode each way and keeps the fastest (see the header); null, and nothing changed, off the 'gpu' profile. */
export async function tuneDecode(e: Tunable, o: TuneOptions = {}): Promise<DecodeTuning | null> {
  if (e.ops.matmulProfile !== 'gpu') return null;
  o.onStart?.();
  const t0 = performance.now();
  const context = o.context ?? 512, steps = o.steps ?? 8, reps = o.reps ?? 3;
  const { gemvVariant, fuse, decodeAttention, decodeKeysPerThread, foldCombine, stageX, gemvWide, longAttention } = e.ops;
  // Steps are timed over the short span: the long spans' kernel, if an earlier tuning kept one, stays out of them.
  e.ops.longAttention = undefined;
  const defaults = currentSettings(e.ops, e.config);
  let cache: KVCache | null = null;
  const warmed = new Set<string>();
  const measure = o.measure ?? (async (s: DecodeSettings) => {
    cache ??= scratchCache(e, context, steps + 2);
    applySettings(e.ops, s);
    const run = (count: number) => timedSteps(e, cache!, context, count);
    // A way's first run builds its pipelines: two untimed steps first.
    if (!warmed.has(describeSettings(s))) await run(2);
    warmed.add(describeSettings(s));
    return run(steps);
  });
  try {
    const warmUntil = performance.now() + (o.warmMs ?? WARM_MS);
    do await measure(defaults);
    while (performance.now() < warmUntil);
    const trials: DecodeTrial[] = [{ settings: defaults, msPerStep: Infinity }];
    const time = async (t: DecodeTrial) => (t.msPerStep = Math.min(t.msPerStep, await measure(t.settings)));
    for (let r = 0; r < reps; r++) await time(trials[0]);
    let best = trials[0];
    const all = choices(e.ops, e.config, takesWideLoadsAny(e.model));
    for (const key of Object.keys(all) as (keyof DecodeSettings)[]) {
      if (!matters(key, best.settings)) continue;
      for (const value of all[key]) {
        if (best.settings[key] === value) continue;
        // Keys a thread the kernel would not run as asked (a group's rounds that the workgroup memory cannot hold).
        if (key === 'keysPerThread' && e.ops.keysPerThreadRun(best.settings.attention, e.config.headDim, e.config.nHeads / e.config.nKvHeads, value as KeysPerThread) !== value) continue;
        const trial: DecodeTrial = { settings: { ...best.settings, [key]: value }, msPerStep: Infinity };
        trials.push(trial);
        // In turns with the best so far, so drift slows both alike.
        for (let r = 0; r < reps; r++) {
          await time(trial);
          await time(best);
        }
        if (trial.msPerStep < best.msPerStep * (1 - MARGIN)) best = trial;
      }
    }
    applySettings(e.ops, best.settings);
    const s = best.settings;
    const shortWay = { attention: s.attention, keysPerThread: takesKeysPerThread(s.attention) ? (s.keysPerThread ?? 1) : 1 };
    // The step's choices stand if timing attention alone fails (its buffers may not fit a small GPU): no long spans' kernel then.
    let long: LongAttentionTuning | null = null, longError: string | undefined;
    try {
      long = await tuneLongAttention(e, shortWay, { short: context, long: o.longContext, reps, margin: MARGIN, measure: o.measureAttention });
    } catch (err) {
      e.ops.longAttention = undefined;
      longError = (err as Error).message;
    }
    return { chosen: best.settings, defaults, trials, context, steps, reps, long, ...(longError === undefined ? {} : { longError }), ms: performance.now() - t0 };
  } catch (err) {
    Object.assign(e.ops, { gemvVariant, fuse, decodeAttention, decodeKeysPerThread, foldCombine, stageX, gemvWide, longAttention });
    throw err;
  } finally {
    (cache as KVCache | null)?.destroy();
  }
}

/**
 * A cache of `context` rows at positions 0.. (their keys and values left zero: attention's cost does not depend
 * on them), with room for `more` steps.
 */
function scratchCache(e: Tunable, context: number, more: number): KVCache {
  const cache = e.newCache(context + more);
  cache.setPositions(0, Int32Array.from({ length: context }, (_, i) => i));
  return cache;
}

/** Wall ms a step of `count` greedy steps recorded ahead, as the app decodes, on the scratch cache. */
async function timedSteps(e: Tunable, cache: KVCache, context: number, count: number): Promise<number> {
  const t = performance.now();
  await greedySteps(e, cache, 1, { count, stopIds: [] });
  cache.truncate(context);
  return (performance.now() - t) / count;
}

/** How uploads were timed and which way was kept (Engine.tuneUpload). */
export interface UploadTuning {
  chosen: 'write' | 'mapped';
  /** Host-to-GPU GB/s each way: the fastest of its runs, each until the GPU has the bytes. */
  gbPerS: { write: number; mapped: number };
  /** Bytes a run uploads, in pieces of 256 KiB (a 512-token chunk's layer of keys is 192-384 KiB). */
  bytes: number;
  ms: number;
}

/** How much faster mapped staging must be to replace writeBuffer. */
const UPLOAD_MARGIN = 0.1;

/**
 * Times host-to-GPU uploads as a link's host rows take them (Dispatcher.upload: writeBuffer, or mapped staging)
 * and keeps the faster; null, and writeBuffer kept, off the 'gpu' profile (CPU adapters' writeBuffer is the
 * faster there). Each way: a run untimed, then the fastest of `reps`.
 */
export async function tuneUpload(ops: Ops, device: GPUDevice, o: { bytes?: number; reps?: number } = {}): Promise<UploadTuning | null> {
  if (ops.matmulProfile !== 'gpu') return null;
  const t0 = performance.now();
  const bytes = o.bytes ?? 32 << 20, reps = o.reps ?? 3, piece = 256 << 10;
  const dst = device.createBuffer({ label: 'upload timing', size: bytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  const src = new Uint8Array(piece).fill(7);
  const writes = Array.from({ length: Math.ceil(bytes / piece) }, (_, i) => ({ dst, offset: i * piece, data: src.subarray(0, Math.min(piece, bytes - i * piece)) }));
  const before = ops.d.uploadWay;
  const time = async (way: 'write' | 'mapped') => {
    ops.d.uploadWay = way;
    let best = Infinity;
    for (let r = 0; r <= reps; r++) {
      const t = performance.now();
      ops.d.upload(writes);
      ops.d.flush();
      await device.queue.onSubmittedWorkDone();
      if (r) best = Math.min(best, performance.now() - t);
    }
    return bytes / best / 1e6;
  };
  try {
    const gbPerS = { write: await time('write'), mapped: await time('mapped') };
    const chosen = gbPerS.mapped > gbPerS.write * (1 + UPLOAD_MARGIN) ? 'mapped' : 'write';
    ops.d.uploadWay = chosen;
    return { chosen, gbPerS, bytes, ms: performance.now() - t0 };
  } catch (err) {
    ops.d.uploadWay = before;
    throw err;
  } finally {
    dst.destroy();
  }
}
