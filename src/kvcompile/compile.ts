/**
 * KVCompile: prefill one chunk on its own and keep its KV cache.
 *
 * EPIC's compile step: the chunk starts at position 0 with the model's BOS
 * kept, exactly as if it were a whole prompt. Keys are kept before RoPE (see
 * src/engine/model/kv-io.ts), so the cache belongs to no position and KVLink
 * can place it anywhere. Variants:
 *  - plain: [BOS] + chunk tokens at positions 0..n;
 *  - legolink0: S sink tokens (BOS by default) + chunk tokens, then the
 *    sinks' rows are dropped, so no stored row acts as an attention sink;
 *  - promptcache: a Prompt Cache module, encoded at its schema positions
 *    (see promptcache.ts), no BOS.
 */
import type { Engine } from '../engine/engine';
import type { GpuLayerRows, LayerRows } from '../engine/model/kv-io';

export type CompileVariant =
  | { kind: 'plain' }
  | { kind: 'legolink0'; sinks?: number; sinkToken?: number }
  | { kind: 'promptcache'; positions: number[] };

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

export interface CompileContext {
  engine: Engine;
  /** Identifies the model's weights (and precision) and its tokenizer, for cache ids. */
  modelId: string;
  tokenizerId: string;
  bosId: number | null;
}

/** The content hash naming a compiled chunk: (model, tokenizer, token ids, variant and its parameters). */
export async function cacheId(ctx: Pick<CompileContext, 'modelId' | 'tokenizerId'>, tokens: readonly number[], variant: CompileVariant): Promise<string> {
  const text = JSON.stringify([ctx.modelId, ctx.tokenizerId, tokens, variant]);
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest).subarray(0, 16), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The rows a variant computes for `chunk`, the positions, and how many leading rows to drop. */
export function compileLayout(chunk: readonly number[], variant: CompileVariant, bosId: number | null) {
  if (variant.kind === 'promptcache') {
    if (variant.positions.length !== chunk.length) throw new Error('promptcache: one position per token');
    return { tokens: [...chunk], positions: [...variant.positions], drop: 0 };
  }
  const bos = bosId === null ? [] : [bosId];
  if (variant.kind === 'plain') {
    const tokens = [...bos, ...chunk];
    return { tokens, positions: tokens.map((_, i) => i), drop: 0 };
  }
  const sinks = variant.sinks ?? 4;
  const sink = variant.sinkToken ?? bosId;
  if (sink === null || sink === undefined) throw new Error('legolink0 needs a sink token (the model has no BOS)');
  const tokens = [...Array(sinks).fill(sink), ...chunk];
  return { tokens, positions: tokens.map((_, i) => i), drop: sinks };
}

/** Prefills `chunk` alone under `variant` and returns its rows (keys before RoPE). */
export async function compileChunk(ctx: CompileContext, chunk: readonly number[], variant: CompileVariant = { kind: 'plain' }): Promise<CompiledChunk> {
  if (chunk.length === 0) throw new Error('compileChunk: empty chunk');
  const id = await cacheId(ctx, chunk, variant);
  const { tokens, positions, drop } = compileLayout(chunk, variant, ctx.bosId);
  return ctx.engine.exclusive(async (held) => {
    const cache = ctx.engine.newCache(tokens.length);
    try {
      const res = await held.prefill(cache, tokens, positions, { logits: 'none', capturePreRopeK: true });
      const all = await ctx.engine.exportRows(cache, res, 0, tokens.length);
      const kvDim = all[0].k.length / tokens.length;
      const layers = all.map((r) => ({ k: r.k.slice(drop * kvDim), v: r.v.slice(drop * kvDim) }));
      return { id, variant, tokens: tokens.slice(drop), positions: positions.slice(drop), layers };
    } finally {
      cache.destroy();
    }
  });
}
