/**
 * Decode's attention over long spans (model/tune-attention.ts, the last stage of Engine.tuneDecode), on
 * stories260K with the 'gpu' profile forced. With an injected clock: every way timed over both spans in turns, the
 * short choice first; the long span's fastest kept past the margin from where the two ways' times cross; nothing
 * kept within the margin; the engine's earlier settings restored when timing fails. Ops: the long kernel serves
 * decode's rows from its span on, and tiled prefill never. With the real clock: every way runs over both spans.
 * A decode crossing the span switches kernels mid-answer (the kernels each step builds say so) and gives the CPU
 * profile's tokens throughout.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openModel } from '../../src/node/session';
import { decodeAttentionWays, groupedKeysFits, type AttentionWay, type AttentionWayTiming, type Engine } from '../../src/engine';
import { crossing, tuneLongAttention } from '../../src/engine/model/tune-attention';

const s = await openModel(join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin'));
const e = s.engine;
after(() => s.close());
const HD = e.config.headDim;

const name = (w: AttentionWay) => (w.attention === 'keys' || w.attention === 'grouped-keys' ? `${w.attention}/${w.keysPerThread}` : w.attention);

/** Runs `fn` with the engine on the 'gpu' profile and no tuned or forced decode settings, restored after. */
async function onGpuProfile<T>(fn: (e: Engine) => Promise<T>): Promise<T> {
  const keys = ['matmulProfile', 'fuse', 'gemvVariant', 'decodeAttention', 'decodeKeysPerThread', 'foldCombine', 'stageX', 'longAttention'] as const;
  const saved = Object.fromEntries(keys.map((k) => [k, e.ops[k]]));
  e.ops.matmulProfile = 'gpu';
  for (const k of keys.slice(1)) (e.ops as unknown as Record<string, unknown>)[k] = undefined;
  try {
    return await fn(e);
  } finally {
    Object.assign(e.ops, saved);
  }
}

const GK = ['grouped-keys/1', 'grouped-keys/2', 'grouped-keys/4', 'grouped-keys/8'];

test('the ways: attention_decode at each keys a thread, its lanes, attention_grouped, attention_decode for a group at each keys a thread, attention.wgsl, as the device offers them', () => {
  assert.deepEqual(decodeAttentionWays(e.ops.decodeKernels(64, 3)).map(name), ['keys/1', 'keys/2', 'keys/4', 'keys/8', 'lanes', 'grouped', ...GK, 'rows']);
  assert.deepEqual(decodeAttentionWays(e.ops.decodeKernels(64, 1)).map(name), ['keys/1', 'keys/2', 'keys/4', 'keys/8', 'lanes', 'rows']);
  assert.deepEqual(decodeAttentionWays(e.ops.decodeKernels(128, 4)).map(name), ['keys/1', 'keys/2', 'keys/4', 'keys/8', ...GK, 'rows']);
  // Only the keys a thread a group's workgroup holds: Gemma 3's group of 4 in 16 KiB stops at 4.
  assert.deepEqual(decodeAttentionWays(['grouped-keys'], (w) => groupedKeysFits(256, 4, w.keysPerThread, 16384)).map(name), GK.slice(0, 3));
  assert.deepEqual(decodeAttentionWays(e.ops.decodeKernels(512, 4)).map(name), ['rows']);
});

test('where two ways cross: linear in the keys between the spans, never under twice the short span nor past the long', () => {
  const t = (usShort: number, usLong: number): AttentionWayTiming => ({ attention: 'keys', keysPerThread: 1, usShort, usLong });
  // a: 10 → 100 µs; b: 20 → 40 µs over 512 → 8192 keys: equal where 10 + 90x = 20 + 20x, x = 1/7 of the way.
  assert.equal(crossing(t(10, 100), t(20, 40), 512, 8192), Math.round(512 + 7680 / 7));
  // b as fast or faster over the short span too: from twice the short span, where the step tuning's verdict ends.
  assert.equal(crossing(t(10, 100), t(10, 40), 512, 8192), 1024);
  assert.equal(crossing(t(10, 100), t(8, 40), 512, 8192), 1024);
  // Crossing just short of the long span.
  assert.equal(crossing(t(10, 100), t(100, 99), 512, 8192), Math.round(512 + (7680 * 90) / 91));
});

test('every way over both spans in turns, the short choice first; the long fastest kept past the margin, from where they cross', async () => {
  await onGpuProfile(async () => {
    // keys/1 (the short choice) grows 10 → 100 µs; lanes 20 → 40; the others slower everywhere.
    const us = (w: AttentionWay, keys: number) => {
      const x = (keys - 512) / (8192 - 512);
      return w.attention === 'lanes' ? 20 + 20 * x : w.attention === 'keys' && w.keysPerThread === 1 ? 10 + 90 * x : 200;
    };
    const seen: string[] = [];
    const r = (await tuneLongAttention(e, { attention: 'keys', keysPerThread: 1 }, { short: 512, long: 8192, reps: 2, margin: 0.03, measure: async (w, k) => (seen.push(`${name(w)}@${k}`), us(w, k)) }))!;
    // stories260K: 8 heads in groups of 2, so attention_grouped and attention_decode for a group are among them.
    const order = ['keys/1', 'keys/2', 'keys/4', 'keys/8', 'lanes', 'grouped', ...GK, 'rows'];
    assert.deepEqual(seen, [...order, ...order].flatMap((w) => [`${w}@512`, `${w}@8192`]));
    assert.deepEqual(r.ways.map(name), order);
    assert.deepEqual({ short: r.short, long: r.long }, { short: 512, long: 8192 });
    const from = Math.round(512 + 7680 / 7);
    assert.deepEqual(r.chosen, { from, attention: 'lanes', keysPerThread: 1 });
    assert.deepEqual(e.ops.longAttention, r.chosen);
    // Decode's rows from `from` keys on attend with lanes, fewer with the short choice; 32 rows and more stay tiled.
    e.ops.decodeAttention = 'keys';
    assert.equal(e.ops.pickAttention(1, HD, from - 1), 'keys');
    assert.equal(e.ops.pickAttention(1, HD, from), 'lanes');
    assert.equal(e.ops.pickAttention(1, HD), 'keys', 'no span given: the short choice');
    assert.equal(e.ops.pickAttention(32, HD, 8192), 'tiled');
    assert.equal(e.ops.pickAttention(1, 128, 8192), 'keys', 'lanes cannot attend for heads of 128: the short choice');

    // Within the margin (lanes 2% faster over the long span): nothing kept, and an earlier choice cleared.
    const close = await tuneLongAttention(e, { attention: 'keys', keysPerThread: 1 }, { short: 512, long: 8192, reps: 1, margin: 0.03, measure: async (w) => (w.attention === 'lanes' ? 98 : 100) });
    assert.equal(close!.chosen, null);
    assert.equal(e.ops.longAttention, undefined);
    // A model whose positions never reach four times the short span: not timed.
    assert.equal(await tuneLongAttention(e, { attention: 'keys', keysPerThread: 1 }, { short: 512, margin: 0.03, measure: async () => assert.fail('timed') }), null);
  });
});

test('Engine.tuneDecode ends with it: kept with the step settings; where it fails, the step settings stand and it says why', async () => {
  await onGpuProfile(async () => {
    const r = (await e.tuneDecode({ measure: async () => 10, warmMs: 0, reps: 1, longContext: 4096, measureAttention: async (w, k) => (w.attention === 'rows' ? k / 100 : k / 10) }))!;
    assert.deepEqual(r.long!.chosen, { from: 1024, attention: 'rows', keysPerThread: 1 });
    assert.deepEqual(e.ops.longAttention, r.long!.chosen);
    assert.equal(r.long!.ways[0].attention, r.chosen.attention);
    const failed = (await e.tuneDecode({ measure: async (x) => (x.stageX ? 9 : 10), warmMs: 0, reps: 1, longContext: 4096, measureAttention: async () => Promise.reject(new Error('out of memory')) }))!;
    assert.equal(failed.long, null);
    assert.equal(failed.longError, 'out of memory');
    assert.equal(e.ops.longAttention, undefined);
    assert.equal(failed.chosen.stageX, true);
    assert.equal(e.ops.stageX, true, 'the step tuning\'s choice is kept');
  });
});

test('timed for real: every way runs over both spans', async () => {
  await onGpuProfile(async () => {
    const r = (await tuneLongAttention(e, { attention: 'keys', keysPerThread: 1 }, { short: 64, long: 1024, reps: 1, margin: 0.03 }))!;
    assert.deepEqual(r.ways.map(name), decodeAttentionWays(e.ops.decodeKernels(HD, e.config.nHeads / e.config.nKvHeads)).map(name));
    assert.ok(r.ways.some((w) => w.attention === 'grouped'));
    for (const w of r.ways) assert.ok(Number.isFinite(w.usShort) && w.usShort > 0 && Number.isFinite(w.usLong) && w.usLong > 0, `${name(w)}: ${w.usShort} / ${w.usLong} µs`);
    assert.ok(r.chosen === null || r.chosen.from >= 128, JSON.stringify(r.chosen));
  });
});

/** Greedy tokens from a prompt, and the attention kernel and launches of each decode step, by the engine's current settings. */
async function decode(count: number): Promise<{ tokens: number[]; kernels: string[]; launches: number[]; from: number }> {
  const prompt = s.model.tokenizer.encode('Lily had a red ball and', { addBos: true });
  const cache = e.newCache(prompt.length + count + 4);
  const lib = e.ops.lib, pipeline = lib.pipeline;
  let names: string[] = [];
  lib.pipeline = (name, defines) => (names.push(name), pipeline.call(lib, name, defines));
  try {
    const { logits } = await e.prefill(cache, prompt);
    const tokens = [logits.indexOf(Math.max(...logits))];
    const kernels: string[] = [], launches: number[] = [];
    for (let i = 0; i < count; i++) {
      names = [];
      const c0 = e.ops.d.count;
      tokens.push((await e.greedySteps(cache, tokens.at(-1)!, { count: 1, stopIds: [] })).tokens[0]);
      launches.push(e.ops.d.count - c0);
      kernels.push([...new Set(names.filter((n) => /^attention(_decode|_grouped)?$/.test(n)))].join(' '));
    }
    return { tokens, kernels, launches, from: prompt.length };
  } finally {
    lib.pipeline = pipeline;
    cache.destroy();
  }
}

test('a decode crossing the long span switches kernels there, and gives the cpu profile’s tokens throughout', async () => {
  const reference = (await decode(10)).tokens;
  await onGpuProfile(async () => {
    e.ops.decodeAttention = 'keys';
    const short = await decode(10);
    assert.deepEqual(new Set(short.kernels), new Set(['attention_decode']));
    for (const [attention, kernel] of [['rows', 'attention'], ['grouped', 'attention_grouped']] as const) {
      e.ops.decodeAttention = attention;
      const long = await decode(10);
      assert.deepEqual(new Set(long.kernels), new Set([kernel]));
      // attention.wgsl does not fold the step's RoPE and cache write: a launch more a layer; attention_grouped does.
      if (attention === 'rows') assert.ok(long.launches[0] >= short.launches[0] + e.config.nLayers, `${long.launches[0]} against ${short.launches[0]}`);
      else assert.deepEqual(long.launches, short.launches);
      e.ops.decodeAttention = 'keys';
      // Step i's row scans the prompt and the i tokens before it, plus its own: from = prompt + 5 switches at step 4.
      e.ops.longAttention = { from: short.from + 5, attention, keysPerThread: 1 };
      const both = await decode(10);
      e.ops.longAttention = undefined;
      assert.deepEqual(both.kernels, [...short.kernels.slice(0, 4), ...long.kernels.slice(4)], attention);
      assert.deepEqual(both.launches, [...short.launches.slice(0, 4), ...long.launches.slice(4)], attention);
      for (const r of [long, both]) assert.deepEqual(r.tokens, reference, attention);
    }
    assert.deepEqual(short.tokens, reference);
  });
});
