// The algorithm catalogue: one entry per algorithm, whose parameter range and default the parser enforces.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  ALGORITHM_CATALOGUE, ALL_ALGORITHMS, COMPARE_ALGORITHMS, SWEEP_ALGORITHMS, algorithmInfo, compileVariantOf, formatAlgorithm, parseAlgorithm, specFor,
} from '../../src/kvlink/catalogue';

test('every algorithm has one entry, and its default spec parses back to itself', () => {
  const kinds = ALGORITHM_CATALOGUE.map((a) => a.kind);
  assert.deepEqual([...kinds].sort(), ['attnlink', 'cacheblend', 'full', 'legolink', 'legolink0', 'naive', 'prompt', 'promptcache']);
  for (const a of ALGORITHM_CATALOGUE) {
    const spec = specFor(a.kind);
    assert.equal(formatAlgorithm(parseAlgorithm(spec)), spec);
    assert.equal(parseAlgorithm(spec).kind, a.kind);
    assert.equal(compileVariantOf(spec), a.variant, `${a.kind} links ${a.variant} chunks`);
    assert.ok(a.paper === null ? a.kind === 'prompt' : a.paper.title.length > 0, `${a.kind} names its paper`);
  }
  assert.deepEqual(ALL_ALGORITHMS, ['prompt', 'full', 'naive', 'cacheblend:0.15', 'legolink:16', 'legolink0', 'attnlink:16', 'promptcache']);
  assert.deepEqual(COMPARE_ALGORITHMS, ['prompt', 'full', 'naive', 'cacheblend:0.15', 'legolink:16', 'legolink0']);
  assert.deepEqual(SWEEP_ALGORITHMS, ['full', 'cacheblend:0.15', 'legolink:16']);
});

test('a parameter is kept inside its range, and the parser refuses one outside', () => {
  for (const a of ALGORITHM_CATALOGUE) {
    const p = a.param;
    if (!p) {
      assert.throws(() => parseAlgorithm(`${a.kind}:3`), /takes no parameter/);
      continue;
    }
    assert.equal(parseAlgorithm(`${a.kind}:${p.max}`).kind, a.kind);
    assert.equal(parseAlgorithm(`${a.kind}:${p.min}`).kind, a.kind);
    assert.throws(() => parseAlgorithm(`${a.kind}:${p.max + 1}`), /must be in/);
    assert.throws(() => parseAlgorithm(`${a.kind}:${p.min - 1}`), /must be in/);
    assert.throws(() => parseAlgorithm(`${a.kind}:abc`), /must be in/);
    assert.equal(specFor(a.kind, p.max * 10), `${a.kind}:${p.max}`, 'specFor clamps');
  }
  assert.equal(specFor('legolink', 4.6), 'legolink:5');
  assert.equal(algorithmInfo('legolink')!.param!.default, 16);
  assert.throws(() => parseAlgorithm('cacheblend:0.2:fast'), /only cacheblend option/);
  assert.deepEqual(parseAlgorithm('cacheblend:auto'), { kind: 'cacheblend', r: 0.05, checkLayer: 1, gradual: false, auto: 0.05 });
  assert.throws(() => parseAlgorithm('nope'), /Unknown linking algorithm "nope" \(known: prompt, full, naive, cacheblend:r, legolink:k/);
});
