/**
 * argmax.wgsl against its TypeScript twin (reference.ts argmax, the rule of
 * sampling.ts): the same index, exactly, on rows longer and shorter than the
 * workgroup, with ties (the first index wins), -Infinity everywhere, and a
 * maximum at either end. Then greedy decode through the engine: the tokens
 * the GPU picks equal the CPU's argmax over the logits read back.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as ref from '../../src/engine/reference';
import { join } from 'node:path';
import { harness, rand } from '../helpers/gpu';
import { openModel } from '../../src/node/session';
import { argmax as sampleArgmax } from '../../src/generate/sampling';

test('argmax: the first index of each row\'s largest value, as on the CPU', async () => {
  const h = await harness();
  for (const V of [1, 7, 256, 257, 1000, 49152]) {
    const R = 6;
    const x = rand(R * V, V, 8);
    // Row 1: ties at three places (the first must win); row 2: all -Infinity; row 3: the maximum last;
    // row 4: the maximum first; row 5: equal values everywhere.
    const top = 100;
    for (const j of [V - 1, Math.floor(V / 2), Math.floor(V / 3)]) x[V + j] = top;
    x.fill(-Infinity, 2 * V, 3 * V);
    if (V > 1) x[3 * V + V - 1] = top;
    x[4 * V] = top;
    x.fill(0.5, 5 * V, 6 * V);
    const out = h.empty(R * 4);
    h.ops.argmax({ x: h.upload(x), out, R, V });
    const got = new Uint32Array((await h.readF32(out, R)).buffer);
    const want = ref.argmax(x, R, V);
    assert.deepEqual(Array.from(got), Array.from(want), `V=${V}`);
    assert.equal(want[1], Math.floor(V / 3) < V / 2 && V > 2 ? Math.floor(V / 3) : want[1], 'ties: the first index');
    assert.deepEqual([want[2], want[4], want[5]], [0, 0, 0]);
  }
});

test('greedy decode steps pick, on the GPU, the token the CPU picks from the same step\'s logits', async () => {
  const s = await openModel(join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin'));
  try {
    const { engine } = s;
    const prompt = [1, 403, 407, 261, 378, 266];
    const a = engine.newCache();
    const b = engine.newCache();
    const la0 = (await engine.prefill(a, prompt)).logits;
    await engine.prefill(b, prompt);
    let tok = sampleArgmax(la0);
    const seen: number[] = [];
    for (let i = 0; i < 24; i++) {
      const full = await engine.step(a, tok);
      const greedy = await engine.step(b, tok, undefined, { greedy: true });
      assert.equal(greedy.logits.length, 0, 'greedy reads back no logits');
      assert.equal(greedy.token, sampleArgmax(full.logits), `step ${i}`);
      tok = greedy.token!;
      seen.push(tok);
    }
    assert.ok(new Set(seen).size > 3, `a varied continuation (${seen})`);
  } finally {
    s.close();
  }
});
