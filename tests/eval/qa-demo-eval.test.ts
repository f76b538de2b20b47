/**
 * The evaluation runner on the bundled qa-demo model and its held-out set,
 * against the outside reference: transformers' greedy answers for the same
 * cases in the `linked` layout (every chunk with its own BOS, then the
 * question), which train/evaluate.py records in train/eval/results.json with
 * the model. The runner's `full` algorithm computes exactly that layout, so
 * its prompt has the same number of tokens and its answers are the same text.
 * Two short cases (3 chunks, ~1,050 tokens) keep this under two minutes on
 * SwiftShader; the whole 200-case table is `npm run eval` (docs/models/qa-demo.md).
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { NodeBackend } from '../../src/eval/node-backend';
import { readDataset } from '../../src/eval/dataset';
import { runEval } from '../../src/eval/runner';

const root = join(import.meta.dirname, '../..');
const DATA = join(root, 'train/eval/qa-demo-eval.jsonl');
const reference = JSON.parse(readFileSync(join(root, 'train/eval/results.json'), 'utf8')) as {
  decoding: string;
  layouts: { linked: { cases: { id: string; tokens: number; pred: string }[] } };
};
const IDS = ['qa-demo-178', 'qa-demo-183'];
let backend: NodeBackend | null = null;
after(async () => backend?.close());

test('qa-demo: full over linked chunks answers as transformers does; naive recomputes only the question', async () => {
  const cases = readDataset(DATA).filter((c) => IDS.includes(c.id));
  assert.equal(cases.length, IDS.length);
  backend = await NodeBackend.open('qa-demo');
  const res = await runEval({ backend, cases, data: DATA, algorithms: ['full', 'naive'], maxNewTokens: 16, warmup: false });
  assert.equal(res.errors.length, 0, JSON.stringify(res.errors));
  for (const id of IDS) {
    const want = reference.layouts.linked.cases.find((c) => c.id === id)!;
    const full = res.cases.find((c) => c.id === id && c.algorithm === 'full')!;
    const naive = res.cases.find((c) => c.id === id && c.algorithm === 'naive')!;
    assert.equal(full.prompt_tokens, want.tokens, `${id}: prompt length`);
    assert.equal(full.prediction.trim(), want.pred.trim(), `${id}: full's answer (${reference.decoding})`);
    assert.equal(full.recompute_fraction, 1);
    assert.equal(naive.prompt_tokens, want.tokens);
    // naive reuses every chunk's cache as compiled: only the uncached question is computed
    const question = cases.find((c) => c.id === id)!.question;
    assert.ok(naive.recomputed > 0 && naive.recomputed < 40, `${id}: naive recomputed ${naive.recomputed} of ${naive.prompt_tokens} (question ${JSON.stringify(question)})`);
  }
});
