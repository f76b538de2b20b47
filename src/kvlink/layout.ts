/**
 * Laying out a linked prompt: an ordered list of parts (cached chunks and
 * raw text, repeats and any order allowed) becomes one token sequence with a
 * position id per row, the cached segments, and the uncached rows.
 *
 * Cached chunks are placed back to back at consecutive positions, except
 * Prompt Cache modules, which keep the positions their schema gave them. A
 * BOS row is put first unless the first part is a chunk that starts with it.
 */
import type { CompiledChunk } from '../kvcompile/compile';

export type LinkPart =
  | { kind: 'text'; tokens: number[]; /** explicit positions (Prompt Cache parameters) */ positions?: number[] }
  | { kind: 'cache'; chunk: CompiledChunk };

export interface Segment {
  /** Index of the part in the request. */
  part: number;
  start: number;
  length: number;
  chunk: CompiledChunk;
}

export interface LinkLayout {
  tokens: number[];
  positions: number[];
  segments: Segment[];
  uncached: number[];
}

export function layoutParts(parts: LinkPart[], bosId: number | null): LinkLayout {
  const tokens: number[] = [];
  const positions: number[] = [];
  const segments: Segment[] = [];
  const uncached: number[] = [];
  const first = parts[0];
  const startsWithBos = first?.kind === 'cache' && first.chunk.variant.kind === 'plain' && first.chunk.tokens[0] === bosId;
  let next = 0;
  const push = (t: number, p: number, cached: boolean) => {
    if (!cached) uncached.push(tokens.length);
    tokens.push(t);
    positions.push(p);
    next = Math.max(next, p + 1);
  };
  if (bosId !== null && !startsWithBos) push(bosId, 0, false);
  parts.forEach((part, i) => {
    if (part.kind === 'text') {
      part.tokens.forEach((t, j) => push(t, part.positions ? part.positions[j] : next, false));
      return;
    }
    const c = part.chunk;
    const fixed = c.variant.kind === 'promptcache';
    const start = tokens.length;
    const base = next;
    c.tokens.forEach((t, j) => push(t, fixed ? c.positions[j] : base + j, true));
    segments.push({ part: i, start, length: c.tokens.length, chunk: c });
  });
  if (tokens.length === 0) throw new Error('Nothing to link: no parts');
  return { tokens, positions, segments, uncached };
}
