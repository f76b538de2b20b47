/**
 * KVSpare: a destroyed cache's buffers go to the next cache of about its size (Engine.newCache), not to one
 * more than twice smaller, of another precision, or larger than they hold. A cache made from them computes what
 * a fresh one computes, bit for bit, though its buffers still hold a longer prompt's rows.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { harness } from '../helpers/gpu';
import { openModel } from '../../src/node/session';
import { KVCache, KVSpare } from '../../src/engine/model/kv-cache';

const h = await harness();

test('the spare goes to a cache it can hold without being more than twice too big, of the same layout', () => {
  const spare = new KVSpare();
  const make = (rows: number, dtype: 'f32' | 'f16' = 'f32', kvDim = 8) => new KVCache(h.gpu.device, 2, kvDim, dtype, rows, spare);
  /** A cache of 1000 rows destroyed: its buffers are the spare. */
  const kept = () => {
    spare.clear();
    const a = make(1000);
    const buffers = [...a.k, ...a.v];
    a.destroy();
    assert.equal(a.k.length, 0, 'a destroyed cache lets go of its buffers');
    return buffers;
  };
  const others: [string, () => KVCache][] = [
    ['more rows', () => make(1001)], ['rows of another width', () => make(1000, 'f32', 16)], ['halves', () => make(1000, 'f16')], ['under half the rows', () => make(400)],
  ];
  for (const [what, other] of others) {
    const buffers = kept();
    const c = other();
    assert.ok([...c.k, ...c.v].every((b) => !buffers.includes(b)), `not given to a cache of ${what}`);
    c.destroy();
  }
  const buffers = kept();
  const b = make(600);
  assert.deepEqual([...b.k, ...b.v], buffers, 'the spare went to a cache of 600 rows');
  assert.equal(b.capacity, 1000, 'which holds as many rows as the buffers do');
  const c = make(600);
  assert.ok([...c.k, ...c.v].every((x) => !buffers.includes(x)), 'once taken, the spare is gone');
  b.destroy();
  b.destroy(); // twice is harmless
  c.destroy();
  spare.clear();
});

const s = await openModel(join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin'));
after(() => s.close());

test('a cache made from a longer prompt\'s buffers computes what a fresh cache computes, bit for bit', async () => {
  const e = s.engine;
  const enc = (t: string) => s.model.tokenizer.encode(t, { addBos: true });
  const long = enc('Once upon a time there was a little girl named Lily who loved to play in the park with her dog');
  const short = enc('Tom had a big red ball');
  const run = async (cache: KVCache) => {
    const first = await e.prefill(cache, short, undefined, { logits: 'last' });
    const steps: Float32Array[] = [first.logits];
    for (let i = 0; i < 4; i++) steps.push(await e.decode(cache, 10 + i));
    return steps;
  };
  const before = e.newCache(64);
  await e.prefill(before, long, undefined, { logits: 'none' });
  const used = [...before.k, ...before.v];
  before.destroy();
  const recycled = e.newCache(64);
  assert.deepEqual([...recycled.k, ...recycled.v], used, 'the next cache got the longer prompt\'s buffers');
  const fresh = e.newCache(64);
  assert.ok(fresh.k.every((b) => !used.includes(b)), 'and the one after that new ones');
  const got = await run(recycled);
  const want = await run(fresh);
  for (let i = 0; i < want.length; i++) assert.deepEqual(got[i], want[i], `step ${i}`);
  assert.ok(long.length > short.length + 4);
  for (const c of [recycled, fresh]) c.destroy();
});
