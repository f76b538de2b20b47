/**
 * The studio's side of the worker: the ContextCache the page's transport
 * drives (over a KVStore in OPFS + IndexedDB), documents through KVSplit, the
 * cache library, the sink map and the TTFT sweep. Everything that links or
 * decodes goes through ContextCache (api/ask.ts), as the evaluation does.
 */
import { ContextCache } from '../api/context-cache';
import { ask } from '../api/ask';
import type { Engine, LoadedModel } from '../engine';
import { createBrowserKVStore, type EntryInfo, type KVStore } from '../kvstore';
import { splitDocument } from '../kvsplit';
import { packChunks } from './chunk-table';
import type { SplitMode } from '../kvsplit/types';
import { cacheId } from '../kvcompile/compile';
import { sinkGrid } from '../analysis/sink-grid';
import { runSweep } from './sweep';
import type { LibraryEntry, LibraryResult, SinkMapRequest, SinkMapResult, SplitResult, SweepPoint, SweepRequest } from './studio-protocol';

/** The loaded model as the studio needs it; `key` names weights, precision and tokenizer (part of cache ids). */
export interface ModelSession {
  engine: Engine;
  model: LoadedModel;
  key: string;
}

const toEntry = (e: EntryInfo, onGpu: boolean): LibraryEntry => ({
  id: e.id, modelId: e.modelId, variant: e.variant, tokens: e.tokens, bytes: e.bytes,
  tier: `${onGpu ? 'GPU + ' : ''}${e.inRam ? 'RAM + OPFS' : 'OPFS'}` as LibraryEntry['tier'],
  createdAt: e.createdAt, lastUsedAt: e.lastUsedAt, hits: e.hits, pinned: e.pinned,
});

export class StudioWorker {
  readonly store: KVStore;
  private lego: ContextCache | null = null;
  /** The GPU tier's budget the user chose, or null for the model's default (ContextCache's default for it). */
  private gpuBudget: number | null = null;

  constructor(private session: () => Promise<ModelSession>, store?: KVStore) {
    this.store = store ?? createBrowserKVStore();
  }

  /** The ContextCache of the loaded model (a new one after a model change or a lost device). */
  async cc(): Promise<ContextCache> {
    const s = await this.session();
    if (!this.lego || this.lego.engine !== s.engine || this.lego.model.id !== s.key) {
      // The previous model's GPU copies go (after a lost device they are already gone with it).
      this.lego?.close();
      this.lego = new ContextCache(s.engine, { id: s.key, config: s.model.config, tokenizer: s.model.tokenizer, tokenizerId: s.key }, this.store, { gpuBudgetBytes: this.gpuBudget ?? undefined });
    }
    return this.lego;
  }

  async split(docId: string, text: string, mode: SplitMode): Promise<SplitResult> {
    const lego = await this.cc();
    const chunks = splitDocument({ id: docId, text }, lego.model.tokenizer, mode);
    const ctx = { modelId: lego.model.id, tokenizerId: lego.model.tokenizerId, bosId: lego.model.config.bosId };
    const out = [];
    for (const c of chunks) {
      if (!c.tokens.length) continue;
      const ids = { plain: await cacheId(ctx, c.tokens, { kind: 'plain' }), legolink0: await cacheId(ctx, c.tokens, { kind: 'legolink0' }) };
      out.push({ start: c.start, end: c.end, tokens: c.tokens, ids });
    }
    return { modelKey: lego.model.id, chunks: packChunks(out), totalTokens: out.reduce((a, c) => a + c.tokens.length, 0) };
  }

  async library(): Promise<LibraryResult> {
    const tier = this.lego?.gpuTier;
    const entries = (await this.store.list()).map((e) => toEntry(e, !!tier?.has(e.id)));
    return { entries, stats: await this.store.stats(), gpu: tier?.stats() ?? null };
  }

  /** The GPU tier's budget in bytes, or null for the loaded model's default; kept for the models loaded after. */
  async setGpuBudget(bytes: number | null): Promise<LibraryResult> {
    // Kept once the tier took it (GpuTier.setBudget refuses a budget of nothing).
    (await this.cc()).setGpuBudget(bytes ?? undefined);
    this.gpuBudget = bytes;
    return this.library();
  }

  async clearLibrary(): Promise<null> {
    await this.store.clear();
    return null;
  }

  /**
   * The guided demo's measurement: the chunks linked once with `algorithm` (Naive by default), every layer's and
   * head's question rows captured, reduced to the share on each chunk start (analysis/sink-grid). Nothing is decoded.
   */
  async sinkMap(req: SinkMapRequest, signal?: AbortSignal): Promise<SinkMapResult> {
    const lego = await this.cc();
    const { nLayers: L, nHeads: H } = lego.model.config;
    const all = (n: number) => Array.from({ length: n }, (_, i) => i);
    const r = await ask(lego, {
      chunks: req.chunks.map((c) => c.tokens), question: req.question, algorithm: req.algorithm, maxTokens: 0,
      scores: { layer: all(L), heads: all(H) }, signal,
    });
    const grid = sinkGrid(r.scores, r.layout.segments, L, H);
    return { algorithm: r.algorithm, ...grid, promptTokens: r.layout.tokens.length, ms: r.first.wallTtftMs };
  }

  async sweep(req: SweepRequest, signal: AbortSignal | undefined, emit: (ev: { point: SweepPoint; done: number; total: number }) => void) {
    return runSweep(await this.cc(), req, signal, emit);
  }
}
