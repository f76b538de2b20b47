/**
 * The studio's side of the worker: documents through KVSplit, chunks through
 * KVCompile into the KVStore (OPFS + IndexedDB), the cache library, asking
 * over linked chunks and the TTFT sweep. The engine is reached only through
 * ContextCache and KVLink (see linked-answer.ts).
 */
import { ContextCache } from '../api/context-cache';
import type { Engine, LoadedModel } from '../engine';
import { createBrowserKVStore, type EntryInfo, type KVStore } from '../kvstore';
import { splitDocument } from '../kvsplit';
import { askLinked, askVariants, chunkId, compileChunks, VARIANTS } from './linked-answer';
import { runSweep } from './sweep';
import { measureSinks } from './sink-map';
import type { LibraryEntry, LibraryResult, SplitResult, StudioEvent, StudioRequest } from './studio-protocol';

/** The loaded model as the studio needs it; `key` names weights, precision and tokenizer (part of cache ids). */
export interface ModelSession {
  engine: Engine;
  model: LoadedModel;
  key: string;
}

export const STUDIO_TYPES: ReadonlySet<string> = new Set(['split', 'tokenize', 'compile', 'library', 'expire', 'clear-library', 'ask', 'sink-map', 'sweep']);

const toEntry = (e: EntryInfo): LibraryEntry => ({
  id: e.id, modelId: e.modelId, variant: e.variant, tokens: e.tokens, bytes: e.bytes, tier: e.inRam ? 'RAM + OPFS' : 'OPFS',
  createdAt: e.createdAt, lastUsedAt: e.lastUsedAt, hits: e.hits, pinned: e.pinned,
});

export class StudioWorker {
  private store: KVStore;
  private lego: ContextCache | null = null;
  private warmed = new WeakMap<Engine, Set<string>>();

  constructor(private session: () => Promise<ModelSession>, store?: KVStore) {
    this.store = store ?? createBrowserKVStore();
  }

  private async cc(): Promise<ContextCache> {
    const s = await this.session();
    if (!this.lego || this.lego.engine !== s.engine || this.lego.model.id !== s.key) {
      this.lego = new ContextCache(s.engine, { id: s.key, config: s.model.config, tokenizer: s.model.tokenizer, tokenizerId: s.key }, this.store);
    }
    return this.lego;
  }

  async split(docId: string, text: string, mode: Parameters<typeof splitDocument>[2]): Promise<SplitResult> {
    const lego = await this.cc();
    const chunks = splitDocument({ id: docId, text }, lego.model.tokenizer, mode);
    const out = [];
    for (const c of chunks) {
      if (!c.tokens.length) continue;
      const ids = { plain: await chunkId(lego, c.tokens, VARIANTS.plain), legolink0: await chunkId(lego, c.tokens, VARIANTS.legolink0) };
      out.push({ index: out.length, start: c.start, end: c.end, tokens: c.tokens, ids });
    }
    return { modelKey: lego.model.id, chunks: out, totalTokens: out.reduce((a, c) => a + c.tokens.length, 0) };
  }

  async library(): Promise<LibraryResult> {
    const entries = (await this.store.list()).map(toEntry);
    return { entries, stats: await this.store.stats() };
  }

  async handle(r: StudioRequest, signal: AbortSignal, emit: (ev: StudioEvent) => void): Promise<unknown> {
    switch (r.type) {
      case 'split':
        return this.split(r.docId, r.text, r.mode);
      case 'tokenize':
        return (await this.cc()).model.tokenizer.encode(r.text, { addBos: false });
      case 'compile': {
        const lego = await this.cc();
        const { ids, compiled, ms } = await compileChunks(lego, r.chunks, await askVariants(lego, r.chunks, r.question ?? '', r.variant), signal, emit);
        return { ids, compiled, ms };
      }
      case 'library':
        return this.library();
      case 'expire':
        return this.store.expire(r.cacheId);
      case 'clear-library':
        return this.store.clear();
      case 'ask': {
        const lego = await this.cc();
        // The first request of each algorithm on an engine warms its GPU pipelines, untimed.
        const warmed = this.warmed.get(lego.engine) ?? new Set<string>();
        this.warmed.set(lego.engine, warmed);
        const kind = `${r.req.algorithm.split(':')[0]}|${r.req.scores ? 'scores' : ''}`;
        const result = await askLinked(lego, r.req, signal, emit, !warmed.has(kind));
        warmed.add(kind);
        return result;
      }
      case 'sink-map':
        return measureSinks(await this.cc(), r.req, signal, emit);
      case 'sweep':
        return runSweep(await this.cc(), r.req, signal, emit);
    }
  }
}
