/**
 * An evaluation case through any ContextCacheApi: the Node backend calls it
 * on a ContextCache, the browser backend's page on the worker's transport to
 * one (the studio's own path), so both backends run the same code. Answers
 * go through api/ask.ts, as the studio's do. A case is its chunks' texts and
 * the text after them (prompt.ts's `questionText`, computed in Node).
 */
import type { ContextCacheApi } from '../api/context-cache';
import { ask } from '../api/ask';
import { variantFor, type Answer, type VariantName } from './backend';

export interface CompiledCase {
  /** The uncached text after the chunks. */
  question: string;
  /** The chunks' token ids (without BOS), as the model's tokenizer encodes them. */
  tokens: number[][];
  /** Cache ids of the chunks, in order, per compile variant. */
  ids: Partial<Record<VariantName, string[]>>;
  compileMs: number;
}

/** The algorithm whose variant each compile variant is compiled for. */
const FOR_VARIANT: Record<VariantName, string> = { plain: 'naive', legolink0: 'legolink0', promptcache: 'promptcache' };

/** Tokenises and compiles a case's chunks for each variant (Prompt Cache: modules at this case's schema positions). */
export async function compileCase(api: ContextCacheApi, chunks: string[], question: string, variants: ReadonlySet<VariantName>): Promise<CompiledCase> {
  const t0 = performance.now();
  const tokens: number[][] = [];
  for (const text of chunks) tokens.push(await api.tokenize(text));
  const ids: CompiledCase['ids'] = {};
  for (const v of ['plain', 'legolink0', 'promptcache'] as const) {
    if (variants.has(v)) ids[v] = await api.compileContext(tokens, { algorithm: FOR_VARIANT[v], question });
  }
  return { question, tokens, ids, compileMs: performance.now() - t0 };
}

export function cancelledAnswer(): Answer {
  const ttft = { lookupMs: 0, loadMs: 0, recomputeMs: 0, firstTokenMs: 0, totalMs: 0, gpuMs: null, overlapMs: null, pipelined: true, recordMs: 0, cacheMs: 0, waitMs: 0, submitMs: 0, submits: 0 };
  return { text: '', ttft, wallTtftMs: 0, recomputed: 0, recomputedFraction: 0, promptTokens: 0, newTokens: 0, decodeTokensPerS: 0, cancelled: true };
}

/** One greedy answer of a compiled case with `algorithm`; a signal that fires before the first token gives a cancelled answer. */
export async function answerCase(
  api: ContextCacheApi, compiled: CompiledCase, algorithm: string, maxNewTokens: number, signal?: AbortSignal,
): Promise<Answer> {
  const v = variantFor(algorithm);
  if (!compiled.ids[v]) throw new Error(`The case was not compiled for the ${v} variant`);
  if (signal?.aborted) return cancelledAnswer();
  try {
    const r = await ask(api, { chunks: compiled.tokens, question: compiled.question, algorithm, maxTokens: maxNewTokens, temperature: 0, signal });
    const f = r.first;
    return {
      text: r.text, ttft: f.ttft, wallTtftMs: f.wallTtftMs, recomputed: f.recomputed, recomputedFraction: f.recomputedFraction,
      promptTokens: f.promptTokens, newTokens: r.tokens, decodeTokensPerS: r.decodeTokensPerS, cancelled: r.cancelled,
    };
  } catch (e) {
    if (signal?.aborted) return cancelledAnswer();
    throw e;
  }
}

/** Warms the store's fastest tier with each compiled variant's caches (an untimed one-token answer). */
export async function preloadCase(api: ContextCacheApi, compiled: CompiledCase): Promise<void> {
  for (const v of Object.keys(compiled.ids) as VariantName[]) await answerCase(api, compiled, FOR_VARIANT[v], 1);
}

export async function releaseCase(api: ContextCacheApi, compiled: CompiledCase): Promise<void> {
  for (const ids of Object.values(compiled.ids)) for (const id of ids) await api.expireCache(id);
}
