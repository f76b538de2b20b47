/**
 * Decode's kernels chosen by measurement on the adapter at hand (Engine.tuneDecode).
 *
 * On the 'gpu' profile three choices shape a decode step, and which way pays
 * depends on the GPU, its driver and the model's widths: the GEMV kernel
 * (gemv, or gemv_sg where the device has subgroups), whether RMSNorm and GLU
 * are folded into the GEMVs after them (Ops.fuse), and the kernel that
 * attends for the step's one row (attention_decode's 'keys' or
 * attention.wgsl's 'rows'). Ops' defaults are reasoned guesses; users' GPUs
 * (integrated, Apple, AMD, NVIDIA) differ more than any guess. So the engine
 * times whole greedy decode steps, recorded ahead as the app decodes, each
 * way, one choice at a time from the defaults (coordinate descent: each
 * choice's alternatives tried with the others at their best so far), and
 * keeps the fastest. An alternative replaces the best only when it is faster
 * by more than MARGIN, so timing noise never trades a default for an equal.
 *
 * Every way computes the same tokens (each kernel has its parity test), so
 * tuning changes speed only. CPU adapters are not tuned: their profile has
 * one way (register kernels, unfused; see Ops.fuse).
 */
import type { AttentionVariant, GemvVariant, Ops } from '../ops';
import type { ModelConfig } from './config';
import type { KVCache } from './kv-cache';
import { greedySteps, type Stepper } from './greedy-steps';

/** The choices that shape a decode step on the 'gpu' profile. */
export interface DecodeSettings {
  gemv: GemvVariant;
  fuse: boolean;
  attention: AttentionVariant;
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
  /** Wall milliseconds the tuning took, pipelines built included. */
  ms: number;
}

export interface TuneOptions {
  /** Rows already in the cache when the timed steps start (default 512): decode's attention reads them all. */
  context?: number;
  /** Steps a timed run takes (default 8), and runs per way (default 3; the fastest counts). */
  steps?: number;
  reps?: number;
  /** Times one way (ms a step); default: greedy steps recorded ahead on a scratch cache. Tests inject a clock. */
  measure?: (s: DecodeSettings) => Promise<number>;
  /** Called once timing starts (never on the 'cpu' profile): a caller's progress report. */
  onStart?: () => void;
}

/** How much faster than the best so far an alternative must be to replace it. */
export const MARGIN = 0.03;

/** What tuning needs of the engine: a stepper, and a scratch cache. */
export interface Tunable extends Stepper {
  newCache(capacity: number): KVCache;
}

/** The settings Ops would use now for a one-row step. */
export function currentSettings(ops: Ops, c: ModelConfig): DecodeSettings {
  return { gemv: ops.pickGemv(), fuse: ops.fuses(1), attention: ops.pickAttention(1, c.headDim) };
}

/** A way in words, by its kernels' names: "gemv_sg, fused, attention_decode". */
export function describeSettings(s: DecodeSettings): string {
  return `${s.gemv}, ${s.fuse ? 'fused' : 'unfused'}, ${s.attention === 'keys' ? 'attention_decode' : 'attention'}`;
}

/** Makes `s` the engine's settings for decode. */
export function applySettings(ops: Ops, s: DecodeSettings) {
  ops.gemvVariant = s.gemv;
  ops.fuse = s.fuse;
  ops.decodeAttention = s.attention;
}

/** Each choice's possible values on this device and model, in the order they are tried. */
function choices(ops: Ops, c: ModelConfig): { [K in keyof DecodeSettings]: DecodeSettings[K][] } {
  return {
    gemv: ops.subgroupMin ? ['gemv_sg', 'gemv'] : ['gemv'],
    fuse: [true, false],
    attention: c.headDim <= 256 ? ['keys', 'rows'] : ['rows'],
  };
}

/** Times decode each way and keeps the fastest (see the header); null, and nothing changed, off the 'gpu' profile. */
export async function tuneDecode(e: Tunable, o: TuneOptions = {}): Promise<DecodeTuning | null> {
  if (e.ops.matmulProfile !== 'gpu') return null;
  o.onStart?.();
  const t0 = performance.now();
  const context = o.context ?? 512, steps = o.steps ?? 8, reps = o.reps ?? 3;
  const { gemvVariant, fuse, decodeAttention } = e.ops;
  const defaults = currentSettings(e.ops, e.config);
  let cache: KVCache | null = null;
  const measure = o.measure ?? (async (s: DecodeSettings) => {
    cache ??= scratchCache(e, context, steps + 2);
    return timeSteps(e, cache, s, context, steps, reps);
  });
  try {
    const trials: DecodeTrial[] = [{ settings: defaults, msPerStep: await measure(defaults) }];
    let best = trials[0];
    const all = choices(e.ops, e.config);
    for (const key of Object.keys(all) as (keyof DecodeSettings)[]) {
      for (const value of all[key]) {
        if (best.settings[key] === value) continue;
        const settings = { ...best.settings, [key]: value };
        const trial = { settings, msPerStep: await measure(settings) };
        trials.push(trial);
        if (trial.msPerStep < best.msPerStep * (1 - MARGIN)) best = trial;
      }
    }
    applySettings(e.ops, best.settings);
    return { chosen: best.settings, defaults, trials, context, steps, reps, ms: performance.now() - t0 };
  } catch (err) {
    Object.assign(e.ops, { gemvVariant, fuse, decodeAttention });
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

/** Decode's wall ms a step under `s`: two untimed steps build its pipelines, then the fastest of `reps` runs. */
async function timeSteps(e: Tunable, cache: KVCache, s: DecodeSettings, context: number, steps: number, reps: number): Promise<number> {
  applySettings(e.ops, s);
  const run = async (count: number) => {
    const t = performance.now();
    await greedySteps(e, cache, 1, { count, stopIds: [] });
    cache.truncate(context);
    return (performance.now() - t) / count;
  };
  await run(2);
  let best = Infinity;
  for (let r = 0; r < reps; r++) best = Math.min(best, await run(steps));
  return best;
}
