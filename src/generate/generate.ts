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
  /** Capture each generated row's attention scores (one layer, some heads) for the attention maps. */
  scores?: { layer: ScoresRequest['layer']; heads: number[]; onScores: (s: ScoresResult[]) => void };
}

/** Yields generated token ids until a stop token, the budget, or an abort. */
export async function* decodeTokens(engine: Engine, cache: KVCache, logits: Float32Array, o: DecodeOptions): AsyncGenerator<number> {
  const random = rng(o.sampling.seed ?? 42);
  for (let i = 0; i < o.maxNewTokens; i++) {
    if (o.signal?.aborted) return;
    const next = sample(logits, o.sampling, random);
    if (o.stopIds.includes(next)) return;
    yield next;
    if (i + 1 >= o.maxNewTokens) continue;
    if (o.scores) {
      const r = await engine.step(cache, next, undefined, { scores: { layer: o.scores.layer, heads: o.scores.heads, rows: [0] } });
      o.scores.onScores(r.scores);
      logits = r.logits;
    } else logits = await engine.decode(cache, next);
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
