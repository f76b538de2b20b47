/**
 * The linking algorithms and which cached rows each recomputes.
 *
 * | spec | recomputes | from |
 * | --- | --- | --- |
 * | prompt | every token of the ordinary prompt: one BOS, the chunks' own tokens, no cache read | the reference a user knows |
 * | naive | uncached tokens only | EPIC baseline |
 * | full | every token of the linked layout, each chunk keeping its BOS (no reuse) | EPIC baseline (Full Recompute) |
 * | cacheblend:auto[:floor] | as cacheblend, with r picked by the loading controller (controller.ts) | CacheBlend §5 |
 * | cacheblend:r | layer 0 and the check layer fully, then the r of cached tokens with the largest squared V deviation at the check layer, plus uncached | CacheBlend §4 |
 * | legolink:k | first k tokens of every chunk but the first, plus uncached | EPIC §4 |
 * | attnlink:k | k/2 tokens each side of every chunk boundary, plus uncached | Epic (earlier) |
 * | legolink0 | uncached only, on caches compiled with 4 sink tokens dropped | EPIC §4 |
 * | promptcache | uncached only; modules stay at their schema positions | Prompt Cache §3 |
 *
 * The two references differ only in the chunks' BOS rows: `full` is EPIC's
 * Full Recompute over the linked layout, where every chunk keeps the BOS it
 * was compiled with (EPIC Fig. 4), while `prompt` is the question asked as an
 * ordinary prompt, the chunks' tokens after the prompt's one BOS
 * (layout.ts `promptLayout`), everything computed and nothing read from a cache.
 */
import type { LinkLayout } from './layout';

export type LinkAlgorithm =
  | { kind: 'prompt' }
  | { kind: 'naive' }
  | { kind: 'full' }
  | { kind: 'cacheblend'; r: number; checkLayer: number; gradual: boolean; /** cacheblend:auto — the loading controller picks r, not below this floor */ auto?: number }
  | { kind: 'legolink'; k: number }
  | { kind: 'attnlink'; k: number }
  | { kind: 'legolink0' }
  | { kind: 'promptcache' };

/** The algorithms compared side by side by default (the studio's Compare): the two references first. */
export const DEFAULT_ALGORITHMS = ['prompt', 'full', 'naive', 'cacheblend:0.15', 'legolink:16', 'legolink0'];

/** Parses "cacheblend:0.15", "legolink:16", "cacheblend:0.15:gradual" and the plain names. */
export function parseAlgorithm(spec: string): LinkAlgorithm {
  const [name, arg, extra] = spec.trim().toLowerCase().split(':');
  const num = (d: number) => {
    const v = arg === undefined || arg === '' ? d : Number(arg);
    if (!Number.isFinite(v) || v < 0) throw new Error(`Bad parameter in "${spec}"`);
    return v;
  };
  switch (name) {
    case 'prompt':
    case 'naive':
    case 'full':
    case 'legolink0':
    case 'promptcache':
      return { kind: name };
    case 'cacheblend': {
      if (arg === 'auto') {
        const floor = extra === undefined ? 0.05 : Number(extra);
        if (!(floor >= 0 && floor <= 1)) throw new Error(`Bad quality floor in "${spec}"`);
        return { kind: 'cacheblend', r: floor, checkLayer: 1, gradual: false, auto: floor };
      }
      const r = num(0.15);
      if (r > 1) throw new Error(`cacheblend ratio must be in [0, 1], got ${r}`);
      return { kind: 'cacheblend', r, checkLayer: 1, gradual: extra === 'gradual' };
    }
    case 'legolink':
    case 'attnlink':
      return { kind: name, k: Math.round(num(16)) };
    default:
      throw new Error(`Unknown linking algorithm "${spec}" (known: prompt, naive, full, cacheblend:r, legolink:k, attnlink:k, legolink0, promptcache)`);
  }
}

/**
 * The compile variant whose chunks an algorithm links: LegoLink-0's sink-free caches, Prompt Cache's modules, or
 * plain. `prompt` reads no cached row, but a request names its chunks by cache ids, so it takes the plain ones
 * (the store's index gives their tokens).
 */
export function compileVariantOf(spec: string): 'plain' | 'legolink0' | 'promptcache' {
  const kind = parseAlgorithm(spec).kind;
  return kind === 'legolink0' || kind === 'promptcache' ? kind : 'plain';
}

export function formatAlgorithm(a: LinkAlgorithm): string {
  if (a.kind === 'cacheblend') return a.auto !== undefined ? `cacheblend:auto:${a.auto}` : `cacheblend:${a.r}${a.gradual ? ':gradual' : ''}`;
  if (a.kind === 'legolink' || a.kind === 'attnlink') return `${a.kind}:${a.k}`;
  return a.kind;
}

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
