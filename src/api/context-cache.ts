/**
 * LegoKV's explicit context-caching API, after EPIC's:
 *
 *   const ids = await lego.compileContext(['chunk one…', 'chunk two…']);
 *   for await (const ev of lego.chatCompletion({
 *     messages: [{ role: 'user', content: [{ type: 'cache', id: ids[1] }, { type: 'cache', id: ids[0] },
 *                                          { type: 'text', text: 'Question: …' }] }],
 *     algorithm: 'legolink:16', maxTokens: 32 })) { … }
 *   await lego.expireCache(ids[0]);
 *
 * compileContext runs KVCompile for every chunk not already in the KVStore
 * (the cache id is a content hash, so compiling twice reuses the cache);
 * chatCompletion resolves the cache parts through the store (recompiling a
 * chunk whose stored blob turned out corrupt), links them with the chosen
 * algorithm (KVLink) and streams the answer (generate). The `prompt`
 * algorithm reads no cache: it takes each chunk's tokens from the store's
 * index and computes the request as an ordinary prompt.
 */
import type { Engine, ModelConfig, Tokenizer, ScoresRequest, ScoresResult } from '../engine';
import { cacheId, compileChunk, type CompileVariant, type CompiledChunk } from '../kvcompile/compile';
import type { KVStore } from '../kvstore';
import { GpuTier } from '../kvstore/gpu-tier';
import { LoadingController } from '../kvlink/controller';
import { formatAlgorithm, parseAlgorithm } from '../kvlink/algorithms';
import { link, type TtftBreakdown } from '../kvlink/link';
import { textOnlyChunk, type LinkLayout } from '../kvlink/layout';
import { decodeTokens, TextStream } from '../generate/generate';
import { buildParts, type ChatMessage } from './messages';

export type { ChatMessage, ContentPart } from './messages';

export interface CompletionRequest {
  messages: ChatMessage[];
  /** A KVLink spec: prompt, naive, full, cacheblend:0.15, legolink:16, attnlink:16, legolink0, promptcache. */
  algorithm?: string;
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  seed?: number;
  stop?: number[];
  signal?: AbortSignal;
  /** Attention scores of the question rows to capture (one layer or several, some heads); see 'first-token'. */
  scores?: { layer: ScoresRequest['layer']; heads: number[] };
}

export type CompletionEvent =
  | {
      type: 'first-token'; ttft: TtftBreakdown; recomputed: number; recomputedFraction: number; promptTokens: number;
      /** The linked prompt's tokens and positions, and its cached segments (for the attention maps). */
      layout: LinkLayout; scores: ScoresResult[];
    }
  | { type: 'text'; text: string }
  /** Attention scores of a generated row (when `scores` was asked for). */
  | { type: 'attention'; scores: ScoresResult[] }
  | { type: 'done'; text: string; tokens: number; decodeTokensPerS: number; cancelled: boolean };

export interface ModelHandle {
  id: string;
  config: ModelConfig;
  tokenizer: Tokenizer;
  tokenizerId: string;
}

export class ContextCache {
  /** The hot tier: chunks kept on the GPU. */
  readonly gpuTier: GpuTier;
  /** Measures load and recompute speed for cacheblend:auto. */
  readonly controller = new LoadingController();

  constructor(
    readonly engine: Engine,
    readonly model: ModelHandle,
    readonly store: KVStore,
    opts: { gpuBudgetBytes?: number } = {},
  ) {
    this.gpuTier = new GpuTier(engine.gpu.device, opts.gpuBudgetBytes);
    this.gpuTier.follow(store);
  }

  private ctx() {
    return { engine: this.engine, modelId: this.model.id, tokenizerId: this.model.tokenizerId, bosId: this.model.config.bosId };
  }

  private variantName(v: CompileVariant) {
    return v.kind === 'legolink0' ? `legolink0:${v.sinks ?? 4}` : v.kind;
  }

  /** Compiles every chunk (text or token ids) not yet stored; returns their cache ids in order. */
  async compileContext(chunks: (string | number[])[], opts: { variant?: CompileVariant; onProgress?: (done: number, total: number) => void } = {}): Promise<string[]> {
    const variant = opts.variant ?? { kind: 'plain' };
    const ids: string[] = [];
    for (const [i, c] of chunks.entries()) {
      const tokens = typeof c === 'string' ? this.model.tokenizer.encode(c, { addBos: false }) : c;
      const id = await cacheId(this.ctx(), tokens, variant);
      if (!(await this.store.has(id))) await this.compileAndStore(tokens, variant, typeof c === 'string' ? c : undefined);
      ids.push(id);
      opts.onProgress?.(i + 1, chunks.length);
    }
    return ids;
  }

  private async compileAndStore(tokens: number[], variant: CompileVariant, text?: string): Promise<CompiledChunk> {
    const chunk = await compileChunk(this.ctx(), tokens, variant);
    await this.store.put(
      {
        id: chunk.id, modelId: this.model.id, dtype: this.engine.kvDtype, kvDim: chunk.layers[0].k.length / chunk.tokens.length,
        variant: this.variantName(variant),
        meta: { source: tokens, variant, positions: chunk.positions, storedTokens: chunk.tokens, preview: text?.slice(0, 200) },
      },
      chunk.layers,
    );
    return chunk;
  }

  /** A compiled chunk from the GPU tier, else the store (then kept on the GPU), recompiled when its blob is corrupt. */
  private async load(id: string, sources: Map<string, { tokens: number[]; variant: CompileVariant }>) {
    const t0 = performance.now();
    const hot = this.gpuTier.get(id);
    if (hot) return { chunk: hot, lookupMs: performance.now() - t0, loadMs: 0, tier: 'gpu' as const };
    const r = await this.fromStore(id, sources);
    const t1 = performance.now();
    const chunk = this.gpuTier.put(r.chunk);
    return { ...r, chunk, loadMs: r.loadMs + (performance.now() - t1) };
  }

  private async fromStore(id: string, sources: Map<string, { tokens: number[]; variant: CompileVariant }>) {
    const r = await this.store.get(id);
    const t = r.timing;
    const timing = { lookupMs: t.ms - t.readMs - t.decodeMs, loadMs: t.readMs + t.decodeMs };
    if (r.status === 'hit') {
      const m = r.meta.meta as { variant: CompileVariant; positions: number[]; storedTokens: number[] };
      const chunk: CompiledChunk = { id, variant: m.variant, tokens: m.storedTokens, positions: m.positions, layers: r.layers };
      return { chunk, ...timing, tier: r.tier };
    }
    const src = sources.get(id);
    if (!src) throw new Error(`Cache ${id} is ${r.status === 'corrupt' ? `corrupt (${r.reason})` : 'not in the store'}; compile its chunk again`);
    const t0 = performance.now();
    const chunk = await this.compileAndStore(src.tokens, src.variant);
    return { chunk, lookupMs: timing.lookupMs, loadMs: performance.now() - t0, tier: 'compiled' as const };
  }

  async *chatCompletion(req: CompletionRequest): AsyncGenerator<CompletionEvent> {
    const algo = parseAlgorithm(req.algorithm ?? 'legolink:16');
    const { tokenizer: tok, config } = this.model;
    // Sources of every stored chunk of this model, so a corrupt blob can be recompiled.
    const sources = new Map<string, { tokens: number[]; variant: CompileVariant }>();
    for (const e of await this.store.list()) {
      const m = e.meta as { source?: number[]; variant?: CompileVariant };
      if (e.modelId === this.model.id && m.source && m.variant) sources.set(e.id, { tokens: m.source, variant: m.variant });
    }
    let lookupMs = 0, hostLoadMs = 0;
    const maxTokens = req.maxTokens ?? 64;
    // The chunks' GPU copies stay alive until their rows are linked, however many chunks the request names.
    const held: CompiledChunk[] = [];
    let linked: Awaited<ReturnType<typeof link>>;
    try {
      const parts = await buildParts(req.messages, tok, config.bosId, async (id) => {
        if (algo.kind === 'prompt') {
          // The chunk's tokens, from the index read above: no cached row is looked up or loaded.
          const src = sources.get(id);
          if (!src) throw new Error(`Cache ${id} is not in the store; compile its chunk again`);
          return textOnlyChunk(id, src.tokens, config.bosId);
        }
        const r = await this.load(id, sources);
        this.gpuTier.hold(r.chunk);
        held.push(r.chunk);
        lookupMs += r.lookupMs;
        hostLoadMs += r.loadMs;
        return r.chunk;
      });
      linked = await link(this.engine, parts, algo, {
        bosId: config.bosId, lookupMs, hostLoadMs, reserve: maxTokens + 1, controller: this.controller, scores: req.scores,
      });
    } finally {
      for (const c of held) this.gpuTier.release(c);
    }
    try {
      yield {
        type: 'first-token', ttft: linked.ttft, recomputed: linked.recomputed, recomputedFraction: linked.recomputedFraction,
        promptTokens: linked.layout.tokens.length, layout: linked.layout, scores: linked.scores,
      };
      const stream = new TextStream(tok, linked.layout.tokens);
      let n = 0;
      const t0 = performance.now();
      const captured: ScoresResult[][] = [];
      const tokens = decodeTokens(this.engine, linked.cache, linked.logits, {
        maxNewTokens: maxTokens, sampling: { temperature: req.temperature ?? 0, topP: req.topP, seed: req.seed },
        stopIds: req.stop ?? config.eosIds, signal: req.signal,
        scores: req.scores && { ...req.scores, onScores: (s) => captured.push(s) },
      });
      for await (const id of tokens) {
        n++;
        const delta = stream.push(id);
        if (delta) yield { type: 'text', text: delta };
        while (captured.length) yield { type: 'attention', scores: captured.shift()! };
      }
      const dt = performance.now() - t0;
      yield { type: 'done', text: stream.text, tokens: n, decodeTokensPerS: n > 1 ? (n / dt) * 1000 : 0, cancelled: !!req.signal?.aborted };
    } finally {
      linked.cache.destroy();
    }
  }

  /** Drops a compiled chunk from every tier. */
  expireCache(id: string): Promise<boolean> {
    this.gpuTier.delete(id);
    return this.store.expire(id);
  }

  static algorithmName(spec: string) {
    return formatAlgorithm(parseAlgorithm(spec));
  }
}
