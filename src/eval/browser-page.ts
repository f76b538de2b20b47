/**
 * The page the browser backend of the evaluation runner drives (served by
 * Vite as /src/eval/browser-page.html, no studio UI): the app's real
 * inference worker behind a few async calls on `window.legokvEval`, which
 * src/eval/browser-backend.ts reaches with `page.evaluate`.
 */
import { EngineClient } from '../worker/client';
import type { BundledModelRef, ModelInfo } from '../worker/protocol';
import type { AskFirst, AskRequest, AskResult, ChunkRef, CompileVariantName, StudioEvent } from '../worker/studio-protocol';

export interface EvalAnswer {
  result: AskResult;
  first: AskFirst;
  /** From sending the request to the first-token event, measured here. */
  wallTtftMs: number;
}

export interface EvalPageApi {
  /** Starts the worker's WebGPU device; returns the adapter's name. */
  init(): Promise<string>;
  load(ref: BundledModelRef, weightDtype?: 'f32' | 'f16'): Promise<ModelInfo>;
  /** Token ids of a text, without BOS, as the worker's tokenizer encodes it (nothing trimmed). */
  tokenize(text: string): Promise<number[]>;
  /** Compiles the chunks that are not stored yet; returns their cache ids (Prompt Cache: modules for this question's prompt). */
  compile(chunks: ChunkRef[], variant: CompileVariantName | 'promptcache', question?: string): Promise<string[]>;
  ask(req: AskRequest): Promise<EvalAnswer>;
  /** Cancels the running ask, if any. */
  cancel(): void;
  expire(cacheId: string): Promise<void>;
}

declare global {
  interface Window {
    legokvEval?: EvalPageApi;
  }
}

const client = new EngineClient();
client.onDeviceLost = (m) => console.error(`WebGPU device lost: ${m}`);
let running: number | null = null;

const api: EvalPageApi = {
  async init() {
    return (await client.init()).adapter.description;
  },
  load(ref, weightDtype) {
    return client.load(ref, () => {}, weightDtype).result;
  },
  tokenize(text) {
    return client.studio<number[]>({ type: 'tokenize', text }).result;
  },
  async compile(chunks, variant, question) {
    return (await client.studio<{ ids: string[] }>({ type: 'compile', chunks, variant, question }).result).ids;
  },
  async ask(req) {
    const t0 = performance.now();
    let first: { first: AskFirst; at: number } | undefined;
    const onEvent = (e: StudioEvent) => {
      if (e.kind === 'first-token') first = { first: e.first, at: performance.now() };
    };
    const call = client.studio<AskResult>({ type: 'ask', req }, onEvent);
    running = call.id;
    try {
      const result = await call.result;
      if (!first) throw new Error('The ask ended without a first-token event');
      return { result, first: first.first, wallTtftMs: first.at - t0 };
    } finally {
      running = null;
    }
  },
  cancel() {
    if (running !== null) client.cancel(running);
  },
  async expire(cacheId) {
    await client.studio<boolean>({ type: 'expire', cacheId }).result;
  },
};

window.legokvEval = api;
