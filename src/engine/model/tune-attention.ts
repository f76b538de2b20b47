/**
 * Decode's attention over long spans, chosen by timing attention alone (the last stage of Engine.tuneDecode).
 *
 * The whole-step tuning (tune.ts) times steps after 512 cached rows, where attention is a small share of a step:
 * a kernel that is 3× faster over 32K keys can lose there, or win by less than the margin. Yet the app decodes
 * where it answers, after a link, over up to the whole linked prompt. So this stage times each kernel that can
 * attend for a decode row ('keys' at each keys-a-thread, 'lanes', 'grouped', 'grouped-keys' at each keys-a-thread its
 * workgroup memory holds, 'rows'), alone, over the step tuning's short
 * span and over a long one (8192 keys, or the model's positions where fewer), with the model's heads and cache
 * precision. Where the long span's fastest is not the short choice and beats it there by more than the margin,
 * it is kept as Ops.longAttention from the span where the two kernels' times, taken as linear in the keys between
 * the two spans, cross (never below twice the short span, where the step tuning's verdict stands).
 *
 * A run records a batch of dispatches over several layers' worth of key and value buffers, about 128 MiB in all
 * where the model's layers are that large, so a GPU's last-level cache holds no more of them than of a real
 * step's, and times the batch until the GPU is done with it; batches last about BATCH_MS, and each way's figure
 * is the fastest of `reps` runs taken in turns with the others (drift slows all alike).
 */
import type { AttentionVariant, KeysPerThread, LongAttention, StoreDType } from '../ops-args';
import type { Ops } from '../ops';
import { takesKeysPerThread } from '../attention-plan';
import type { ModelConfig } from './config';

/** One kernel way for a decode row's attention. */
export interface AttentionWay {
  attention: AttentionVariant;
  keysPerThread: KeysPerThread;
}

/** A way's microseconds a layer's attention (with attention_combine where it slices), over each span. */
export interface AttentionWayTiming extends AttentionWay {
  usShort: number;
  usLong: number;
}

export interface LongAttentionTuning {
  /** The keys each timed span scans. */
  short: number;
  long: number;
  /** The short spans' way (the step tuning's), then the others. */
  ways: AttentionWayTiming[];
  /** What was kept (now Ops.longAttention), or null: the short choice is the fastest over the long span too. */
  chosen: LongAttention | null;
  ms: number;
}

/** What timing attention needs of the engine. */
export interface AttentionTunable {
  readonly ops: Ops;
  readonly config: ModelConfig;
  readonly kvDtype: StoreDType;
  sync(): Promise<void>;
}

export interface LongAttentionOptions {
  /** Keys of the short span (the step tuning's cached rows) and the long one (default: 8192, or the model's positions). */
  short: number;
  long?: number;
  reps?: number;
  /** How much faster over the long span the long span's fastest must be than the short choice to be kept. */
  margin: number;
  /** Times a way over `keys` keys (µs a layer): tests inject a clock. */
  measure?: (w: AttentionWay, keys: number) => Promise<number>;
}

/** The long span timed when a call names none, and how far under it the model's positions may reach for it to run. */
export const LONG_SPAN = 8192;
/** Wall milliseconds a timed batch lasts, so that submitting and waiting for it is a small part of it. */
const BATCH_MS = 5;
/** Bytes of key and value buffers the dispatches of a batch cycle through (at most a layer each per model layer). */
const SPREAD_BYTES = 128 << 20;

/**
 * Every way a decode row can attend with these kernels (Ops.decodeKernels), in the order they are tried; `fits` says
 * which keys a thread a kernel runs as asked (attention_decode's rounds for a group of q heads: Ops.keysPerThreadRun).
 */
export function attentionWays(kernels: AttentionVariant[], fits: (w: AttentionWay) => boolean = () => true): AttentionWay[] {
  return kernels.flatMap((attention): AttentionWay[] => (takesKeysPerThread(attention) ? ([1, 2, 4, 8] as const).map((k) => ({ attention, keysPerThread: k })) : [{ attention, keysPerThread: 1 }])).filter(fits);
}

/**
 * A way in words, by its kernel's name: "attention_decode", "attention_decode, 4 keys a thread", "attention_decode
 * (lanes)", "attention_decode for a kv head's q heads", "attention".
 */
export function describeAttentionWay(w: AttentionWay): string {
  const keys = w.keysPerThread > 1 ? `, ${w.keysPerThread} keys a thread` : '';
  if (w.attention === 'keys') return `attention_decode${keys}`;
  if (w.attention === 'grouped-keys') return `attention_decode for a kv head's q heads${keys}`;
  return w.attention === 'lanes' ? 'attention_decode (lanes)' : w.attention === 'grouped' ? 'attention_grouped' : w.attention === 'tiled' ? 'attention_tiled' : 'attention';
}

const sameWay = (a: AttentionWay, b: AttentionWay) => a.attention === b.attention && (!takesKeysPerThread(a.attention) || a.keysPerThread === b.keysPerThread);

/**
 * Times every way over both spans and keeps the long span's fastest where it beats `shortWay` there (see the
 * header); sets Ops.longAttention, or clears it. Null, and nothing set, where the model's positions never reach
 * four times the short span.
 */
export async function tuneLongAttention(e: AttentionTunable, shortWay: AttentionWay, o: LongAttentionOptions): Promise<LongAttentionTuning | null> {
  const t0 = performance.now();
  e.ops.longAttention = undefined;
  const short = o.short, long = o.long ?? Math.min(LONG_SPAN, e.config.maxPositions);
  if (long < 4 * short) return null;
  const reps = o.reps ?? 3;
  const c = e.config, group = c.nHeads / c.nKvHeads;
  const runs = (w: AttentionWay) => e.ops.keysPerThreadRun(w.attention, c.headDim, group, w.keysPerThread);
  const ways = attentionWays(e.ops.decodeKernels(c.headDim, group), (w) => runs(w) === w.keysPerThread);
  // The step's way as it runs (Ops.keysPerThreadRun).
  const first = ways.findIndex((w) => sameWay(w, { ...shortWay, keysPerThread: runs(shortWay) }));
  if (first < 0) throw new Error(`tuneLongAttention: ${shortWay.attention} cannot attend for heads of ${e.config.headDim}`);
  ways.unshift(...ways.splice(first, 1));
  const bench = o.measure ? null : new AttentionBench(e, long);
  try {
    const measure = o.measure ?? ((w: AttentionWay, keys: number) => bench!.time(w, keys));
    const timings: AttentionWayTiming[] = ways.map((w) => ({ ...w, usShort: Infinity, usLong: Infinity }));
    for (let r = 0; r < reps; r++) {
      for (const t of timings) {
        t.usShort = Math.min(t.usShort, await measure(t, short));
        t.usLong = Math.min(t.usLong, await measure(t, long));
      }
    }
    const base = timings[0];
    const best = timings.reduce((a, b) => (b.usLong < a.usLong ? b : a));
    let chosen: LongAttention | null = null;
    if (best !== base && best.usLong < base.usLong * (1 - o.margin)) {
      chosen = { from: crossing(base, best, short, long), attention: best.attention, keysPerThread: best.keysPerThread };
      e.ops.longAttention = chosen;
    }
    return { short, long, ways: timings, chosen, ms: performance.now() - t0 };
  } finally {
    bench?.destroy();
  }
}

/**
 * The keys from which `b` (faster over `long`) beats `a`, each way's time taken as linear in the keys through its
 * two figures; at least twice the short span, at most the long one.
 */
export function crossing(a: AttentionWayTiming, b: AttentionWayTiming, short: number, long: number): number {
  const dShort = b.usShort - a.usShort, dLong = b.usLong - a.usLong;
  const at = dShort > 0 ? short + ((long - short) * dShort) / (dShort - dLong) : short;
  return Math.round(Math.min(long, Math.max(2 * short, at)));
}

/**
 * Key and value buffers of `long` rows for as many layers as fit SPREAD_BYTES (at least two, at most the model's),
 * a query row, and its bounds; times a way as a batch of launches through them.
 */
class AttentionBench {
  private readonly k: GPUBuffer[] = [];
  private readonly v: GPUBuffer[] = [];
  private readonly q: GPUBuffer;
  private readonly out: GPUBuffer;
  private readonly qpos: GPUBuffer;
  private readonly kpos: GPUBuffer;
  private readonly bounds = new Map<number, GPUBuffer>();
  /** Launches a batch takes, per way and span, once a first batch has measured it. */
  private readonly batch = new Map<string, number>();

  constructor(
    private e: AttentionTunable,
    private long: number,
  ) {
    const c = e.config, device = e.ops.lib.device;
    const kvDim = c.nKvHeads * c.headDim, rowBytes = kvDim * (e.kvDtype === 'f16' ? 2 : 4);
    const layerBytes = 2 * long * rowBytes;
    const layers = Math.min(c.nLayers, Math.max(2, Math.ceil(SPREAD_BYTES / layerBytes)));
    const storage = (label: string, size: number) => device.createBuffer({ label, size: Math.max(16, size), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    try {
      for (let l = 0; l < layers; l++) {
        this.k.push(storage('attention timing k', long * rowBytes));
        this.v.push(storage('attention timing v', long * rowBytes));
      }
      // Keys and values left zero: attention's cost does not depend on them. The query row sees every key.
      this.q = storage('attention timing q', c.nHeads * c.headDim * 4);
      this.out = storage('attention timing out', c.nHeads * c.headDim * 4);
      this.qpos = storage('attention timing qpos', 4);
      device.queue.writeBuffer(this.qpos, 0, Int32Array.of(long));
      this.kpos = storage('attention timing kpos', long * 4);
      device.queue.writeBuffer(this.kpos, 0, Int32Array.from({ length: long }, (_, i) => i));
    } catch (err) {
      this.destroy();
      throw err;
    }
  }

  private boundsFor(keys: number): GPUBuffer {
    let b = this.bounds.get(keys);
    if (!b) {
      b = this.e.ops.lib.device.createBuffer({ label: 'attention timing bounds', size: 8, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
      this.e.ops.lib.device.queue.writeBuffer(b, 0, Uint32Array.of(0, keys));
      this.bounds.set(keys, b);
    }
    return b;
  }

  /** Microseconds a launch (attention_combine included where it slices) of `w` over `keys` keys. */
  async time(w: AttentionWay, keys: number): Promise<number> {
    if (keys > this.long) throw new Error(`attention timing: ${keys} keys, buffers of ${this.long}`);
    const { ops, config: c } = this.e;
    const bounds = this.boundsFor(keys);
    const run = async (count: number) => {
      const t = performance.now();
      for (let i = 0; i < count; i++) {
        const l = i % this.k.length;
        ops.attention({
          q: this.q, qStride: c.nHeads * c.headDim, qOffset: 0, k: this.k[l], v: this.v[l], kvDtype: this.e.kvDtype, qpos: this.qpos, kpos: this.kpos, out: this.out,
          T: 1, n: keys, H: c.nHeads, NKV: c.nKvHeads, HD: c.headDim, window: 0, scale: 1 / Math.sqrt(c.headDim), bounds,
          variant: w.attention, keysPerThread: takesKeysPerThread(w.attention) ? w.keysPerThread : undefined,
        });
      }
      await this.e.sync();
      return ((performance.now() - t) * 1000) / count;
    };
    const key = `${w.attention}/${w.keysPerThread}/${keys}`;
    let count = this.batch.get(key);
    if (count === undefined) {
      // The first batch builds the pipelines; the second, short, says how many launches fill BATCH_MS.
      await run(2);
      count = Math.min(1024, Math.max(4, Math.ceil((BATCH_MS * 1000) / (await run(4)))));
      this.batch.set(key, count);
    }
    return run(count);
  }

  destroy() {
    for (const b of [...this.k, ...this.v, ...this.bounds.values()]) b.destroy();
    for (const b of [this.q, this.out, this.qpos, this.kpos]) b?.destroy();
  }
}
