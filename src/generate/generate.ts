/**
 * The decode loop: sample, stop, stream, cancel. Works on any engine cache
 * whose last prefill produced `logits`; knows nothing of how the prompt's
 * KV got there (plain prefill or a linked set of cached chunks).
 */
import type { Engine, KVCache, ScoresRequest, ScoresResult, Tokenizer } from '../engine';
import { rng, sample, type SamplingOptions } from './sampling';

export interface DecodeOptions {
  maxNewTokens: number;
  sampling: SamplingOptions;
  stopIds: readonly number[];
  signal?: AbortSignal;
  /** Attention scores of each generated row to capture (some layers and heads), handed to `onStep`. */
  scores?: { layer: ScoresRequest['layer']; heads: number[] };
  /**
   * Called after every decode step (the token fed, the new row's scores when asked for); awaited before the next
   * token is yielded, so a caller can pace the loop (the studio's slow motion) or collect what it needs. Greedy
   * decoding may have computed the next steps already (`ahead`).
   */
  onStep?: (step: DecodeStep) => void | Promise<void>;
  /**
   * Greedy tokens to ask the engine for at once (Engine.greedySteps, which records the next steps while the GPU
   * runs one, and reads tokens and scores behind it); default: the engine's decodeAhead.
   */
  ahead?: number;
}

export interface DecodeStep {
  /** 0 for the first generated token. */
  index: number;
  token: number;
  scores: ScoresResult[];
}

/**
 * The decode loop: yields generated token ids until a stop token, the budget, or an abort. Each step is one
 * locked engine call, so loops of several requests interleave safely between tokens.
 */
export async function* decodeTokens(engine: Engine, cache: KVCache, logits: Float32Array, o: DecodeOptions): AsyncGenerator<number> {
  const random = rng(o.sampling.seed ?? 42);
  // Greedy decoding picks each next token on the GPU and reads back its id alone, not the vocabulary's logits.
  const greedy = !(o.sampling.temperature > 0);
  const ahead = greedy ? Math.max(1, o.ahead ?? engine.decodeAhead) : 1;
  // Tokens picked ahead and not yet yielded. Once `next` is taken from them, the cache holds rows serial steps
  // would not have yet (for `next` and each queued token but the last): as many as are queued. `rowScores` are
  // the scores of the rows picked ahead, `next`'s first.
  const queued: number[] = [];
  let rowScores: ScoresResult[][] = [];
  let next = sample(logits, o.sampling, random);
  try {
    for (let i = 0; i < o.maxNewTokens; i++) {
      if (o.signal?.aborted) return;
      if (o.stopIds.includes(next)) return;
      yield next;
      if (i + 1 >= o.maxNewTokens) {
        await o.onStep?.({ index: i, token: next, scores: [] });
        continue;
      }
      if (ahead > 1) {
        if (!queued.length) {
          // A stop token ends its batch, and the batch never runs past the budget: neither is left queued.
          const r = await engine.greedySteps(cache, next, { count: Math.min(ahead, o.maxNewTokens - 1 - i), stopIds: o.stopIds, scores: o.scores });
          queued.push(...r.tokens);
          rowScores = r.scores;
        }
        await o.onStep?.({ index: i, token: next, scores: rowScores.shift()! });
        next = queued.shift()!;
        continue;
      }
      const r = await engine.step(cache, next, undefined, { greedy, ...(o.scores ? { scores: { ...o.scores, rows: [0] } } : {}) });
      await o.onStep?.({ index: i, token: next, scores: r.scores });
      next = greedy ? r.token! : sample(r.logits, o.sampling, random);
    }
  } finally {
    // Stopped early (an abort, or the caller leaving): drop the rows of tokens picked ahead but never yielded, so
    // the cache holds what serial steps would have left.
    if (queued.length) cache.truncate(cache.length - queued.length);
  }
}

/**
 * Turns generated tokens into text deltas. Decoding happens after the
 * prompt's last tokens, since tokenizers render a token's leading space
 * differently at the start of a sequence; incomplete UTF-8 is held back.
 */
export class TextStream {
  private ids: number[];
  private skip: number;
  private emitted = '';

  constructor(
    private tok: Tokenizer,
    context: readonly number[] = [],
  ) {
    this.ids = context.slice(-8);
    this.skip = tok.decode(this.ids).length;
  }

  push(id: number): string {
    this.ids.push(id);
    const text = this.tok.decode(this.ids).slice(this.skip);
    if (text.endsWith('\uFFFD')) return '';
    const delta = text.slice(this.emitted.length);
    this.emitted = text;
    return delta;
  }

  get text() {
    return this.emitted;
  }
}
