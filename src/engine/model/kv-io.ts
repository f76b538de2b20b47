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
import type { GpuModel } from './gpu-model';
import type { KVCache } from './kv-cache';
import type { Scratch } from './scratch';
import { inverseFrequencies, ropeTable } from './rope';
import type { Ops } from '../ops';
import { halvesToFloats } from '../f16';

export interface LayerRows {
  /** [rows, kvDim] keys before RoPE. */
  k: Float32Array;
  /** [rows, kvDim] values. */
  v: Float32Array;
}

/** A chunk's rows already on the GPU (KVStore's GPU tier): per layer, pre-RoPE keys and values, f32 [rows, kvDim]. */
export interface GpuLayerRows {
  k: GPUBuffer;
  v: GPUBuffer;
}

/**
 * Writes one chunk's rows into cache rows [start, start + positions.length)
 * at those positions, one layer at a time, so a caller can interleave the
 * loading of layer l + 1 with the recompute of layer l. Keys are rotated on
 * the way in; a source may be host arrays or GPU buffers.
 */
export class RowWriter {
  private idx: GPUBuffer;
  private tables: { global: GPUBuffer; local: GPUBuffer | null };
  readonly T: number;

  constructor(
    private ops: Ops,
    private m: GpuModel,
    private cache: KVCache,
    private scratch: Scratch,
    /** Distinguishes writers alive at the same time (one per chunk). */
    private slot: string,
    readonly start: number,
    positions: ArrayLike<number>,
  ) {
    const c = m.config;
    this.T = positions.length;
    cache.setPositions(start, positions);
    this.idx = scratch.put(`io.${slot}.idx`, Uint32Array.from({ length: this.T }, (_, i) => start + i));
    this.tables = {
      global: scratch.put(`io.${slot}.cs.global`, ropeTable(inverseFrequencies(c, 'global'), positions)),
      local: c.layerKinds.includes('local') ? scratch.put(`io.${slot}.cs.local`, ropeTable(inverseFrequencies(c, 'local'), positions)) : null,
    };
  }

  /** Stages layer `l` from host arrays. */
  layer(l: number, rows: LayerRows) {
    const n = this.T * this.m.kvDim;
    if (rows.k.length !== n || rows.v.length !== n) throw new Error(`writeRows: layer ${l} has the wrong size`);
    this.place(l, this.scratch.put('io.k', rows.k), this.scratch.put('io.v', rows.v));
  }

  /** Stages layer `l` from GPU buffers (the keys are copied, never rotated in place). */
  layerFromGpu(l: number, rows: GpuLayerRows) {
    const bytes = this.T * this.m.kvDim * 4;
    const kb = this.scratch.get('io.k', bytes);
    this.ops.d.commandEncoder().copyBufferToBuffer(rows.k, 0, kb, 0, bytes);
    this.place(l, kb, rows.v);
  }

  private place(l: number, kb: GPUBuffer, vb: GPUBuffer) {
    const c = this.m.config;
    const kvDim = this.m.kvDim;
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
  const w = new RowWriter(ops, m, cache, scratch, 'all', start, positions);
  layers.forEach((rows, l) => w.layer(l, rows));
  ops.d.flush();
}

/** Reads cache rows [start, start + count) of one layer as f32 (keys as stored: after RoPE). */
export async function readRows(ops: Ops, cache: KVCache, layer: number, start: number, count: number): Promise<LayerRows> {
  const bytes = cache.rowBytes;
  const read = async (b: GPUBuffer) => {
    const raw = await ops.d.read(b, start * bytes, Math.max(4, count * bytes));
    return cache.dtype === 'f16' ? halvesToFloats(new Uint16Array(raw, 0, count * cache.kvDim)) : new Float32Array(raw, 0, count * cache.kvDim);
  };
  return { k: await read(cache.k[layer]), v: await read(cache.v[layer]) };
}
