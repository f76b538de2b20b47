/**
 * Next-token choice (src/generate/sampling.ts): greedy is argmax with the
 * first index on ties (llama2.c's rule); temperature sampling follows
 * softmax(logits / T); top-p keeps the smallest set of most likely tokens
 * whose mass reaches p and renormalizes over it; a seed reproduces a run.
 * Frequencies are checked over 40,000 seeded draws within 0.01.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { argmax, rng, sample } from '../../src/generate/sampling';

const logitsOf = (probs: number[]) => Float32Array.from(probs, (p) => Math.log(p));

function frequencies(logits: Float32Array, opts: Parameters<typeof sample>[1], draws = 40_000) {
  const random = rng(7);
  const counts = new Array(logits.length).fill(0);
  for (let i = 0; i < draws; i++) counts[sample(logits, opts, random)]++;
  return counts.map((c) => c / draws);
}

const near = (got: number[], want: number[], tol = 0.01) =>
  got.forEach((g, i) => assert.ok(Math.abs(g - want[i]) <= tol, `token ${i}: ${g.toFixed(4)} vs ${want[i].toFixed(4)}`));

test('greedy: argmax, first index on ties, whatever the random source', () => {
  assert.equal(argmax([1, 3, 3, 2]), 1);
  assert.equal(sample(Float32Array.from([0.5, 2, -1, 2]), { temperature: 0 }, () => 0.999), 1);
});

test('temperature: frequencies follow softmax(logits / T)', () => {
  near(frequencies(logitsOf([0.5, 0.3, 0.2]), { temperature: 1 }), [0.5, 0.3, 0.2]);
  // T = 2 flattens: p ∝ sqrt(p0).
  const s = [0.5, 0.3, 0.2].map(Math.sqrt);
  const z = s.reduce((a, b) => a + b);
  near(frequencies(logitsOf([0.5, 0.3, 0.2]), { temperature: 2 }), s.map((x) => x / z));
});

test('top-p: only the nucleus is sampled, renormalized', () => {
  // 0.5 + 0.3 reaches 0.7: tokens 0 and 1 only, in the ratio 5 : 3.
  near(frequencies(logitsOf([0.3, 0.5, 0.2]), { temperature: 1, topP: 0.7 }), [0.375, 0.625, 0]);
  // A mass below the top token's probability keeps that token alone.
  near(frequencies(logitsOf([0.1, 0.6, 0.3]), { temperature: 1, topP: 0.5 }), [0, 1, 0], 0);
});

test('a seed reproduces the same draws', () => {
  const l = logitsOf([0.25, 0.25, 0.25, 0.25]);
  const run = (seed: number) => { const r = rng(seed); return Array.from({ length: 50 }, () => sample(l, { temperature: 1 }, r)); };
  assert.deepEqual(run(3), run(3));
  assert.notDeepEqual(run(3), run(4));
});
