/**
 * The runner's Node backend: the model on the `webgpu` package (SwiftShader
 * where there is no GPU), LegoKV's ContextCache API over an in-memory
 * KVStore. Prompt Cache cases are mapped to a schema with one module per
 * chunk, at the consecutive positions the chunks take in the linked prompt
 * (after BOS and any chat-template text before them); each module is
 * compiled alone at those positions, without BOS (src/kvcompile/promptcache.ts).
 */
import { basename } from 'node:path';
import { openModel, type NodeSession } from '../node/session';
import { KVStore, MemoryBlobBackend, MemoryIndexBackend } from '../kvstore';
import { ContextCache, type CompletionEvent } from '../api/context-cache';
import { moduleSchemaPositions } from '../api/messages';
import type { LinkLayout } from '../kvlink/layout';
import type { ScoresResult } from '../engine';
import type { EvalCase } from './dataset';
import { variantFor, type Answer, type EvalBackend, type PreparedCase, type VariantName } from './backend';
import { caseMessages } from './prompt';
import { resolveModelPath } from './tokenizer';

export interface NodeBackendOptions {
  weightDtype?: 'f32' | 'f16';
  kvDtype?: 'f32' | 'f16';
  tokenizer?: string;
}

export class NodeBackend implements EvalBackend {
  readonly name = 'node';
  private constructor(
    private s: NodeSession,
    private lego: ContextCache,
    readonly model: string,
  ) {}

  static async open(model: string, o: NodeBackendOptions = {}): Promise<NodeBackend> {
    const path = resolveModelPath(model);
    // Without --dtype, the engine's rule (as in the app): f32 for small models, packed f16 above 50M weights.
    const s = await openModel(path, { weightDtype: o.weightDtype, kvDtype: o.kvDtype, tokenizer: o.tokenizer });
    const weightDtype = s.engine.model!.dtype;
    const store = new KVStore({ blobs: new MemoryBlobBackend(), index: new MemoryIndexBackend(), budgets: { ram: 4 * 2 ** 30, opfs: 16 * 2 ** 30 } });
    await store.open();
    const name = basename(path);
    const lego = new ContextCache(s.engine, { id: `${name}:${weightDtype}`, config: s.model.config, tokenizer: s.model.tokenizer, tokenizerId: name }, store);
    return new NodeBackend(s, lego, name);
  }

  get adapter() {
    return this.s.gpu.adapter.description;
  }

  get hasChatTemplate() {
    return !!this.s.model.tokenizer.applyChatTemplate;
  }

  private encode(chunks: string[]) {
    return chunks.map((ch) => this.s.model.tokenizer.encode(ch, { addBos: false }));
  }

  /** Positions each chunk takes in the linked prompt: Prompt Cache's schema, one module per chunk. */
  promptCachePositions(c: EvalCase, tokens: number[][]): Promise<number[][]> {
    const names = tokens.map((_, i) => `module${i}`);
    return moduleSchemaPositions(caseMessages(names, c), this.s.model.tokenizer, this.s.model.config.bosId, (id) => tokens[Number(id.slice(6))]);
  }

  async prepare(c: EvalCase, variants: ReadonlySet<VariantName>): Promise<PreparedCase> {
    const t0 = performance.now();
    const tokens = this.encode(c.chunks);
    const ids: PreparedCase['ids'] = {};
    if (variants.has('plain')) ids.plain = await this.lego.compileContext(tokens);
    if (variants.has('legolink0')) ids.legolink0 = await this.lego.compileContext(tokens, { variant: { kind: 'legolink0' } });
    if (variants.has('promptcache')) {
      const positions = await this.promptCachePositions(c, tokens);
      ids.promptcache = [];
      for (const [i, t] of tokens.entries()) {
        ids.promptcache.push(...(await this.lego.compileContext([t], { variant: { kind: 'promptcache', positions: positions[i] } })));
      }
    }
    return { case: c, ids, compileMs: performance.now() - t0 };
  }

  async preload(p: PreparedCase): Promise<void> {
    for (const ids of Object.values(p.ids)) {
      for await (const ev of this.lego.chatCompletion({ messages: caseMessages(ids, p.case), algorithm: 'naive', maxTokens: 1 })) void ev;
    }
  }

  async answer(p: PreparedCase, algorithm: string, maxNewTokens: number, signal?: AbortSignal): Promise<Answer> {
    const v = variantFor(algorithm);
    const ids = p.ids[v];
    if (!ids) throw new Error(`Case ${p.case.id} was not compiled for the ${v} variant`);
    const t0 = performance.now();
    let first: Extract<CompletionEvent, { type: 'first-token' }> | undefined;
    let wall = 0;
    let done: Extract<CompletionEvent, { type: 'done' }> | undefined;
    for await (const ev of this.lego.chatCompletion({ messages: caseMessages(ids, p.case), algorithm, maxTokens: maxNewTokens, temperature: 0, signal })) {
      if (ev.type === 'first-token') {
        wall = performance.now() - t0;
        first = ev;
      } else if (ev.type === 'done') done = ev;
    }
    if (!first || !done) throw new Error('chatCompletion ended without a first token or a done event');
    return {
      text: done.text, ttft: first.ttft, wallTtftMs: wall, recomputed: first.recomputed, recomputedFraction: first.recomputedFraction,
      promptTokens: first.promptTokens, newTokens: done.tokens, decodeTokensPerS: done.decodeTokensPerS, cancelled: done.cancelled,
    };
  }

  /**
   * Links a prepared case with `algorithm` once and returns the question rows' raw attention scores (q·k,
   * -Infinity where masked) for every layer and head, with the linked layout (for the attention-sink report).
   */
  async attention(p: PreparedCase, algorithm: string): Promise<{ layout: LinkLayout; scores: ScoresResult[] }> {
    const ids = p.ids[variantFor(algorithm)];
    if (!ids) throw new Error(`Case ${p.case.id} was not compiled for ${algorithm}`);
    const { nLayers, nHeads } = this.s.model.config;
    const scores = { layer: Array.from({ length: nLayers }, (_, l) => l), heads: Array.from({ length: nHeads }, (_, h) => h) };
    for await (const ev of this.lego.chatCompletion({ messages: caseMessages(ids, p.case), algorithm, maxTokens: 1, scores })) {
      if (ev.type === 'first-token') return { layout: ev.layout, scores: ev.scores };
    }
    throw new Error('chatCompletion ended without a first token');
  }

  get layers(): number {
    return this.s.model.config.nLayers;
  }

  async release(p: PreparedCase): Promise<void> {
    for (const ids of Object.values(p.ids)) for (const id of ids) await this.lego.expireCache(id);
  }

  async close(): Promise<void> {
    this.s.close();
  }
}
