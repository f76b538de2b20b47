/**
 * The one decode loop (src/generate/generate.ts) and the engine's lock, on
 * stories260K: onStep sees every step in order (the new row's scores when
 * asked for, none after the last token) and is awaited before the next token;
 * two loops on the same engine at once give exactly the tokens each gives
 * alone (every step is one locked engine call); and a step waits while
 * `exclusive` holds the lock.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openModel } from '../../src/node/session';
import { decodeTokens, type DecodeStep } from '../../src/generate/generate';
import { until } from '../helpers/until';

const s = await openModel(join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin'));
after(() => s.close());
const { engine } = s;
const tok = s.model.tokenizer;

async function start(text: string, reserve = 32) {
  const prompt = tok.encode(text, { addBos: true });
  const cache = engine.newCache(prompt.length + reserve);
  const { logits } = await engine.prefill(cache, prompt);
  return { cache, logits };
}

async function greedy(text: string, n: number, onStep?: (st: DecodeStep) => void | Promise<void>, scores?: { layer: number; heads: number[] }) {
  const { cache, logits } = await start(text);
  try {
    const out: number[] = [];
    for await (const t of decodeTokens(engine, cache, logits, { maxNewTokens: n, sampling: { temperature: 0 }, stopIds: [], scores, onStep })) out.push(t);
    return out;
  } finally {
    cache.destroy();
  }
}

test('onStep: every step in order, with the new row\'s scores, awaited before the next token', async () => {
  const steps: DecodeStep[] = [];
  const log: string[] = [];
  const tokens: number[] = [];
  const { cache, logits } = await start('Lily had a red ball');
  try {
    const loop = decodeTokens(engine, cache, logits, {
      maxNewTokens: 6, sampling: { temperature: 0 }, stopIds: [], scores: { layer: 2, heads: [1] },
      onStep: async (st) => {
        steps.push(st);
        log.push(`step ${st.index}`);
        // A slow step hook: the next token must wait for it.
        await new Promise((r) => setTimeout(r, 5));
        log.push(`step ${st.index} done`);
      },
    });
    for await (const t of loop) {
      tokens.push(t);
      log.push(`token ${tokens.length - 1}`);
    }
  } finally {
    cache.destroy();
  }
  assert.equal(tokens.length, 6);
  assert.deepEqual(steps.map((x) => x.index), [0, 1, 2, 3, 4, 5]);
  assert.deepEqual(steps.map((x) => x.token), tokens);
  // Scores of the fed row for every step but the last (the budget ends before the last token is fed).
  assert.deepEqual(steps.map((x) => x.scores.length), [1, 1, 1, 1, 1, 0]);
  assert.ok(steps.slice(0, 5).every((x) => x.scores[0].head === 1 && x.scores[0].layer === 2));
  for (let i = 0; i + 1 < tokens.length; i++) assert.ok(log.indexOf(`step ${i} done`) < log.indexOf(`token ${i + 1}`), log.join(', '));
  assert.deepEqual(tokens, await greedy('Lily had a red ball', 6), 'capturing scores changes no token');
});

test('two decode loops at once give the tokens each gives alone', async () => {
  const a = await greedy('Once upon a time, there was a little dog', 16);
  const b = await greedy('Tom and Sue went to the park. They saw', 16);
  assert.notDeepEqual(a, b);
  // The same loops together: their steps interleave, one locked engine call at a time.
  const [a2, b2] = await Promise.all([greedy('Once upon a time, there was a little dog', 16), greedy('Tom and Sue went to the park. They saw', 16)]);
  assert.deepEqual(a2, a);
  assert.deepEqual(b2, b);
});

test('a step waits while exclusive holds the engine\'s lock', async () => {
  const { cache, logits } = await start('The sun was');
  const other = await start('A cat sat');
  try {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const order: string[] = [];
    const held = engine.exclusive(async (e) => {
      await e.step(other.cache, 1);
      order.push('held: stepped');
      await gate;
      order.push('held: done');
    });
    const step = engine.step(cache, Math.max(1, logits.indexOf(Math.max(...logits)))).then(() => order.push('step'));
    // Once the holder has stepped (however long that takes on a busy host), give the waiting step every chance to
    // run: it must not, while the lock is held.
    await until(() => order.includes('held: stepped'), 'the holder\'s step');
    for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 1));
    assert.deepEqual(order, ['held: stepped']);
    release();
    await Promise.all([held, step]);
    assert.deepEqual(order, ['held: stepped', 'held: done', 'step']);
  } finally {
    cache.destroy();
    other.cache.destroy();
  }
});
