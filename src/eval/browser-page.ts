/**
 * The page the browser backend of the evaluation runner drives (served by
 * Vite as /src/eval/browser-page.html, no studio UI): the app's real
 * inference worker behind a few async calls on `window.legokvEval`, which
 * src/eval/browser-backend.ts reaches with `page.evaluate`. Cases run through
 * case-api.ts on the worker's ContextCache (remote.ts), the same code the
 * Node backend runs on a local one.
 */
import { EngineClient } from '../worker/client';
import { RemoteContextCache } from '../worker/remote';
import type { BundledModelRef, ModelInfo } from '../worker/protocol';
import type { Answer, VariantName } from './backend';
import { answerCase, compileCase, preloadCase, releaseCase, type CompiledCase } from './case-api';

export interface EvalPageApi {
  /** Starts the worker's WebGPU device; returns the adapter's name. */
  init(): Promise<string>;
  load(ref: BundledModelRef, weightDtype?: 'f32' | 'f16'): Promise<ModelInfo>;
  /** Tokenises and compiles a case's chunks (with the text after them) for each variant; returns a handle for the calls below. */
  prepare(chunks: string[], question: string, variants: VariantName[]): Promise<{ handle: number; ids: CompiledCase['ids']; compileMs: number }>;
  preload(handle: number): Promise<void>;
  answer(handle: number, algorithm: string, maxNewTokens: number): Promise<Answer>;
  /** Cancels the running answer, if any. */
  cancel(): void;
  release(handle: number): Promise<void>;
}

declare global {
  interface Window {
    legokvEval?: EvalPageApi;
  }
}

const client = new EngineClient();
client.onDeviceLost = (m) => console.error(`WebGPU device lost: ${m}`);
const lego = new RemoteContextCache(client);
const cases = new Map<number, CompiledCase>();
let nextHandle = 1;
let running: AbortController | null = null;

const get = (handle: number) => {
  const p = cases.get(handle);
  if (!p) throw new Error(`No prepared case ${handle}`);
  return p;
};

const api: EvalPageApi = {
  async init() {
    return (await client.init()).adapter.description;
  },
  load(ref, weightDtype) {
    return client.load(ref, () => {}, weightDtype).result;
  },
  async prepare(chunks, question, variants) {
    const compiled = await compileCase(lego, chunks, question, new Set(variants));
    const handle = nextHandle++;
    cases.set(handle, compiled);
    return { handle, ids: compiled.ids, compileMs: compiled.compileMs };
  },
  preload(handle) {
    return preloadCase(lego, get(handle));
  },
  async answer(handle, algorithm, maxNewTokens) {
    const compiled = get(handle);
    const ac = new AbortController();
    running = ac;
    try {
      return await answerCase(lego, compiled, algorithm, maxNewTokens, ac.signal);
    } finally {
      if (running === ac) running = null;
    }
  },
  cancel() {
    running?.abort();
  },
  async release(handle) {
    await releaseCase(lego, get(handle));
    cases.delete(handle);
  },
};

window.legokvEval = api;
