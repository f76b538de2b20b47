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
import { halfRows, type Engine } from '../engine';
import { layerValues, type CompileVariant, type CompiledChunk } from '../types/kv';

export type { CompileVariant, CompiledChunk };

export interface CompileContext {
  engine: Engine;
  /** Identifies the model's weights (and precision) and its tokenizer, for cache ids. */
  modelId: string;
  tokenizerId: string;
  bosId: number | null;
}

/** LegoLink-0's default number of sink tokens (EPIC: three extra BOS and the usual one). */
export const DEFAULT_SINKS = 4;

/** A variant with every default filled in, its fields in one order: the one shape a cache id is hashed from. */
export type ResolvedVariant =
  | { kind: 'plain' }
  | { kind: 'legolink0'; sinks: number; sinkToken: number | null }
  | { kind: 'promptcache'; positions: number[] };

/**
 * Fills in a variant's defaults (LegoLink-0: 4 sinks, the model's BOS as the sink token), so that two spellings of
 * the same compile (`{kind:'legolink0'}` and `{kind:'legolink0', sinks:4}`) name the same cache.
 */
export function resolveVariant(variant: CompileVariant, bosId: number | null): ResolvedVariant {
  switch (variant.kind) {
    case 'plain':
      return { kind: 'plain' };
    case 'legolink0': {
      const sinks = variant.sinks ?? DEFAULT_SINKS;
      if (!Number.isInteger(sinks) || sinks < 1) throw new Error(`legolink0 needs at least one sink token, got ${sinks}`);
      return { kind: 'legolink0', sinks, sinkToken: variant.sinkToken ?? bosId };
    }
    case 'promptcache':
      return { kind: 'promptcache', positions: [...variant.positions] };
  }
}

/** The content hash naming a compiled chunk: (model, tokenizer, token ids, variant with its defaults filled in). */
export async function cacheId(ctx: Pick<CompileContext, 'modelId' | 'tokenizerId' | 'bosId'>, tokens: readonly number[], variant: CompileVariant): Promise<string> {
  const text = JSON.stringify([ctx.modelId, ctx.tokenizerId, tokens, resolveVariant(variant, ctx.bosId)]);
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest).subarray(0, 16), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The rows a variant computes for `chunk`, the positions, and how many leading rows to drop. */
export function compileLayout(chunk: readonly number[], variant: CompileVariant, bosId: number | null) {
  const v = resolveVariant(variant, bosId);
  if (v.kind === 'promptcache') {
    if (v.positions.length !== chunk.length) throw new Error('promptcache: one position per token');
    return { tokens: [...chunk], positions: v.positions, drop: 0 };
  }
  if (v.kind === 'plain') {
    const tokens = bosId === null ? [...chunk] : [bosId, ...chunk];
    return { tokens, positions: tokens.map((_, i) => i), drop: 0 };
  }
  if (v.sinkToken === null) throw new Error('legolink0 needs a sink token (the model has no BOS)');
  const tokens = [...Array<number>(v.sinks).fill(v.sinkToken), ...chunk];
  return { tokens, positions: tokens.map((_, i) => i), drop: v.sinks };
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
      const kvDim = layerValues(all[0]) / tokens.length;
      // Rows of an engine keeping f16 keys and values come as halves and stay halves (the store, its RAM tier and
      // the GPU tier keep and move two bytes a value, never widened on the host).
      const d = drop * kvDim;
      const layers = all.map((r) => (r.halves ? halfRows(r.halves.k.slice(d), r.halves.v.slice(d)) : { k: r.k.slice(d), v: r.v.slice(d) }));
      return { id, variant, tokens: tokens.slice(drop), positions: positions.slice(drop), layers };
    } finally {
      cache.destroy();
    }
  });
}
