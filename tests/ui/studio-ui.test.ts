/**
 * The studio's pure helpers: attention-map normalization (softmax, min-max as
 * in EPIC Fig. 4), column sums, sink shares, downsampling; composer moves,
 * word steps for boundaries; evaluation results and their Pareto front.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { binSums, columnSums, downsample, heatColour, normalizeMap, normalizeRow, sinkShares } from '../../src/analysis/attention-math';
import { moveItem, wordStep } from '../../src/ui/list-ops';
import { paretoFront, parseResults } from '../../src/ui/pareto';
import { ALGORITHMS, COMPARE_ALGORITHMS, DEFAULT_SETTINGS, algorithmSpec, frameQuestion, framingFor, mapTarget, promptContext, type StudioDoc } from '../../src/ui/studio-store';
import type { BundledModel } from '../../src/ui/store';
import { packChunks } from '../../src/worker/chunk-table';
import { parseAlgorithm } from '../../src/kvlink/algorithms';
import type { AttentionMap } from '../../src/types/attention';

const close = (a: ArrayLike<number>, b: number[], eps = 1e-6) => b.forEach((v, i) => assert.ok(Number.isNaN(v) ? Number.isNaN(a[i]) : Math.abs(a[i] - v) < eps, `${i}: ${a[i]} vs ${v}`));

test('rows normalize over visible keys; masked keys stay NaN', () => {
  const raw = [0, Math.log(3), -Infinity];
  close(normalizeRow(raw, 4, 'softmax'), [0.25, 0.75, NaN, NaN]);
  close(normalizeRow([2, 4, 3, -Infinity], 4, 'minmax'), [0, 1, 0.5, NaN]);
  close(normalizeRow([5, 5], 2, 'minmax'), [1, 1]);
  close(normalizeRow([-Infinity, -Infinity], 2, 'softmax'), [NaN, NaN]);
});

test('column sums, sink shares per chunk, downsampling by max', () => {
  // BOS + chunk A (rows 0-3) + chunk B (rows 4-7) + 2 question tokens; two query rows.
  const rowOf = (weights: number[]) => Float32Array.from(weights.map((w) => (w > 0 ? Math.log(w) : -Infinity)));
  const map: AttentionMap = {
    algorithm: 'naive', layer: 0, head: 0, columns: Array.from({ length: 10 }, (_, i) => `t${i}`),
    segments: [{ start: 0, length: 4, label: 'A' }, { start: 4, length: 4, label: 'B' }], questionStart: 8, promptTokens: 10,
    rows: [
      { token: 'q', kind: 'question', scores: rowOf([4, 0, 0, 0, 4, 0, 0, 1, 1, 0]) },
      { token: 'r', kind: 'question', scores: rowOf([2, 0, 0, 0, 0, 1, 0, 0, 0, 1]) },
    ],
  };
  const g = normalizeMap(map, 'softmax');
  const sums = columnSums(g);
  assert.ok(Math.abs(sums.reduce((a, b) => a + b, 0) - 2) < 1e-5, 'each softmax row sums to 1');
  const { chunks, total } = sinkShares(map, 1);
  assert.ok(Math.abs(chunks[0].sink - (0.4 + 0.5) / 2) < 1e-6);
  assert.ok(Math.abs(chunks[1].sink - (0.4 + 0) / 2) < 1e-6);
  assert.ok(Math.abs(chunks[1].chunk - (0.5 + 0.25) / 2) < 1e-6);
  assert.ok(Math.abs(total - chunks[0].sink - chunks[1].sink) < 1e-9);
  const d = downsample(g, 4);
  assert.equal(d.factor, 3);
  assert.equal(d.cols, 4);
  close(d.values.subarray(0, 4), [0.4, 0.4, 0.1, NaN]);
  assert.deepEqual(Array.from(binSums(Float32Array.from([1, 2, 3, 4, 5]), 2)), [3, 7, 5]);
  assert.equal(downsample(g, 100).factor, 1);
  assert.deepEqual(heatColour(NaN), [236, 238, 241]);
  assert.deepEqual(heatColour(0), [13, 8, 135]);
  assert.deepEqual(heatColour(1), [240, 249, 33]);
});

test('composer moves and boundary word steps', () => {
  assert.deepEqual(moveItem(['a', 'b', 'c'], 2, 0), ['c', 'a', 'b']);
  assert.deepEqual(moveItem(['a', 'b', 'c'], 0, 2), ['b', 'c', 'a']);
  assert.deepEqual(moveItem(['a', 'b', 'c'], 0, 3), ['b', 'c', 'a']);
  assert.deepEqual(moveItem(['a', 'b', 'c'], 1, 2), ['a', 'c', 'b']);
  const t = 'one two  three';
  assert.equal(wordStep(t, 4, 1), 9);
  assert.equal(wordStep(t, 9, -1), 4);
  assert.equal(wordStep(t, 4, -1), 4, 'no word start before the first');
  assert.equal(wordStep(t, 6, -1), 4);
});

test('evaluation results: parsed leniently, Pareto front by TTFT', () => {
  const pts = parseResults({ results: [
    { algorithm: 'full', accuracy: 0.8, ttft_ms_mean: 100 },
    { algorithm: 'naive', accuracy: 0.3, ttft_ms_mean: 5 },
    { algorithm: 'legolink:16', accuracy: 0.78, ttft_ms_mean: 12 },
    { algorithm: 'cacheblend:0.15', accuracy: 0.7, ttft_ms_mean: 30 },
    { algorithm: 'broken' },
  ] });
  assert.equal(pts.length, 4);
  assert.deepEqual(paretoFront(pts).map((p) => p.algorithm), ['naive', 'legolink:16', 'full']);
  assert.equal(parseResults([{ algorithm: 'x', score: 1, ttftMs: 2 }])[0].accuracy, 1);
  assert.throws(() => parseResults({ nothing: 1 }), /results/);
});

test('map target: the chosen layer and head, kept inside the loaded model', () => {
  assert.deepEqual(mapTarget({ layer: 2, head: 6 }, { layers: 5, heads: 8 }), { layer: 2, head: 6 });
  assert.deepEqual(mapTarget({ layer: 7, head: 6 }, { layers: 6, heads: 6 }), { layer: 5, head: 5 });
  assert.deepEqual(mapTarget({ layer: 7, head: 6 }, null), { layer: 7, head: 6 });
});

test('the composer offers every linking algorithm, each as a spec KVLink parses', () => {
  const kinds = ALGORITHMS.map((a) => parseAlgorithm(algorithmSpec({ algorithm: a.value, k: 16, r: 0.15 })).kind);
  assert.deepEqual(kinds.sort(), ['attnlink', 'cacheblend', 'full', 'legolink', 'legolink0', 'naive', 'prompt', 'promptcache']);
  assert.equal(algorithmSpec({ algorithm: 'legolink', k: 4.4, r: 0 }), 'legolink:4');
  assert.deepEqual(COMPARE_ALGORITHMS.slice(0, 2), ['prompt', 'full'], 'Compare starts with the two references');
  for (const a of COMPARE_ALGORITHMS) parseAlgorithm(a);
  assert.equal(algorithmSpec({ algorithm: 'cacheblend', k: 0, r: 3 }), 'cacheblend:1');
});

test('question framing: the per-model one the user typed, else the bundled model framing, else the question as typed', () => {
  const bundled = [{ id: 'qa', kind: 'url', base: '', files: [], label: 'qa', prompt: { framing: 'Question: {question}\nAnswer:', example: 'x' } }] as BundledModel[];
  assert.equal(framingFor(DEFAULT_SETTINGS, 'qa', bundled), 'Question: {question}\nAnswer:');
  assert.equal(framingFor(DEFAULT_SETTINGS, 'other', bundled), '{question}');
  assert.equal(framingFor(DEFAULT_SETTINGS, undefined, bundled), '{question}');
  assert.equal(framingFor({ framings: { qa: 'Q: {question} A:' } }, 'qa', bundled), 'Q: {question} A:');
  assert.equal(frameQuestion('Question: {question}\nAnswer:', 'Who?'), 'Question: Who?\nAnswer:');
  assert.equal(frameQuestion('{question} / {question}', 'a'), 'a / a');
  assert.equal(frameQuestion('Instruction. ', 'Who?'), 'Instruction. Who?');
  assert.equal(frameQuestion('{question}', ''), '');
});

test('prompt context: names model, chunks (their cache ids, in order) and the asked text; maps hold for one context', () => {
  const doc = { id: 'd', name: 'd', kind: 'paste', text: 'ab', mode: { kind: 'document' }, addedAt: 0 } as StudioDoc;
  const chunk = (i: number, id: string) => ({ start: i, end: i + 1, tokens: [i], ids: { plain: id.padEnd(32, '0'), legolink0: id.padEnd(32, '1') } });
  const base = {
    docs: [doc], splits: { d: { modelKey: 'm', modeKey: 'document', chunks: packChunks([chunk(0, 'A'), chunk(1, 'B')]), totalTokens: 2 } },
    composer: ['d#0', 'd#1'], settings: { ...DEFAULT_SETTINGS, question: 'Who?' },
  };
  const ctx = promptContext(base, 'm|f32', 'Q: {question}');
  assert.equal(promptContext({ ...base, settings: { ...base.settings, layer: 7, maxTokens: 3 } }, 'm|f32', 'Q: {question}'), ctx, 'layer, head and answer length are not the prompt');
  for (const [what, other] of [
    ['model', promptContext(base, 'other|f32', 'Q: {question}')],
    ['framing', promptContext(base, 'm|f32', '{question}')],
    ['question', promptContext({ ...base, settings: { ...base.settings, question: 'Why?' } }, 'm|f32', 'Q: {question}')],
    ['order', promptContext({ ...base, composer: ['d#1', 'd#0'] }, 'm|f32', 'Q: {question}')],
    ['chunks re-cut', promptContext({ ...base, splits: { d: { ...base.splits.d, chunks: packChunks([chunk(0, 'A2'), chunk(1, 'B')]) } } }, 'm|f32', 'Q: {question}')],
  ]) assert.notEqual(other, ctx, what);
});
