/** LongBench-style F1 and Rouge-L F on values worked out by hand. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { answerRecall, lcsLength, normalizeAnswer, qaF1, recallScore, rougeL, rougeTokens, score, tokenF1, tokenRecall } from '../../src/eval/metrics';

const close = (a: number, b: number, what = '') => assert.ok(Math.abs(a - b) < 1e-12, `${what}: ${a} != ${b}`);

test('normalizeAnswer lower-cases, strips punctuation, articles and extra whitespace', () => {
  assert.equal(normalizeAnswer('  The Cat, sat on  A mat!  '), 'cat sat on mat');
  assert.equal(normalizeAnswer('An apple; the END.'), 'apple end');
  // Articles only as whole words; punctuation goes before articles are matched.
  assert.equal(normalizeAnswer('Theatre, anthem and "a"'), 'theatre anthem and');
  assert.equal(normalizeAnswer("Mira's lemon-cake"), 'miras lemoncake');
  assert.equal(normalizeAnswer('...'), '');
});

test('token-overlap F1 (hand-checked)', () => {
  // pred: cat sat on mat (4 tokens); ref: cat on mat (3); common 3 → P 3/4, R 1, F1 = 2·0.75/1.75 = 6/7.
  close(qaF1('The cat sat on the mat.', 'a cat on a mat'), 6 / 7, 'cat');
  // pred: paris france (2); ref: paris (1); P 1/2, R 1 → F1 2/3.
  close(qaF1('Paris, France', 'Paris'), 2 / 3, 'paris');
  // Repeated tokens count once per match: pred "red red red" vs ref "red blue": common 1, P 1/3, R 1/2 → F1 = 2·(1/6)/(5/6) = 0.4.
  close(tokenF1(['red', 'red', 'red'], ['red', 'blue']), 0.4, 'repeats');
  close(qaF1('Saturday', 'saturday'), 1, 'case');
  assert.equal(qaF1('no overlap here', 'Wednesday'), 0);
  assert.equal(qaF1('', 'Wednesday'), 0);
  assert.equal(qaF1('the', 'a'), 0, 'articles only normalise to nothing');
});

test('Rouge-L F (hand-checked)', () => {
  assert.deepEqual(rougeTokens("Anna's 5 PM meeting, OK?"), ['anna', 's', '5', 'pm', 'meeting', 'ok']);
  // the cat sat on the mat / the cat is on the mat: LCS "the cat on the mat" = 5 → P = R = 5/6.
  assert.equal(lcsLength('the cat sat on the mat'.split(' '), 'the cat is on the mat'.split(' ')), 5);
  close(rougeL('The cat sat on the mat.', 'the cat is on the mat'), 5 / 6, 'cat');
  // police killed the gunman / the gunman police killed: LCS 2 → F = 0.5.
  close(rougeL('police killed the gunman', 'the gunman police killed'), 0.5, 'gunman');
  // pred 3 tokens, ref 6, LCS 3: P 1, R 1/2 → F = 2/3.
  close(rougeL('Ben will bring', 'Ben will bring the notes tomorrow'), 2 / 3, 'prefix');
  assert.equal(rougeL('', 'anything'), 0);
  assert.equal(rougeL('x y z', 'a b c'), 0);
});

test('score takes the best reference', () => {
  close(score('f1', 'a green teapot', ['blue teapot', 'green teapot']), 1, 'f1');
  close(score('f1', 'green', ['blue teapot', 'green teapot']), 2 / 3, 'f1 partial');
  close(score('rougeL', 'Tom will wait', ['Anna will be late', 'Tom will wait for Anna']), 2 * 1 * 0.6 / 1.6, 'rougeL');
});

test('answer recall: the share of the answer the reply holds, however long the reply (hand-checked)', () => {
  // The reply names the answer inside a sentence of 9 normalised tokens: recall 1, F1 2·(1/9)/(1/9 + 1) = 0.2.
  const reply = 'The best day to visit the town of Biobe is Wednesday.';
  close(answerRecall(reply, 'Wednesday'), 1, 'found');
  close(qaF1(reply, 'Wednesday'), 0.2, 'f1 of the same reply');
  // Two of the answer's three tokens (articles dropped): green, teapot of "a small green teapot" → 2/3.
  close(answerRecall('a green teapot', 'a small green teapot'), 2 / 3, 'part');
  // Each answer token is matched at most as often as the reply has it.
  close(tokenRecall(['red'], ['red', 'red']), 0.5, 'repeats');
  assert.equal(answerRecall('', 'Wednesday'), 0);
  assert.equal(answerRecall('Wednesday', ''), 0, 'an answer that normalises to nothing is never found');
  close(recallScore('f1', 'it is the green teapot', ['blue box', 'green teapot'])!, 1, 'best reference');
  assert.equal(recallScore('rougeL', 'Tom will wait', ['Tom will wait']), null, 'summaries have no answer to find');
});
