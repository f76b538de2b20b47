/**
 * Greedy decode run ahead (Engine.greedySteps, and decodeTokens asking for
 * several tokens at once), on stories260K: the GPU feeds each step's argmax
 * to the next step, and the host records steps before reading the tokens.
 * It must give exactly the tokens and cache rows of serial greedy steps, at
 * every depth, with the embedding table whole or in row parts; a stop token
 * ends the run with the steps recorded after it undone; and the decode loop
 * leaves the cache as serial steps would when it stops, is aborted, or is
 * left by its caller; each step's attention scores reach onStep as serial
 * steps give them, in order, with its pacing kept.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openModel, type NodeSession } from '../../src/node/session';
import { decodeTokens, type DecodeStep } from '../../src/generate/generate';
import type { KVCache } from '../../src/engine';

const path = join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin');
const s = await openModel(path);
// The same model with its embedding table (512 × 64 f32) in row parts of at most 40 KiB.
const split = await openModel(path, { weightDtype: 'f32', bufferLimit: 40 * 1024 });
after(() => {
  s.close();
  split.close();
});

async function start(x: NodeSession, text = 'Lily had a red ball', reserve = 48) {
  const prompt = x.model.tokenizer.encode(text, { addBos: true });
  const cache = x.engine.newCache(prompt.length + reserve);
  const { logits } = await x.engine.prefill(cache, prompt);
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
  return { cache, logits, first: best, base: cache.length };
}

/** Serial greedy steps from `first`: the tokens they pick. */
async function serial(x: NodeSession, cache: KVCache, first: number, n: number) {
  const out: number[] = [];
  let t = first;
  for (let i = 0; i < n; i++) {
    t = (await x.engine.step(cache, t, undefined, { greedy: true })).token!;
    out.push(t);
  }
  return out;
}

/** Every layer's K and V rows of the cache, as stored. */
async function rows(x: NodeSession, cache: KVCache) {
  const out: Float32Array[] = [];
  for (let l = 0; l < x.model.config.nLayers; l++) {
    const r = await x.engine.readRows(cache, l, 0, cache.length);
    out.push(r.k, r.v);
  }
  return out;
}

test('split embedding: the table really is in parts', () => {
  assert.ok(split.engine.model!.embed.parts.length >= 3, `${split.engine.model!.embed.parts.length} parts`);
});

for (const [name, x] of [['whole', s], ['in row parts', split]] as const) {
  test(`greedySteps gives serial greedy's tokens and cache rows at every depth (embedding ${name})`, async () => {
    const ref = await start(x);
    const want = await serial(x, ref.cache, ref.first, 12);
    const wantRows = await rows(x, ref.cache);
    ref.cache.destroy();
    assert.ok(new Set(want).size > 3, `a varied continuation: ${want}`);
    for (const depth of [1, 2, 3, 12]) {
      const r = await start(x);
      try {
        const got = await x.engine.greedySteps(r.cache, r.first, { count: 12, stopIds: [], depth });
        assert.deepEqual(got.tokens, want, `depth ${depth}`);
        assert.equal(r.cache.length, r.base + 12);
        const gotRows = await rows(x, r.cache);
        gotRows.forEach((a, i) => assert.deepEqual(a, wantRows[i], `depth ${depth}: layer ${i >> 1} ${i & 1 ? 'v' : 'k'}`));
      } finally {
        r.cache.destroy();
      }
    }
  });
}

test('a stop token ends greedySteps; the steps recorded after it are undone', async () => {
  const ref = await start(s);
  const want = await serial(s, ref.cache, ref.first, 12);
  ref.cache.destroy();
  // The first token that appears only once, not first: the run must stop exactly there.
  const at = want.findIndex((t, i) => i >= 3 && want.indexOf(t) === i);
  assert.ok(at >= 3, `${want}`);
  const r = await start(s);
  try {
    const got = await s.engine.greedySteps(r.cache, r.first, { count: 12, stopIds: [want[at]], depth: 4 });
    assert.deepEqual(got.tokens, want.slice(0, at + 1));
    // Rows for the tokens fed: the first and every token picked before the stop.
    assert.equal(r.cache.length, r.base + at + 1);
    // The cache goes on from there as if the run had been serial.
    const more = await serial(s, r.cache, want[at], 1);
    const check = await start(s);
    const again = await serial(s, check.cache, check.first, at + 2);
    check.cache.destroy();
    assert.equal(more[0], again[at + 1]);
  } finally {
    r.cache.destroy();
  }
});

async function loop(x: NodeSession, ahead: number, o: { max: number; stopIds?: number[]; abortAfter?: number; leaveAfter?: number }) {
  const r = await start(x);
  const ctl = new AbortController();
  const out: number[] = [];
  try {
    for await (const t of decodeTokens(x.engine, r.cache, r.logits, { maxNewTokens: o.max, sampling: { temperature: 0 }, stopIds: o.stopIds ?? [], signal: ctl.signal, ahead })) {
      out.push(t);
      if (out.length === o.abortAfter) ctl.abort();
      if (out.length === o.leaveAfter) break;
    }
    return { tokens: out, rows: r.cache.length - r.base };
  } finally {
    r.cache.destroy();
  }
}

test('decodeTokens ahead gives serial tokens and leaves the cache as serial steps do', async () => {
  const serialRun = await loop(s, 1, { max: 11 });
  assert.equal(serialRun.tokens.length, 11);
  assert.equal(serialRun.rows, 10, 'the last token is never fed');
  // 10 steps in batches of 4, 4 and 2: the budget is kept exactly.
  assert.deepEqual(await loop(s, 4, { max: 11 }), serialRun);
  assert.deepEqual(await loop(s, 16, { max: 11 }), serialRun);
  // A stop token mid-batch: not yielded; the cache keeps the row of every token yielded.
  const stop = serialRun.tokens.findIndex((t, i) => i >= 2 && serialRun.tokens.indexOf(t) === i);
  const stopped = await loop(s, 1, { max: 11, stopIds: [serialRun.tokens[stop]] });
  assert.deepEqual(stopped.tokens, serialRun.tokens.slice(0, stop));
  assert.deepEqual(await loop(s, 4, { max: 11, stopIds: [serialRun.tokens[stop]] }), stopped);
  // Aborted, or left by the caller, mid-batch: the rows of tokens picked ahead are dropped.
  for (const o of [{ max: 11, abortAfter: 3 }, { max: 11, leaveAfter: 3 }, { max: 11, leaveAfter: 5 }]) {
    const want = await loop(s, 1, o);
    assert.deepEqual(await loop(s, 4, o), want, JSON.stringify(o));
  }
});

test('decodeTokens ahead hands onStep every step\'s scores as serial steps do, before the next token', async () => {
  const run = async (ahead: number) => {
    const r = await start(s);
    const log: string[] = [];
    const steps: DecodeStep[] = [];
    try {
      const o = {
        maxNewTokens: 9, sampling: { temperature: 0 }, stopIds: [], ahead, scores: { layer: [1, 4], heads: [0, 3] },
        onStep: async (st: DecodeStep) => {
          steps.push(st);
          await new Promise((res) => setTimeout(res, 2));
          log.push(`step ${st.index}`);
        },
      };
      for await (const t of decodeTokens(s.engine, r.cache, r.logits, o)) log.push(`token ${t}`);
      return { log, steps, rows: r.cache.length - r.base };
    } finally {
      r.cache.destroy();
    }
  };
  const serialRun = await run(1);
  const aheadRun = await run(4);
  assert.deepEqual(aheadRun.log, serialRun.log, 'tokens and steps interleave alike: each step before the next token');
  assert.equal(aheadRun.rows, serialRun.rows);
  assert.equal(serialRun.steps.length, 9);
  // Two layers and two heads a step, the last token's none (it is never fed).
  assert.deepEqual(serialRun.steps.map((x) => x.scores.length), [4, 4, 4, 4, 4, 4, 4, 4, 0]);
  assert.deepEqual(aheadRun.steps, serialRun.steps);
});
