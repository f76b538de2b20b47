/**
 * Prompt Cache on stories260K: a schema with a union and a parameter.
 * Members of a union share their start position; a parameter's reserved
 * positions are left out of its module's cache and filled at link time by
 * the argument; the member not chosen does not affect the result, the one
 * chosen does; modules are never moved or recomputed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openModel } from '../../src/node/session';
import { compileSchema, encodeSchema, parseSchema, promptCacheParts } from '../../src/kvcompile/promptcache';
import { link } from '../../src/kvlink/link';
import { parseAlgorithm } from '../../src/kvlink/algorithms';
import { assertClose } from '../helpers/gpu';

const STORIES = join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin');
const schema = parseSchema({
  name: 'story',
  modules: [
    { name: 'intro', text: 'Once upon a time there was a cat.' },
    { union: [{ name: 'park', text: 'The cat went to the park.' }, { name: 'sea', text: 'The cat loved the big blue sea and the sun.' }] },
    { name: 'ask', text: 'Her name was {{name:3}} and she' },
  ],
});

test('Prompt Cache: union members share a start, parameters fill reserved positions', async () => {
  const s = await openModel(STORIES);
  try {
    const tok = s.model.tokenizer;
    const mods = encodeSchema(schema, tok);
    const intro = mods.get('intro')!, park = mods.get('park')!, sea = mods.get('sea')!, ask = mods.get('ask')!;
    assert.equal(intro.positions[0], 1, 'position 0 is the BOS');
    assert.equal(park.positions[0], sea.positions[0], 'union members share their start');
    assert.equal(ask.positions[0], Math.max(park.positions.at(-1)!, sea.positions.at(-1)!) + 1, 'next module after the longest member');
    const p = ask.params[0];
    assert.equal(p.len, 3);
    assert.ok(!ask.positions.some((x) => x >= p.start && x < p.start + 3), 'reserved positions are not in the module cache');

    const ctx = { engine: s.engine, modelId: 'stories', tokenizerId: 'tok512', bosId: 1 };
    const compiled = await compileSchema(ctx, mods);
    const name = tok.encode('Lily', { addBos: false });
    const suffix = tok.encode('went', { addBos: false });
    const parts = promptCacheParts(schema, mods, compiled, { modules: ['intro', 'sea', 'ask'], args: { name }, suffix });
    const r = await link(s.engine, parts, parseAlgorithm('promptcache'), { bosId: 1 });
    assert.equal(r.recomputed, 1 + name.length + suffix.length, 'only BOS, the argument and the new text');
    const argRows = r.layout.tokens.map((_, i) => i).filter((i) => r.layout.positions[i] >= p.start && r.layout.positions[i] < p.start + name.length);
    assert.deepEqual(argRows.map((i) => r.layout.tokens[i]), name);

    // The member not chosen changes nothing: the same union listed in the other order gives the same logits.
    const only = parseSchema({ name: 'only', modules: [schema.modules[0], { union: [{ name: 'sea', text: 'The cat loved the big blue sea and the sun.' }, { name: 'park', text: 'The cat went to the park.' }] }, schema.modules[2]] });
    const mods2 = encodeSchema(only, tok);
    const r2 = await link(s.engine, promptCacheParts(only, mods2, await compileSchema(ctx, mods2), { modules: ['intro', 'sea', 'ask'], args: { name }, suffix }), parseAlgorithm('promptcache'), { bosId: 1 });
    assertClose(r2.logits, r.logits, 1e-5, 1e-5, 'same member, same logits');
    const r3 = await link(s.engine, promptCacheParts(schema, mods, compiled, { modules: ['intro', 'park', 'ask'], args: { name }, suffix }), parseAlgorithm('promptcache'), { bosId: 1 });
    assert.notDeepEqual(Array.from(r3.logits), Array.from(r.logits), 'the other member changes the answer');
    assert.throws(() => promptCacheParts(schema, mods, compiled, { modules: ['park', 'sea'], args: {}, suffix }), /Only one member of a union/);
    assert.throws(() => promptCacheParts(schema, mods, compiled, { modules: ['ask'], args: { name: [5, 6, 7, 8] }, suffix }), /reserves 3/);
    for (const x of [r, r2, r3]) x.cache.destroy();
  } finally {
    s.close();
  }
});
