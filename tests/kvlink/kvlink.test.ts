/**
 * KVLink invariants, on stories260K (llama2.c) and the random-weight
 * Qwen2 and Gemma 3 fixtures:
 *  - full equals a plain prefill of the concatenated tokens;
 *  - legolink:k with k at least the chunk length equals full;
 *  - cacheblend:1.0 equals full;
 *  - naive with a single chunk equals a plain prefill;
 *  - any order of the chunks, repeats included, links (and full/legolink
 *    agree for each order), while naive differs from full once there are
 *    several chunks (the point of the papers);
 *  - the recomputed rows of each algorithm are the ones the papers name;
 *  - prompt equals a plain prefill of one BOS, the chunks' own tokens and
 *    the question, reads no cached row, and differs from full, whose chunks
 *    keep their BOS;
 *  - a cached chunk's rows, placed at position 0 or thousands of positions
 *    on (keys re-rotated), equal the chunk prefilled alone there, also with
 *    the Llama fixture's llama3-scaled RoPE.
 * Tolerance: 1e-4 absolute plus relative on logits (the same f32 math in a
 * different grouping of rows); for re-rotated rows, rerotationTolerance
 * (tests/helpers/compare.ts), which grows with the position.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Engine } from '../../src/engine/engine';
import { loadModelFiles } from '../../src/engine/formats/load';
import { loadHfFolder } from '../../src/engine/formats/hf';
import { nodeFolderFiles, nodeModelFiles } from '../../src/node/files';
import { loadKernelSources } from '../../src/node/gpu';
import { compileChunk, type CompileContext } from '../../src/kvcompile/compile';
import { link } from '../../src/kvlink/link';
import { parseAlgorithm, staticRecomputeRows } from '../../src/kvlink/algorithms';
import { layoutParts, textOnlyChunk } from '../../src/kvlink/layout';
import type { LinkPart } from '../../src/types/kv';
import { assertClose, harness } from '../helpers/gpu';
import { rerotationTolerance, scaledMaxDiff } from '../helpers/compare';

const MODELS = {
  stories: async () => loadModelFiles(nodeModelFiles(join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin')), 'stories260K'),
  qwen2: async () => loadHfFolder(nodeFolderFiles(join(import.meta.dirname, '../fixtures/hf/qwen2')), { name: 'qwen2' }),
  gemma3: async () => loadHfFolder(nodeFolderFiles(join(import.meta.dirname, '../fixtures/hf/gemma3')), { name: 'gemma3' }),
  llama3: async () => loadHfFolder(nodeFolderFiles(join(import.meta.dirname, '../fixtures/hf/llama3-smollm')), { name: 'llama3-smollm' }),
};

async function setup(name: keyof typeof MODELS) {
  const h = await harness();
  const m = await MODELS[name]();
  const engine = Engine.create(h.gpu, loadKernelSources());
  await engine.load(m.config, m.weights);
  // The Qwen2 fixture has no BOS; give the chunks one so every model exercises the same layout.
  const bosId = m.config.bosId ?? 1;
  const ctx: CompileContext = { engine, modelId: name, tokenizerId: name, bosId };
  return { engine, ctx, bosId, V: m.config.vocabSize };
}

const toks = (n: number, seed: number, V: number) => Array.from({ length: n }, (_, i) => 3 + ((i * 29 + seed * 17) % (V - 3)));

async function plainLast(engine: Engine, tokens: number[], positions: number[]) {
  const c = engine.newCache();
  const l = (await engine.prefill(c, tokens, positions)).logits;
  c.destroy();
  return l;
}

for (const name of ['stories', 'qwen2', 'gemma3'] as const) {
  test(`${name}: full, legolink:k>=len and cacheblend:1.0 equal a plain prefill, for every chunk order`, async () => {
    const { engine, ctx, bosId, V } = await setup(name);
    const chunks = await Promise.all([toks(7, 1, V), toks(5, 2, V), toks(9, 3, V)].map((t) => compileChunk(ctx, t)));
    const question = toks(4, 9, V);
    for (const order of [[0, 1, 2], [2, 0, 1], [1, 1, 2]]) {
      const parts: LinkPart[] = [...order.map((i) => ({ kind: 'cache' as const, chunk: chunks[i] })), { kind: 'text', tokens: question }];
      const layout = layoutParts(parts, bosId);
      const want = await plainLast(engine, layout.tokens, layout.positions);
      for (const spec of ['full', 'legolink:16', 'cacheblend:1.0']) {
        const r = await link(engine, parts, parseAlgorithm(spec), { bosId });
        assertClose(r.logits, want, 1e-4, 1e-4, `${name} ${spec} order ${order}`);
        r.cache.destroy();
      }
      const naive = await link(engine, parts, parseAlgorithm('naive'), { bosId });
      let diff = 0;
      for (let i = 0; i < want.length; i++) diff = Math.max(diff, Math.abs(naive.logits[i] - want[i]));
      assert.ok(diff > 1e-3, `${name}: naive should differ from full with several chunks (max diff ${diff})`);
      naive.cache.destroy();
    }
    engine.destroy();
  });

  test(`${name}: naive with a single chunk equals a plain prefill`, async () => {
    const { engine, ctx, bosId, V } = await setup(name);
    const chunk = await compileChunk(ctx, toks(11, 4, V));
    const parts: LinkPart[] = [{ kind: 'cache', chunk }, { kind: 'text', tokens: toks(3, 5, V) }];
    const layout = layoutParts(parts, bosId);
    const r = await link(engine, parts, parseAlgorithm('naive'), { bosId });
    assert.equal(r.recomputed, 3);
    assert.equal(r.recomputedRowLayers, 3 * engine.config.nLayers, 'a static algorithm runs its rows through every layer');
    assertClose(r.logits, await plainLast(engine, layout.tokens, layout.positions), 1e-4, 1e-4, 'naive single chunk');
    r.cache.destroy();
    engine.destroy();
  });
}

for (const name of ['stories', 'gemma3'] as const) {
  test(`${name}: prompt equals a plain prefill of [BOS] + the chunks' tokens + question, and differs from full`, async () => {
    const { engine, ctx, bosId, V } = await setup(name);
    const texts = [toks(7, 1, V), toks(5, 2, V), toks(9, 3, V)];
    const chunks = await Promise.all(texts.map((t) => compileChunk(ctx, t)));
    const question = toks(4, 9, V);
    const tail: LinkPart = { kind: 'text', tokens: question };
    const parts: LinkPart[] = [...chunks.map((chunk) => ({ kind: 'cache' as const, chunk })), tail];
    const plain = [bosId, ...texts.flat(), ...question];
    const want = await plainLast(engine, plain, plain.map((_, i) => i));
    const r = await link(engine, parts, parseAlgorithm('prompt'), { bosId });
    assert.deepEqual(r.layout.tokens, plain, 'one BOS, then the chunks and the question');
    assert.deepEqual(r.layout.uncached, plain.map((_, i) => i), 'every row computed');
    assert.equal(r.recomputed, plain.length);
    // Chunk 1 holds the prompt's BOS, as in a linked layout; the others only their own tokens.
    assert.deepEqual(r.layout.segments.map((s) => [s.start, s.length]), [[0, 8], [8, 5], [13, 9]]);
    assert.equal(r.ttft.loadMs, 0, 'nothing loaded or staged');
    assert.equal(r.ttft.lookupMs, 0);
    assertClose(r.logits, want, 1e-4, 1e-4, `${name} prompt`);
    // Chunks known by their tokens alone (no rows) give the same prompt, bit for bit.
    const bare = await link(engine, [...texts.map((t, i) => ({ kind: 'cache' as const, chunk: textOnlyChunk(`t${i}`, t, bosId) })), tail], parseAlgorithm('prompt'), { bosId });
    assertClose(bare.logits, r.logits, 0, 0, `${name} prompt from tokens only`);
    const full = await link(engine, parts, parseAlgorithm('full'), { bosId });
    assert.equal(full.layout.tokens.length, plain.length + 2, 'full keeps chunks 2 and 3\'s BOS');
    let diff = 0;
    for (let i = 0; i < want.length; i++) diff = Math.max(diff, Math.abs(full.logits[i] - r.logits[i]));
    assert.ok(diff > 1e-3, `${name}: full over chunks with their own BOS should differ from the ordinary prompt (max diff ${diff})`);
    for (const x of [r, bare, full]) x.cache.destroy();
    engine.destroy();
  });
}

// Key re-rotation through the linker: uncached text at position 4000 puts the second chunk at 4001.., thousands of
// positions from where it was compiled, while the first stays at 0, where it was. naive reads their rows as stored.
for (const name of ['stories', 'gemma3', 'llama3'] as const) {
  test(`${name}: linked chunk rows at position 0 and at 4001 equal each chunk prefilled alone there`, async (t) => {
    const { engine, ctx, bosId, V } = await setup(name);
    const [a, b] = await Promise.all([toks(7, 1, V), toks(9, 2, V)].map((t) => compileChunk(ctx, t)));
    const parts: LinkPart[] = [
      { kind: 'cache', chunk: a }, { kind: 'text', tokens: [5], positions: [4000] }, { kind: 'cache', chunk: b }, { kind: 'text', tokens: toks(3, 9, V) },
    ];
    const r = await link(engine, parts, parseAlgorithm('naive'), { bosId });
    const { segments, positions } = r.layout;
    assert.deepEqual(segments.map((s) => positions[s.start]), [0, 4001]);
    for (const s of segments) {
      const alone = engine.newCache(s.length);
      const at = positions.slice(s.start, s.start + s.length);
      await engine.prefill(alone, s.chunk.tokens, at, { logits: 'none' });
      const tol = rerotationTolerance(at[at.length - 1]);
      let worst = 0;
      for (let l = 0; l < engine.config.nLayers; l++) {
        const want = await engine.readRows(alone, l, 0, s.length);
        const got = await engine.readRows(r.cache, l, s.start, s.length);
        worst = Math.max(worst, scaledMaxDiff(got.k, want.k), scaledMaxDiff(got.v, want.v));
        assertClose(got.k, want.k, tol, tol, `${name}: chunk at ${at[0]}, layer ${l} keys`);
        assertClose(got.v, want.v, tol, tol, `${name}: chunk at ${at[0]}, layer ${l} values`);
      }
      t.diagnostic(`chunk at ${at[0]}: ${worst.toExponential(2)} (tolerance ${tol.toExponential(2)})`);
      alone.destroy();
    }
    r.cache.destroy();
    engine.destroy();
  });
}

test('recomputed rows: legolink, attnlink, naive and cacheblend pick what the papers say', async () => {
  const { engine, ctx, bosId, V } = await setup('stories');
  const a = await compileChunk(ctx, toks(9, 1, V)); // rows 0..9 (BOS + 9)
  const b = await compileChunk(ctx, toks(9, 2, V)); // rows 10..19
  const c = await compileChunk(ctx, toks(9, 3, V)); // rows 20..29
  const parts: LinkPart[] = [{ kind: 'cache', chunk: a }, { kind: 'cache', chunk: b }, { kind: 'cache', chunk: c }, { kind: 'text', tokens: [5, 6] }];
  const layout = layoutParts(parts, bosId);
  assert.deepEqual(layout.uncached, [30, 31]);
  assert.deepEqual(staticRecomputeRows(layout, parseAlgorithm('naive')), [30, 31]);
  assert.deepEqual(staticRecomputeRows(layout, parseAlgorithm('legolink:2')), [10, 11, 20, 21, 30, 31]);
  assert.deepEqual(staticRecomputeRows(layout, parseAlgorithm('attnlink:4')), [8, 9, 10, 11, 18, 19, 20, 21, 30, 31]);
  // After uncached text (a chat template's headers: BOS at row 0, then 3 tokens), the first chunk no longer starts
  // the prompt: its first rows are sinks like any other chunk's, so legolink and attnlink recompute them too.
  const templated = layoutParts([{ kind: 'text', tokens: [7, 8, 9] }, { kind: 'cache', chunk: a }, { kind: 'cache', chunk: b }, { kind: 'text', tokens: [5, 6] }], bosId);
  assert.deepEqual(templated.segments.map((s) => s.start), [4, 14]);
  assert.deepEqual(staticRecomputeRows(templated, parseAlgorithm('legolink:2')), [0, 1, 2, 3, 4, 5, 14, 15, 24, 25]);
  assert.deepEqual(staticRecomputeRows(templated, parseAlgorithm('attnlink:4')), [0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 24, 25]);
  const cb = await link(engine, parts, parseAlgorithm('cacheblend:0.2'), { bosId });
  // 20% of the 30 cached rows, plus the two uncached ones.
  assert.equal(cb.recomputed, 6 + 2);
  // Its work: layers 0 and 1 (the check layer) over all 32 rows, the kept 8 through the rest.
  const L = engine.config.nLayers;
  assert.equal(cb.recomputedRowLayers, 2 * 32 + 8 * (L - 2));
  assert.ok(cb.ttft.recomputeMs > 0 && cb.ttft.totalMs >= cb.ttft.recomputeMs);
  cb.cache.destroy();
  const gradual = await link(engine, parts, parseAlgorithm('cacheblend:0.2:gradual'), { bosId });
  assert.equal(gradual.recomputed, 8);
  // Gradual filtering: 2r (12 cached + 2) at layer 2, then r.
  assert.equal(gradual.recomputedRowLayers, 2 * 32 + 14 + 8 * (L - 3));
  gradual.cache.destroy();
  assert.throws(() => parseAlgorithm('cacheblend:2'), /ratio/);
  assert.throws(() => parseAlgorithm('bogus'), /Unknown linking algorithm/);
  engine.destroy();
});

test('legolink0: sink tokens are dropped from the cache, and only uncached rows are recomputed', async () => {
  const { engine, ctx, bosId, V } = await setup('stories');
  const t = toks(6, 7, V);
  const c = await compileChunk(ctx, t, { kind: 'legolink0' });
  assert.deepEqual(c.tokens, t);
  assert.equal(c.layers[0].k.length, t.length * (engine.model!.kvDim));
  const plain = await compileChunk(ctx, t);
  assert.notEqual(c.id, plain.id, 'variant is part of the cache id');
  assert.equal((await compileChunk(ctx, t)).id, plain.id, 'same chunk, same id');
  const parts: LinkPart[] = [{ kind: 'cache', chunk: c }, { kind: 'cache', chunk: c }, { kind: 'text', tokens: [7] }];
  const r = await link(engine, parts, parseAlgorithm('legolink0'), { bosId });
  assert.equal(r.layout.tokens[0], bosId);
  assert.equal(r.recomputed, 2, 'the leading BOS and the question');
  r.cache.destroy();
  engine.destroy();
});

test('link returns the question rows\' attention scores over the whole prompt, for every algorithm', async () => {
  const { engine, ctx, bosId, V } = await setup('stories');
  const chunks = [await compileChunk(ctx, toks(6, 1, V)), await compileChunk(ctx, toks(6, 2, V))];
  const question = toks(3, 9, V);
  const parts: LinkPart[] = [...chunks.map((chunk) => ({ kind: 'cache' as const, chunk })), { kind: 'text', tokens: question }];
  for (const spec of ['naive', 'legolink:2', 'cacheblend:0.5', 'full']) {
    const r = await link(engine, parts, parseAlgorithm(spec), { bosId, scores: { layer: 3, heads: [1, 2] } });
    assert.equal(r.scores.length, 2, spec);
    const N = r.layout.tokens.length;
    for (const s of r.scores) {
      assert.deepEqual(s.rows, [14, 15, 16], `${spec}: the question's rows`);
      assert.equal(s.keys, N);
      // The first question row sees rows 0..14 only.
      assert.ok(s.scores.subarray(0, 15).every(Number.isFinite) && s.scores.subarray(15, N).every((x) => x === -Infinity), spec);
    }
    r.cache.destroy();
  }
  engine.destroy();
});

test('scores of several layers in one link equal one link per layer', async () => {
  const { engine, ctx, bosId, V } = await setup('stories');
  const chunks = [await compileChunk(ctx, toks(6, 1, V)), await compileChunk(ctx, toks(6, 2, V))];
  const parts: LinkPart[] = [...chunks.map((chunk) => ({ kind: 'cache' as const, chunk })), { kind: 'text', tokens: toks(3, 9, V) }];
  for (const spec of ['naive', 'cacheblend:0.5']) {
    const all = await link(engine, parts, parseAlgorithm(spec), { bosId, scores: { layer: [0, 2, 4], heads: [0, 3] } });
    all.cache.destroy();
    assert.deepEqual(all.scores.map((s) => `${s.layer}.${s.head}`).sort(), ['0.0', '0.3', '2.0', '2.3', '4.0', '4.3'], spec);
    for (const layer of [0, 2, 4]) {
      const one = await link(engine, parts, parseAlgorithm(spec), { bosId, scores: { layer, heads: [0, 3] } });
      one.cache.destroy();
      for (const s of one.scores) {
        const m = all.scores.find((x) => x.layer === layer && x.head === s.head)!;
        assert.deepEqual(m.rows, s.rows);
        assertClose(m.scores, s.scores, 0, 0, `${spec} layer ${layer} head ${s.head}`);
      }
    }
  }
  engine.destroy();
});

test('pipelined and sequential loading give the same logits; GPU time and overlap are reported', async () => {
  const { engine, ctx, bosId, V } = await setup('gemma3');
  const chunks = [await compileChunk(ctx, toks(12, 1, V)), await compileChunk(ctx, toks(9, 2, V))];
  const parts: LinkPart[] = [...chunks.map((chunk) => ({ kind: 'cache' as const, chunk })), { kind: 'text', tokens: toks(3, 9, V) }];
  for (const spec of ['legolink:4', 'cacheblend:0.3']) {
    const a = await link(engine, parts, parseAlgorithm(spec), { bosId, pipeline: true });
    const b = await link(engine, parts, parseAlgorithm(spec), { bosId, pipeline: false });
    assertClose(a.logits, b.logits, 0, 0, spec);
    assert.equal(a.ttft.pipelined, true);
    assert.equal(b.ttft.pipelined, false);
    if (engine.gpu.adapter.hasTimestamps) {
      assert.ok(a.ttft.gpuMs! > 0 && a.ttft.overlapMs! >= 0, `${spec}: gpu ${a.ttft.gpuMs} overlap ${a.ttft.overlapMs}`);
    }
    a.cache.destroy();
    b.cache.destroy();
  }
  engine.destroy();
});

test('rows from the GPU tier are placed with each layer\'s recompute, in its submission; host rows go up in one of their own', async () => {
  const { engine, ctx, bosId, V } = await setup('stories');
  const { GpuTier } = await import('../../src/kvstore/gpu-tier');
  const L = engine.config.nLayers;
  const chunks = [await compileChunk(ctx, toks(12, 1, V)), await compileChunk(ctx, toks(9, 2, V)), await compileChunk(ctx, toks(7, 3, V))];
  const tier = new GpuTier(engine.gpu.device, Infinity);
  const onTier = await Promise.all(chunks.map((c) => tier.put(c)));
  const partsOf = (cs: typeof chunks): LinkPart[] => [...cs.map((chunk) => ({ kind: 'cache' as const, chunk })), { kind: 'text', tokens: toks(3, 9, V) }];
  const d = engine.ops.d;
  for (const spec of ['naive', 'legolink:4']) {
    const counted = async (cs: typeof chunks) => {
      await link(engine, partsOf(cs), parseAlgorithm(spec), { bosId }).then((r) => r.cache.destroy());
      const n0 = d.submits;
      const r = await link(engine, partsOf(cs), parseAlgorithm(spec), { bosId });
      return { r, submits: d.submits - n0 };
    };
    const host = await counted(chunks);
    const gpu = await counted(onTier);
    assertClose(gpu.r.logits, host.r.logits, 0, 0, spec);
    // A layer's recompute is one submission; host rows add one a layer for their uploads, the GPU tier's none.
    assert.equal(host.submits - gpu.submits, L, `${spec}: ${host.submits} submissions from the host, ${gpu.submits} from the GPU tier`);
    assert.ok(gpu.submits <= L + 4, `${spec}: ${gpu.submits} submissions for ${L} layers`);
    // The breakdown counts the same submissions, and times the recompute's recording within the recompute.
    for (const { r, submits } of [host, gpu]) {
      const t = r.ttft;
      assert.equal(t.submits, submits, `${spec}: the breakdown's submissions`);
      assert.ok(t.recordMs > 0 && t.cacheMs > 0 && t.waitMs >= 0, `${spec}: ${JSON.stringify(t)}`);
      assert.ok(t.recordMs + t.cacheMs + t.waitMs <= t.recomputeMs, `${spec}: recording ${t.recordMs}, cache ${t.cacheMs}, waiting ${t.waitMs} ms of a ${t.recomputeMs} ms recompute`);
      assert.ok(t.submitMs > 0 && t.submitMs <= t.totalMs, `${spec}: ${t.submitMs} ms in finish and submit of a ${t.totalMs} ms TTFT`);
    }
    host.r.cache.destroy();
    gpu.r.cache.destroy();
  }
  tier.clear();
  engine.destroy();
});

test('loading controller: r hides recompute behind loading, bounded by the floor and by 1', async () => {
  const { LoadingController } = await import('../../src/kvlink/controller');
  const c = new LoadingController();
  assert.equal(c.chooseRatio(1000, 1010, 0.05), 0.15, 'CacheBlend default before any measurement');
  c.loadMsPerTokenLayer = 0.002;
  c.recomputeMsPerTokenLayer = 0.01;
  // Loading a layer of 1000 tokens takes 2 ms: time to recompute 200 tokens, 10 of them uncached.
  assert.ok(Math.abs(c.chooseRatio(1000, 1010, 0.05) - 0.19) < 1e-9);
  assert.equal(c.chooseRatio(1000, 1010, 0.3), 0.3, 'quality floor');
  c.loadMsPerTokenLayer = 1;
  assert.equal(c.chooseRatio(1000, 1010, 0.05), 1);
  const { engine, ctx, bosId, V } = await setup('stories');
  const chunks = [await compileChunk(ctx, toks(20, 1, V)), await compileChunk(ctx, toks(20, 2, V))];
  const parts: LinkPart[] = [...chunks.map((chunk) => ({ kind: 'cache' as const, chunk })), { kind: 'text', tokens: [5, 6] }];
  const ctl = new LoadingController();
  const r = await link(engine, parts, parseAlgorithm('cacheblend:auto:0.1'), { bosId, controller: ctl });
  assert.ok(r.recomputed >= Math.ceil(0.1 * 42) + 2, 'at least the floor');
  assert.ok(ctl.loadMsPerTokenLayer! > 0 && ctl.recomputeMsPerTokenLayer! > 0, 'the link was observed');
  assert.ok(r.recomputedRowLayers > r.recomputed * engine.config.nLayers, 'cacheblend runs its first layers over every row');
  assert.equal(ctl.recomputeMsPerTokenLayer, (r.ttft.gpuMs ?? r.ttft.recomputeMs) / r.recomputedRowLayers,
    'recompute speed is per row-layer actually run');
  r.cache.destroy();
  engine.destroy();
});
