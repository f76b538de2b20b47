/**
 * The linking algorithms, in one table: for each, its kind, label, parameter (k or r, with its range and default),
 * the compile variant whose chunks it links and the paper it comes from (/work papers: see the project's README).
 * The studio's composer, Compare, attention panel and charts, every command's --help and the evaluation runner
 * render from it; a spec is the kind, or `kind:param` (`legolink:16`, `cacheblend:0.15`).
 */
export type LinkAlgorithm =
  | { kind: 'prompt' }
  | { kind: 'naive' }
  | { kind: 'full' }
  | { kind: 'cacheblend'; r: number; checkLayer: number; gradual: boolean; /** cacheblend:auto — the loading controller picks r, not below this floor */ auto?: number }
  | { kind: 'legolink'; k: number }
  | { kind: 'attnlink'; k: number }
  | { kind: 'legolink0' }
  | { kind: 'promptcache' };

export type AlgorithmKind = LinkAlgorithm['kind'];
export type CompileVariantName = 'plain' | 'legolink0' | 'promptcache';

export interface AlgorithmParam {
  name: 'k' | 'r';
  /** What the number means, as the composer's field says it. */
  label: string;
  min: number;
  max: number;
  step: number;
  default: number;
  integer: boolean;
}

export interface AlgorithmInfo {
  kind: AlgorithmKind;
  /** The name papers and charts use: LegoLink-k, CacheBlend-r. */
  label: string;
  /** The composer's menu entry. */
  menu: string;
  /** A reference recomputes everything; a linking algorithm reuses cached rows. */
  role: 'reference' | 'linking';
  /** Which rows it recomputes. */
  recomputes: string;
  param: AlgorithmParam | null;
  /** More spellings of the spec than kind:param. */
  extraSpecs?: string;
  /** The compile variant whose chunks it links. */
  variant: CompileVariantName;
  /** Where it comes from: a paper of the project's reading list and its section, or null for the ordinary prompt. */
  paper: { title: string; where: string } | null;
  /** Run by the studio's Compare (at its default parameter). */
  compare: boolean;
  /** Drawn by the studio's TTFT sweep and `bench:scaling` by default. */
  sweep: boolean;
}

const EPIC = 'EPIC (ICML 2025)';
const K = (what: string): AlgorithmParam => ({ name: 'k', label: `k (${what})`, min: 0, max: 4096, step: 1, default: 16, integer: true });

/** Every algorithm, the two references first (the order of Compare, the evaluation and the menus). */
export const ALGORITHM_CATALOGUE: readonly AlgorithmInfo[] = [
  {
    kind: 'prompt', label: 'Prompt', menu: 'Ordinary prompt (one BOS, no cache)', role: 'reference',
    recomputes: 'every token of the ordinary prompt: one BOS, the chunks\' own tokens; reads no cache',
    param: null, variant: 'plain', paper: null, compare: true, sweep: false,
  },
  {
    kind: 'full', label: 'Full recompute', menu: 'Full recompute (each chunk keeps its BOS)', role: 'reference',
    recomputes: 'every token of the linked layout, each chunk keeping its BOS (no reuse)',
    param: null, variant: 'plain', paper: { title: EPIC, where: 'Full Recompute baseline' }, compare: true, sweep: true,
  },
  {
    kind: 'naive', label: 'Naive', menu: 'Naive (no recompute)', role: 'linking', recomputes: 'the uncached tokens only',
    param: null, variant: 'plain', paper: { title: EPIC, where: 'Naive baseline' }, compare: true, sweep: false,
  },
  {
    kind: 'cacheblend', label: 'CacheBlend-r', menu: 'CacheBlend-r', role: 'linking',
    recomputes: 'layers 0 and 1 fully, then the share r of cached tokens with the largest V deviation at layer 1, plus the uncached',
    param: { name: 'r', label: 'r (share of tokens recomputed)', min: 0, max: 1, step: 0.05, default: 0.15, integer: false },
    extraSpecs: 'cacheblend:auto[:floor] (the loading controller picks r), cacheblend:r:gradual',
    variant: 'plain', paper: { title: 'CacheBlend (EuroSys 2025)', where: '§4; loading controller §5' }, compare: true, sweep: true,
  },
  {
    kind: 'legolink', label: 'LegoLink-k', menu: 'LegoLink-k', role: 'linking',
    recomputes: 'the first k tokens of every chunk not at the start of the prompt (a chunk at row 0 keeps its sinks), plus the uncached',
    param: K('tokens recomputed per chunk'), variant: 'plain', paper: { title: EPIC, where: '§4' }, compare: true, sweep: true,
  },
  {
    kind: 'legolink0', label: 'LegoLink-0', menu: 'LegoLink-0 (sink-free compile)', role: 'linking',
    recomputes: 'the uncached tokens only, on chunks compiled after 4 sink tokens that are then dropped',
    param: null, variant: 'legolink0', paper: { title: EPIC, where: '§4' }, compare: true, sweep: false,
  },
  {
    kind: 'attnlink', label: 'AttnLink-k', menu: 'AttnLink-k', role: 'linking',
    recomputes: 'k/2 tokens on each side of every chunk boundary, plus the uncached',
    param: K('tokens recomputed per boundary'), variant: 'plain', paper: { title: 'Epic (earlier version)', where: 'AttnLink' }, compare: false, sweep: false,
  },
  {
    kind: 'promptcache', label: 'Prompt Cache', menu: 'Prompt Cache (chunks as modules at fixed positions)', role: 'linking',
    recomputes: 'the uncached tokens only; chunks are modules that keep their schema positions',
    param: null, variant: 'promptcache', paper: { title: 'Prompt Cache (MLSys 2024)', where: '§3' }, compare: false, sweep: false,
  },
];

const BY_KIND = new Map(ALGORITHM_CATALOGUE.map((a) => [a.kind as string, a]));

/** The catalogue's entry for a kind (`legolink`), or undefined. */
export function algorithmInfo(kind: string): AlgorithmInfo | undefined {
  return BY_KIND.get(kind);
}

/** The spec of an algorithm at a parameter value (clamped into its range, rounded where it is a count) or at its default. */
export function specFor(kind: AlgorithmKind, value?: number): string {
  const p = algorithmInfo(kind)?.param;
  if (!p) return kind;
  const v = value === undefined || !Number.isFinite(value) ? p.default : Math.min(p.max, Math.max(p.min, value));
  return `${kind}:${p.integer ? Math.round(v) : v}`;
}

/** Every algorithm at its default parameter, in catalogue order. */
export const ALL_ALGORITHMS: readonly string[] = ALGORITHM_CATALOGUE.map((a) => specFor(a.kind));
/** What the studio's Compare runs side by side: the two references first. */
export const COMPARE_ALGORITHMS: readonly string[] = ALGORITHM_CATALOGUE.filter((a) => a.compare).map((a) => specFor(a.kind));
/** What the TTFT sweep and `bench:scaling` draw by default. */
export const SWEEP_ALGORITHMS: readonly string[] = ALGORITHM_CATALOGUE.filter((a) => a.sweep).map((a) => specFor(a.kind));

/** Parses a spec: the plain names, `kind:param` within the parameter's range, `cacheblend:auto[:floor]`, `cacheblend:r:gradual`. */
export function parseAlgorithm(spec: string): LinkAlgorithm {
  const [name, arg, extra] = spec.trim().toLowerCase().split(':');
  const info = algorithmInfo(name);
  if (!info) throw new Error(`Unknown linking algorithm "${spec}" (known: ${ALGORITHM_CATALOGUE.map(specSyntax).join(', ')})`);
  if (!info.param) {
    if (arg !== undefined) throw new Error(`"${spec}": ${name} takes no parameter`);
    return { kind: info.kind } as LinkAlgorithm;
  }
  if (info.kind === 'cacheblend' && arg === 'auto') {
    const floor = extra === undefined ? 0.05 : Number(extra);
    if (!(floor >= 0 && floor <= 1)) throw new Error(`Bad quality floor in "${spec}": expected a number in [0, 1]`);
    return { kind: 'cacheblend', r: floor, checkLayer: 1, gradual: false, auto: floor };
  }
  const p = info.param;
  const v = arg === undefined || arg === '' ? p.default : Number(arg);
  if (!Number.isFinite(v) || v < p.min || v > p.max) {
    throw new Error(`Bad parameter in "${spec}": ${info.kind === 'cacheblend' ? 'cacheblend ratio' : p.name} must be in [${p.min}, ${p.max}]`);
  }
  if (info.kind === 'cacheblend') {
    if (extra !== undefined && extra !== 'gradual') throw new Error(`"${spec}": the only cacheblend option is :gradual`);
    return { kind: 'cacheblend', r: v, checkLayer: 1, gradual: extra === 'gradual' };
  }
  if (extra !== undefined) throw new Error(`"${spec}": ${name} takes one parameter`);
  return { kind: info.kind as 'legolink' | 'attnlink', k: Math.round(v) };
}

/** The spec of a parsed algorithm, in its one spelling (`legolink:16`, `cacheblend:auto:0.05`). */
export function formatAlgorithm(a: LinkAlgorithm): string {
  if (a.kind === 'cacheblend') return a.auto !== undefined ? `cacheblend:auto:${a.auto}` : `cacheblend:${a.r}${a.gradual ? ':gradual' : ''}`;
  if (a.kind === 'legolink' || a.kind === 'attnlink') return `${a.kind}:${a.k}`;
  return a.kind;
}

/**
 * The compile variant whose chunks a spec links: LegoLink-0's sink-free caches, Prompt Cache's modules, or plain.
 * `prompt` reads no cached row, but a request names its chunks by cache ids, so it takes the plain ones.
 */
export function compileVariantOf(spec: string): CompileVariantName {
  return algorithmInfo(parseAlgorithm(spec).kind)!.variant;
}

/** How a spec is written: `legolink:k`, `naive`. */
export function specSyntax(a: AlgorithmInfo): string {
  return a.param ? `${a.kind}:${a.param.name}` : a.kind;
}
