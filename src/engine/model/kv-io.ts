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

/** Writes `layers[l]` rows into cache rows [start, start + positions.length) at those positions, rotating keys. */
export function writeRows(ops: Ops, m: GpuModel, cache: KVCache, scratch: Scratch, start: number, positions: ArrayLike<number>, layers: LayerRows[]) {
  const T = positions.length;
  const c = m.config;
  const kvDim = m.kvDim;
  if (layers.length !== c.nLayers) throw new Error(`writeRows: ${layers.length} layers given, model has ${c.nLayers}`);
  cache.setPositions(start, positions);
  const idx = scratch.put('io.idx', Uint32Array.from({ length: T }, (_, i) => start + i));
  const tables = {
    global: scratch.put('io.cs.global', ropeTable(inverseFrequencies(c, 'global'), positions)),
    local: c.layerKinds.includes('local') ? scratch.put('io.cs.local', ropeTable(inverseFrequencies(c, 'local'), positions)) : null,
  };
  for (let l = 0; l < c.nLayers; l++) {
    const { k, v } = layers[l];
    if (k.length !== T * kvDim || v.length !== T * kvDim) throw new Error(`writeRows: layer ${l} has the wrong size`);
    const kb = scratch.put(`io.k${l}`, k);
    const vb = scratch.put(`io.v${l}`, v);
    const cs = (c.layerKinds[l] === 'local' ? tables.local : tables.global)!;
    ops.rope({ x: kb, cs, T, H: c.nKvHeads, HD: c.headDim, stride: kvDim, offset: 0, interleaved: c.ropeStyle === 'interleaved' });
    ops.scatter({ src: kb, stride: kvDim, offset: 0, idx, dst: cache.k[l], dstDtype: cache.dtype, T, W: kvDim });
    ops.scatter({ src: vb, stride: kvDim, offset: 0, idx, dst: cache.v[l], dstDtype: cache.dtype, T, W: kvDim });
  }
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
