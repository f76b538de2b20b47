/**
 * Prefill's attention kernel chosen by timing it on the adapter at hand (Engine.tunePrefill).
 *
 * On a real GPU, attention_tiled is most of a long prompt's prefill: 86% of SmolLM2's full 32K-token prefill and of a
 * LegoLink recompute over it on the H100 (gpu-h100-13.json). An invocation there holds a row and reads every key
 * and value from workgroup memory for four multiply-adds a read, which bounds it on GPUs where such reads are
 * scarcer than arithmetic. attention_tiled_sg lets 2 or 4 subgroup lanes share R rows, so each read serves R rows
 * (Ops.tiledLanes). Whether that pays depends on the GPU, its subgroups and the model's heads, so the engine times
 * a layer's attention each way (1, 2 and 4 lanes a row group, as the device runs them) over rows that see every key
 * of a span, with the model's heads and cache precision, in turns, each way's figure the fastest of `reps` batches
 * of about BATCH_MS, and keeps the fastest where it beats one lane by more than the margin.
 *
 * Every way computes the same rows (attention_tiled_sg has its parity test), so tuning changes speed only. CPU
 * adapters, and devices without subgroups, are not tuned: their prefill never takes attention_tiled_sg.
 */
import type { Ops, TiledLanes } from '../ops';
import type { AttentionTunable } from './tune-attention';

/** A way's microseconds for a layer's attention over the timed rows and keys. */
export interface TiledLanesTiming {
  lanes: TiledLanes;
  us: number;
}

export interface PrefillTuning {
  /** Query rows and the keys each sees. */
  rows: number;
  keys: number;
  /** One lane a row group (attention_tiled) first, then the others the device runs. */
  ways: TiledLanesTiming[];
  /** What was kept (now Ops.tiledLanes). */
  chosen: TiledLanes;
  ms: number;
}

export interface PrefillTuneOptions {
  rows?: number;
  keys?: number;
  reps?: number;
  /** How much faster than one lane a way must be to be kept. */
  margin?: number;
  /** Times a way (µs a layer): tests inject a clock. */
  measure?: (lanes: TiledLanes) => Promise<number>;
}

/** Rows and keys timed: a chunk's worth of rows against a long prompt's keys (a LegoLink recompute's shape). */
const ROWS = 512;
const KEYS = 4096;
/** Wall milliseconds a timed batch lasts, so that submitting and waiting for it is a small part of it. */
const BATCH_MS = 5;
/** As decode's tuning: an alternative must beat the default by more than this to replace it. */
const MARGIN = 0.03;

/** A way of prefill's attention in words: its kernel, and the lanes a row group where more than one. */
export function describeTiledLanes(lanes: TiledLanes): string {
  return lanes === 1 ? 'attention_tiled' : `attention_tiled_sg, ${lanes} lanes a row group`;
}

/** The lanes a row group attention_tiled runs with on this device for heads of HD, one lane first. */
export function tiledLaneWays(ops: Pick<Ops, 'takesTiledLanes'>, HD: number): TiledLanes[] {
  return ([1, 2, 4] as const).filter((r) => ops.takesTiledLanes(HD, r));
}

/**
 * Times every way and keeps the fastest past the margin as Ops.tiledLanes (1 otherwise); null, and nothing set,
 * where prefill does not take attention_tiled (CPU adapters) or the device runs one way only (no subgroups).
 */
export async function tunePrefill(e: AttentionTunable, o: PrefillTuneOptions = {}): Promise<PrefillTuning | null> {
  const t0 = performance.now();
  const c = e.config, ops = e.ops;
  const rows = o.rows ?? ROWS, keys = Math.min(o.keys ?? KEYS, c.maxPositions);
  if (ops.pickAttention(rows, c.headDim) !== 'tiled') return null;
  const lanes = tiledLaneWays(ops, c.headDim);
  if (lanes.length < 2) return null;
  const saved = ops.tiledLanes;
  const bench = o.measure ? null : new TiledBench(e, rows, keys);
  try {
    const measure = o.measure ?? ((r: TiledLanes) => bench!.time(r));
    const ways: TiledLanesTiming[] = lanes.map((r) => ({ lanes: r, us: Infinity }));
    for (let rep = 0; rep < (o.reps ?? 3); rep++) {
      for (const w of ways) w.us = Math.min(w.us, await measure(w.lanes));
    }
    const best = ways.reduce((a, b) => (b.us < a.us ? b : a));
    const chosen = best.us < ways[0].us * (1 - (o.margin ?? MARGIN)) ? best.lanes : 1;
    ops.tiledLanes = chosen;
    return { rows, keys, ways, chosen, ms: performance.now() - t0 };
  } catch (err) {
    ops.tiledLanes = saved;
    throw err;
  } finally {
    bench?.destroy();
  }
}

/** Buffers for one layer's attention of `rows` rows over `keys` keys, every key seen; times a way as a batch. */
class TiledBench {
  private readonly buffers: GPUBuffer[] = [];
  private readonly batch = new Map<TiledLanes, number>();
  private readonly args;

  constructor(
    private e: AttentionTunable,
    rows: number,
    keys: number,
  ) {
    const c = e.config, device = e.ops.lib.device;
    const kvBytes = keys * c.nKvHeads * c.headDim * (e.kvDtype === 'f16' ? 2 : 4);
    const storage = (label: string, size: number) => {
      const b = device.createBuffer({ label, size: Math.max(16, size), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
      this.buffers.push(b);
      return b;
    };
    try {
      // Keys, values and queries left zero: attention's cost does not depend on them.
      const qpos = storage('prefill timing qpos', rows * 4), kpos = storage('prefill timing kpos', keys * 4), bounds = storage('prefill timing bounds', rows * 8);
      device.queue.writeBuffer(qpos, 0, new Int32Array(rows).fill(keys));
      device.queue.writeBuffer(kpos, 0, Int32Array.from({ length: keys }, (_, i) => i));
      device.queue.writeBuffer(bounds, 0, Uint32Array.from({ length: 2 * rows }, (_, i) => (i % 2 ? keys : 0)));
      this.args = {
        q: storage('prefill timing q', rows * c.nHeads * c.headDim * 4), qStride: c.nHeads * c.headDim, qOffset: 0,
        k: storage('prefill timing k', kvBytes), v: storage('prefill timing v', kvBytes), kvDtype: e.kvDtype, qpos, kpos, bounds,
        out: storage('prefill timing out', rows * c.nHeads * c.headDim * 4),
        T: rows, n: keys, H: c.nHeads, NKV: c.nKvHeads, HD: c.headDim, window: 0, scale: 1 / Math.sqrt(c.headDim), variant: 'tiled' as const,
      };
    } catch (err) {
      this.destroy();
      throw err;
    }
  }

  /** Microseconds a launch (attention_combine included where the keys are sliced) of `lanes` lanes a row group. */
  async time(lanes: TiledLanes): Promise<number> {
    const run = async (count: number) => {
      const t = performance.now();
      for (let i = 0; i < count; i++) this.e.ops.attention({ ...this.args, tiledLanes: lanes });
      await this.e.sync();
      return ((performance.now() - t) * 1000) / count;
    };
    let count = this.batch.get(lanes);
    if (count === undefined) {
      // The first batch builds the pipeline; the second, short, says how many launches fill BATCH_MS.
      await run(1);
      count = Math.min(256, Math.max(2, Math.ceil((BATCH_MS * 1000) / (await run(2)))));
      this.batch.set(lanes, count);
    }
    return run(count);
  }

  destroy() {
    for (const b of this.buffers) b.destroy();
  }
}
