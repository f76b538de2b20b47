/**
 * Which cached rows each static algorithm recomputes (catalogue.ts lists the algorithms, their parameters and papers).
 *
 * The two references differ only in the chunks' BOS rows: `full` is EPIC's
 * Full Recompute over the linked layout, where every chunk keeps the BOS it
 * was compiled with (EPIC Fig. 4), while `prompt` is the question asked as an
 * ordinary prompt, the chunks' tokens after the prompt's one BOS
 * (layout.ts `promptLayout`), everything computed and nothing read from a cache.
 */
import type { LinkLayout } from './layout';
import type { LinkAlgorithm } from './catalogue';

export { compileVariantOf, formatAlgorithm, parseAlgorithm, type LinkAlgorithm } from './catalogue';

/**
 * Rows recomputed by the static algorithms (all but cacheblend, which decides
 * per layer). Always includes the uncached rows and the last row, whose
 * logits give the first token.
 */
export function staticRecomputeRows(layout: LinkLayout, a: LinkAlgorithm): number[] {
  const set = new Set<number>(layout.uncached);
  set.add(layout.tokens.length - 1);
  // EPIC leaves out "the first chunk" because it starts the prompt: its first tokens are the prompt's own sinks.
  // A chunk after uncached text (a chat template's system and user headers) starts nothing, so it is treated
  // like every other chunk: only a chunk at row 0 is left out.
  const chunks = layout.segments.filter((s) => s.start > 0);
  if (a.kind === 'full' || a.kind === 'prompt') return layout.tokens.map((_, i) => i);
  if (a.kind === 'legolink') {
    for (const s of chunks) for (let i = 0; i < Math.min(a.k, s.length); i++) set.add(s.start + i);
  } else if (a.kind === 'attnlink') {
    const half = Math.floor(a.k / 2);
    for (const s of chunks) {
      for (let i = Math.max(0, s.start - half); i < s.start + Math.min(half, s.length); i++) set.add(i);
    }
  } else if (a.kind === 'cacheblend') {
    throw new Error('cacheblend chooses its rows per layer');
  }
  return [...set].sort((x, y) => x - y);
}
