// Compile variants have one shape: defaults are filled in before a cache id is hashed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cacheId, compileLayout, resolveVariant } from '../../src/kvcompile/compile';
import type { CompileVariant } from '../../src/types/kv';

const ctx = { modelId: 'm', tokenizerId: 't', bosId: 1 };
const tokens = [5, 6, 7];

test('legolink0 spelled with or without its defaults names one cache', async () => {
  const spellings: CompileVariant[] = [
    { kind: 'legolink0' },
    { kind: 'legolink0', sinks: 4 },
    { kind: 'legolink0', sinkToken: 1 },
    { sinkToken: 1, sinks: 4, kind: 'legolink0' } as CompileVariant,
  ];
  const ids = await Promise.all(spellings.map((v) => cacheId(ctx, tokens, v)));
  assert.equal(new Set(ids).size, 1, `ids: ${ids.join(', ')}`);
  assert.deepEqual(resolveVariant({ kind: 'legolink0' }, 1), { kind: 'legolink0', sinks: 4, sinkToken: 1 });
  const layouts = spellings.map((v) => compileLayout(tokens, v, ctx.bosId));
  for (const l of layouts) assert.deepEqual(l, layouts[0]);
});

test('a different compile gives a different id', async () => {
  const base = await cacheId(ctx, tokens, { kind: 'legolink0' });
  assert.notEqual(await cacheId(ctx, tokens, { kind: 'legolink0', sinks: 3 }), base);
  assert.notEqual(await cacheId(ctx, tokens, { kind: 'legolink0', sinkToken: 2 }), base);
  // The default sink token is the model's BOS, so another BOS is another cache.
  assert.notEqual(await cacheId({ ...ctx, bosId: 2 }, tokens, { kind: 'legolink0' }), base);
  assert.notEqual(await cacheId(ctx, tokens, { kind: 'plain' }), base);
  // A plain cache does not depend on fields it does not have.
  assert.equal(await cacheId(ctx, tokens, { kind: 'plain', sinks: 4 } as unknown as CompileVariant), await cacheId(ctx, tokens, { kind: 'plain' }));
});

test('a bad sink count is refused', () => {
  assert.throws(() => resolveVariant({ kind: 'legolink0', sinks: 0 }, 1), /at least one sink/);
  assert.throws(() => compileLayout(tokens, { kind: 'legolink0' }, null), /needs a sink token/);
});
