/**
 * CacheBlend's loading controller (EuroSys '25, §5): when cached KV comes
 * from a slow tier layer by layer, recomputing a fraction r of the tokens of
 * layer l can hide behind loading layer l + 1. Given the measured time to
 * load one cached token-layer and to recompute one, the ratio that makes the
 * two equal is r = load / recompute; recomputing less than that saves no
 * time, more delays the first token. The controller picks that r, never
 * below a quality floor (and at most 1).
 *
 * Estimates are moving averages over observed links; before any
 * observation it uses CacheBlend's default of 15%.
 */
/** What the controller reads of a finished link (link.ts's LinkResult carries all of it). */
export interface LinkObservation {
  layout: { segments: readonly { length: number }[] };
  ttft: { loadMs: number; recomputeMs: number; gpuMs: number | null };
  recomputedRowLayers: number;
}

const ALPHA = 0.3;

export class LoadingController {
  /** Milliseconds to load and stage one cached token for one layer. */
  loadMsPerTokenLayer: number | null = null;
  /** Milliseconds to recompute one token through one layer. */
  recomputeMsPerTokenLayer: number | null = null;

  /** Updates the estimates from a finished link. */
  observe(r: LinkObservation, nLayers: number, _kvDim: number) {
    const cached = r.layout.segments.reduce((n, s) => n + s.length, 0);
    const avg = (old: number | null, v: number) => (old === null ? v : old + ALPHA * (v - old));
    if (cached > 0 && r.ttft.loadMs > 0) this.loadMsPerTokenLayer = avg(this.loadMsPerTokenLayer, r.ttft.loadMs / (cached * nLayers));
    const recompute = r.ttft.gpuMs ?? r.ttft.recomputeMs;
    // Per row-layer actually run: cacheblend's full first layers count, not only the rows it keeps.
    if (r.recomputedRowLayers > 0 && recompute > 0) this.recomputeMsPerTokenLayer = avg(this.recomputeMsPerTokenLayer, recompute / r.recomputedRowLayers);
  }

  /** The CacheBlend ratio for a prompt with `cachedTokens` cached of `totalTokens`, at least `floor`. */
  chooseRatio(cachedTokens: number, totalTokens: number, floor: number): number {
    if (this.loadMsPerTokenLayer === null || this.recomputeMsPerTokenLayer === null || cachedTokens === 0) return Math.max(floor, 0.15);
    // Time to load a layer of the cached tokens, and the share of them recomputable in that time.
    const loadPerLayer = this.loadMsPerTokenLayer * cachedTokens;
    const uncached = totalTokens - cachedTokens;
    const spare = loadPerLayer / this.recomputeMsPerTokenLayer - uncached;
    return Math.min(1, Math.max(floor, spare / cachedTokens));
  }
}
