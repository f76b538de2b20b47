/**
 * npm run bench:engine [-- --json out.json] [--lengths 128,512,2048]
 *
 * Prefill throughput (tokens/s and achieved GFLOP/s, attention included) for
 * each bundled model at several lengths, decode tokens/s, and, in the same run
 * on the same adapter, the best GFLOP/s of a standalone matmul of comparable
 * shape over our matmul variants. Every figure carries the adapter's name.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { openModel } from '../node/session';
import type { ModelConfig } from '../engine/model/config';
import { bestMatmul } from './matmul';
import { KNOWN_MODELS } from '../eval/tokenizer';

const { values: a } = parseArgs({
  options: { json: { type: 'string' }, lengths: { type: 'string' }, models: { type: 'string' }, budget: { type: 'string', default: '120' } },
});
/** Seconds one prefill may be expected to take before a longer length is skipped (unless --lengths names it). */
const budgetS = Number(a.budget);
const wanted = a.models ? a.models.split(',') : Object.keys(KNOWN_MODELS);
const forced = !!a.lengths;
const lengths = (a.lengths ?? '128,512,2048').split(',').map(Number);

/** FLOPs of a causal prefill of n tokens: 2 per weight per token in matmuls, plus QKᵀ and PV over n(n+1)/2 pairs. */
export function prefillFlops(c: ModelConfig, n: number): { matmul: number; attention: number } {
  const qDim = c.nHeads * c.headDim, kvDim = c.nKvHeads * c.headDim;
  const perLayer = c.hidden * (qDim + 2 * kvDim) + qDim * c.hidden + 3 * c.hidden * c.intermediate;
  const matmul = 2 * n * (perLayer * c.nLayers + c.hidden * c.vocabSize / n);
  let pairs = 0;
  for (const kind of c.layerKinds) {
    const w = kind === 'local' ? Math.min(c.slidingWindow, n) : n;
    pairs += n * w - (w * (w - 1)) / 2;
  }
  return { matmul, attention: 4 * pairs * c.nHeads * c.headDim };
}

const results: Record<string, unknown>[] = [];
for (const name of wanted) {
  const path = KNOWN_MODELS[name];
  if (!path || !existsSync(path)) {
    console.log(`${name}: not present, skipped (run npm start to fetch it)`);
    continue;
  }
  const s = await openModel(path);
  const adapter = s.gpu.adapter.description;
  const c = s.model.config;
  const e = s.engine;
  const mm = await bestMatmul(e, 2048, c.hidden, c.nHeads * c.headDim + 2 * c.nKvHeads * c.headDim, s.engine.model!.dtype);
  console.log(`[${adapter}] ${name}: best standalone matmul [2048x${c.hidden}]·[${c.hidden}x${c.nHeads * c.headDim + 2 * c.nKvHeads * c.headDim}] = ${mm.gflops.toFixed(2)} GFLOP/s (${mm.variant})`);
  let gflopsSoFar = 0;
  for (const n of lengths) {
    const f0 = prefillFlops(c, n);
    const estimateS = gflopsSoFar ? (f0.matmul + f0.attention) / gflopsSoFar / 1e9 : 0;
    if (!forced && estimateS > budgetS) {
      console.log(`[${adapter}] ${name} prefill ${n}: skipped, about ${estimateS.toFixed(0)} s on this adapter (over --budget ${budgetS}; --lengths ${n} forces it)`);
      continue;
    }
    const tokens = Array.from({ length: n }, (_, i) => (i * 7919 + 13) % c.vocabSize);
    const cache = e.newCache(n + 64);
    await e.prefill(cache, tokens.slice(0, Math.min(n, 16)), undefined, { logits: 'last' }); // warm pipelines
    cache.truncate(0);
    const t0 = performance.now();
    await e.prefill(cache, tokens, undefined, { logits: 'last' });
    const ms = performance.now() - t0;
    const f = prefillFlops(c, n);
    const gflops = (f.matmul + f.attention) / ms / 1e6;
    gflopsSoFar = gflops;
    let decode = 0;
    if (n === lengths[0]) {
      const steps = 16;
      const t1 = performance.now();
      for (let i = 0; i < steps; i++) await e.decode(cache, tokens[i]);
      decode = (steps / (performance.now() - t1)) * 1000;
    }
    cache.destroy();
    const row = { adapter, model: name, tokens: n, prefill_ms: ms, tokens_per_s: (n / ms) * 1000, gflops, attention_share: f.attention / (f.matmul + f.attention), matmul_best_gflops: mm.gflops, ratio_to_matmul: gflops / mm.gflops, decode_tokens_per_s: decode || undefined };
    results.push(row);
    console.log(
      `[${adapter}] ${name} prefill ${n}: ${ms.toFixed(0)} ms, ${row.tokens_per_s.toFixed(0)} tok/s, ${gflops.toFixed(2)} GFLOP/s ` +
        `(${(row.attention_share * 100).toFixed(0)}% attention) = ${(row.ratio_to_matmul * 100).toFixed(0)}% of the matmul` +
        (decode ? `; decode ${decode.toFixed(1)} tok/s` : ''),
    );
  }
  s.close();
}
if (a.json) writeFileSync(a.json, JSON.stringify({ results }, null, 1));
