/**
 * The runner's browser backend end to end: the app's inference worker in
 * headless Chromium (through a Vite dev server) answers two small cases on
 * stories260K with every linking algorithm, through the same ContextCache
 * code as the Node backend (src/eval/case-api.ts over the worker's transport
 * there, over a local ContextCache here). It must put the same tokens in
 * front of the model (same prompt lengths and recomputed counts) and, greedy
 * with the same kernels, give the same answers, for every algorithm;
 * cacheblend:auto is the one exception for rows and answers, since its ratio
 * is picked from the load and recompute speeds each backend measures. A
 * cancelled answer stops in the worker and the next one still works. Needs
 * /usr/bin/chromium (or LEGOKV_CHROMIUM).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BrowserBackend } from '../../src/eval/browser-backend';
import { NodeBackend } from '../../src/eval/node-backend';
import { runEval, type CaseResult, type EvalResults } from '../../src/eval/runner';
import { toJsonl, type EvalCase } from '../../src/eval/dataset';

const dir = mkdtempSync(join(tmpdir(), 'legokv-browser-eval-'));
const cases: EvalCase[] = [
  {
    // The default framing: instruction, "Question: …\nAnswer:".
    id: 'ball', metric: 'f1', answers: ['red'], question: 'What color was the ball?',
    chunks: [
      'Lily had a red ball. She liked to play with it in the park every day with her dog Max.',
      'One day, the ball rolled into the pond. Max jumped into the water and brought the ball back to Lily.',
    ],
  },
  {
    // An empty instruction: the question follows the chunks verbatim.
    id: 'apple', metric: 'f1', answers: ['home'], question: ' Then Tom and Sue went', instruction: '',
    chunks: [
      'Tom was a little boy who loved to eat apples. His mom gave him a big green apple after school.',
      'Tom shared the apple with his friend Sue. They sat under a tree and laughed together.',
    ],
  },
];
const data = join(dir, 'tiny.jsonl');
writeFileSync(data, toJsonl(cases));
// Every algorithm: the references, the static selections, CacheBlend fixed and auto, and both own compile variants.
const algorithms = ['prompt', 'full', 'legolink:16', 'naive', 'promptcache', 'cacheblend:0.3', 'cacheblend:auto', 'legolink:4', 'attnlink:4', 'legolink0'];
/** Picked from measured speeds, so its rows (and answer) may differ between backends. */
const MEASURED = 'cacheblend:auto:0.15';
let browser: BrowserBackend | null = null;
after(async () => browser?.close());

const key = (c: CaseResult) => `${c.id} ${c.algorithm}`;

test('browser backend: same tokens, rows and answers as the Node backend, for every algorithm', { timeout: 240_000 }, async () => {
  browser = await BrowserBackend.open('stories260K', { log: () => {} });
  assert.match(browser.adapter, /\S/);
  assert.equal(browser.model, 'stories260K.bin');
  const b: EvalResults = await runEval({ backend: browser, cases, data, algorithms, maxNewTokens: 4, warmup: false });

  const node = await NodeBackend.open('stories260K');
  let n: EvalResults;
  try {
    n = await runEval({ backend: node, cases, data, algorithms, maxNewTokens: 4, warmup: false });
  } finally {
    await node.close();
  }

  assert.equal(b.backend, 'browser');
  assert.deepEqual(b.errors, []);
  assert.ok(b.complete);
  assert.equal(b.cases.length, cases.length * algorithms.length);
  const nodeBy = new Map(n.cases.map((c) => [key(c), c]));
  for (const c of b.cases) {
    const ref = nodeBy.get(key(c))!;
    assert.ok(ref, key(c));
    assert.equal(c.prompt_tokens, ref.prompt_tokens, `${key(c)}: prompt tokens`);
    if (c.algorithm !== MEASURED) assert.equal(c.recomputed, ref.recomputed, `${key(c)}: recomputed rows`);
    assert.ok(c.ttft_ms > 0 && c.ttft_wall_ms >= c.ttft_ms, `${key(c)}: TTFT ${c.ttft_ms} ms, wall ${c.ttft_wall_ms} ms`);
    assert.ok(c.breakdown_ms.recompute > 0 && c.breakdown_ms.first_token > 0 && c.breakdown_ms.lookup >= 0 && c.breakdown_ms.load >= 0);
    assert.ok(c.new_tokens > 0 && c.new_tokens <= 4 && c.compile_ms > 0);
    if (c.algorithm === 'full' || c.algorithm === 'prompt') {
      assert.equal(c.recompute_fraction, 1);
      assert.equal(c.prediction, ref.prediction, `${c.id}: ${c.algorithm} answers alike`);
    } else if (c.algorithm !== MEASURED) assert.ok(c.recompute_fraction < 1, key(c));
    if (c.algorithm === 'prompt') assert.equal(c.breakdown_ms.lookup + c.breakdown_ms.load, 0, `${c.id}: the ordinary prompt reads no cache`);
    // Prompt Cache modules sit at the same schema positions in both backends: the same numbers, the same answer.
    if (c.algorithm === 'promptcache') assert.equal(c.prediction, ref.prediction, `${c.id}: Prompt Cache answers alike`);
    // One pipeline: every algorithm with fixed rows answers alike through both backends.
    if (c.algorithm !== MEASURED) assert.equal(c.prediction, ref.prediction, `${key(c)}: answers alike`);
  }
  assert.deepEqual([...new Set(b.cases.map((c) => c.algorithm))].sort(), [...new Set(n.cases.map((c) => c.algorithm))].sort());
  assert.equal(new Set(b.cases.map((c) => c.algorithm)).size, algorithms.length, 'every algorithm ran');
  // The two cases answer differently, so equal answers are not a coincidence of one fixed reply.
  const full = b.cases.filter((c) => c.algorithm === 'full').map((c) => c.prediction);
  assert.notEqual(full[0], full[1]);
});

test('browser backend: an answer cancelled by the signal stops in the worker, and the next one works', { timeout: 60_000 }, async () => {
  assert.ok(browser, 'the first test opened the backend');
  const p = await browser.prepare(cases[1], new Set(['plain']));
  try {
    const ac = new AbortController();
    const pending = browser.answer(p, 'full', 400, ac.signal);
    setTimeout(() => ac.abort(), 100);
    const r = await pending;
    // Counted, not timed: the worker stopped decoding before the 400 tokens asked for.
    assert.ok(r.cancelled && r.newTokens < 400, `cancelled after ${r.newTokens} tokens`);
    const again = await browser.answer(p, 'full', 4);
    assert.ok(!again.cancelled && again.newTokens === 4 && again.recomputedFraction === 1);
  } finally {
    await browser.release(p);
  }
});
