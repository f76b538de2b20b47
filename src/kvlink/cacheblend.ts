/**
 * CacheBlend's selective recompute (EuroSys '25, §4; Appendix A for RoPE).
 *
 * Layers before and at the check layer (1 by default) are recomputed for
 * every token. At the check layer each cached token's KV deviation is
 * measured as the squared L2 distance between its cached and fresh V (the
 * measure the authors' code uses), and the fraction r of cached tokens with
 * the largest deviation is kept, together with every uncached token; later
 * layers recompute only those. With `gradual`, the check layer keeps 2r and
 * the next layer narrows to r by the same measure there (the paper's
 * gradual filtering, which the authors' code does not implement).
 */
import { halvesToFloats, type Engine, type KVCache, type ScoresRequest } from '../engine';
import type { LinkAlgorithm } from './algorithms';
import type { LinkLayout } from './layout';

type CacheBlend = Extract<LinkAlgorithm, { kind: 'cacheblend' }>;

/** Squared V deviation per cached row at `layer`: fresh (in the cache now) against the chunk's stored V. */
async function deviations(engine: Engine, cache: KVCache, layout: LinkLayout, layer: number): Promise<Map<number, number>> {
  const N = layout.tokens.length;
  // Rows kept as halves are widened for this one comparison, not through LayerRows.v, which would keep the f32
  // copy beside the halves (in the store's RAM tier, counted at two bytes a value).
  const floats = (a: Float32Array | Uint16Array) => (a instanceof Uint16Array ? halvesToFloats(a) : a);
  const fresh = floats(await engine.readValues(cache, layer, 0, N));
  const kvDim = fresh.length / N;
  const dev = new Map<number, number>();
  for (const s of layout.segments) {
    const rows = s.chunk.layers[layer];
    const stored = floats(rows.halves?.v ?? rows.v);
    for (let i = 0; i < s.length; i++) {
      let d = 0;
      for (let c = 0; c < kvDim; c++) d += (fresh[(s.start + i) * kvDim + c] - stored[i * kvDim + c]) ** 2;
      dev.set(s.start + i, d);
    }
  }
  return dev;
}

/** The `ratio` of `candidates` with the largest deviation (ties to the earlier row), sorted. */
function topRows(dev: Map<number, number>, candidates: number[], ratio: number, total: number): number[] {
  const n = Math.min(candidates.length, Math.ceil(ratio * total - 1e-9));
  return [...candidates].sort((a, b) => dev.get(b)! - dev.get(a)! || a - b).slice(0, n).sort((a, b) => a - b);
}

export async function cacheBlendPass(
  engine: Engine, cache: KVCache, layout: LinkLayout, a: CacheBlend,
  scoresFor: (passRows: number[]) => ScoresRequest | undefined = () => undefined,
  /** Called before each layer runs (the linker loads that layer's cached rows there). */
  beforeLayer: (l: number) => void | Promise<void> = () => {},
) {
  const N = layout.tokens.length;
  const L = engine.config.nLayers;
  const check = Math.min(a.checkLayer, L - 1);
  const all = layout.tokens.map((_, i) => i);
  const always = new Set([...layout.uncached, N - 1]);
  const cachedRows = all.filter((i) => !always.has(i));
  const pass = engine.pass(cache);
  pass.begin(layout.tokens, all);
  let rowLayers = 0;
  // Host ms recording and submitting the layers (TtftBreakdown.recordMs).
  let recordMs = 0;
  const runLayer = async (l: number) => {
    await beforeLayer(l);
    rowLayers += pass.rows.length;
    const t = performance.now();
    pass.layer(l, { scores: scoresFor(Array.from(pass.rows)) });
    engine.ops.d.flush();
    recordMs += performance.now() - t;
  };
  for (let l = 0; l <= check; l++) await runLayer(l);
  let chosen = cachedRows;
  const steps = a.gradual && check + 1 < L ? [Math.min(1, 2 * a.r), a.r] : [a.r];
  for (let s = 0; s < steps.length; s++) {
    const layer = check + s;
    const dev = await deviations(engine, cache, layout, layer);
    chosen = topRows(dev, chosen, steps[s], cachedRows.length);
    const keepRows = [...new Set([...chosen, ...always])].sort((x, y) => x - y);
    // Cache row → its index among the pass's rows (a lookup per kept row: 32K rows made indexOf scans take seconds).
    const at = new Map(Array.from(pass.rows, (r, i) => [r, i] as const));
    pass.select(keepRows.map((r) => at.get(r)!));
    if (s + 1 < steps.length) await runLayer(layer + 1);
  }
  for (let l = check + steps.length; l < L; l++) await runLayer(l);
  await engine.sync();
  const recomputedAt = performance.now();
  const rows = Array.from(pass.rows);
  return { rows, rowLayers, recordMs, recomputedAt, logits: () => pass.logits([rows.length - 1]), scores: () => pass.scores() };
}
