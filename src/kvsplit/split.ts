/**
 * KVSplit: cuts a document into the chunks whose KV caches KVCompile builds
 * on their own (Epic's first stage). See `SplitMode` for the modes.
 *
 * What holds for every mode:
 *  - `chunk.text === doc.text.slice(chunk.start, chunk.end)`, chunks are in
 *    document order with `start <= end <= next.start`;
 *  - fixed: the chunks partition the document exactly (first start 0, last end
 *    `doc.text.length`, each start the previous end), so joining the texts
 *    gives the document back byte for byte; the ids are consecutive runs of
 *    `encode(doc.text)` and all but the last have exactly `tokens` ids;
 *  - semantic, boundaries, document: each chunk is trimmed of surrounding
 *    whitespace, the text between chunks (and before the first, after the
 *    last) is whitespace only, and the ids are `encode(chunk.text)`;
 *    semantic chunks have at most `maxTokens` ids and start and end on
 *    sentence boundaries unless a single sentence exceeds the budget.
 * The result depends only on the inputs (deterministic).
 */
import type { Tokenizer } from '../engine';
import { alignPieces } from './align';
import { splitSemantic, type PackedSpan } from './semantic';
import { trimSpan, type Span } from './units';
import {
  DEFAULT_FIXED_TOKENS, DEFAULT_MAX_DOCUMENT_CHARS, DocumentTooLargeError, EmptyDocumentError, SplitError,
  type Chunk, type SplitMode, type SplitOptions,
} from './types';

/** How far (characters) a user boundary inside a word moves to reach whitespace. */
export const SNAP_CHARS = 8;

export function splitDocument(
  doc: { id: string; text: string },
  tokenizer: Tokenizer,
  mode: SplitMode = { kind: 'fixed', tokens: DEFAULT_FIXED_TOKENS },
  opts: SplitOptions = {},
): Chunk[] {
  const { text } = doc;
  if (typeof text !== 'string') throw new SplitError(`Document "${doc.id}" has no text`);
  const max = opts.maxDocumentChars ?? DEFAULT_MAX_DOCUMENT_CHARS;
  if (text.length > max) throw new DocumentTooLargeError(doc.id, text.length, max);
  if (!/\S/.test(text)) throw new EmptyDocumentError(doc.id);
  const encode = (s: Span) => tokenizer.encode(text.slice(s.start, s.end), { addBos: false });

  let spans: PackedSpan[];
  switch (mode.kind) {
    case 'fixed':
      spans = splitFixed(text, tokenizer, positiveInt(mode.tokens, 'fixed: tokens'));
      break;
    case 'semantic':
      spans = splitSemantic(text, tokenizer, positiveInt(mode.maxTokens, 'semantic: maxTokens'));
      break;
    case 'document': {
      const s = trimSpan(text, 0, text.length)!;
      spans = [{ ...s, tokens: encode(s) }];
      break;
    }
    case 'boundaries':
      spans = cutAt(text, mode.offsets).map((s) => ({ ...s, tokens: encode(s) }));
      break;
    default:
      throw new SplitError(`Unknown split mode ${JSON.stringify((mode as { kind?: unknown }).kind)}`);
  }
  return spans.map((s, index) => ({ docId: doc.id, index, text: text.slice(s.start, s.end), start: s.start, end: s.end, tokens: s.tokens }));
}

function positiveInt(n: number, what: string): number {
  if (!Number.isInteger(n) || n < 1) throw new SplitError(`${what} must be a whole number of at least 1, not ${n}`);
  return n;
}

/** Consecutive runs of `n` ids of the whole document, located in it. */
function splitFixed(text: string, tok: Tokenizer, n: number): PackedSpan[] {
  const ids = tok.encode(text, { addBos: false });
  const runs: number[][] = [];
  for (let i = 0; i < ids.length; i += n) runs.push(ids.slice(i, i + n));
  const ends = alignPieces(text, runs.map((r) => tok.decode(r)));
  return runs.map((tokens, i) => ({ start: i ? ends[i - 1] : 0, end: ends[i], tokens }));
}

const isSpace = (c: string | undefined) => c !== undefined && /\s/.test(c);

/** Whether a cut at `o` falls between words (or at an end). */
function atWordEdge(text: string, o: number): boolean {
  return o <= 0 || o >= text.length || isSpace(text[o - 1]) || isSpace(text[o]);
}

/** `o` moved to the nearest word edge within SNAP_CHARS (left first on ties), and off surrogate pairs. */
export function snapOffset(text: string, o: number): number {
  if (!atWordEdge(text, o)) {
    for (let d = 1; d <= SNAP_CHARS; d++) {
      if (o - d >= 0 && atWordEdge(text, o - d)) return o - d;
      if (o + d <= text.length && atWordEdge(text, o + d)) return o + d;
    }
  }
  const c = text.charCodeAt(o);
  return o > 0 && o < text.length && c >= 0xdc00 && c <= 0xdfff ? o - 1 : o;
}

/** Trimmed, non-empty segments between the user's offsets (sorted, deduplicated, clamped, snapped). */
export function cutAt(text: string, offsets: readonly number[]): Span[] {
  const cuts = [...new Set(offsets.filter((o) => Number.isFinite(o)).map((o) => Math.min(text.length, Math.max(0, Math.round(o)))))]
    .map((o) => snapOffset(text, o))
    .sort((a, b) => a - b);
  const edges = [0, ...cuts, text.length];
  const out: Span[] = [];
  for (let i = 0; i + 1 < edges.length; i++) {
    const s = trimSpan(text, edges[i], edges[i + 1]);
    if (s) out.push(s);
  }
  return out;
}
