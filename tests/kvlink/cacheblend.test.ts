/**
 * CacheBlend's row selection (src/kvlink/cacheblend.ts), on stories260K:
 * the cached rows it keeps after the check layer are the r of them whose V
 * at that layer deviates most (squared L2) from the chunk's stored V.
 *
 * The reference deviations come from a plain prefill of the linked prompt:
 * every row is recomputed up to the check layer, so the fresh V there is a
 * plain prefill's. The case is chosen so that the choice is decided by the
 * deviations: the first chunk's rows (which lead the prompt, so nothing
 * precedes them) deviate least and are also the first cached rows, so
 * keeping the lowest, or the first, rows gives a different set; a random
 * 6 of the 30 cached rows would match with probability 1/C(30, 6) ≈ 2e-6.
 * The 6th and 7th largest deviations are at least 1% apart, so f32 rounding
 * between the pass and the prefill cannot swap them.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Engine } from '../../src/engine/engine';
import { loadModelFiles } from '../../src/engine/formats/load';
import { nodeModelFiles } from '../../src/node/files';
import { loadKernelSources } from '../../src/node/gpu';
import { compileChunk } from '../../src/kvcompile/compile';
import { cacheBlendPass } from '../../src/kvlink/cacheblend';
import { parseAlgorithm } from '../../src/kvlink/algorithms';
import { layoutParts } from '../../src/kvlink/layout';
import type { LinkPart } from '../../src/types/kv';
import { harness } from '../helpers/gpu';

const STORIES = join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin');
const toks = (n: number, seed: number, V: number) => Array.from({ length: n }, (_, i) => 3 + ((i * 29 + seed * 17) % (V - 3)));
const asc = (rows: number[]) => [...rows].sort((x, y) => x - y);

test('cacheblend keeps the cached rows whose V deviates most at the check layer', async () => {
  const h = await harness();
  const m = await loadModelFiles(nodeModelFiles(STORIES), 'stories260K');
  const engine = Engine.create(h.gpu, loadKernelSources());
  await engine.load(m.config, m.weights);
  const bosId = m.config.bosId ?? 1;
  const V = m.config.vocabSize;
  const ctx = { engine, modelId: 'stories', tokenizerId: 'stories', bosId };
  const chunks = await Promise.all([1, 2, 3].map((seed) => compileChunk(ctx, toks(9, seed, V))));
  const parts: LinkPart[] = [...chunks.map((chunk) => ({ kind: 'cache' as const, chunk })), { kind: 'text', tokens: [5, 6] }];
  const layout = layoutParts(parts, bosId);
  const N = layout.tokens.length;
  const algo = parseAlgorithm('cacheblend:0.2');
  assert.ok(algo.kind === 'cacheblend' && !algo.gradual);
  const check = algo.checkLayer;

  // Reference: squared V deviation of every cached row at the check layer.
  const plain = engine.newCache(N);
  await engine.prefill(plain, layout.tokens, layout.positions, { logits: 'none' });
  const fresh = (await engine.readRows(plain, check, 0, N)).v;
  plain.destroy();
  const kvDim = engine.model!.kvDim;
  const dev = new Map<number, number>();
  for (const s of layout.segments) {
    const stored = s.chunk.layers[check].v;
    for (let i = 0; i < s.length; i++) {
      let d = 0;
      for (let c = 0; c < kvDim; c++) d += (fresh[(s.start + i) * kvDim + c] - stored[i * kvDim + c]) ** 2;
      dev.set(s.start + i, d);
    }
  }
  const always = new Set([...layout.uncached, N - 1]);
  const cached = [...dev.keys()].filter((r) => !always.has(r));
  assert.equal(cached.length, 30);
  const n = Math.ceil(algo.r * cached.length);
  const byDev = [...cached].sort((x, y) => dev.get(y)! - dev.get(x)!);
  const top = asc(byDev.slice(0, n));
  assert.ok(dev.get(byDev[n - 1])! > 1.01 * dev.get(byDev[n])!, `a clear gap after the ${n} largest deviations`);
  assert.notDeepEqual(top, asc(byDev.slice(-n)), 'the lowest deviations are other rows');
  assert.notDeepEqual(top, cached.slice(0, n), 'the first cached rows are other rows');

  // The pass itself, with each layer's cached rows staged before it runs, as link() does.
  const cache = engine.newCache(N);
  cache.setPositions(0, layout.positions);
  const writer = engine.rowWriter(cache, layout.segments.map((s) => ({ start: s.start, positions: layout.positions.slice(s.start, s.start + s.length) })));
  const r = await cacheBlendPass(engine, cache, layout, algo, undefined, (l) => void writer.layer(l, layout.segments.map((s) => s.chunk.layers[l])));
  assert.deepEqual(r.rows, asc([...top, ...always]), `kept rows (deviations: ${top.map((x) => `${x}:${dev.get(x)!.toExponential(2)}`).join(' ')})`);
  cache.destroy();
  engine.destroy();
});
