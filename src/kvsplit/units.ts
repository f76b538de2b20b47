/**
 * Semantic units of a text, as character spans with surrounding whitespace
 * trimmed: passages (separated by blank lines), paragraphs (lines, except
 * that a line break inside a sentence, as in hard-wrapped text, does not end
 * a paragraph) and sentences (a regex-based splitter that knows common
 * abbreviations, initials, decimals, list numbers and closing quotes).
 */

export interface Span {
  start: number;
  end: number;
}

/** `[start, end)` shrunk to exclude leading and trailing whitespace; null when nothing is left. */
export function trimSpan(text: string, start: number, end: number): Span | null {
  while (start < end && /\s/.test(text[start])) start++;
  while (end > start && /\s/.test(text[end - 1])) end--;
  return start < end ? { start, end } : null;
}

/** Trimmed spans between the matches of `sep` (global) within `span`. */
function splitOn(text: string, span: Span, sep: RegExp): Span[] {
  const out: Span[] = [];
  const part = text.slice(span.start, span.end);
  let from = 0;
  for (const m of part.matchAll(sep)) {
    const s = trimSpan(text, span.start + from, span.start + m.index);
    if (s) out.push(s);
    from = m.index + m[0].length;
  }
  const last = trimSpan(text, span.start + from, span.end);
  if (last) out.push(last);
  return out;
}

/** Passages: separated by one or more blank (or whitespace-only) lines. */
export function passages(text: string, span: Span = { start: 0, end: text.length }): Span[] {
  return splitOn(text, span, /\r?\n[^\S\r\n]*\r?\n\s*/g);
}

const ENDS_SENTENCE = /[.!?…。！？:]["'”’»)\]}」』]*$/u;
const STARTS_BLOCK = /^(?:[-*+•‣◦▪]\s|\d{1,3}[.)]\s|[a-zA-Z][.)]\s|#{1,6}\s|>\s|\|)/u;

/** Paragraphs: lines, where a line break continues the paragraph when it falls inside a sentence. */
export function paragraphs(text: string, span: Span): Span[] {
  const lines = splitOn(text, span, /\r?\n/g);
  const out: Span[] = [];
  for (const line of lines) {
    const prev = out[out.length - 1];
    const prevText = prev ? text.slice(prev.start, prev.end) : '';
    const lineText = text.slice(line.start, line.end);
    const breaks = !prev || ENDS_SENTENCE.test(prevText) || STARTS_BLOCK.test(lineText) || STARTS_BLOCK.test(prevText);
    if (breaks) out.push({ ...line });
    else prev.end = line.end;
  }
  return out;
}

/** Lower-case words (without their final period) after which a period never ends a sentence. */
const NEVER_ENDS = new Set([
  'mr', 'mrs', 'ms', 'mx', 'dr', 'prof', 'sr', 'jr', 'st', 'mt', 'ft', 'vs', 'cf', 'al', 'fig', 'figs', 'eq', 'eqs',
  'vol', 'vols', 'pp', 'ch', 'sec', 'approx', 'dept', 'gen', 'gov', 'rev', 'sgt', 'capt', 'col', 'lt', 'cmdr',
  'hon', 'messrs', 'mme', 'mlle', 'rep', 'sen', 'pres', 'viz', 'ca', 'resp', 'incl', 'e.g', 'i.e', 'a.k.a',
]);

const TERMINATOR = /[.!?…]+["'”’»)\]}]*(?=\s|$)|[。！？]+["'”’」』)]*/gu;

/** Whether the terminator at `[at, end)` in `text` (a sentence span's text) ends a sentence. */
function endsSentence(text: string, at: number, end: number): boolean {
  const next = /\S/u.exec(text.slice(end, end + 8));
  if (next && /\p{Ll}/u.test(next[0])) return false; // "e.g. a", "she said. and", '"Really?" she asked.'
  if (!text.startsWith('.', at) || text.startsWith('..', at)) return true;
  const before = text.slice(0, at);
  const word = /(\S+)$/.exec(before)?.[1] ?? '';
  const bare = word.replace(/^["'“‘(\[{]+/u, '');
  const lower = bare.toLowerCase();
  if (NEVER_ENDS.has(lower)) return false;
  if (/^\p{Lu}$/u.test(bare)) return false; // an initial: "J. R. R. Tolkien"
  if (/^(?:\p{L}\.)+\p{L}$/u.test(bare)) return false; // "U.S.", "a.m."
  if (lower === 'no' && next && /\d/.test(next[0])) return false; // "No. 5"
  // "1. First item": a list number opening the span or a line.
  if (/^\d{1,3}$/.test(bare) && /(?:^|\n)[^\S\n]*$/.test(before.slice(0, before.length - word.length))) return false;
  return true;
}

/** Sentences of `span`: trimmed spans, each ending after its terminator and closing quotes. */
export function sentences(text: string, span: Span): Span[] {
  const part = text.slice(span.start, span.end);
  const out: Span[] = [];
  let from = 0;
  for (const m of part.matchAll(TERMINATOR)) {
    const end = m.index + m[0].length;
    if (!endsSentence(part, m.index, end)) continue;
    const s = trimSpan(text, span.start + from, span.start + end);
    if (s) out.push(s);
    from = end;
  }
  const last = trimSpan(text, span.start + from, span.end);
  if (last) out.push(last);
  return out;
}

/** Every sentence of `text`, going through passages and paragraphs as splitDocument does. */
export function allSentences(text: string): Span[] {
  return passages(text).flatMap((p) => paragraphs(text, p)).flatMap((p) => sentences(text, p));
}
