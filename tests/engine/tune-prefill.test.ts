/**
 * Prefill's attention chosen by timing (model/tune-prefill.ts, Engine.tunePrefill), on stories260K (heads of 8: one
 * or two lanes a row group run) with the 'gpu' profile forced, on SwiftShader (subgroups of 4). With an injected
 * clock: every way timed in turns, one lane first; the fastest kept past the margin, one lane within it; an earlier
 * choice restored where timing fails; nothing timed on the 'cpu' profile; a way whose output on the device differs
 * from attention_tiled's (here made to by a wrong scale) neither timed nor kept. Kept, the lanes serve every tiled
 * prefill (the kernels a prefill builds say so) and give one lane's logits. With the real clock: every way runs.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openModel } from '../../src/node/session';
import { describeTiledLanes, tiledLaneWays, type Engine, type TiledLanes } from '../../src/engine';
import { tunePrefill } from '../../src/engine/model/tune-prefill';
import { assertClose } from '../helpers/gpu';

const s = await openModel(join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin'));
const e = s.engine;
after(() => s.close());

/** Runs `fn` with the engine on the 'gpu' profile and no tuned lanes, restored after. */
async function onGpuProfile<T>(fn: (e: Engine) => Promise<T>): Promise<T> {
  const saved = { matmulProfile: e.ops.matmulProfile, tiledLanes: e.ops.tiledLanes };
  e.ops.matmulProfile = 'gpu';
  e.ops.tiledLanes = undefined;
  try {
    return await fn(e);
  } finally {
    Object.assign(e.ops, saved);
  }
}

test('the ways: one lane always; two and four where subgroups have them and the head splits in as many vec4 shares', () => {
  assert.equal(e.ops.subgroupMin, 4, 'SwiftShader: subgroups of 4');
  assert.deepEqual(tiledLaneWays(e.ops, 8), [1, 2]);
  assert.deepEqual(tiledLaneWays(e.ops, 64), [1, 2, 4]);
  assert.deepEqual(tiledLaneWays(e.ops, 72), [1, 2], 'a head of 18 vec4s: no share of four');
  assert.deepEqual(tiledLaneWays(e.ops, 4), [1]);
  assert.deepEqual(tiledLaneWays({ takesTiledLanes: (_, r) => r === 1 }, 64), [1]);
  assert.deepEqual([1, 2, 4].map((r) => describeTiledLanes(r as TiledLanes)), ['attention_tiled', 'attention_tiled_sg, 2 lanes a row group', 'attention_tiled_sg, 4 lanes a row group']);
});

test('every way in turns, one lane first; the fastest kept past the margin, one lane within it; nothing timed on the cpu profile', async () => {
  assert.equal(await tunePrefill(e, { measure: async () => assert.fail('timed on the cpu profile') }), null);
  await onGpuProfile(async () => {
    const seen: TiledLanes[] = [];
    const r = (await tunePrefill(e, { reps: 2, measure: async (lanes) => (seen.push(lanes), lanes === 2 ? 60 : 100) }))!;
    assert.deepEqual(seen, [1, 2, 1, 2]);
    assert.deepEqual(r.ways, [{ lanes: 1, us: 100 }, { lanes: 2, us: 60 }]);
    assert.equal(r.chosen, 2);
    assert.equal(e.ops.tiledLanes, 2);
    assert.deepEqual({ rows: r.rows, keys: r.keys }, { rows: 512, keys: Math.min(4096, e.config.maxPositions) });
    // 2% faster: within the margin, one lane kept (and the earlier choice replaced).
    const close = (await tunePrefill(e, { reps: 1, measure: async (lanes) => (lanes === 2 ? 98 : 100) }))!;
    assert.equal(close.chosen, 1);
    assert.equal(e.ops.tiledLanes, 1);
    // A timing that fails restores what was there and says why.
    e.ops.tiledLanes = 2;
    await assert.rejects(tunePrefill(e, { reps: 1, measure: async (lanes) => (lanes === 2 ? Promise.reject(new Error('device lost')) : 100) }), /device lost/);
    assert.equal(e.ops.tiledLanes, 2);
  });
});

/** Logits of a 48-token prompt's prefill (tiled: over 32 rows), and the attention kernels it built. */
async function prefill(): Promise<{ logits: Float32Array; kernels: string[] }> {
  const prompt = Array.from({ length: 48 }, (_, i) => 3 + ((i * 37) % 500));
  const cache = e.newCache(prompt.length);
  const lib = e.ops.lib, pipeline = lib.pipeline;
  const names = new Set<string>();
  lib.pipeline = (name, defines) => (names.add(name), pipeline.call(lib, name, defines));
  try {
    const { logits } = await e.prefill(cache, prompt);
    return { logits, kernels: [...names].filter((n) => n.startsWith('attention')).sort() };
  } finally {
    lib.pipeline = pipeline;
    cache.destroy();
  }
}

test('a way whose output differs from attention_tiled\'s on the device is neither timed nor kept, and the tuning says why', async () => {
  await onGpuProfile(async () => {
    // On the device: lanes 2 agree here; made to attend with the wrong scale, they no longer do.
    const attention = e.ops.attention;
    e.ops.attention = function (a) {
      return attention.call(this, a.tiledLanes === 2 ? { ...a, scale: a.scale * 1.01 } : a);
    };
    const seen: TiledLanes[] = [];
    try {
      const r = (await tunePrefill(e, { reps: 2, measure: async (lanes) => (seen.push(lanes), lanes === 2 ? 10 : 100) }))!;
      assert.deepEqual(seen, [1, 1], 'only one lane timed');
      assert.equal(r.chosen, 1);
      assert.equal(e.ops.tiledLanes, 1);
      assert.ok(Number.isNaN(r.ways[1].us));
      assert.match(r.ways[1].error!, /^its output differs from attention_tiled's by \d\.\d\de-\d+ of a largest \d+\.\d{3} on this device$/);
    } finally {
      e.ops.attention = attention;
    }
    const ok = (await tunePrefill(e, { reps: 1, measure: async (lanes) => (lanes === 2 ? 10 : 100) }))!;
    assert.equal(ok.chosen, 2, 'unpatched, they agree and are kept');
    assert.equal(ok.ways[1].error, undefined);
  });
});

test('kept, the lanes serve every tiled prefill and give the logits of one lane', async () => {
  await onGpuProfile(async () => {
    const one = await prefill();
    assert.deepEqual(one.kernels, ['attention_tiled']);
    await tunePrefill(e, { reps: 1, measure: async (lanes) => (lanes === 2 ? 50 : 100) });
    const two = await prefill();
    assert.deepEqual(two.kernels, ['attention_tiled_sg']);
    // attention_tiled_sg's bound (kernels.test's TILED_RT), carried through the model's layers.
    assertClose(two.logits, one.logits, 0, 2e-5, 'logits');
  });
});

test('timed for real: every way runs', async () => {
  await onGpuProfile(async () => {
    const r = (await tunePrefill(e, { rows: 64, keys: 256, reps: 1 }))!;
    assert.deepEqual(r.ways.map((w) => w.lanes), [1, 2]);
    for (const w of r.ways) assert.ok(Number.isFinite(w.us) && w.us > 0, `${w.lanes} lanes: ${w.us} µs`);
    assert.ok(r.ways.some((w) => w.lanes === r.chosen));
  });
});
