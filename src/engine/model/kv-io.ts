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
import type { KVCache } from './kv-cache';
import type { Scratch } from './scratch';
import { inverseFrequencies, ropeTable } from './rope';
import type { Ops } from '../ops';
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
 * recompute of layer l. Keys are rotated on the way in. Host rows are
 * gathered into one staging buffer (queue writes at their offsets, halves
 * widened on the GPU), then rotated and scattered with three dispatches
 * whatever the number of blocks: per-block uploads would cost a submit each.
 * Rows already on the GPU are placed straight from their buffers, one
 * kv_gather launch for all the blocks that share them (KVStore's GPU tier
 * keeps chunks in shared slabs), with no staging copy.
 *
 * Staging rows: the host blocks' first, then the GPU blocks' grouped by
 * buffer; the order is fixed by the first layer's sources, and every later
 * layer must bring the same kind from the same slab for each block.
 */
export class RowWriter {
  private idx!: GPUBuffer;
  private src!: GPUBuffer;
  private tables!: { global: GPUBuffer; local: GPUBuffer | null };
  /** Per block, its first staging row; set by the first layer. */
  private offsets: number[] = [];
  /** Staging rows of host blocks: [0, hostT). */
  private hostT = 0;
  /** GPU blocks sharing buffers, as placed in layer 0: their staging rows [t0, t0 + T) and member blocks. */
  private groups: { t0: number; T: number; blocks: number[] }[] = [];
  private planned = false;
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

  /** Lays out the staging rows from the first layer's sources and uploads their inputs (rows, positions, tables). */
  private plan(sources: (LayerRows | GpuLayerRows)[]) {
    const c = this.m.config;
    const onGpu = (i: number) => !('halves' in sources[i] && sources[i].halves) && 'mapAsync' in sources[i].k;
    const order: number[] = [];
    this.blocks.forEach((_, i) => !onGpu(i) && order.push(i));
    const host = order.length;
    const byBuffer = new Map<GPUBuffer, number[]>();
    this.blocks.forEach((_, i) => {
      if (!onGpu(i)) return;
      const k = sources[i].k as GPUBuffer;
      byBuffer.set(k, [...(byBuffer.get(k) ?? []), i]);
    });
    for (const members of byBuffer.values()) order.push(...members);
    const positions = new Int32Array(this.T), rows = new Uint32Array(this.T), src = new Uint32Array(this.T);
    this.offsets = new Array(this.blocks.length);
    let t = 0;
    order.forEach((i, n) => {
      if (n === host) this.hostT = t;
      const b = this.blocks[i];
      const row0 = onGpu(i) ? (sources[i] as GpuLayerRows).row0 ?? 0 : 0;
      this.offsets[i] = t;
      for (let j = 0; j < b.positions.length; j++, t++) {
        positions[t] = b.positions[j];
        rows[t] = b.start + j;
        src[t] = row0 + j;
      }
    });
    if (host === order.length) this.hostT = t;
    this.groups = [...byBuffer.values()].map((members) => ({
      t0: this.offsets[members[0]], T: members.reduce((n, i) => n + this.blocks[i].positions.length, 0), blocks: members,
    }));
    this.idx = this.scratch.put('io.idx', rows);
    this.src = this.scratch.put('io.src', src);
    this.tables = {
      global: this.scratch.put('io.cs.global', ropeTable(inverseFrequencies(c, 'global'), positions)),
      local: c.layerKinds.includes('local') ? this.scratch.put('io.cs.local', ropeTable(inverseFrequencies(c, 'local'), positions)) : null,
    };
    this.planned = true;
  }

  /** Stages and places layer `l` of every block, from host arrays or GPU buffers (one source per block, in order). */
  layer(l: number, sources: (LayerRows | GpuLayerRows)[]) {
    if (sources.length !== this.blocks.length) throw new Error(`writeRows: ${sources.length} sources for ${this.blocks.length} blocks`);
    if (!this.T) return;
    // Work already recorded may still read the staging buffers: submit it before overwriting them.
    this.ops.d.flush();
    if (!this.planned) this.plan(sources);
    const c = this.m.config;
    const cs = (c.layerKinds[l] === 'local' ? this.tables.local : this.tables.global)!;
    const interleaved = c.ropeStyle === 'interleaved';
    if (this.hostT) this.hostLayer(l, sources, cs);
    for (const g of this.groups) {
      const first = sources[g.blocks[0]] as GpuLayerRows;
      for (const i of g.blocks) {
        const s = sources[i] as GpuLayerRows;
        if (!('mapAsync' in s.k) || s.k !== first.k || s.v !== first.v) throw new Error(`writeRows: layer ${l} of block ${i} is not where layer 0 was`);
      }
      this.ops.gather({
        k: first.k, v: first.v, srcDtype: first.f16 ? 'f16' : 'f32', srcRows: this.src, idx: this.idx, cs,
        dstK: this.cache.k[l], dstV: this.cache.v[l], dstDtype: this.cache.dtype, t0: g.t0, T: g.T, W: this.m.kvDim, HD: c.headDim, interleaved,
      });
    }
  }

  /** The host blocks of layer `l`: uploaded into staging rows [0, hostT), rotated, then scattered into the cache. */
  private hostLayer(l: number, sources: (LayerRows | GpuLayerRows)[], cs: GPUBuffer) {
    const kvDim = this.m.kvDim;
    const rowBytes = kvDim * 4;
    const T = this.hostT;
    const kb = this.scratch.get('io.k', T * rowBytes);
    const vb = this.scratch.get('io.v', T * rowBytes);
    const queue = this.m.device.queue;
    // Host rows kept as halves go up as halves (half the bytes) into staging of their own, then are widened into
    // kb/vb on the GPU, one launch per run of such blocks.
    let k16: GPUBuffer | null = null, v16: GPUBuffer | null = null;
    const runs: [number, number][] = [];
    sources.forEach((src, i) => {
      const at = this.offsets[i];
      if (at >= T) return;
      const n = this.blocks[i].positions.length;
      const rows = src as LayerRows;
      // Halves first: reading k of rows kept as halves would widen them on the host.
      const h = rows.halves;
      if ('mapAsync' in (h?.k ?? rows.k)) throw new Error(`writeRows: layer ${l} of block ${i} is on the GPU, but layer 0 was not`);
      if (h) {
        if (h.k.length !== n * kvDim || h.v.length !== n * kvDim) throw new Error(`writeRows: layer ${l} of block ${i} has the wrong size`);
        k16 ??= this.scratch.get('io.k16', T * kvDim * 2);
        v16 ??= this.scratch.get('io.v16', T * kvDim * 2);
        const last = runs[runs.length - 1];
        if (last && last[0] + last[1] === at) last[1] += n;
        else runs.push([at, n]);
        queue.writeBuffer(k16, (at * rowBytes) / 2, h.k.buffer, h.k.byteOffset, h.k.byteLength);
        queue.writeBuffer(v16, (at * rowBytes) / 2, h.v.buffer, h.v.byteOffset, h.v.byteLength);
        return;
      }
      if (rows.k.length !== n * kvDim || rows.v.length !== n * kvDim) throw new Error(`writeRows: layer ${l} of block ${i} has the wrong size`);
      queue.writeBuffer(kb, at * rowBytes, rows.k.buffer, rows.k.byteOffset, rows.k.byteLength);
      queue.writeBuffer(vb, at * rowBytes, rows.v.buffer, rows.v.byteOffset, rows.v.byteLength);
    });
    // kvDim is a multiple of 4 (heads of whole vec4s): a row is kvDim / 2 words of halves.
    for (const [row, n] of runs) this.ops.unpackHalves({ src: k16!, dst: kb, src2: v16!, dst2: vb, start: (row * kvDim) / 2, count: (n * kvDim) / 2 });
    const c = this.m.config;
    this.ops.rope({ x: kb, cs, T, H: c.nKvHeads, HD: c.headDim, stride: kvDim, offset: 0, interleaved: c.ropeStyle === 'interleaved' });
    this.ops.scatter({ src: kb, stride: kvDim, offset: 0, idx: this.idx, dst: this.cache.k[l], dstDtype: this.cache.dtype, T, W: kvDim });
    this.ops.scatter({ src: vb, stride: kvDim, offset: 0, idx: this.idx, dst: this.cache.v[l], dstDtype: this.cache.dtype, T, W: kvDim });
  }
}

/** Writes every layer of `layers` into cache rows [start, start + positions.length). */
export function writeRows(ops: Ops, m: GpuModel, cache: KVCache, scratch: Scratch, start: number, positions: ArrayLike<number>, layers: LayerRows[]) {
  if (layers.length !== m.config.nLayers) throw new Error(`writeRows: ${layers.length} layers given, model has ${m.config.nLayers}`);
  const w = new RowWriter(ops, m, cache, scratch, [{ start, positions }]);
  layers.forEach((rows, l) => w.layer(l, [rows]));
  ops.d.flush();
}

/** Cache rows [start, start + count) of one of its buffers as stored: halves for an f16 cache, else f32. */
async function readStored(ops: Ops, cache: KVCache, b: GPUBuffer, start: number, count: number): Promise<Float32Array | Uint16Array> {
  const bytes = cache.rowBytes;
  const raw = await ops.d.read(b, start * bytes, Math.max(4, count * bytes));
  return cache.dtype === 'f16' ? new Uint16Array(raw, 0, count * cache.kvDim) : new Float32Array(raw, 0, count * cache.kvDim);
}

/**
 * Reads cache rows [start, start + count) of one layer (keys as stored: after RoPE), as the cache keeps them: an
 * f16 cache's rows come back as halves (LayerRows.halves), widened on the host only if k or v is read.
 */
export async function readRows(ops: Ops, cache: KVCache, layer: number, start: number, count: number): Promise<LayerRows> {
  const k = await readStored(ops, cache, cache.k[layer], start, count);
  const v = await readStored(ops, cache, cache.v[layer], start, count);
  return k instanceof Uint16Array ? halfRows(k, v as Uint16Array) : { k, v: v as Float32Array };
}

/** The values alone of cache rows [start, start + count) of one layer, as stored (halves for an f16 cache). */
export function readValues(ops: Ops, cache: KVCache, layer: number, start: number, count: number): Promise<Float32Array | Uint16Array> {
  return readStored(ops, cache, cache.v[layer], start, count);
}
