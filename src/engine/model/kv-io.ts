/**
 * Moving K/V rows between the host and a KVCache.
 *
 * KVCompile keeps keys *before* RoPE: such a key belongs to no position, so a
 * chunk's cache can be linked at any offset by rotating it once on the way
 * in (`writeRows`), exactly as a fresh key at that position would be rotated.
 * Rotating post-RoPE keys by a delta (CacheBlend, Appendix A) is equivalent
 * in exact arithmetic but compounds rounding when caches are f16 and needs
 * the old positions; the pre-RoPE form needs neither.
 */
import type { GpuLayerRows, LayerRows } from '../../types/kv';
import type { GpuModel } from './gpu-model';
import type { LayerKind } from './config';
import type { KVCache } from './kv-cache';
import type { Scratch } from './scratch';
import { inverseFrequencies, ropeTable } from './rope';
import type { Ops } from '../ops';
import type { HostWrite } from '../gpu/dispatcher';
import { halfRows } from '../f16';

export type { LayerRows, GpuLayerRows };

/** Where one block of rows goes: cache rows [start, start + positions.length), at those position ids. */
export interface RowBlock {
  start: number;
  positions: ArrayLike<number>;
}

/**
 * Writes blocks of rows (one per linked chunk) into a cache, one layer at a
 * time, so a caller can interleave the loading of layer l + 1 with the
 * recompute of layer l. Every row goes in through kv_gather, its key rotated
 * on the way: rows already on the GPU straight from their buffers, one launch
 * for all the blocks that share them (KVStore's GPU tier keeps chunks in
 * shared slabs); host rows after an upload into a staging buffer of their
 * own precision (Dispatcher.upload, by writeBuffer or mapped staging as the adapter was measured to prefer; halves
 * stay halves: half the bytes, widened in the launch),
 * one launch for the f32 rows and one for the halves, whatever the number of
 * blocks (per-block uploads would cost a submit each).
 *
 * Placement rows: the f32 host blocks', the halves', then the GPU blocks'
 * grouped by buffer; the order is fixed by the first layer's sources, and
 * every later layer must bring each block from the same kind of source.
 */
export class RowWriter {
  private idx!: GPUBuffer;
  private src!: GPUBuffer;
  /** The rows' own RoPE tables, or null where keys rotate by the model's table by position (fetched at launch). */
  private tables!: { global: GPUBuffer; local: GPUBuffer | null } | null;
  /** Per placement row, its row of the tables. */
  private csRows!: GPUBuffer;
  /** Per block, its first placement row; set by the first layer. */
  private offsets: number[] = [];
  /** Blocks placed by one launch, from one source, in placement rows [t0, t0 + T); laid out by the first layer. */
  private groups: { from: 'f32' | 'f16' | GPUBuffer; t0: number; T: number; blocks: number[] }[] = [];
  readonly T: number;

  constructor(
    private ops: Ops,
    private m: GpuModel,
    private cache: KVCache,
    private scratch: Scratch,
    private blocks: RowBlock[],
  ) {
    let T = 0;
    for (const b of blocks) {
      T += b.positions.length;
      cache.setPositions(b.start, b.positions);
    }
    this.T = T;
  }

  /** Lays out the placement rows from the first layer's sources and uploads their inputs (rows, positions, tables). */
  private plan(sources: (LayerRows | GpuLayerRows)[]) {
    const c = this.m.config;
    const byFrom = new Map<'f32' | 'f16' | GPUBuffer, number[]>([['f32', []], ['f16', []]]);
    sources.forEach((s, i) => {
      const from = sourceOf(s);
      const members = byFrom.get(from);
      if (members) members.push(i);
      else byFrom.set(from, [i]);
    });
    const positions = new Int32Array(this.T), rows = new Uint32Array(this.T), src = new Uint32Array(this.T);
    this.offsets = new Array(this.blocks.length);
    let t = 0;
    for (const [from, members] of byFrom) {
      if (!members.length) continue;
      const t0 = t;
      for (const i of members) {
        const b = this.blocks[i];
        // Staging holds host rows from its first row on; a GPU buffer holds the block's from its row0 on.
        const row0 = typeof from === 'string' ? t - t0 : (sources[i] as GpuLayerRows).row0 ?? 0;
        this.offsets[i] = t;
        for (let j = 0; j < b.positions.length; j++, t++) {
          positions[t] = b.positions[j];
          rows[t] = b.start + j;
          src[t] = row0 + j;
        }
      }
      this.groups.push({ from, t0, T: t - t0, blocks: members });
    }
    this.idx = this.scratch.put('io.idx', rows);
    this.src = this.scratch.put('io.src', src);
    // Keys rotate by the model's table by position (kept on the GPU from link to link); where positions are
    // negative or past what that table may hold, by a table of these rows' own.
    const kinds = c.layerKinds.includes('local') ? (['global', 'local'] as const) : (['global'] as const);
    let lo = 0, hi = 0;
    for (const p of positions) (lo = Math.min(lo, p)), (hi = Math.max(hi, p));
    const byPosition = lo >= 0 ? kinds.map((k) => this.m.positionTable(k).covering(hi, () => this.ops.d.flush())) : [];
    if (byPosition.length && byPosition.every((b) => b)) {
      this.tables = null;
      this.csRows = this.scratch.put('io.csrows', positions);
    } else {
      const own = (k: LayerKind) => this.scratch.put(`io.cs.${k}`, ropeTable(inverseFrequencies(c, k), positions));
      this.tables = { global: own('global'), local: kinds.length > 1 ? own('local') : null };
      this.csRows = this.scratch.put('io.csrows', Uint32Array.from({ length: this.T }, (_, t) => t));
    }
  }

  /**
   * Stages and places layer `l` of every block, from host arrays or GPU buffers (one source per block, in order).
   * Returns whether it staged host rows: their uploads are best submitted soon (the caller's flush), while rows
   * from GPU buffers can wait for the work recorded after them (a link's recompute of the layer).
   */
  layer(l: number, sources: (LayerRows | GpuLayerRows)[]): boolean {
    if (sources.length !== this.blocks.length) throw new Error(`writeRows: ${sources.length} sources for ${this.blocks.length} blocks`);
    if (!this.T) return false;
    if (!this.groups.length) {
      // Work already recorded may still read the index and table buffers plan overwrites: submit it first.
      this.ops.d.flush();
      this.plan(sources);
    }
    const c = this.m.config;
    // The model's table as it is now: a forward pass may have grown it since plan.
    const kind = c.layerKinds[l];
    const cs = (this.tables ? (kind === 'local' ? this.tables.local : this.tables.global) : this.m.positionTable(kind).buffer)!;
    for (const g of this.groups) {
      // Host blocks bring the same precision in every layer; GPU blocks, this layer's buffers of their slab.
      const first = sources[g.blocks[0]];
      const same = (s: LayerRows | GpuLayerRows) => (typeof g.from === 'string' ? sourceOf(s) === g.from : sourceOf(s) === first.k && s.v === first.v);
      const stray = g.blocks.find((i) => !same(sources[i]));
      if (stray !== undefined) throw new Error(`writeRows: layer ${l} of block ${stray} does not come from where its layer 0 came`);
      const { k, v, dtype } = typeof g.from === 'string' ? this.stage(l, g, sources, g.from) : { k: first.k as GPUBuffer, v: first.v as GPUBuffer, dtype: (first as GpuLayerRows).f16 ? 'f16' as const : 'f32' as const };
      this.ops.gather({
        k, v, srcDtype: dtype, srcRows: this.src, idx: this.idx, cs, csRows: this.csRows, dstK: this.cache.k[l], dstV: this.cache.v[l], dstDtype: this.cache.dtype,
        t0: g.t0, T: g.T, W: this.m.kvDim, HD: c.headDim, interleaved: c.ropeStyle === 'interleaved',
      });
    }
    return this.groups.some((g) => typeof g.from === 'string');
  }

  /** Uploads a group's host rows of layer `l` into staging of their precision, a block after another. */
  private stage(l: number, g: { t0: number; T: number; blocks: number[] }, sources: (LayerRows | GpuLayerRows)[], dtype: 'f32' | 'f16') {
    const kvDim = this.m.kvDim;
    const rowBytes = kvDim * (dtype === 'f16' ? 2 : 4);
    const k = this.scratch.get(dtype === 'f16' ? 'io.k16' : 'io.k', g.T * rowBytes);
    const v = this.scratch.get(dtype === 'f16' ? 'io.v16' : 'io.v', g.T * rowBytes);
    const writes: HostWrite[] = [];
    const values: typeof writes = [];
    for (const i of g.blocks) {
      const n = this.blocks[i].positions.length;
      const rows = sources[i] as LayerRows;
      // Halves as they are: reading k of rows kept as halves would widen them on the host.
      const h = dtype === 'f16' ? rows.halves! : { k: rows.k, v: rows.v };
      if (h.k.length !== n * kvDim || h.v.length !== n * kvDim) throw new Error(`writeRows: layer ${l} of block ${i} has the wrong size`);
      const at = (this.offsets[i] - g.t0) * rowBytes;
      writes.push({ dst: k, offset: at, data: h.k });
      values.push({ dst: v, offset: at, data: h.v });
    }
    // Keys, then values: blocks lie end to end in each, so a mapped upload copies each in one piece.
    this.ops.d.upload([...writes, ...values]);
    return { k, v, dtype };
  }
}

/** Where a block's layer comes from: host f32 rows, host halves, or (its keys') GPU buffer. */
function sourceOf(s: LayerRows | GpuLayerRows): 'f32' | 'f16' | GPUBuffer {
  // Halves first: reading k of rows kept as halves would widen them on the host.
  if ('halves' in s && s.halves) return 'f16';
  return 'mapAsync' in s.k ? s.k : 'f32';
}

/** Writes every layer of `layers` into cache rows [start, start + positions.length). */
export function writeRows(ops: Ops, m: GpuModel, cache: KVCache, scratch: Scratch, start: number, positions: ArrayLike<number>, layers: LayerRows[]) {
  if (layers.length !== m.config.nLayers) throw new Error(`writeRows: ${layers.length} layers given, model has ${m.config.nLayers}`);
  const w = new RowWriter(ops, m, cache, scratch, [{ start, positions }]);
  layers.forEach((rows, l) => w.layer(l, [rows]));
  ops.d.flush();
}

/** Where cache rows [start, start + count) of one of its buffers lie, for Dispatcher.readMany. */
function storedRange(cache: KVCache, b: GPUBuffer, start: number, count: number) {
  return { src: b, offset: start * cache.rowBytes, size: Math.max(4, count * cache.rowBytes) };
}

/** Those rows as read back: halves for an f16 cache, else f32. */
function asStored(cache: KVCache, raw: ArrayBuffer, count: number): Float32Array | Uint16Array {
  return cache.dtype === 'f16' ? new Uint16Array(raw, 0, count * cache.kvDim) : new Float32Array(raw, 0, count * cache.kvDim);
}

async function readStored(ops: Ops, cache: KVCache, b: GPUBuffer, start: number, count: number): Promise<Float32Array | Uint16Array> {
  const [raw] = await ops.d.readMany([storedRange(cache, b, start, count)]);
  return asStored(cache, raw, count);
}

/**
 * Reads cache rows [start, start + count) of one layer (keys as stored: after RoPE), as the cache keeps them: an
 * f16 cache's rows come back as halves (LayerRows.halves), widened on the host only if k or v is read.
 */
export async function readRows(ops: Ops, cache: KVCache, layer: number, start: number, count: number): Promise<LayerRows> {
  const [kr, vr] = await ops.d.readMany([storedRange(cache, cache.k[layer], start, count), storedRange(cache, cache.v[layer], start, count)]);
  const k = asStored(cache, kr, count), v = asStored(cache, vr, count);
  return k instanceof Uint16Array ? halfRows(k, v as Uint16Array) : { k, v: v as Float32Array };
}

/**
 * What KVCompile stores of rows [start, start + count): every layer's keys as a pass captured them before RoPE
 * (`preRopeK`, [count, kvDim] from row 0, in the cache's precision) and the cache's values, read back in one wait.
 * An f16 cache's rows come as halves, rounded on the GPU (so nothing is converted on the host).
 */
export async function readCompiled(ops: Ops, cache: KVCache, preRopeK: GPUBuffer[], start: number, count: number): Promise<LayerRows[]> {
  const raw = await ops.d.readMany(preRopeK.flatMap((k, l) => [{ src: k, offset: 0, size: Math.max(4, count * cache.rowBytes) }, storedRange(cache, cache.v[l], start, count)]));
  return preRopeK.map((_, l) => {
    const k = asStored(cache, raw[2 * l], count), v = asStored(cache, raw[2 * l + 1], count);
    return k instanceof Uint16Array ? halfRows(k, v as Uint16Array) : { k, v: v as Float32Array };
  });
}

/** The values alone of cache rows [start, start + count) of one layer, as stored (halves for an f16 cache). */
export function readValues(ops: Ops, cache: KVCache, layer: number, start: number, count: number): Promise<Float32Array | Uint16Array> {
  return readStored(ops, cache, cache.v[layer], start, count);
}
