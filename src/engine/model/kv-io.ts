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
 * recompute of layer l. Each layer's rows of every block are gathered into
 * one staging buffer (host rows by queue writes at their offsets, GPU rows
 * by buffer copies), then rotated and scattered into the cache with three
 * dispatches, whatever the number of blocks: per-block uploads would cost a
 * submit each. Keys are rotated on the way in.
 */
export class RowWriter {
  private idx: GPUBuffer;
  private tables: { global: GPUBuffer; local: GPUBuffer | null };
  /** First staging row of each block. */
  private offsets: number[];
  readonly T: number;

  constructor(
    private ops: Ops,
    private m: GpuModel,
    private cache: KVCache,
    private scratch: Scratch,
    private blocks: RowBlock[],
  ) {
    const c = m.config;
    this.offsets = [];
    let T = 0;
    for (const b of blocks) {
      this.offsets.push(T);
      T += b.positions.length;
      cache.setPositions(b.start, b.positions);
    }
    this.T = T;
    const positions = new Int32Array(T);
    const rows = new Uint32Array(T);
    blocks.forEach((b, i) => {
      positions.set(Array.from(b.positions), this.offsets[i]);
      for (let j = 0; j < b.positions.length; j++) rows[this.offsets[i] + j] = b.start + j;
    });
    this.idx = scratch.put('io.idx', rows);
    this.tables = {
      global: scratch.put('io.cs.global', ropeTable(inverseFrequencies(c, 'global'), positions)),
      local: c.layerKinds.includes('local') ? scratch.put('io.cs.local', ropeTable(inverseFrequencies(c, 'local'), positions)) : null,
    };
  }

  /** Stages and places layer `l` of every block, from host arrays or GPU buffers (one source per block, in order). */
  layer(l: number, sources: (LayerRows | GpuLayerRows)[]) {
    if (sources.length !== this.blocks.length) throw new Error(`writeRows: ${sources.length} sources for ${this.blocks.length} blocks`);
    if (!this.T) return;
    const kvDim = this.m.kvDim;
    const rowBytes = kvDim * 4;
    // Work already recorded may still read the staging buffers: submit it before overwriting them.
    this.ops.d.flush();
    const kb = this.scratch.get('io.k', this.T * rowBytes);
    const vb = this.scratch.get('io.v', this.T * rowBytes);
    const queue = this.m.device.queue;
    // Host rows kept as halves go up as halves (half the bytes) into staging of their own, then are widened into
    // kb/vb on the GPU, one launch per run of such blocks.
    let k16: GPUBuffer | null = null, v16: GPUBuffer | null = null;
    const runs: [number, number][] = [];
    sources.forEach((src, i) => {
      const n = this.blocks[i].positions.length;
      const at = this.offsets[i] * rowBytes;
      // Halves first: reading k of rows kept as halves would widen them on the host.
      const h = 'halves' in src ? src.halves : undefined;
      // A run of blocks whose halves sit in k16/v16, to widen into kb/vb.
      const halvesAt = () => {
        k16 ??= this.scratch.get('io.k16', this.T * kvDim * 2);
        v16 ??= this.scratch.get('io.v16', this.T * kvDim * 2);
        const last = runs[runs.length - 1];
        if (last && last[0] + last[1] === this.offsets[i]) last[1] += n;
        else runs.push([this.offsets[i], n]);
        return { k16, v16 };
      };
      if (!h && 'mapAsync' in src.k) {
        const g = src as GpuLayerRows;
        // Staging first: growing it submits the recorded work, which would finish an encoder taken before.
        const s = g.f16 ? halvesAt() : null;
        const enc = this.ops.d.commandEncoder();
        if (s) {
          enc.copyBufferToBuffer(g.k, 0, s.k16, at / 2, n * rowBytes / 2);
          enc.copyBufferToBuffer(g.v, 0, s.v16, at / 2, n * rowBytes / 2);
        } else {
          enc.copyBufferToBuffer(g.k, 0, kb, at, n * rowBytes);
          enc.copyBufferToBuffer(g.v, 0, vb, at, n * rowBytes);
        }
        return;
      }
      const rows = src as LayerRows;
      if (h) {
        if (h.k.length !== n * kvDim || h.v.length !== n * kvDim) throw new Error(`writeRows: layer ${l} of block ${i} has the wrong size`);
        const s = halvesAt();
        queue.writeBuffer(s.k16, at / 2, h.k.buffer, h.k.byteOffset, h.k.byteLength);
        queue.writeBuffer(s.v16, at / 2, h.v.buffer, h.v.byteOffset, h.v.byteLength);
        return;
      }
      if (rows.k.length !== n * kvDim || rows.v.length !== n * kvDim) throw new Error(`writeRows: layer ${l} of block ${i} has the wrong size`);
      queue.writeBuffer(kb, at, rows.k.buffer, rows.k.byteOffset, rows.k.byteLength);
      queue.writeBuffer(vb, at, rows.v.buffer, rows.v.byteOffset, rows.v.byteLength);
    });
    // kvDim is a multiple of 4 (heads of whole vec4s): a row is kvDim / 2 words of halves.
    for (const [row, n] of runs) this.ops.unpackHalves({ src: k16!, dst: kb, src2: v16!, dst2: vb, start: (row * kvDim) / 2, count: (n * kvDim) / 2 });
    const c = this.m.config;
    const { T, idx, cache } = this;
    const cs = (c.layerKinds[l] === 'local' ? this.tables.local : this.tables.global)!;
    this.ops.rope({ x: kb, cs, T, H: c.nKvHeads, HD: c.headDim, stride: kvDim, offset: 0, interleaved: c.ropeStyle === 'interleaved' });
    this.ops.scatter({ src: kb, stride: kvDim, offset: 0, idx, dst: cache.k[l], dstDtype: cache.dtype, T, W: kvDim });
    this.ops.scatter({ src: vb, stride: kvDim, offset: 0, idx, dst: cache.v[l], dstDtype: cache.dtype, T, W: kvDim });
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
