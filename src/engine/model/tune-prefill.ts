/**
 * Prefill's attention kernel chosen by timing it on the adapter at hand (Engine.tunePrefill).
 *
 * On a real GPU, attention_tiled is most of a long prompt's prefill: 86% of SmolLM2's full 32K-token prefill and of a
 * LegoLink recompute over it on the H100 (gpu-h100-13.json). An invocation there holds a row and reads every key
 * and value from workgroup memory for four multiply-adds a read, which bounds it on GPUs where such reads are
 * scarcer than arithmetic. attention_tiled_sg lets 2 or 4 subgroup lanes share R rows, so each read serves R rows
 * (Ops.tiled's lanes); for heads over 64, whose query and accumulator spill an invocation's registers, the lanes may
 * instead split one row's head (its rows); tiles of 8 keys rather than 16 halve the scores an invocation holds
 * (its keys a tile). Which pays depends on the GPU, its subgroups and the model's heads, so the engine times a
 * layer's attention each way (tiledWays: 1, 2 and 4 lanes a row group as the device runs them, at 16 and 8 keys a
 * tile) over rows that see every key
 * of a span, with the model's heads and cache precision, in turns, each way's figure the fastest of `reps` batches
 * of about BATCH_MS, and keeps the fastest where it beats the default (one lane, 16 keys) by more than the margin.
 *
 * Every way computes the same rows (each has its parity test), so tuning changes speed only. Yet attention_tiled_sg
 * leans on how a device runs subgroups, and users' GPUs are many more than the kit's, so before a way is timed it
 * must give the default way's output on this device: 70 rows of causal positions over 96 keys of the model's heads,
 * random values, within AGREE of the largest output. A way that does not is never kept, and the tuning says so. CPU
 * adapters are not tuned: their prefill never takes attention_tiled.
 */
import type { Ops, TiledLanes, TiledWay } from '../ops';
import { keyBounds } from '../attention-plan';
import { floatsToHalves } from '../f16';
import type { AttentionTunable } from './tune-attention';

/** A way's microseconds for a layer's attention over the timed rows and keys (NaN where it was not timed). */
export interface TiledWayTiming extends TiledWay {
  us: number;
  /** Why the way was not timed: its output differed from the default way's on this device. */
  error?: string;
}

export interface PrefillTuning {
  /** Query rows and the keys each sees. */
  rows: number;
  keys: number;
  /** The default way (attention_tiled, the engine's tile) first, then the others the device runs. */
  ways: TiledWayTiming[];
  /** What was kept (now Ops.tiled). */
  chosen: TiledWay;
  ms: number;
}

export interface PrefillTuneOptions {
  rows?: number;
  keys?: number;
  reps?: number;
  /** How much faster than the default way another must be to be kept. */
  margin?: number;
  /** Times a way (µs a layer): tests inject a clock. */
  measure?: (way: TiledWay) => Promise<number>;
  /** Whether a way gives the default way's output (null), or how far it is from it: by default run on the device. */
  agree?: (way: TiledWay) => Promise<string | null>;
}

/** Rows and keys timed: a chunk's worth of rows against a long prompt's keys (a LegoLink recompute's shape). */
const ROWS = 512;
const KEYS = 4096;
/** Wall milliseconds a timed batch lasts, so that submitting and waiting for it is a small part of it. */
const BATCH_MS = 5;
/** As decode's tuning: an alternative must beat the default by more than this to replace it. */
const MARGIN = 0.03;
/**
 * How far, relative to the largest output, a way may be from the default way's output: about 10x the most measured on
 * SwiftShader and lavapipe (2.4e-7, every way of the kit's four model shapes, f32 and f16 keys and values).
 */
const AGREE = 2e-6;
/** Keys a tile tried: the engine's default, and half of it (half the scores an invocation holds in registers). */
const TILES = [16, 8];
/** Heads wider than this also try one row a group: 64 floats of query and 64 of accumulator an invocation already. */
const WIDE = 64;

/** A way of prefill's attention in words: its kernel, how its row groups share rows, its keys a tile. */
export function describeTiledWay(w: TiledWay): string {
  const group = w.lanes === 1 ? '' : w.rows === 1 ? `, ${w.lanes} lanes a row` : `, ${w.lanes} lanes sharing ${w.rows} rows`;
  return `attention_tiled${w.lanes === 1 ? '' : '_sg'}${group}, ${w.keysPerTile} keys a tile`;
}

/** Whether two ways are the same way (a timing and the way it times, say). */
export function sameTiledWay(a: TiledWay, b: TiledWay): boolean {
  return a.lanes === b.lanes && a.rows === b.rows && a.keysPerTile === b.keysPerTile;
}

/** The lanes a row group attention_tiled runs with on this device for heads of HD, one lane first. */
export function tiledLaneWays(ops: Pick<Ops, 'takesTiledLanes'>, HD: number): TiledLanes[] {
  return ([1, 2, 4] as const).filter((r) => ops.takesTiledLanes(HD, r));
}

/**
 * The ways prefill's attention can take on this device for heads of HD: each lanes a row group it runs, sharing as
 * many rows, and for heads over WIDE also one row a group (a head's query and accumulator then fit an invocation's
 * registers), at each keys a tile of TILES its workgroup memory holds (Ops.attentionTile); the default (one lane,
 * the engine's tile) first.
 */
export function tiledWays(ops: Pick<Ops, 'takesTiledLanes' | 'attentionTile'>, HD: number): TiledWay[] {
  const tiles = [...new Set(TILES.map((t) => ops.attentionTile(HD, t)))].filter((t) => t >= 4);
  const groups = tiledLaneWays(ops, HD).flatMap((lanes): { lanes: TiledLanes; rows: number }[] =>
    lanes === 1 ? [{ lanes, rows: 1 }] : HD > WIDE ? [{ lanes, rows: lanes }, { lanes, rows: 1 }] : [{ lanes, rows: lanes }]);
  return groups.flatMap((g) => tiles.map((keysPerTile) => ({ ...g, keysPerTile })));
}

/**
 * Times every way and keeps the fastest past the margin as Ops.tiled (the default way otherwise); null, and nothing
 * set, where prefill does not take attention_tiled (CPU adapters) or there is one way.
 */
export async function tunePrefill(e: AttentionTunable, o: PrefillTuneOptions = {}): Promise<PrefillTuning | null> {
  const t0 = performance.now();
  const c = e.config, ops = e.ops;
  const rows = o.rows ?? ROWS, keys = Math.min(o.keys ?? KEYS, c.maxPositions);
  if (ops.pickAttention(rows, c.headDim) !== 'tiled') return null;
  const all = tiledWays(ops, c.headDim);
  if (all.length < 2) return null;
  const saved = ops.tiled;
  const bench = o.measure ? null : new TiledBench(e, rows, keys);
  try {
    const measure = o.measure ?? ((w: TiledWay) => bench!.time(w));
    const agree = o.agree ?? (async (w: TiledWay) => {
      const { worst, big } = await wayDifference(e, w, all[0]);
      return worst <= AGREE * big ? null : `its output differs from ${describeTiledWay(all[0])}'s by ${worst.toExponential(2)} of a largest ${big.toFixed(3)} on this device`;
    });
    const ways: TiledWayTiming[] = [];
    for (const w of all) {
      const error = w === all[0] ? null : await agree(w);
      ways.push(error === null ? { ...w, us: Infinity } : { ...w, us: NaN, error });
    }
    const timed = ways.filter((w) => w.error === undefined);
    for (let rep = 0; rep < (o.reps ?? 3); rep++) {
      for (const w of timed) w.us = Math.min(w.us, await measure({ lanes: w.lanes, rows: w.rows, keysPerTile: w.keysPerTile }));
    }
    const best = timed.reduce((a, b) => (b.us < a.us ? b : a));
    const kept = best.us < ways[0].us * (1 - (o.margin ?? MARGIN)) ? best : ways[0];
    const chosen = { lanes: kept.lanes, rows: kept.rows, keysPerTile: kept.keysPerTile };
    ops.tiled = chosen;
    return { rows, keys, ways, chosen, ms: performance.now() - t0 };
  } catch (err) {
    ops.tiled = saved;
    throw err;
  } finally {
    bench?.destroy();
  }
}

/**
 * How far way `w` is from way `base`'s output on this device, for the model's heads and cache precision (70 rows at
 * scattered causal positions over 96 keys, in ragged blocks whatever the way, random values): the largest difference,
 * and the largest output (the difference Infinity where an output is not a number).
 */
export async function wayDifference(e: AttentionTunable, w: TiledWay, base: TiledWay): Promise<{ worst: number; big: number }> {
  const c = e.config, device = e.ops.lib.device;
  const T = 70, n = 96, W = c.nHeads * c.headDim, kvW = c.nKvHeads * c.headDim;
  let seed = 7;
  const rand = (len: number) => Float32Array.from({ length: len }, () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1);
  const kv = (x: Float32Array) => (e.kvDtype === 'f16' ? floatsToHalves(x) : x);
  const kpos = Int32Array.from({ length: n }, (_, j) => j);
  const qpos = Int32Array.from({ length: T }, (_, t) => (t * 37) % n);
  const buffers: GPUBuffer[] = [];
  const upload = (data: ArrayBufferView & { byteLength: number }) => {
    const b = device.createBuffer({ label: 'prefill check', size: Math.max(16, Math.ceil(data.byteLength / 4) * 4), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC });
    buffers.push(b);
    device.queue.writeBuffer(b, 0, data.buffer, data.byteOffset, data.byteLength);
    return b;
  };
  try {
    const args = {
      q: upload(rand(T * W)), qStride: W, qOffset: 0, k: upload(kv(rand(n * kvW))), v: upload(kv(rand(n * kvW))), kvDtype: e.kvDtype,
      qpos: upload(qpos), kpos: upload(kpos), bounds: upload(keyBounds(kpos, n, qpos, 0)),
      T, n, H: c.nHeads, NKV: c.nKvHeads, HD: c.headDim, window: 0, scale: 1 / Math.sqrt(c.headDim), variant: 'tiled' as const,
    };
    const out = (way: TiledWay) => {
      const o = upload(new Float32Array(T * W));
      e.ops.attention({ ...args, out: o, tiledLanes: way.lanes, tiledRows: way.rows, keysPerTile: way.keysPerTile });
      return o;
    };
    const [a, b] = await e.ops.d.readMany([out(base), out(w)].map((src) => ({ src, offset: 0, size: T * W * 4 })));
    const x = new Float32Array(a), y = new Float32Array(b);
    let big = 0, worst = 0;
    for (let i = 0; i < x.length; i++) {
      big = Math.max(big, Math.abs(x[i]));
      worst = Math.max(worst, Number.isFinite(y[i]) ? Math.abs(x[i] - y[i]) : Infinity);
    }
    return { worst, big };
  } finally {
    for (const buf of buffers) buf.destroy();
  }
}

/** Buffers for one layer's attention of `rows` rows over `keys` keys, every key seen; times a way as a batch. */
class TiledBench {
  private readonly buffers: GPUBuffer[] = [];
  private readonly batch = new Map<string, number>();
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

  /** Microseconds a launch (attention_combine included where the keys are sliced) of way `w`. */
  async time(w: TiledWay): Promise<number> {
    const run = async (count: number) => {
      const t = performance.now();
      for (let i = 0; i < count; i++) this.e.ops.attention({ ...this.args, tiledLanes: w.lanes, tiledRows: w.rows, keysPerTile: w.keysPerTile });
      await this.e.sync();
      return ((performance.now() - t) * 1000) / count;
    };
    const key = `${w.lanes}/${w.rows}/${w.keysPerTile}`;
    let count = this.batch.get(key);
    if (count === undefined) {
      // The first batch builds the pipeline; the second, short, says how many launches fill BATCH_MS.
      await run(1);
      count = Math.min(256, Math.max(2, Math.ceil((BATCH_MS * 1000) / (await run(2)))));
      this.batch.set(key, count);
    }
    return run(count);
  }

  destroy() {
    for (const b of this.buffers) b.destroy();
  }
}
