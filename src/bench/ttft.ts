/**
 * TTFT of linking algorithms side by side on the loaded model, the
 * measurement behind `npm run bench:link` and the GPU kit: a context of C
 * tokens in equal chunks compiled ahead (EPIC's synchronous workload), plus
 * a short question, linked by each algorithm (one warm-up link each first).
 */
import { floatsToHalves, halfRows, type Engine } from '../engine';
import { compileChunk } from '../kvcompile/compile';
import type { CompiledChunk, LinkPart } from '../types/kv';
import { link } from '../kvlink/link';
import { GpuTier } from '../kvstore/gpu-tier';
import { parseAlgorithm } from '../kvlink/algorithms';
import type { TtftBreakdown } from '../kvlink/link';

type HostTimes = 'recordMs' | 'cacheMs' | 'waitMs' | 'submitMs' | 'submits';

/** A link's TTFT as the kits record it; rows from kits before its host recording times lack them. */
export interface TtftRow extends Omit<TtftBreakdown, HostTimes>, Partial<Pick<TtftBreakdown, HostTimes>> {
  algorithm: string;
  tokens: number;
  recomputed: number;
}

export interface TtftBenchOptions {
  context: number;
  chunks: number;
  algorithms: string[];
  log?: (line: string) => void;
}

/** Compiles `chunks` chunks of random tokens that fill `context` with their BOS rows. */
export async function compileBenchChunks(e: Engine, context: number, chunks: number): Promise<CompiledChunk[]> {
  const c = e.config;
  const per = Math.floor(context / chunks) - (c.bosId === null ? 0 : 1);
  const ctx = { engine: e, modelId: c.name, tokenizerId: c.name, bosId: c.bosId };
  const out: CompiledChunk[] = [];
  for (let i = 0; i < chunks; i++) {
    out.push(await compileChunk(ctx, Array.from({ length: per }, (_, j) => 3 + ((i * 977 + j * 31) % (c.vocabSize - 3)))));
  }
  return out;
}

/** The chunks in order, then a short question of fixed tokens: what every TTFT bench links. */
export function benchParts(compiled: CompiledChunk[]): LinkPart[] {
  return [...compiled.map((chunk) => ({ kind: 'cache' as const, chunk })), { kind: 'text', tokens: [5, 6, 7, 8, 9, 10, 11, 12] }];
}

export async function benchTtft(e: Engine, compiled: CompiledChunk[], opts: Omit<TtftBenchOptions, 'context' | 'chunks'>): Promise<TtftRow[]> {
  const log = opts.log ?? (() => {});
  const bosId = e.config.bosId;
  const parts = benchParts(compiled);
  const rows: TtftRow[] = [];
  for (const spec of opts.algorithms) {
    await link(e, parts, parseAlgorithm(spec), { bosId }).then((r) => r.cache.destroy()); // warm
    const r = await link(e, parts, parseAlgorithm(spec), { bosId });
    r.cache.destroy();
    const t = r.ttft;
    rows.push({ algorithm: spec, tokens: r.layout.tokens.length, recomputed: r.recomputed, ...t });
    log(
      `${spec}: TTFT ${t.totalMs.toFixed(0)} ms (load ${t.loadMs.toFixed(0)}, recompute ${t.recomputeMs.toFixed(0)}, ` +
        `first token ${t.firstTokenMs.toFixed(0)}${t.gpuMs === null ? '' : `; GPU busy ${t.gpuMs.toFixed(0)}, load/GPU overlap ${t.overlapMs!.toFixed(0)}`}; ` +
        `host: cache ${t.cacheMs.toFixed(0)}, recording ${t.recordMs.toFixed(0)}, waiting ${t.waitMs.toFixed(0)}, finish and submit ${t.submitMs.toFixed(0)} in ${t.submits} submissions), ` +
        `recomputed ${r.recomputed}/${r.layout.tokens.length} tokens`,
    );
  }
  return rows;
}

/** The same chunks with their rows kept as halves, as KVStore's f16 blobs hand them over (LayerRows.halves). */
export function asHalves(compiled: CompiledChunk[]): CompiledChunk[] {
  return compiled.map((c) => ({ ...c, layers: c.layers.map((r) => (r.halves ? r : halfRows(floatsToHalves(r.k), floatsToHalves(r.v)))) }));
}

/** The same chunks with f32 rows (an engine keeping f16 keys and values compiles halves; these are widened once, here). */
export function asF32(compiled: CompiledChunk[]): CompiledChunk[] {
  return compiled.map((c) => ({ ...c, layers: c.layers.map((r) => ({ k: r.k, v: r.v })) }));
}

/** TTFT(other) / TTFT(legolink:16) for the rows that have both. */
export function ttftRatios(rows: TtftRow[]): Record<string, number> {
  const lego = rows.find((r) => r.algorithm === 'legolink:16')?.totalMs;
  const out: Record<string, number> = {};
  if (!lego) return out;
  for (const r of rows) if (r.algorithm !== 'legolink:16') out[`${r.algorithm}/legolink:16`] = r.totalMs / lego;
  return out;
}

/** How long putting chunks on a GPU tier took, how many bytes of rows, and the upload's way. */
export interface TierPut {
  ms: number;
  bytes: number;
  way: 'write' | 'mapped';
}

/**
 * The chunks put on a GPU tier of their own (no budget) as the app puts the chunks it compiles (ContextCache: the
 * engine's upload, the way tuneUpload kept), timed to the GPU's end of it. Clear the tier once done with it.
 */
export async function putOnGpuTier(e: Engine, compiled: CompiledChunk[]): Promise<{ tier: GpuTier; onTier: CompiledChunk[]; put: TierPut }> {
  const tier = new GpuTier(e.gpu.device, Infinity, undefined, (w) => e.upload(w));
  const t0 = performance.now();
  const onTier = await Promise.all(compiled.map((c) => tier.put(c)));
  await e.sync();
  return { tier, onTier, put: { ms: performance.now() - t0, bytes: tier.stats().bytes, way: e.ops.d.uploadWay } };
}
