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
 * algorithm reads no cache: it takes each chunk's tokens from the request
 * (or the store's index) and computes the request as an ordinary prompt.
 *
 * This is the one orchestrator: the Node evaluation, the CLI example and the
 * studio all run it (the studio through the worker's transport, which
 * implements `ContextCacheApi` over postMessage: src/worker/remote.ts).
 */
import { kvBytesPerToken, type Engine, type ModelConfig, type Tokenizer, type ScoresRequest, type ScoresResult } from '../engine';
import { cacheId, compileChunk, type CompileVariant, type CompiledChunk } from '../kvcompile/compile';
import { sample } from '../generate/sampling';
import type { KVStore } from '../kvstore';
import { defaultTierBudget, GpuTier } from '../kvstore/gpu-tier';
import { LoadingController } from '../kvlink/controller';
import { compileVariantOf, formatAlgorithm, parseAlgorithm, type LinkAlgorithm } from '../kvlink/algorithms';
import { link, type TtftBreakdown } from '../kvlink/link';
import { layerValues } from '../types/kv';
import { textOnlyChunk, type LinkLayout } from '../kvlink/layout';
import { decodeTokens, TextStream } from '../generate/generate';
import { buildParts, chunkMessages, moduleSchemaPositions, type ChatMessage } from './messages';
import { WriteBehind } from './write-behind';

export type { ChatMessage, ContentPart } from './messages';

export interface CompileOptions {
  /** The compile variant; default plain, or the one `algorithm` links. */
  variant?: CompileVariant;
  /**
   * Compile for this KVLink spec's variant (plain, legolink0, promptcache). Prompt Cache's modules are compiled
   * at the positions the chunks take, in this order, before `question` (its schema is the prompt).
   */
  algorithm?: string;
  question?: string;
  /** After every chunk, whether it was compiled or already stored. */
  onProgress?: (p: CompileProgress) => void;
  /** Checked between chunks. */
  signal?: AbortSignal;
}

export interface CompileProgress {
  done: number;
  total: number;
  /** Index of the chunk just handled, and its cache id. */
  index: number;
  id: string;
  status: 'compiled' | 'cached';
  ms: number;
}

export interface CompletionRequest {
  messages: ChatMessage[];
  /** A KVLink spec: prompt, naive, full, cacheblend:0.15, cacheblend:auto, legolink:16, attnlink:16, legolink0, promptcache. */
  algorithm?: string;
  /** Tokens to generate after the first-token event (0: link only, for the first token's logits and scores). */
  maxTokens?: number;
  temperature?: number;
  topP?: number;
  seed?: number;
  stop?: number[];
  signal?: AbortSignal;
  /** Attention scores of the question rows to capture (one layer or several, some heads); see 'first-token'. */
  scores?: { layer: ScoresRequest['layer']; heads: number[] };
  /**
   * Before the first request of each algorithm (and scores or not) on this ContextCache, run one untimed link
   * and decode step, so that its TTFT does not include compiling the GPU pipelines it uses.
   */
  warmup?: boolean;
  /** Slow motion: a pause after every decoded token (at most 10 s), to watch a streamed answer and its Stop. */
  decodeDelayMs?: number;
}

/** The linked prompt as the first-token event reports it: plain data, without the chunks' rows (it crosses postMessage). */
export interface PromptLayout {
  tokens: number[];
  positions: number[];
  /** Where each chunk's rows lie, and its cache id. */
  segments: { part: number; start: number; length: number; id: string }[];
  uncached: number[];
}

const promptLayout = (l: LinkLayout): PromptLayout => ({
  tokens: l.tokens, positions: l.positions, uncached: l.uncached,
  segments: l.segments.map((s) => ({ part: s.part, start: s.start, length: s.length, id: s.chunk.id })),
});

export type CompletionEvent =
  | {
      type: 'first-token'; ttft: TtftBreakdown; recomputed: number; recomputedFraction: number; promptTokens: number;
      /** The linked prompt's tokens and positions, and its cached segments (for the attention maps). */
      layout: PromptLayout; scores: ScoresResult[];
    }
  | { type: 'text'; text: string }
  /** Attention scores of a generated row (when `scores` was asked for). */
  | { type: 'attention'; scores: ScoresResult[] }
  | { type: 'done'; text: string; tokens: number; /** The generated token ids. */ ids: number[]; decodeTokensPerS: number; cancelled: boolean };

export interface ModelHandle {
  id: string;
  config: ModelConfig;
  tokenizer: Tokenizer;
  tokenizerId: string;
}

/** What the studio, the evaluation backends and the worker's transport share: ContextCache's surface. */
export interface ContextCacheApi {
  compileContext(chunks: (string | number[])[], opts?: CompileOptions): Promise<string[]>;
  chatCompletion(req: CompletionRequest): AsyncGenerator<CompletionEvent>;
  expireCache(id: string): Promise<boolean>;
  /** Token ids of a text as the model's tokenizer encodes it, without BOS (nothing trimmed). */
  tokenize(text: string): Promise<number[]>;
  /** Each token's text as it reads in place (leading spaces included), for labelling attention maps. */
  tokenPieces(tokens: number[]): Promise<string[]>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class ContextCache implements ContextCacheApi {
  /** The hot tier: chunks kept on the GPU. */
  readonly gpuTier: GpuTier;
  /** Measures load and recompute speed for cacheblend:auto. */
  readonly controller = new LoadingController();
  /** Algorithms (and scores or not) whose GPU pipelines a warm-up has compiled. */
  private warmed = new Set<string>();

  constructor(
    readonly engine: Engine,
    readonly model: ModelHandle,
    readonly store: KVStore,
    opts: { gpuBudgetBytes?: number } = {},
  ) {
    // Rows go up the way the engine measured faster on this adapter (writeBuffer or mapped staging).
    this.gpuTier = new GpuTier(engine.gpu.device, opts.gpuBudgetBytes ?? this.defaultGpuBudget(), undefined, (writes) => engine.upload(writes));
    this.unfollow = this.gpuTier.follow(store);
  }

  /** The GPU tier's budget for this model and adapter when none is given (defaultTierBudget). */
  private defaultGpuBudget(): number {
    return defaultTierBudget(this.engine.gpu.profile === 'gpu', kvBytesPerToken(this.model.config, this.engine.kvDtype));
  }

  /** Sets the GPU tier's budget (its default when none is given); a new budget empties the tier (GpuTier.setBudget). */
  setGpuBudget(bytes?: number) {
    this.gpuTier.setBudget(bytes ?? this.defaultGpuBudget());
  }

  private readonly unfollow: () => void;

  /** Frees the GPU tier's buffers and stops following the store (the store stays open for others). */
  close() {
    this.unfollow();
    this.gpuTier.clear();
  }

  private ctx() {
    return { engine: this.engine, modelId: this.model.id, tokenizerId: this.model.tokenizerId, bosId: this.model.config.bosId };
  }

  private variantName(v: CompileVariant) {
    return v.kind === 'legolink0' ? `legolink0:${v.sinks ?? 4}` : v.kind;
  }

  /**
   * Compiles every chunk (text or token ids) not yet stored; returns their cache ids in order. A chunk's store write
   * (encoding, checksums, the OPFS write and its check: host work, on a GPU several times the chunk's prefill) runs
   * while the next chunk compiles on the GPU; each chunk is reported once stored, in order. A chunk repeated in the
   * list is compiled once. A chunk whose compile a cancel overtook is not kept; whatever fails or is cancelled, no
   * write is left running when this settles.
   */
  async compileContext(chunks: (string | number[])[], opts: CompileOptions = {}): Promise<string[]> {
    const tokens = chunks.map((c) => (typeof c === 'string' ? this.model.tokenizer.encode(c, { addBos: false }) : c));
    const variants = await this.variantsFor(tokens, opts);
    const ids: string[] = [];
    const compiled = new Set<string>();
    const report = (index: number, id: string, status: 'cached' | 'compiled', t0: number) =>
      opts.onProgress?.({ done: index + 1, total: tokens.length, index, id, status, ms: performance.now() - t0 });
    // A chunk's write runs while the next one compiles; the chunk is reported once written.
    const behind = new WriteBehind();
    try {
      for (const [i, t] of tokens.entries()) {
        opts.signal?.throwIfAborted();
        if (!t.length) throw new Error(`Chunk ${i + 1} has no tokens`);
        const t0 = performance.now();
        const id = await cacheId(this.ctx(), t, variants[i]);
        ids.push(id);
        if (compiled.has(id) || (await this.store.has(id))) {
          await behind.flush();
          report(i, id, 'cached', t0);
          continue;
        }
        const chunk = await compileChunk(this.ctx(), t, variants[i]);
        await behind.flush();
        // Cancelled while it compiled (or by the last chunk's report): this chunk is not kept.
        opts.signal?.throwIfAborted();
        compiled.add(id);
        const text = typeof chunks[i] === 'string' ? chunks[i] : undefined;
        await behind.start(() => this.keep(chunk, t, variants[i], text), () => report(i, id, 'compiled', t0));
      }
      await behind.flush();
    } catch (err) {
      await behind.settle();
      throw err;
    }
    return ids;
  }

  /** Each chunk's compile variant: the given one, or the algorithm's (Prompt Cache: a module at its positions). */
  private async variantsFor(tokens: number[][], opts: CompileOptions): Promise<CompileVariant[]> {
    const kind = opts.variant ? null : compileVariantOf(opts.algorithm ?? 'full');
    if (kind !== 'promptcache') return tokens.map(() => opts.variant ?? (kind === 'legolink0' ? { kind: 'legolink0' } : { kind: 'plain' }));
    const positions = await this.schemaPositions(tokens, opts.question ?? '');
    return positions.map((p) => ({ kind: 'promptcache', positions: p }));
  }

  /** Prompt Cache's schema: the positions each chunk takes in the prompt of these chunks, in order, before `question`. */
  schemaPositions(tokens: number[][], question: string): Promise<number[][]> {
    const names = tokens.map((_, i) => String(i));
    return moduleSchemaPositions(chunkMessages(names, question), this.model.tokenizer, this.model.config.bosId, (id) => tokens[Number(id)]);
  }

  /**
   * Stores a chunk compiled from `tokens` (kept with it, to compile it again should its blob be damaged), and keeps it
   * on the GPU too (the GPU tier), so that the first link after a compile moves no rows from the host; the tier
   * evicts the least recently used chunks for it, never those a link holds.
   */
  private async keep(chunk: CompiledChunk, tokens: number[], variant: CompileVariant, text?: string): Promise<CompiledChunk> {
    await this.store.put(
      {
        id: chunk.id, modelId: this.model.id, dtype: this.engine.kvDtype, kvDim: layerValues(chunk.layers[0]) / chunk.tokens.length,
        variant: this.variantName(variant),
        meta: { source: tokens, variant, positions: chunk.positions, storedTokens: chunk.tokens, preview: text?.slice(0, 200) },
      },
      chunk.layers,
    );
    return this.gpuTier.put(chunk);
  }

  /**
   * A compiled chunk from the GPU tier, else the store (then kept on the GPU), recompiled when its blob is corrupt;
   * its GPU copy held (release it once linked) from the moment it is found or placed, so no other request's put
   * can evict it in between.
   */
  private async load(id: string, sources: Map<string, { tokens: number[]; variant: CompileVariant }>) {
    const t0 = performance.now();
    const hot = this.gpuTier.get(id, { hold: true });
    if (hot) return { chunk: hot, lookupMs: performance.now() - t0, loadMs: 0, tier: 'gpu' as const };
    const r = await this.fromStore(id, sources);
    const t1 = performance.now();
    // A chunk compiled just now (its blob was corrupt) is on the GPU already, and the put finds it there.
    const chunk = await this.gpuTier.put(r.chunk, { hold: true });
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
    const chunk = await this.keep(await compileChunk(this.ctx(), src.tokens, src.variant), src.tokens, src.variant);
    return { chunk, lookupMs: timing.lookupMs, loadMs: performance.now() - t0, tier: 'compiled' as const };
  }

  async *chatCompletion(req: CompletionRequest): AsyncGenerator<CompletionEvent> {
    const algo = parseAlgorithm(req.algorithm ?? 'legolink:16');
    const { tokenizer: tok, config } = this.model;
    this.checkScores(req.scores);
    // Sources of every stored chunk of this model, so a corrupt blob can be recompiled.
    const sources = new Map<string, { tokens: number[]; variant: CompileVariant }>();
    for (const e of await this.store.list()) {
      const m = e.meta as { source?: number[]; variant?: CompileVariant };
      if (e.modelId === this.model.id && m.source && m.variant) sources.set(e.id, { tokens: m.source, variant: m.variant });
    }
    // Tokens the request gives for its cache parts (what `prompt` reads when they are not stored).
    const given = new Map<string, number[]>();
    for (const m of req.messages) if (typeof m.content !== 'string') for (const p of m.content) if (p.type === 'cache' && p.tokens) given.set(p.id, p.tokens);
    let lookupMs = 0, hostLoadMs = 0;
    const maxTokens = Math.max(0, Math.floor(req.maxTokens ?? 64));
    // The chunks' GPU copies stay alive until their rows are linked, however many chunks the request names.
    const held: CompiledChunk[] = [];
    let linked: Awaited<ReturnType<typeof link>>;
    try {
      const parts = await buildParts(req.messages, tok, config.bosId, async (id) => {
        if (algo.kind === 'prompt') {
          // The chunk's tokens, from the request or the index read above: no cached row is looked up or loaded.
          const tokens = given.get(id) ?? sources.get(id)?.tokens;
          if (!tokens) throw new Error(`Cache ${id} is not in the store; compile its chunk again`);
          return textOnlyChunk(id, tokens, config.bosId);
        }
        const r = await this.load(id, sources);
        held.push(r.chunk);
        lookupMs += r.lookupMs;
        hostLoadMs += r.loadMs;
        return r.chunk;
      });
      req.signal?.throwIfAborted();
      if (req.warmup) await this.warmUp(parts, algo, req.scores);
      linked = await link(this.engine, parts, algo, {
        bosId: config.bosId, lookupMs, hostLoadMs, reserve: maxTokens + 1, controller: this.controller, scores: req.scores,
      });
    } finally {
      for (const c of held) this.gpuTier.release(c);
    }
    try {
      yield {
        type: 'first-token', ttft: linked.ttft, recomputed: linked.recomputed, recomputedFraction: linked.recomputedFraction,
        promptTokens: linked.layout.tokens.length, layout: promptLayout(linked.layout), scores: linked.scores,
      };
      const stream = new TextStream(tok, linked.layout.tokens);
      const delay = Math.max(0, Math.min(10_000, req.decodeDelayMs ?? 0));
      const ids: number[] = [];
      const t0 = performance.now();
      const captured: ScoresResult[][] = [];
      const tokens = decodeTokens(this.engine, linked.cache, linked.logits, {
        maxNewTokens: maxTokens, sampling: { temperature: req.temperature ?? 0, topP: req.topP, seed: req.seed },
        stopIds: req.stop ?? config.eosIds, signal: req.signal, scores: req.scores,
        onStep: async (s) => {
          if (s.scores.length) captured.push(s.scores);
          if (delay) await sleep(delay);
        },
      });
      for await (const id of tokens) {
        ids.push(id);
        const delta = stream.push(id);
        if (delta) yield { type: 'text', text: delta };
        while (captured.length) yield { type: 'attention', scores: captured.shift()! };
      }
      while (captured.length) yield { type: 'attention', scores: captured.shift()! };
      const dt = performance.now() - t0;
      const n = ids.length;
      yield { type: 'done', text: stream.text, tokens: n, ids, decodeTokensPerS: n > 1 ? (n / dt) * 1000 : 0, cancelled: !!req.signal?.aborted };
    } finally {
      linked.cache.destroy();
    }
  }

  private checkScores(scores: CompletionRequest['scores']) {
    if (!scores) return;
    const { nLayers, nHeads } = this.model.config;
    const layers = Array.isArray(scores.layer) ? scores.layer : [scores.layer];
    const bad = layers.find((l) => !(Number.isInteger(l) && l >= 0 && l < nLayers));
    const head = scores.heads.find((h) => !(Number.isInteger(h) && h >= 0 && h < nHeads));
    if (bad !== undefined || head !== undefined || !layers.length || !scores.heads.length) {
      throw new Error(`Layer ${bad ?? layers[0]} / head ${head ?? scores.heads[0]} is out of range (${nLayers} layers, ${nHeads} heads)`);
    }
  }

  /** One untimed link and decode step per algorithm kind (and scores or not), the first time it is asked for. */
  private async warmUp(parts: Parameters<typeof link>[1], algo: LinkAlgorithm, scores: CompletionRequest['scores']) {
    const key = `${algo.kind}|${scores ? 'scores' : ''}`;
    if (this.warmed.has(key)) return;
    const w = await link(this.engine, parts, algo, { bosId: this.model.config.bosId, reserve: 2, scores });
    try {
      const opts = scores ? { scores: { ...scores, rows: [0] } } : {};
      await this.engine.step(w.cache, sample(w.logits, { temperature: 0 }, Math.random), undefined, opts);
    } finally {
      w.cache.destroy();
    }
    this.warmed.add(key);
  }

  async tokenize(text: string): Promise<number[]> {
    return this.model.tokenizer.encode(text, { addBos: false });
  }

  async tokenPieces(tokens: number[]): Promise<string[]> {
    const tok = this.model.tokenizer;
    const bos = this.model.config.bosId;
    // A token's text as it reads in place: decoded after the few tokens before it.
    return tokens.map((id, i) => {
      if (id === bos) return '<s>';
      const ctx = tokens.slice(Math.max(0, i - 4), i).filter((t) => t !== bos);
      const s = tok.decode([...ctx, id], { skipSpecial: false }).slice(tok.decode(ctx, { skipSpecial: false }).length);
      return s || tok.decode([id], { skipSpecial: false }) || `#${id}`;
    });
  }

  /** Drops a compiled chunk from every tier. */
  async expireCache(id: string): Promise<boolean> {
    this.gpuTier.delete(id);
    return this.store.expire(id);
  }

  static algorithmName(spec: string) {
    return formatAlgorithm(parseAlgorithm(spec));
  }
}
