/**
 * Greedy decode steps replayed from an earlier step's tape (Engine.replaySteps, Dispatcher.replay): a replayed
 * step must issue exactly the launches a recorded one would, the same pipelines, bind groups, workgroups and
 * uniform words, so the same run is made twice on one engine and cache, with replay off and on, and the two
 * launch logs, tokens and cache rows compared whole. Runs cross what a tape depends on: attention's key slices
 * growing as the keys do (1 to 2 at 128 keys), the RoPE table by position growing past 4096, the cache growing
 * past its capacity; on the GPU profile (a step's RoPE, cache write and q/k norm folded into attention_decode,
 * slices merged by the output projection, Gemma 3's sandwich norms folded where x is staged, a sliding window) and
 * on the CPU profile's unfused launches, with f16, f32 and Q8_0 weights. Each run must replay most of its steps.
 * Fails (checked by hand) with the row's position or the cache's length left untagged, with the cache's or the RoPE
 * table's version left out of the step's key (the replayed launches then bind destroyed buffers), and with the slot
 * a tape starts from left out of the tapes' key (then no step is ever replayed).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Engine, hfConfigToModelConfig, type KVCache } from '../../src/engine';
import { loadHfFolder } from '../../src/engine/formats/hf';
import { nodeFolderFiles } from '../../src/node/files';
import { loadKernelSources } from '../../src/node/gpu';
import { openModel } from '../../src/node/session';
import { syntheticWeights } from '../../src/bench/shapes';
import { harness } from '../helpers/gpu';

const h = await harness();
const engines: Engine[] = [];
after(() => engines.forEach((e) => e.destroy()));

const tiny = hfConfigToModelConfig({
  architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_size: 64, intermediate_size: 128, num_hidden_layers: 2,
  num_attention_heads: 4, num_key_value_heads: 2, vocab_size: 256, rms_norm_eps: 1e-5, rope_theta: 10000, max_position_embeddings: 8192,
  tie_word_embeddings: true,
}, { hasQkvBias: false, hasLmHead: false }, 'tiny');

async function engine(load: (e: Engine) => Promise<unknown>): Promise<Engine> {
  const e = Engine.create(h.gpu, loadKernelSources());
  engines.push(e);
  await load(e);
  return e;
}
type Make = () => Promise<Engine>;
const synthetic = (quant?: 'q8_0'): Make => () => engine((e) => e.load(tiny, syntheticWeights(tiny, 7, quant), { weightDtype: 'f16', dequantize: false }));
const gemmaModel = loadHfFolder(nodeFolderFiles(join(import.meta.dirname, '../fixtures/hf/gemma3')), { name: 'gemma3' });
const gemma: Make = () => engine(async (e) => {
  const m = await gemmaModel;
  await e.load(m.config, m.weights, { weightDtype: 'f32' });
});

interface Run { tokens: number[]; log: string[]; replayed: number; rows: string }

/**
 * Prefills `context` rows (random tokens at positions from `pos0`) into a cache of `capacity`, then runs `steps`
 * greedy steps `depth` ahead, logging every launch: its pipeline, bind group, workgroups and uniform words.
 */
async function run(e: Engine, o: { context: number; pos0?: number; capacity?: number; steps: number; depth?: number }, replay: boolean): Promise<Run> {
  const d = e.ops.d;
  const bgId = new Map<GPUBindGroup, number>();
  const cache = e.newCache(o.capacity ?? o.context + o.steps + 4);
  try {
    const tokens = Array.from({ length: o.context }, (_, i) => (i * 37 + 11) % e.config.vocabSize);
    await e.prefill(cache, tokens, Array.from({ length: o.context }, (_, i) => (o.pos0 ?? 0) + i));
    const log: string[] = [];
    d.onLaunch = (pipe, bg, groups, words) => {
      if (!bgId.has(bg)) bgId.set(bg, bgId.size);
      log.push(`${pipe.label} bg${bgId.get(bg)} [${groups.join(',')}] ${Array.from(d.lastWords(words)).join(',')}`);
    };
    e.replaySteps = replay;
    const r0 = d.replayed;
    const got = await e.greedySteps(cache, 3, { count: o.steps, stopIds: [], depth: o.depth ?? 3 });
    d.onLaunch = undefined;
    const rows: string[] = [];
    for (let l = 0; l < e.config.nLayers; l++) {
      const r = await e.readRows(cache, l, 0, cache.length);
      rows.push(Array.from(r.k).join(','), Array.from(r.v).join(','));
    }
    return { tokens: got.tokens, log, replayed: d.replayed - r0, rows: rows.join(';') };
  } finally {
    d.onLaunch = undefined;
    e.replaySteps = true;
    cache.destroy();
  }
}

/**
 * Runs the case with replay off, then on, each on an engine of its own (both starting from nothing grown, no
 * pipeline or bind group made): equal logs (bind groups numbered as each run first meets them), tokens and rows;
 * most steps replayed.
 */
async function same(make: Make, o: Parameters<typeof run>[1], minReplayedSteps: number, set?: Settings) {
  const off = await onProfile(await make(), (e) => run(e, o, false), set);
  const on = await onProfile(await make(), (e) => run(e, o, true), set);
  assert.equal(off.replayed, 0);
  assert.deepEqual(on.tokens, off.tokens);
  assert.equal(on.log.length, off.log.length, 'as many launches');
  for (let i = 0; i < on.log.length; i++) assert.equal(on.log[i], off.log[i], `launch ${i} of ${on.log.length}`);
  assert.ok(on.rows === off.rows, 'the same cache rows');
  const perStep = off.log.length / o.steps;
  assert.ok(on.replayed >= minReplayedSteps * (perStep - 2), `${on.replayed} launches replayed of ${on.log.length} (${o.steps} steps)`);
  return { off, on };
}

/** Kernel settings of a case: the GPU profile's launches on this adapter (fused decode, attention_decode's step) or not. */
type Settings = { gpu: boolean; stageX?: boolean };

async function onProfile<T>(e: Engine, fn: (e: Engine) => Promise<T>, set: Settings = { gpu: true }): Promise<T> {
  if (set.gpu) {
    e.ops.matmulProfile = 'gpu';
    // The register-summing GEMV: gemv_sg's one subgroup a column runs serially on SwiftShader.
    e.ops.gemvVariant = 'gemv';
    e.ops.stageX = set.stageX;
  }
  try {
    return await fn(e);
  } finally {
    e.destroy();
    engines.splice(engines.indexOf(e), 1);
  }
}

test('GPU profile, f16 weights: a replayed step issues the recorded launches, across key slices growing from 1 to 2', async () => {
  const { on } = await same(synthetic(), { context: 120, steps: 14 }, 8);
  assert.ok(on.log.some((l) => l.includes('STEP=true') && l.includes('SPLIT=false')) && on.log.some((l) => l.includes('STEP=true') && l.includes('SPLIT=true')), 'the slices changed during the run');
  assert.ok(on.log.some((l) => l.startsWith('gemv') && l.includes('COMBINE=true')), 'slices merged by the output projection');
});

test('GPU profile, Q8_0 weights kept packed: the same launches replayed', async () => {
  const { on } = await same(synthetic('q8_0'), { context: 20, steps: 10 }, 6);
  assert.ok(on.log.some((l) => l.startsWith('gemv') && l.includes('Q8_0=true')), 'packed weights');
});

test('the RoPE table by position grows past 4096 and the cache past its capacity mid-run: the steps after replay the new buffers', async () => {
  // Rows at positions 4080-4091: the table, made to cover 4096 positions, grows at the 5th step (position 4096); the
  // cache of 20 rows at the 9th (row 20).
  await same(synthetic(), { context: 12, pos0: 4080, capacity: 20, steps: 20 }, 10);
});

test('Gemma 3 (sliding window, q/k norm in the step, sandwich norms folded where x is staged): the same launches replayed', async () => {
  for (const stageX of [false, true]) {
    const { on } = await same(gemma, { context: 6, steps: 12 }, 7, { gpu: true, stageX });
    assert.ok(on.log.some((l) => l.includes('QKNORM=true')), 'q/k norm folded');
    if (stageX) assert.ok(on.log.some((l) => l.includes('POST=true')), 'sandwich norm folded');
  }
});

test('CPU profile (unfused launches, attention.wgsl over bounds uploaded each step): the same launches replayed, slices growing', async () => {
  const { on } = await same(synthetic(), { context: 120, steps: 14, depth: 2 }, 8, { gpu: false });
  assert.ok(on.log.some((l) => l.startsWith('rope_scatter')) && on.log.some((l) => l.startsWith('glu')), 'unfused');
});

test('stories260K: replayed steps give serial greedy\'s tokens, at depth 1 (never taped) and more', async () => {
  const path = join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin');
  const s = await openModel(path);
  try {
    const e = s.engine;
    const prompt = s.model.tokenizer.encode('Once upon a time', { addBos: true });
    const serial = async () => {
      const cache = e.newCache(64);
      const { logits } = await e.prefill(cache, prompt);
      let t = logits.indexOf(Math.max(...logits));
      const out = [t];
      for (let i = 0; i < 20; i++) out.push((t = (await e.step(cache, t, undefined, { greedy: true })).token!));
      cache.destroy();
      return out;
    };
    const want = await serial();
    assert.ok(new Set(want).size > 5, `a varied continuation: ${want}`);
    for (const depth of [1, 3]) {
      const cache: KVCache = e.newCache(64);
      const { logits } = await e.prefill(cache, prompt);
      const first = logits.indexOf(Math.max(...logits));
      const r0 = e.ops.d.replayed;
      const got = await e.greedySteps(cache, first, { count: 20, stopIds: [], depth });
      cache.destroy();
      assert.deepEqual([first, ...got.tokens], want, `depth ${depth}`);
      if (depth > 1) assert.ok(e.ops.d.replayed - r0 > 0, 'replayed');
    }
  } finally {
    s.close();
  }
});

