/**
 * Decode's kernels chosen by measurement (Engine.tuneDecode, model/tune.ts), on stories260K with the 'gpu'
 * profile forced. With an injected clock: the ways tried (defaults first, then each choice's alternatives from the
 * best so far), the fastest kept only past the margin, the engine left with it, restored when timing fails, and
 * nothing done on the 'cpu' profile. With the real clock: every way runs and is timed, and every way gives the
 * tokens the CPU profile's serial greedy steps give, so tuning can change speed only.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openModel } from '../../src/node/session';
import { describeSettings, TUNE_MARGIN, type DecodeSettings, type Engine } from '../../src/engine';
import { tuneDecode, type Tunable } from '../../src/engine/model/tune';

const s = await openModel(join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin'));
const e = s.engine;
after(() => s.close());

const key = (x: DecodeSettings) => `${x.gemv}/${x.fuse ? 'fused' : 'unfused'}/${x.attention}/k${x.keysPerThread ?? 1}${x.foldCombine === false ? '/launched' : ''}${x.stageX ? '/staged' : ''}${x.wide ? '/wide' : ''}`;
const gemvs = () => (e.ops.subgroupMin ? ['gemv_sg', 'gemv'] : ['gemv']);

/** Runs `fn` with the engine on the 'gpu' profile and no tuned or forced decode settings, restored after. */
async function onGpuProfile<T>(fn: (e: Engine) => Promise<T>): Promise<T> {
  const saved = { profile: e.ops.matmulProfile, fuse: e.ops.fuse, gemv: e.ops.gemvVariant, attention: e.ops.decodeAttention, keys: e.ops.decodeKeysPerThread, fold: e.ops.foldCombine, stage: e.ops.stageX, wide: e.ops.gemvWide };
  e.ops.matmulProfile = 'gpu';
  e.ops.fuse = e.ops.gemvVariant = e.ops.decodeAttention = e.ops.decodeKeysPerThread = e.ops.foldCombine = e.ops.stageX = e.ops.gemvWide = undefined;
  try {
    return await fn(e);
  } finally {
    Object.assign(e.ops, { matmulProfile: saved.profile, fuse: saved.fuse, gemvVariant: saved.gemv, decodeAttention: saved.attention, decodeKeysPerThread: saved.keys, foldCombine: saved.fold, stageX: saved.stage, gemvWide: saved.wide });
  }
}

test('the cpu profile is not tuned: null, and the engine unchanged', async () => {
  const saved = e.ops.matmulProfile;
  e.ops.matmulProfile = 'cpu';
  try {
    let measured = 0, started = 0;
    const r = await e.tuneDecode({ measure: async () => ++measured, onStart: () => started++ });
    assert.equal(r, null);
    assert.equal(measured, 0);
    assert.equal(started, 0);
    assert.equal(e.ops.decodeAttention, undefined);
    assert.equal(e.ops.fuses(1), false);
  } finally {
    e.ops.matmulProfile = saved;
  }
});

test('the defaults first, then each choice from the best so far; the fastest past the margin is kept', async () => {
  await onGpuProfile(async () => {
    const defaults: DecodeSettings = { gemv: e.ops.pickGemv(), fuse: e.ops.fuses(1), attention: e.ops.pickAttention(1, e.config.headDim), keysPerThread: 1, foldCombine: true, stageX: false, wide: false };
    assert.deepEqual(defaults, { gemv: gemvs()[0], fuse: true, attention: 'keys', keysPerThread: 1, foldCombine: true, stageX: false, wide: false });
    // Unfused is 10% faster, plain gemv 1% faster (inside the margin: not taken), 'lanes', 'grouped' and 'grouped-keys'
    // (stories260K's heads group in twos) the same, 'rows' slower, 4 keys a thread 10%
    // faster. Unfused, the fold of attention_combine is not tried: it matters only fused. Staging x is tried last.
    const ms = (x: DecodeSettings) => 10 * (x.fuse ? 1 : 0.9) * (x.gemv === 'gemv' && e.ops.subgroupMin ? 0.99 : 1) * (x.attention === 'rows' ? 1.2 : 1) * (x.keysPerThread === 4 ? 0.9 : 1);
    const seen: string[] = [];
    let started = 0;
    const r = (await e.tuneDecode({ measure: async (x) => (seen.push(key(x)), ms(x)), onStart: () => started++, warmMs: 0, reps: 2 }))!;
    assert.equal(started, 1);
    const g = defaults.gemv;
    const unfused = `${g}/unfused/keys/k1`, k4 = `${g}/unfused/keys/k4`;
    const expected = [key(defaults), ...(e.ops.subgroupMin ? ['gemv/fused/keys/k1'] : []), unfused, `${g}/unfused/lanes/k1`, `${g}/unfused/grouped/k1`, `${g}/unfused/grouped-keys/k1`, `${g}/unfused/rows/k1`, `${g}/unfused/keys/k2`, k4, `${g}/unfused/keys/k8`, `${k4}/staged`];
    assert.deepEqual([...new Set(seen)], expected);
    // One untimed run of the defaults, two timed; then each alternative in turns with the best so far.
    const turns = (alt: string, best: string) => [alt, best, alt, best];
    const alts = expected.slice(1);
    // Plain gemv (inside the margin) was not kept, unfused was: 'lanes', 'grouped', 'grouped-keys', 'rows' and 2 and 4 keys a thread are timed against
    // unfused; 4 keys were kept, so 8 and the staged x against them.
    const bests = alts.map((a) => (a === `${g}/unfused/keys/k8` || a === `${k4}/staged` ? k4 : a.includes('/unfused/') && a !== unfused ? unfused : key(defaults)));
    assert.deepEqual(seen, [key(defaults), key(defaults), key(defaults), ...alts.flatMap((a, i) => turns(a, bests[i]))]);
    assert.deepEqual(r.trials.map((t) => key(t.settings)), expected);
    assert.deepEqual(r.chosen, { gemv: g, fuse: false, attention: 'keys', keysPerThread: 4, foldCombine: true, stageX: false, wide: false });
    assert.deepEqual(r.defaults, defaults);
    assert.equal(describeSettings(r.chosen), `${g}, unfused, attention_decode, 4 keys a thread`);
    assert.equal(describeSettings({ ...r.chosen, keysPerThread: 1 }), `${g}, unfused, attention_decode`);
    assert.equal(describeSettings({ gemv: 'gemv', fuse: true, attention: 'rows', keysPerThread: 4 }), 'gemv, fused, attention');
    assert.equal(describeSettings({ gemv: 'gemv', fuse: true, attention: 'lanes', keysPerThread: 4 }), 'gemv, fused, attention_decode (lanes)');
    assert.equal(describeSettings({ gemv: 'gemv', fuse: true, attention: 'keys', keysPerThread: 2, foldCombine: false }), 'gemv, fused, attention_decode, 2 keys a thread, attention_combine launched');
    assert.equal(describeSettings({ gemv: 'gemv', fuse: true, attention: 'keys', keysPerThread: 1, stageX: true }), 'gemv, fused, attention_decode, x staged');
    assert.equal(describeSettings({ gemv: 'gemv', fuse: false, attention: 'keys', keysPerThread: 1, stageX: true }), 'gemv, unfused, attention_decode, x staged');
    assert.ok(0.01 < TUNE_MARGIN && TUNE_MARGIN < 0.1);
    // The engine now decodes that way.
    assert.equal(e.ops.fuses(1), false);
    assert.equal(e.ops.pickGemv(), g);
    assert.equal(e.ops.pickAttention(1, e.config.headDim), 'keys');
    assert.equal(e.ops.decodeKeysPerThread, 4);
    // Prefill's rows keep their own kernels.
    assert.equal(e.ops.fuses(64), false);
    assert.equal(e.ops.pickAttention(64, e.config.headDim), 'tiled');
  });
});

test('drift does not favour whichever way ran last: a GPU slow at first keeps the defaults when every way is equal', async () => {
  await onGpuProfile(async () => {
    // The first six runs take twice as long (an idle GPU's clocks rising); every way is equally fast after. Three
    // runs a way, as on a GPU (this adapter, an emulated one, would get one: Engine's EMULATED_TUNING).
    let n = 0;
    const r = (await e.tuneDecode({ measure: async () => (++n <= 6 ? 20 : 10), warmMs: 0, reps: 3 }))!;
    assert.ok(n > 6);
    assert.deepEqual(r.chosen, r.defaults);
    for (const t of r.trials) assert.equal(t.msPerStep, 10, key(t.settings));
  });
});

test('on an emulated adapter (this one) each way is timed once over 2 steps, unless the caller says otherwise', async () => {
  assert.equal(e.gpu.adapter.isFallback, true);
  await onGpuProfile(async () => {
    let n = 0;
    const r = (await e.tuneDecode({ measure: async () => (n++, 10) }))!;
    assert.deepEqual([r.steps, r.reps], [2, 1]);
    // One warm run and one timed run of the defaults, then each alternative once in turn with the best.
    assert.equal(n, 2 + 2 * (r.trials.length - 1));
    assert.equal((await e.tuneDecode({ measure: async () => 10, reps: 3, steps: 8 }))!.reps, 3);
  });
});

test('a faster one-row attention is kept for decode only; a failed timing restores the settings', async () => {
  await onGpuProfile(async () => {
    const r = (await e.tuneDecode({ measure: async (x) => (x.attention === 'rows' ? 5 : 10), warmMs: 0 }))!;
    assert.equal(r.chosen.attention, 'rows');
    assert.ok(r.trials.every((t) => t.settings.keysPerThread === 1), 'keys a thread are not tried once attention_decode is out');
    assert.equal(e.ops.pickAttention(1, e.config.headDim), 'rows');
    assert.equal(e.ops.pickAttention(4, e.config.headDim), 'rows');
    assert.equal(e.ops.pickAttention(32, e.config.headDim), 'tiled');
    // Still fused: the fold and the staged x were tried, and neither kept (as fast).
    assert.deepEqual(r.trials.filter((t) => t.settings.foldCombine === false).map((t) => key(t.settings)), [`${r.chosen.gemv}/fused/rows/k1/launched`]);
    assert.deepEqual(r.trials.filter((t) => t.settings.stageX).map((t) => key(t.settings)), [`${r.chosen.gemv}/fused/rows/k1/staged`]);
    assert.equal(e.ops.foldCombine, true);
    assert.equal(e.ops.stageX, false);
    const before = { fuse: e.ops.fuse, gemv: e.ops.gemvVariant, attention: e.ops.decodeAttention, keys: e.ops.decodeKeysPerThread, fold: e.ops.foldCombine, stage: e.ops.stageX };
    let n = 0;
    await assert.rejects(e.tuneDecode({ measure: async (x) => (++n === 6 ? Promise.reject(new Error('device lost')) : x.fuse ? 10 : 1), warmMs: 0 }), /device lost/);
    assert.deepEqual({ fuse: e.ops.fuse, gemv: e.ops.gemvVariant, attention: e.ops.decodeAttention, keys: e.ops.decodeKeysPerThread, fold: e.ops.foldCombine, stage: e.ops.stageX }, before);
  });
});

test('attention_combine launched, where that is faster, is kept: the fold off for decode', async () => {
  await onGpuProfile(async () => {
    const r = (await e.tuneDecode({ measure: async (x) => (x.foldCombine === false ? 9 : 10), warmMs: 0 }))!;
    assert.equal(r.trials.at(-2)!.settings.foldCombine, false, 'the fold is the fifth choice tried');
    assert.deepEqual(r.chosen, { ...r.defaults, foldCombine: false });
    assert.equal(e.ops.foldCombine, false);
    assert.equal(e.ops.combineFold(1, e.config.nHeads * e.config.headDim, e.config.nHeads), 0);
  });
});

test('x staged in workgroup memory, where that is faster, is kept for decode', async () => {
  await onGpuProfile(async () => {
    const r = (await e.tuneDecode({ measure: async (x) => (x.stageX ? 9 : 10), warmMs: 0 }))!;
    assert.equal(r.trials.at(-1)!.settings.stageX, true, 'staging is the last choice tried');
    assert.deepEqual(r.chosen, { ...r.defaults, stageX: true });
    assert.equal(e.ops.stageX, true);
  });
});

test('f16 weights: gemv\'s 16-byte loads are the last choice tried, and kept where faster; other weights never try them', async () => {
  await onGpuProfile(async () => {
    // stories260K is stored in f32: the engine as it would be with f16 weights (its LM head alone, as a Q4_K_M
    // GGUF's packed layers beside an f16 head would be).
    const m = e.model!;
    assert.equal(m.dtype, 'f32');
    const lmHead = { ...m.lmHead, dtype: 'f16' as const, parts: m.lmHead.parts.map((p) => ({ ...p, dtype: 'f16' as const })) };
    const f16: Tunable = {
      ops: e.ops, config: e.config, kvDtype: e.kvDtype, submitEachLayer: e.submitEachLayer, replaySteps: e.replaySteps, model: { lmHead, layers: m.layers },
      pass: (c) => e.pass(c), newCache: (n) => e.newCache(n), sync: () => e.sync(),
    };
    const r = (await tuneDecode(f16, { measure: async (x) => (x.wide ? 9 : 10), warmMs: 0 }))!;
    assert.equal(r.trials.at(-1)!.settings.wide, true, 'the wide loads are the last choice tried');
    assert.deepEqual(r.chosen, { ...r.defaults, wide: true });
    assert.equal(e.ops.gemvWide, true);
    assert.equal(describeSettings(r.chosen), `${r.chosen.gemv}, 16-byte loads, fused, attention_decode`);
    e.ops.gemvWide = undefined;
    const plain = (await e.tuneDecode({ measure: async (x) => (x.wide ? 9 : 10), warmMs: 0 }))!;
    assert.ok(plain.trials.every((t) => !t.settings.wide), 'f32 weights: not tried');
    assert.equal(e.ops.gemvWide, false);
  });
});

/** Greedy tokens from a prompt, by the engine's current settings. */
async function tokens(count: number): Promise<number[]> {
  const prompt = s.model.tokenizer.encode('Lily had a red ball', { addBos: true });
  const cache = e.newCache(prompt.length + count + 4);
  try {
    const { logits } = await e.prefill(cache, prompt);
    const first = logits.indexOf(Math.max(...logits));
    return [first, ...(await e.greedySteps(cache, first, { count, stopIds: [] })).tokens];
  } finally {
    cache.destroy();
  }
}

test('timed for real: every way runs, is timed, and decodes the same tokens as the cpu profile', async () => {
  const reference = await tokens(12);
  await onGpuProfile(async () => {
    // 160 cached rows: 8 keys a thread make one round of 512 keys, 1 key a thread slices of 64 keys.
    const r = (await e.tuneDecode({ context: 160, steps: 2, reps: 1, warmMs: 0 }))!;
    // Keys a thread are tried where attention_decode stayed, the fold of attention_combine where decode stayed fused,
    // and the staged x always.
    // (stories260K's heads group in twos: attention_grouped and attention_decode for a group are ways too.)
    assert.equal(r.trials.length, gemvs().length + 6 + (r.chosen.attention === 'keys' || r.chosen.attention === 'grouped-keys' ? 3 : 0) + (r.chosen.fuse ? 1 : 0));
    for (const t of r.trials) assert.ok(Number.isFinite(t.msPerStep) && t.msPerStep > 0, `${key(t.settings)}: ${t.msPerStep} ms`);
    assert.ok(r.trials.some((t) => key(t.settings) === key(r.chosen)));
    const now = { fuse: e.ops.fuses(1), gemv: e.ops.pickGemv(), attention: e.ops.pickAttention(1, e.config.headDim), keysPerThread: e.ops.decodeKeysPerThread, foldCombine: e.ops.foldCombine, stageX: e.ops.stageX, wide: e.ops.gemvWide };
    assert.deepEqual(now, r.chosen);
    // Every way decodes the same tokens, each of attention_decode's keys a thread among them (this prompt's few rows
    // make no key slices: combine-fold.test.ts decodes with the fold where they do).
    const ways = [...r.trials.map((t) => t.settings), ...(['keys', 'grouped-keys'] as const).flatMap((attention) => ([1, 2, 4, 8] as const).map((k) => ({ ...r.chosen, attention, keysPerThread: k }))),
      { ...r.chosen, fuse: true, stageX: true }, { ...r.chosen, fuse: false, stageX: true }];
    for (const w of ways) {
      Object.assign(e.ops, { fuse: w.fuse, gemvVariant: w.gemv, decodeAttention: w.attention, decodeKeysPerThread: w.keysPerThread, foldCombine: w.foldCombine, stageX: w.stageX });
      assert.deepEqual(await tokens(12), reference, key(w));
    }
  });
});
