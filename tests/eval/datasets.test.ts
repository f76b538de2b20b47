/**
 * The dataset generators: the same seed gives the same bytes, another seed
 * other bytes; every case is well-formed; needle chunks fit 512 tokens as
 * the tokenizer counts them and the fact sits at the asked depth; multi-doc
 * supporting documents hold the answer; dialogues end with their summary.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_INSTRUCTION, parseDataset, toJsonl, validateCase } from '../../src/eval/dataset';
import { generateAll, DATASET_DEFAULTS, type DatasetOptions } from '../../src/eval/datasets';
import { DEFAULT_TOKENIZER, loadTokenizerOnly } from '../../src/eval/tokenizer';
import { Rng } from '../../src/eval/rng';
import { questionText } from '../../src/eval/prompt';

const opts: DatasetOptions = { ...DATASET_DEFAULTS, needleLengths: [1024, 2048], needleDepths: [0, 0.5, 1], multidocN: 10, samsumN: 4, samsumShots: 6 };

test('Rng is deterministic and roughly uniform', () => {
  const a = new Rng(7), b = new Rng(7), c = new Rng(8);
  const xs = Array.from({ length: 5 }, () => a.u32());
  assert.deepEqual(xs, Array.from({ length: 5 }, () => b.u32()));
  assert.notDeepEqual(xs, Array.from({ length: 5 }, () => c.u32()));
  const r = new Rng('uniform');
  let sum = 0;
  for (let i = 0; i < 10000; i++) sum += r.float();
  assert.ok(Math.abs(sum / 10000 - 0.5) < 0.02);
});

test('generators: same seed, same bytes; well-formed cases', async () => {
  const { tokenizer, name } = await loadTokenizerOnly(DEFAULT_TOKENIZER);
  const count = (t: string) => tokenizer.encode(t, { addBos: false }).length;
  const one = generateAll(tokenizer, name, opts);
  const two = generateAll(tokenizer, name, opts);
  const other = generateAll(tokenizer, name, { ...opts, seed: 2 });
  for (const stem of ['needle', 'multidoc', 'samsum']) {
    const text = toJsonl(one[stem]);
    assert.equal(text, toJsonl(two[stem]), `${stem}: same seed, same bytes`);
    assert.notEqual(text, toJsonl(other[stem]), `${stem}: another seed, other text`);
    const parsed = parseDataset(text, stem);
    assert.deepEqual(parsed, one[stem], `${stem}: JSONL round trip`);
    for (const c of parsed) validateCase(c);
  }

  // Needle: ceil(L/512) chunks of at most 512 tokens, close to L in all; the fact once, at its depth.
  assert.equal(one.needle.length, 6);
  for (const c of one.needle) {
    const m = c.meta as { length: number; depth: number; context_tokens: number; needle_token_offset: number; chunk_tokens: number[] };
    assert.equal(c.chunks.length, Math.ceil(m.length / 512), c.id);
    assert.deepEqual(c.chunks.map(count), m.chunk_tokens, `${c.id}: recorded token counts`);
    assert.ok(m.chunk_tokens.every((n) => n <= 512), c.id);
    assert.ok(m.context_tokens <= m.length && m.context_tokens > m.length * 0.9, `${c.id}: ${m.context_tokens} tokens`);
    const answer = c.answers[0].replace(/^a /, '');
    const holding = c.chunks.filter((ch) => ch.includes(answer));
    assert.equal(holding.length, 1, `${c.id}: the fact is in one chunk`);
    const depth = m.needle_token_offset / m.context_tokens;
    assert.ok(Math.abs(depth - m.depth) < 0.1, `${c.id}: fact at ${depth.toFixed(2)}, asked ${m.depth}`);
    assert.equal(c.metric, 'f1');
  }

  // Multi-doc: the last supporting document holds the answer; for two hops the first names the bridge entity.
  const hops = new Set<number>();
  for (const c of one.multidoc) {
    const m = c.meta as { hops: number; supporting: number[] };
    hops.add(m.hops);
    assert.equal(c.chunks.length, 6);
    assert.equal(m.supporting.length, m.hops);
    assert.ok(c.chunks[m.supporting.at(-1)!].includes(c.answers[0]), `${c.id}: answer in the supporting document`);
    if (m.hops === 2) {
      const bridge = c.chunks[m.supporting[1]].split('\n')[0];
      assert.ok(c.chunks[m.supporting[0]].includes(bridge), `${c.id}: first hop names ${bridge}`);
    }
    assert.ok(new Set(c.chunks).size === c.chunks.length, `${c.id}: distinct documents`);
  }
  assert.deepEqual([...hops].sort(), [1, 2]);

  // SAMSum shape: examples end with a summary, the question is a dialogue ending with "Summary:", Rouge-L.
  for (const c of one.samsum) {
    assert.equal(c.metric, 'rougeL');
    assert.match(c.question, /^Dialogue: [\s\S]+\nSummary:$/);
    assert.ok(c.chunks.every((ch) => ch.startsWith('Dialogue: ') && /\nSummary: [^\n]+$/.test(ch)));
    assert.ok(c.chunks.map(count).every((n) => n <= 512));
    assert.ok(c.instruction && questionText(c).endsWith('Summary:'));
  }
});

test('parseDataset names what is wrong', () => {
  assert.throws(() => parseDataset('{"id":"x","chunks":[],"question":"q","answers":["a"],"metric":"f1"}', 'd'), /d:1: "chunks"/);
  assert.throws(() => parseDataset('{"id":"x","chunks":["c"],"question":"q","answers":["a"],"metric":"bleu"}', 'd'), /"metric"/);
  const ok = '{"id":"x","chunks":["c"],"question":"q","answers":["a"],"metric":"f1"}';
  assert.throws(() => parseDataset(`${ok}\n${ok}`, 'd'), /d:2: id "x" is used twice/);
  assert.throws(() => parseDataset('{nope', 'd'), /d:1: not valid JSON/);
  assert.equal(parseDataset(`\n${ok}\n\n`).length, 1);
});

test('question framing: LongBench shape with the default or given instruction; verbatim with an empty one', () => {
  const base = { id: 'x', chunks: ['a'], answers: ['b'], metric: 'f1' as const };
  assert.equal(questionText({ ...base, question: 'Who?' }), `\n\n${DEFAULT_INSTRUCTION}\n\nQuestion: Who?\nAnswer:`);
  assert.equal(questionText({ ...base, question: 'Who?', instruction: 'Be brief.' }), '\n\nBe brief.\n\nQuestion: Who?\nAnswer:');
  assert.equal(questionText({ ...base, question: 'Dialogue: hi\nSummary:', instruction: 'Sum up.' }), '\n\nSum up.\n\nDialogue: hi\nSummary:');
  assert.equal(questionText({ ...base, question: 'Question: Who?\nAnswer:', instruction: '' }), 'Question: Who?\nAnswer:');
});

