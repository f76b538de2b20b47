/**
 * The runner's Node backend: the model on the `webgpu` package (SwiftShader
 * where there is no GPU), LegoKV's ContextCache API over an in-memory
 * KVStore, driven by case-api.ts exactly as the browser backend's page drives
 * the worker's. Prompt Cache cases are mapped to a schema with one module per
 * chunk, at the consecutive positions the chunks take in the linked prompt
 * (after BOS and any chat-template text before them); each module is
 * compiled alone at those positions, without BOS (src/kvcompile/promptcache.ts).
 */
import { basename } from 'node:path';
import { openModel, type NodeSession } from '../node/session';
import { KVStore, MemoryBlobBackend, MemoryIndexBackend } from '../kvstore';
import { ContextCache, type PromptLayout } from '../api/context-cache';
import type { ScoresResult } from '../engine';
import type { EvalCase } from './dataset';
import { variantFor, type Answer, type EvalBackend, type PreparedCase, type VariantName } from './backend';
import { caseMessages, questionText } from './prompt';
import { answerCase, compileCase, preloadCase, releaseCase, type CompiledCase } from './case-api';
import { resolveModelPath } from './tokenizer';

export interface NodeBackendOptions {
  weightDtype?: 'f32' | 'f16';
  kvDtype?: 'f32' | 'f16';
  tokenizer?: string;
}

export class NodeBackend implements EvalBackend {
  readonly name = 'node';
  private compiled = new WeakMap<PreparedCase, CompiledCase>();
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

  get kvDtype() {
    return this.s.engine.kvDtype;
  }

  get hasChatTemplate() {
    return !!this.s.model.tokenizer.applyChatTemplate;
  }

  /** Positions each chunk takes in the linked prompt: Prompt Cache's schema, one module per chunk. */
  promptCachePositions(c: EvalCase, tokens: number[][]): Promise<number[][]> {
    return this.lego.schemaPositions(tokens, questionText(c));
  }

  async prepare(c: EvalCase, variants: ReadonlySet<VariantName>): Promise<PreparedCase> {
    const compiled = await compileCase(this.lego, c.chunks, questionText(c), variants);
    const p: PreparedCase = { case: c, ids: compiled.ids, compileMs: compiled.compileMs };
    this.compiled.set(p, compiled);
    return p;
  }

  private of(p: PreparedCase): CompiledCase {
    const c = this.compiled.get(p);
    if (!c) throw new Error(`Case ${p.case.id} was not prepared by this backend`);
    return c;
  }

  preload(p: PreparedCase): Promise<void> {
    return preloadCase(this.lego, this.of(p));
  }

  answer(p: PreparedCase, algorithm: string, maxNewTokens: number, signal?: AbortSignal): Promise<Answer> {
    return answerCase(this.lego, this.of(p), algorithm, maxNewTokens, signal);
  }

  /**
   * Links a prepared case with `algorithm` once and returns the question rows' raw attention scores (q·k,
   * -Infinity where masked) for every layer and head, with the linked layout (for the attention-sink report).
   */
  async attention(p: PreparedCase, algorithm: string): Promise<{ layout: PromptLayout; scores: ScoresResult[] }> {
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
    await releaseCase(this.lego, this.of(p));
    this.compiled.delete(p);
  }

  async close(): Promise<void> {
    this.s.close();
  }
}
