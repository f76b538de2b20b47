/**
 * The attention kernel alone, in each of its launch shapes, for the GPU kit: attention.wgsl ('rows': query rows
 * per invocation, key slices), attention_tiled.wgsl ('tiled': 64-row workgroups staging key tiles; key slices,
 * keys per tile; and attention_tiled_sg's subgroup lanes sharing rows) and attention_decode.wgsl ('keys': a 64-invocation workgroup per row over its keys; key slices)
 * side by side on the same shapes. Every query row sees every key, so a case costs 4·T·n·H·HD FLOPs; or, in a
 * 'linked' case, the rows are those legolink:16 recomputes when it links n keys in 512-token chunks (the first 16
 * of every chunk after the first, and the 8 question rows at the end), each seeing the keys up to its own position,
 * as a link's pass bounds them: 4·H·HD FLOPs a visible key.
 */
import { decodeAttentionKernels, tiledLaneWays, type AttentionVariant, type Engine, type KeysPerThread, type TiledLanes } from '../engine';
import { kernelPerRep, type KernelClock } from './matmul';
import { parseAlgorithm, staticRecomputeRows } from '../kvlink/algorithms';
import { textOnlyChunk, type LinkLayout } from '../kvlink/layout';

/** An attention launch's shape; `rows: 'linked'` takes legolink:16's rows over chunks of `chunk` tokens (512 when absent). */
export interface AttentionCase { T: number; n: number; H: number; NKV: number; HD: number; rows?: 'all' | 'linked'; chunk?: number }

/**
 * The positions of the rows legolink:16 recomputes (kvlink's own choice, staticRecomputeRows) when it links `n`
 * keys as chunks of `size` tokens followed by an 8-token question.
 */
export function linkedRows(n: number, size = 512): Int32Array {
  const chunks = Math.floor((n - 8) / size);
  const chunk = textOnlyChunk('bench', [], null);
  const segments = Array.from({ length: chunks }, (_, i) => ({ part: i, start: i * size, length: size, chunk }));
  const uncached = Array.from({ length: n - chunks * size }, (_, i) => chunks * size + i);
  const layout: LinkLayout = { tokens: new Array<number>(n).fill(0), positions: [], segments, uncached };
  return Int32Array.from(staticRecomputeRows(layout, parseAlgorithm('legolink:16')));
}

export interface AttentionTiming extends AttentionCase {
  variant: AttentionVariant; rowsPerThread: 1 | 4; splits: number | 'auto';
  /** The tiled kernel's keys per tile: the one the shape named, or the engine's own (Ops.attentionTile). */
  keysPerTile?: number;
  /** attention_decode's keys an invocation scores a round (Ops.attention's keysPerThread). */
  keysPerThread?: number;
  /** The tiled kernel's lanes a row group (attention_tiled_sg where more than one); absent: the engine's own. */
  tiledLanes?: TiledLanes;
  /** The rows such a group holds where not its lanes: 1, each row's head split over them. */
  tiledRows?: number;
  chosen: boolean; ms: number; gflops: number; clock: KernelClock;
}

/** Slice counts timed beside the engine's own choice ('auto') and none: fixed counts show whether the choice is right. */
const FIXED_SPLITS = [1, 2, 4, 8, 32, 128] as const;
/**
 * The tiled kernel's slices: it makes 64 rows share each key load, so it needs fewer slices to fill the GPU. 64 is
 * past tiledSplits' cap of 32, set while attention_combine walked each row's slices serially.
 */
const TILED_SPLITS = [1, 2, 4, 8, 16, 32, 64] as const;
/** The tiled kernel is timed where its 64-row workgroups are at least half full. */
const TILED_MIN_T = 32;
/** attention_decode's slices (a workgroup of 64 each per row and head); it is timed where rows are few. */
const KEYS_SPLITS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512] as const;
const KEYS_MAX_T = 64;

export async function timeAttention(e: Engine, c: AttentionCase, targetMs = 60): Promise<AttentionTiming[]> {
  const dev = e.gpu.device;
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const W = (c.H + 2 * c.NKV) * c.HD;
  const buf = (bytes: number, fill?: ArrayBufferView) => {
    const b = dev.createBuffer({ size: Math.max(16, bytes), usage });
    if (fill) dev.queue.writeBuffer(b, 0, fill.buffer, fill.byteOffset, fill.byteLength);
    return b;
  };
  const noise = (n: number) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 12.9898) * 0.5);
  const q = buf(c.T * W * 4, noise(c.T * W));
  const k = buf(c.n * c.NKV * c.HD * 4, noise(c.n * c.NKV * c.HD));
  const v = buf(c.n * c.NKV * c.HD * 4, noise(c.n * c.NKV * c.HD));
  const at = c.rows === 'linked' ? linkedRows(c.n, c.chunk) : new Int32Array(c.T).fill(c.n);
  if (at.length !== c.T) throw new Error(`attention case: ${c.T} rows, but legolink:16 recomputes ${at.length} of ${c.n}`);
  const visible = at.reduce((a, p) => a + Math.min(p + 1, c.n), 0);
  const qpos = buf(c.T * 4, at);
  const kpos = buf(c.n * 4, Int32Array.from({ length: c.n }, (_, i) => i));
  const bounds = buf(c.T * 8, Uint32Array.from({ length: 2 * c.T }, (_, i) => (i % 2 ? Math.min(at[i >> 1] + 1, c.n) : 0)));
  const out = buf(c.T * c.H * c.HD * 4);
  const rows: AttentionTiming[] = [];
  try {
    // The first launches on a cold GPU ran up to 3x slower than the same launch later (gpu-h100-6.json): warm up first.
    const base = { q, qStride: W, qOffset: 0, k, v, kvDtype: 'f32' as const, qpos, kpos, out, T: c.T, n: c.n, H: c.H, NKV: c.NKV, HD: c.HD, window: 0, scale: 0.125, bounds };
    const tw = performance.now();
    while (performance.now() - tw < targetMs) {
      e.ops.attention(base);
      await e.ops.d.read(out, 0, 16);
    }
    // Ops.attention clamps slices to what one binding holds: a count past it would be timed under a wrong label.
    const fits = (s: number) => c.T * c.H * s * c.HD * 4 <= dev.limits.maxStorageBufferBindingSize;
    type Shape = { variant: AttentionVariant; rowsPerThread: 1 | 4; splits: number | 'auto'; keysPerTile?: number; keysPerThread?: KeysPerThread; tiledLanes?: TiledLanes; tiledRows?: number };
    const shapes: Shape[] = [];
    for (const rowsPerThread of [1, 4] as const) {
      // Four rows an invocation only differ from one where there are several query rows.
      if (rowsPerThread === 4 && c.T < 4) continue;
      for (const splits of ['auto', ...FIXED_SPLITS.filter((s) => s <= c.n / 16 && fits(s))] as const) shapes.push({ variant: 'rows', rowsPerThread, splits });
    }
    if (c.T >= TILED_MIN_T) {
      for (const splits of ['auto', ...TILED_SPLITS.filter((s) => s <= c.n / 64 && fits(s))] as const) shapes.push({ variant: 'tiled', rowsPerThread: 1, splits });
      // Narrower and wider tiles than the engine's 16 keys, where the adapter's workgroup memory holds them (more or
      // fewer barriers and scores held in registers, more or fewer workgroups a multiprocessor).
      for (const keysPerTile of [8, 32, 64]) {
        if (keysPerTile * (8 * c.HD + 4) <= dev.limits.maxComputeWorkgroupStorageSize) shapes.push({ variant: 'tiled', rowsPerThread: 1, splits: 'auto', keysPerTile });
      }
      // Subgroup lanes sharing rows (attention_tiled_sg), where the device runs them: each key read once for 2 or 4
      // rows; with the engine's tile, and with 8 keys a tile (half the scores held in registers, 4R of them a key); in
      // 8 and 32 key slices beside the engine's own count.
      for (const tiledLanes of tiledLaneWays(e.ops, c.HD).filter((r) => r > 1)) {
        for (const keysPerTile of [undefined, 8]) shapes.push({ variant: 'tiled', rowsPerThread: 1, splits: 'auto', keysPerTile, tiledLanes });
        for (const splits of [8, 32].filter((s) => s <= c.n / 64 && fits(s))) shapes.push({ variant: 'tiled', rowsPerThread: 1, splits, tiledLanes });
        // And the lanes splitting one row's head (blocks of 64 / lanes rows: fewer registers, each key read once a row).
        shapes.push({ variant: 'tiled', rowsPerThread: 1, splits: 'auto', tiledLanes, tiledRows: 1 });
      }
    }
    if (c.T <= KEYS_MAX_T && decodeAttentionKernels(c.HD).includes('keys')) {
      for (const splits of ['auto', ...KEYS_SPLITS.filter((s) => s <= c.n / 64 && fits(s))] as const) shapes.push({ variant: 'keys', rowsPerThread: 1, splits });
      // More keys an invocation a round (fewer rounds, so fewer barriers, and more loads in flight), in slices that
      // give each workgroup a few rounds.
      for (const keysPerThread of [2, 4, 8] as const) {
        for (const splits of ['auto', ...KEYS_SPLITS.filter((s) => s <= c.n / (64 * keysPerThread) && fits(s))] as const) shapes.push({ variant: 'keys', rowsPerThread: 1, splits, keysPerThread });
      }
      // Each invocation walking keys of its own (LANES), heads of at most 64.
      if (decodeAttentionKernels(c.HD).includes('lanes')) for (const splits of ['auto', ...KEYS_SPLITS.filter((s) => s <= c.n / 64 && fits(s))] as const) shapes.push({ variant: 'lanes', rowsPerThread: 1, splits });
      // The same with a kv head's q heads in one workgroup (attention_grouped), where the heads group and the device holds it.
      if (e.ops.decodeKernels(c.HD, c.H / c.NKV).includes('grouped')) for (const splits of ['auto', ...KEYS_SPLITS.filter((s) => s <= c.n / 64 && fits(s))] as const) shapes.push({ variant: 'grouped', rowsPerThread: 1, splits });
      // Rounds with a kv head's q heads in one workgroup (attention_decode with QG), at each keys a thread its memory holds.
      if (e.ops.decodeKernels(c.HD, c.H / c.NKV).includes('grouped-keys')) {
        for (const keysPerThread of [1, 2, 4, 8] as const) {
          if (e.ops.keysPerThreadRun('grouped-keys', c.HD, c.H / c.NKV, keysPerThread) !== keysPerThread) continue;
          for (const splits of ['auto', ...KEYS_SPLITS.filter((s) => s <= c.n / (64 * keysPerThread) && fits(s))] as const) shapes.push({ variant: 'grouped-keys', rowsPerThread: 1, splits, keysPerThread });
        }
      }
    }
    const picked = e.ops.pickAttention(c.T, c.HD, c.n);
    for (const sh of shapes) {
      const args = { ...base, variant: sh.variant, rowsPerThread: sh.rowsPerThread, keysPerTile: sh.keysPerTile, keysPerThread: sh.keysPerThread, tiledLanes: sh.tiledLanes, tiledRows: sh.tiledRows, splits: sh.splits === 'auto' ? undefined : sh.splits };
      const run = async (reps: number) => {
        const t0 = performance.now();
        for (let i = 0; i < reps; i++) e.ops.attention(args);
        await e.ops.d.read(out, 0, 16);
        return performance.now() - t0;
      };
      await run(1);
      const once = await run(1);
      const reps = Math.max(2, Math.min(200, Math.ceil(targetMs / Math.max(once, 0.01))));
      const { ms, clock } = await kernelPerRep(e, run, reps);
      const chosen = sh.variant === picked && sh.splits === 'auto' && sh.keysPerTile === undefined && sh.keysPerThread === undefined && sh.tiledLanes === undefined && sh.tiledRows === undefined
        && (sh.variant !== 'rows' || sh.rowsPerThread === (e.ops.matmulProfile === 'cpu' ? 4 : 1));
      // The tile the engine used, where the shape left it to the engine.
      const keysPerTile = sh.variant === 'tiled' ? (sh.keysPerTile ?? e.ops.attentionTile(c.HD)) : undefined;
      rows.push({ ...c, ...sh, keysPerTile, chosen, ms, clock, gflops: (4 * visible * c.H * c.HD) / ms / 1e6 });
    }
  } finally {
    for (const b of [q, k, v, qpos, kpos, bounds, out]) b.destroy();
  }
  return rows;
}
