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

const s = await openModel(join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin'));
const e = s.engine;
after(() => s.close());

const key = (x: DecodeSettings) => `${x.gemv}/${x.fuse ? 'fused' : 'unfused'}/${x.attention}`;
const gemvs = () => (e.ops.subgroupMin ? ['gemv_sg', 'gemv'] : ['gemv']);

/** Runs `fn` with the engine on the 'gpu' profile and no tuned or forced decode settings, restored after. */
async function onGpuProfile<T>(fn: (e: Engine) => Promise<T>): Promise<T> {
  const saved = { profile: e.ops.matmulProfile, fuse: e.ops.fuse, gemv: e.ops.gemvVariant, attention: e.ops.decodeAttention };
  e.ops.matmulProfile = 'gpu';
  e.ops.fuse = e.ops.gemvVariant = e.ops.decodeAttention = undefined;
  try {
    return await fn(e);
  } finally {
    Object.assign(e.ops, { matmulProfile: saved.profile, fuse: saved.fuse, gemvVariant: saved.gemv, decodeAttention: saved.attention });
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
    const defaults: DecodeSettings = { gemv: e.ops.pickGemv(), fuse: e.ops.fuses(1), attention: e.ops.pickAttention(1, e.config.headDim) };
    assert.deepEqual(defaults, { gemv: gemvs()[0], fuse: true, attention: 'keys' });
    // Unfused is 10% faster, plain gemv 1% faster (inside the margin: not taken), 'rows' slower.
    const ms = (x: DecodeSettings) => 10 * (x.fuse ? 1 : 0.9) * (x.gemv === 'gemv' && e.ops.subgroupMin ? 0.99 : 1) * (x.attention === 'rows' ? 1.2 : 1);
    const seen: string[] = [];
    let started = 0;
    const r = (await e.tuneDecode({ measure: async (x) => (seen.push(key(x)), ms(x)), onStart: () => started++, warmMs: 0, reps: 2 }))!;
    assert.equal(started, 1);
    const expected = [key(defaults), ...(e.ops.subgroupMin ? ['gemv/fused/keys'] : []), `${defaults.gemv}/unfused/keys`, `${defaults.gemv}/unfused/rows`];
    assert.deepEqual([...new Set(seen)], expected);
    // One untimed run of the defaults, two timed; then each alternative in turns with the best so far.
    const turns = (alt: string, best: string) => [alt, best, alt, best];
    const alts = expected.slice(1);
    // Plain gemv (inside the margin) was not kept, unfused was: 'rows' is timed against unfused.
    const bests = alts.map((a) => (a.endsWith('/rows') ? `${defaults.gemv}/unfused/keys` : key(defaults)));
    assert.deepEqual(seen, [key(defaults), key(defaults), key(defaults), ...alts.flatMap((a, i) => turns(a, bests[i]))]);
    assert.deepEqual(r.trials.map((t) => key(t.settings)), expected);
    assert.deepEqual(r.chosen, { gemv: defaults.gemv, fuse: false, attention: 'keys' });
    assert.deepEqual(r.defaults, defaults);
    assert.equal(describeSettings(r.chosen), `${defaults.gemv}, unfused, attention_decode`);
    assert.equal(describeSettings({ gemv: 'gemv', fuse: true, attention: 'rows' }), 'gemv, fused, attention');
    assert.ok(0.01 < TUNE_MARGIN && TUNE_MARGIN < 0.1);
    // The engine now decodes that way.
    assert.equal(e.ops.fuses(1), false);
    assert.equal(e.ops.pickGemv(), defaults.gemv);
    assert.equal(e.ops.pickAttention(1, e.config.headDim), 'keys');
    // Prefill's rows keep their own kernels.
    assert.equal(e.ops.fuses(64), false);
    assert.equal(e.ops.pickAttention(64, e.config.headDim), 'tiled');
  });
});

test('drift does not favour whichever way ran last: a GPU slow at first keeps the defaults when every way is equal', async () => {
  await onGpuProfile(async () => {
    // The first six runs take twice as long (an idle GPU's clocks rising); every way is equally fast after.
    let n = 0;
    const r = (await e.tuneDecode({ measure: async () => (++n <= 6 ? 20 : 10), warmMs: 0 }))!;
    assert.ok(n > 6);
    assert.deepEqual(r.chosen, r.defaults);
    for (const t of r.trials) assert.equal(t.msPerStep, 10, key(t.settings));
  });
});

test('a faster one-row attention is kept for decode only; a failed timing restores the settings', async () => {
  await onGpuProfile(async () => {
    const r = (await e.tuneDecode({ measure: async (x) => (x.attention === 'rows' ? 5 : 10), warmMs: 0 }))!;
    assert.equal(r.chosen.attention, 'rows');
    assert.equal(e.ops.pickAttention(1, e.config.headDim), 'rows');
    assert.equal(e.ops.pickAttention(4, e.config.headDim), 'rows');
    assert.equal(e.ops.pickAttention(32, e.config.headDim), 'tiled');
    const before = { fuse: e.ops.fuse, gemv: e.ops.gemvVariant, attention: e.ops.decodeAttention };
    let n = 0;
    await assert.rejects(e.tuneDecode({ measure: async (x) => (++n === 6 ? Promise.reject(new Error('device lost')) : x.fuse ? 10 : 1), warmMs: 0 }), /device lost/);
    assert.deepEqual({ fuse: e.ops.fuse, gemv: e.ops.gemvVariant, attention: e.ops.decodeAttention }, before);
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
    const r = (await e.tuneDecode({ context: 24, steps: 2, reps: 1, warmMs: 0 }))!;
    assert.equal(r.trials.length, gemvs().length + 2);
    for (const t of r.trials) assert.ok(Number.isFinite(t.msPerStep) && t.msPerStep > 0, `${key(t.settings)}: ${t.msPerStep} ms`);
    assert.ok(r.trials.some((t) => key(t.settings) === key(r.chosen)));
    assert.deepEqual({ fuse: e.ops.fuses(1), gemv: e.ops.pickGemv(), attention: e.ops.pickAttention(1, e.config.headDim) }, { fuse: r.chosen.fuse, gemv: r.chosen.gemv, attention: r.chosen.attention });
    for (const t of r.trials) {
      Object.assign(e.ops, { fuse: t.settings.fuse, gemvVariant: t.settings.gemv, decodeAttention: t.settings.attention });
      assert.deepEqual(await tokens(12), reference, key(t.settings));
    }
  });
});
