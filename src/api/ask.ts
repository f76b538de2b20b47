/**
 * One question over chunks, through any `ContextCacheApi` (a ContextCache,
 * or the worker's transport to one): the chunks are compiled for the
 * algorithm where they are not stored yet (nothing for `prompt`), linked in
 * order with the question after them (`chunkMessages`), and the answer is
 * streamed. The studio's ask, its TTFT sweep and both evaluation backends run
 * this same function, so they measure the same pipeline.
 */
import type { TtftBreakdown } from '../kvlink/link';
import type { ScoresRequest, ScoresResult } from '../engine';
import { formatAlgorithm, parseAlgorithm } from '../kvlink/algorithms';
import { chunkMessages } from './messages';
import type { CompileProgress, CompletionEvent, ContextCacheApi, PromptLayout } from './context-cache';

export interface AskRequest {
  /** The chunks in the order they are linked, as token ids (without BOS; `ContextCacheApi.tokenize`). */
  chunks: number[][];
  /** The text after the chunks (already in the model's framing). */
  question: string;
  /** A KVLink spec. */
  algorithm: string;
  maxTokens: number;
  temperature?: number;
  scores?: { layer: ScoresRequest['layer']; heads: number[] };
  warmup?: boolean;
  decodeDelayMs?: number;
  signal?: AbortSignal;
}

export interface AskHooks {
  onCompile?: (p: CompileProgress) => void;
  onFirst?: (first: AskFirst) => void;
  onText?: (text: string) => void;
}

export interface AskFirst {
  ttft: TtftBreakdown;
  recomputed: number;
  recomputedFraction: number;
  promptTokens: number;
  /** Chunks that had to be compiled first (not counted in the TTFT). */
  compiledOnDemand: number;
  compileMs: number;
  /** From the completion request to its first-token event, wall clock (adds rendering and tokenising the prompt). */
  wallTtftMs: number;
}

export interface AskOutcome {
  algorithm: string;
  text: string;
  tokens: number;
  /** The generated token ids. */
  generated: number[];
  decodeTokensPerS: number;
  cancelled: boolean;
  first: AskFirst;
  /** The linked prompt, its question rows' scores (when asked for), and each decode step's scores. */
  layout: PromptLayout;
  scores: ScoresResult[];
  steps: ScoresResult[][];
}

export async function ask(api: ContextCacheApi, req: AskRequest, hooks: AskHooks = {}): Promise<AskOutcome> {
  const algorithm = formatAlgorithm(parseAlgorithm(req.algorithm));
  if (!req.chunks.length) throw new Error('Pick at least one chunk to link');
  if (!req.question.trim()) throw new Error('Type a question first');
  const isPrompt = parseAlgorithm(algorithm).kind === 'prompt';
  let compiled = 0;
  const t0 = performance.now();
  // prompt reads no cache: nothing is compiled, and each chunk goes as its tokens.
  const ids = isPrompt
    ? req.chunks.map((_, i) => `chunk ${i}`)
    : await api.compileContext(req.chunks, {
      algorithm, question: req.question, signal: req.signal,
      onProgress: (p) => {
        if (p.status === 'compiled') compiled++;
        hooks.onCompile?.(p);
      },
    });
  const compileMs = isPrompt ? 0 : performance.now() - t0;
  req.signal?.throwIfAborted();
  const messages = isPrompt
    ? [{ role: 'user' as const, content: [...req.chunks.map((tokens, i) => ({ type: 'cache' as const, id: ids[i], tokens })), { type: 'text' as const, text: req.question }] }]
    : chunkMessages(ids, req.question);
  let first: AskFirst | undefined;
  let done: Extract<CompletionEvent, { type: 'done' }> | undefined;
  let layout: PromptLayout | undefined;
  let scores: ScoresResult[] = [];
  const steps: ScoresResult[][] = [];
  const t1 = performance.now();
  for await (const ev of api.chatCompletion({
    messages, algorithm, maxTokens: req.maxTokens, temperature: req.temperature ?? 0, scores: req.scores,
    warmup: req.warmup, decodeDelayMs: req.decodeDelayMs, signal: req.signal,
  })) {
    if (ev.type === 'first-token') {
      first = {
        ttft: ev.ttft, recomputed: ev.recomputed, recomputedFraction: ev.recomputedFraction, promptTokens: ev.promptTokens,
        compiledOnDemand: compiled, compileMs, wallTtftMs: performance.now() - t1,
      };
      layout = ev.layout;
      scores = ev.scores;
      hooks.onFirst?.(first);
    } else if (ev.type === 'text') hooks.onText?.(ev.text);
    else if (ev.type === 'attention') steps.push(ev.scores);
    else done = ev;
  }
  if (!first || !layout || !done) throw new Error('The completion ended without a first token or a done event');
  return { algorithm, text: done.text, tokens: done.tokens, generated: done.ids, decodeTokensPerS: done.decodeTokensPerS, cancelled: done.cancelled, first, layout, scores, steps };
}
