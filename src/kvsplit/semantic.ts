/**
 * Semantic chunking: the largest units that fit the budget (a whole passage,
 * else its paragraphs, else their sentences) are packed greedily, in order,
 * into chunks of at most `maxTokens` ids. A sentence is only cut when it alone
 * exceeds the budget; it then becomes consecutive runs of `maxTokens` of its
 * own ids (each run its own chunk).
 *
 * Token counts are exact where they decide anything: each sentence is encoded
 * once; counts of larger spans start as estimates (sum of parts plus one per
 * join) and every unit and every chunk is verified by encoding its text, so a
 * chunk's ids are always `encode(chunk text)` and never more than `maxTokens`
 * (forced runs excepted, whose ids are the runs themselves). Encodes other than
 * of sentences are of texts of at most about twice the budget, which keeps
 * quadratic tokenizers (llama2.c's merge loop) usable on long documents.
 */
import type { Tokenizer } from '../engine';
import { alignPieces } from './align';
import { paragraphs, passages, sentences, type Span } from './units';

export interface PackedSpan extends Span {
  tokens: number[];
}

interface Node extends Span {
  /** Estimated (for sentences: exact) token count. */
  est: number;
  kids: Node[];
  ids?: number[];
}

interface Unit extends Span {
  ids: number[];
  /** A run of an over-long sentence: a chunk on its own. */
  forced: boolean;
}

/** An encode of an estimated span is worth trying up to this much over the budget. */
const SLACK = 1.1;

export function splitSemantic(text: string, tok: Tokenizer, maxTokens: number): PackedSpan[] {
  const encode = (s: Span) => tok.encode(text.slice(s.start, s.end), { addBos: false });

  const build = (span: Span, depth: number): Node => {
    if (depth === 2) {
      const ids = encode(span);
      return { ...span, est: ids.length, kids: [], ids };
    }
    const parts = depth === 0 ? paragraphs(text, span) : sentences(text, span);
    if (parts.length === 1 && parts[0].start === span.start && parts[0].end === span.end) return build(span, depth + 1);
    const kids = parts.map((p) => build(p, depth + 1));
    return { ...span, est: kids.reduce((a, k) => a + k.est, 0) + kids.length - 1, kids };
  };

  const units: Unit[] = [];
  const emit = (n: Node) => {
    if (n.ids) {
      if (n.ids.length <= maxTokens) units.push({ start: n.start, end: n.end, ids: n.ids, forced: false });
      else units.push(...forcedRuns(text, n, n.ids, tok, maxTokens));
      return;
    }
    if (n.est <= maxTokens * SLACK) {
      const ids = encode(n);
      if (ids.length <= maxTokens) return void units.push({ start: n.start, end: n.end, ids, forced: false });
    }
    n.kids.forEach(emit);
  };
  for (const p of passages(text)) emit(build(p, 0));
  return pack(units, encode, maxTokens);
}

/** Greedy packing of consecutive units; forced runs stay alone. */
function pack(units: Unit[], encode: (s: Span) => number[], max: number): PackedSpan[] {
  const out: PackedSpan[] = [];
  const span = (a: number, b: number): Span => ({ start: units[a].start, end: units[b].end });
  let k = 0;
  while (k < units.length) {
    const first = units[k];
    if (first.forced) {
      out.push({ start: first.start, end: first.end, tokens: first.ids });
      k++;
      continue;
    }
    let last = k;
    let count = first.ids.length;
    let ids: number[] | null = first.ids;
    for (let j = k + 1; j < units.length && !units[j].forced; j++) {
      const est = count + units[j].ids.length + 1;
      if (est <= max) {
        [last, count, ids] = [j, est, null];
        continue;
      }
      if (est > max * SLACK) break;
      const trial = encode(span(k, j));
      if (trial.length > max) break;
      [last, count, ids] = [j, trial.length, trial];
    }
    ids ??= encode(span(k, last));
    while (ids.length > max && last > k) ids = encode(span(k, --last));
    out.push({ ...span(k, last), tokens: ids });
    k = last + 1;
  }
  return out;
}

/** An over-long sentence as runs of `max` of its ids, located in the text. */
function forcedRuns(text: string, s: Span, ids: number[], tok: Tokenizer, max: number): Unit[] {
  const runs: number[][] = [];
  for (let i = 0; i < ids.length; i += max) runs.push(ids.slice(i, i + max));
  const ends = alignPieces(text.slice(s.start, s.end), runs.map((r) => tok.decode(r)));
  return runs.map((r, i) => ({ start: s.start + (i ? ends[i - 1] : 0), end: s.start + ends[i], ids: r, forced: true }));
}
