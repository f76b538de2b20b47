/**
 * The KV shapes every pipeline stage passes along, kept apart from the stages so none has to import another
 * for them: the engine exports and imports rows, KVCompile makes chunks, KVStore keeps them, KVLink lays them out.
 * This module imports nothing; anything may import it.
 */

/** One layer's rows of a chunk on the host. */
export interface LayerRows {
  /** [rows, kvDim] keys before RoPE. */
  k: Float32Array;
  /** [rows, kvDim] values. */
  v: Float32Array;
  /**
   * The same rows as IEEE half floats, where they were read from an f16 store (KVStore's blobs): uploads take
   * these, half the bytes, and widen them on the GPU; k and v are then widened on the host only when read.
   */
  halves?: { k: Uint16Array; v: Uint16Array };
}

/**
 * A chunk's rows already on the GPU (KVStore's GPU tier): per layer, pre-RoPE keys and values [rows, kvDim], f32,
 * or IEEE halves (two to a u32) where the rows were kept as f16, widened on the GPU as they are linked. The
 * buffers may hold other chunks' rows too (the tier's shared slabs): this chunk's start at row `row0`.
 */
export interface GpuLayerRows {
  k: GPUBuffer;
  v: GPUBuffer;
  f16?: boolean;
  /** The chunk's first row in k and v (default 0). */
  row0?: number;
}

/** How many values a layer's keys hold, without widening rows kept as halves. */
export function layerValues(l: LayerRows): number {
  return (l.halves?.k ?? l.k).length;
}

/**
 * How a chunk is compiled (kvcompile/compile.ts): plain ([BOS] + tokens), LegoLink-0 (sink tokens first, then
 * dropped; default 4 copies of BOS), or a Prompt Cache module at its schema positions.
 */
export type CompileVariant =
  | { kind: 'plain' }
  | { kind: 'legolink0'; sinks?: number; sinkToken?: number }
  | { kind: 'promptcache'; positions: number[] };

/** A compiled chunk: its stored rows, the tokens they hold and the positions they were computed at. */
export interface CompiledChunk {
  id: string;
  variant: CompileVariant;
  /** Token ids of the stored rows (plain: with BOS; legolink0: without the sinks). */
  tokens: number[];
  /** Positions the rows were computed at (0.. for plain and legolink0; the schema's for promptcache). */
  positions: number[];
  layers: LayerRows[];
  /** The same rows on the GPU, when KVStore's GPU tier holds them (linking then skips the upload). */
  gpu?: GpuLayerRows[];
}

/** One part of a linked request: raw text, or a cached chunk. */
export type LinkPart =
  | { kind: 'text'; tokens: number[]; /** explicit positions (Prompt Cache parameters) */ positions?: number[] }
  | { kind: 'cache'; chunk: CompiledChunk };
