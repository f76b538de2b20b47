/**
 * Laying out a linked prompt: an ordered list of parts (cached chunks and
 * raw text, repeats and any order allowed) becomes one token sequence with a
 * position id per row, the chunks' segments, and the uncached rows.
 *
 * Cached chunks are placed back to back at consecutive positions, except
 * Prompt Cache modules, which keep the positions their schema gave them. A
 * BOS row is put first unless the first part is a chunk that starts with it.
 *
 * `promptLayout` lays the same parts out as an ordinary prompt: one BOS,
 * then every chunk's own tokens (without the BOS or sinks it was compiled
 * with) and the text, at consecutive positions, every row uncached.
 */
import { compileLayout } from '../kvcompile/compile';
import type { CompiledChunk, LinkPart } from '../types/kv';

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
  /** Where each chunk's rows lie: cached rows, except in a prompt layout, which computes them all. */
  segments: Segment[];
  uncached: number[];
}

/** A chunk's own tokens: its stored rows less the BOS a plain compile put first (LegoLink-0's sinks are never stored). */
export function chunkText(c: CompiledChunk, bosId: number | null): number[] {
  return c.variant.kind === 'plain' && bosId !== null ? c.tokens.slice(1) : c.tokens;
}

/** A chunk known by its tokens alone, without rows: all a prompt layout needs of it (nothing is read from a cache). */
export function textOnlyChunk(id: string, tokens: readonly number[], bosId: number | null): CompiledChunk {
  return { id, variant: { kind: 'plain' }, tokens: compileLayout(tokens, { kind: 'plain' }, bosId).tokens, positions: [], layers: [] };
}

export function layoutParts(parts: LinkPart[], bosId: number | null): LinkLayout {
  return lay(parts, bosId, false);
}

/**
 * The parts as an ordinary prompt (the `prompt` algorithm). Segments still mark each chunk's tokens, for the
 * attention maps; as in a linked layout, the prompt's BOS belongs to the first chunk when the prompt starts with one.
 */
export function promptLayout(parts: LinkPart[], bosId: number | null): LinkLayout {
  return lay(parts, bosId, true);
}

function lay(parts: LinkPart[], bosId: number | null, prompt: boolean): LinkLayout {
  const tokens: number[] = [];
  const positions: number[] = [];
  const segments: Segment[] = [];
  const uncached: number[] = [];
  const first = parts[0];
  const startsWithBos = !prompt && first?.kind === 'cache' && first.chunk.variant.kind === 'plain' && first.chunk.tokens[0] === bosId;
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
      part.tokens.forEach((t, j) => push(t, part.positions && !prompt ? part.positions[j] : next, false));
      return;
    }
    const c = part.chunk;
    if (prompt) {
      const start = i === 0 ? 0 : tokens.length;
      for (const t of chunkText(c, bosId)) push(t, next, false);
      segments.push({ part: i, start, length: tokens.length - start, chunk: c });
      return;
    }
    const fixed = c.variant.kind === 'promptcache';
    const start = tokens.length;
    const base = next;
    c.tokens.forEach((t, j) => push(t, fixed ? c.positions[j] : base + j, true));
    segments.push({ part: i, start, length: c.tokens.length, chunk: c });
  });
  if (tokens.length === 0) throw new Error('Nothing to link: no parts');
  return { tokens, positions, segments, uncached };
}
