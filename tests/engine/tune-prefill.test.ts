/**
 * Prefill's attention chosen by timing (model/tune-prefill.ts, Engine.tunePrefill), on stories260K (heads of 8: one
 * or two lanes a row group run) with the 'gpu' profile forced, on SwiftShader (subgroups of 4). With an injected
 * clock: every way (lanes a row group, keys a tile) timed in turns, the default first; the fastest kept past the
 * margin, the default within it; an earlier choice restored where timing fails; nothing timed on the 'cpu' profile; a
 * way whose output on the device differs from the default's (here made to by a wrong scale) neither timed nor kept.
 * Kept, a way serves every tiled prefill (the kernels a prefill builds say so) with the default's logits. With the
 * real clock: every way runs.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { openModel } from '../../src/node/session';
import { describeTiledWay, tiledLaneWays, tiledWays, type Engine, type TiledWay } from '../../src/engine';
import { tunePrefill } from '../../src/engine/model/tune-prefill';
import { assertClose } from '../helpers/gpu';

const s = await openModel(join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin'));
const e = s.engine;
after(() => s.close());

/** A way as a short tag: lanes (x1 where they split one row) / keys a tile. */
const tag = (w: TiledWay) => `${w.lanes}${w.rows === 1 && w.lanes > 1 ? 'x1' : ''}/${w.keysPerTile}`;

/** Runs `fn` with the engine on the 'gpu' profile and no tuned way, restored after. */
async function onGpuProfile<T>(fn: (e: Engine) => Promise<T>): Promise<T> {
  const saved = { matmulProfile: e.ops.matmulProfile, tiled: e.ops.tiled };
  e.ops.matmulProfile = 'gpu';
  e.ops.tiled = undefined;
  try {
    return await fn(e);
  } finally {
    Object.assign(e.ops, saved);
  }
}

test('the ways: one lane always, two and four where subgroups have them and the head splits in as many vec4 shares; 16 and 8 keys a tile', () => {
  assert.equal(e.ops.subgroupMin, 4, 'SwiftShader: subgroups of 4');
  assert.deepEqual(tiledLaneWays(e.ops, 8), [1, 2]);
  assert.deepEqual(tiledLaneWays(e.ops, 64), [1, 2, 4]);
  assert.deepEqual(tiledLaneWays(e.ops, 72), [1, 2], 'a head of 18 vec4s: no share of four');
  assert.deepEqual(tiledLaneWays(e.ops, 4), [1]);
  assert.deepEqual(tiledWays(e.ops, 8).map(tag), ['1/16', '1/8', '2/16', '2/8']);
  // Heads over 64 also split one row over the lanes; tiles as the workgroup memory holds them: SwiftShader's 32 KiB
  // holds 12 keys of a head of 256, so 12 and 8.
  assert.deepEqual(tiledWays(e.ops, 256).map(tag), ['1/12', '1/8', '2/12', '2/8', '2x1/12', '2x1/8', '4/12', '4/8', '4x1/12', '4x1/8']);
  // Without subgroups: one lane, at both tiles.
  assert.deepEqual(tiledWays({ takesTiledLanes: (_, r) => r === 1, attentionTile: (_, t = 16) => t }, 64).map(tag), ['1/16', '1/8']);
  assert.deepEqual(tiledWays(e.ops, 64).slice(4).map(describeTiledWay), ['attention_tiled_sg, 4 lanes sharing 4 rows, 16 keys a tile', 'attention_tiled_sg, 4 lanes sharing 4 rows, 8 keys a tile']);
  assert.equal(describeTiledWay({ lanes: 1, rows: 1, keysPerTile: 16 }), 'attention_tiled, 16 keys a tile');
  assert.equal(describeTiledWay({ lanes: 4, rows: 1, keysPerTile: 8 }), 'attention_tiled_sg, 4 lanes a row, 8 keys a tile');
});

test('every way in turns, the default first; the fastest kept past the margin, the default within it; nothing timed on the cpu profile', async () => {
  assert.equal(await tunePrefill(e, { measure: async () => assert.fail('timed on the cpu profile') }), null);
  await onGpuProfile(async () => {
    const seen: string[] = [];
    const us = (w: TiledWay) => (w.lanes === 2 && w.keysPerTile === 8 ? 60 : w.lanes === 2 ? 70 : 100);
    const r = (await tunePrefill(e, { reps: 2, measure: async (w) => (seen.push(tag(w)), us(w)) }))!;
    const order = ['1/16', '1/8', '2/16', '2/8'];
    assert.deepEqual(seen, [...order, ...order]);
    assert.deepEqual(r.ways.map((w) => [tag(w), w.us]), order.map((t) => [t, t === '2/8' ? 60 : t === '2/16' ? 70 : 100]));
    assert.deepEqual(r.chosen, { lanes: 2, rows: 2, keysPerTile: 8 });
    assert.deepEqual(e.ops.tiled, { lanes: 2, rows: 2, keysPerTile: 8 });
    assert.deepEqual({ rows: r.rows, keys: r.keys }, { rows: 512, keys: Math.min(4096, e.config.maxPositions) });
    // 2% faster: within the margin, the default kept (and the earlier choice replaced).
    const close = (await tunePrefill(e, { reps: 1, measure: async (w) => (w.lanes === 2 ? 98 : 100) }))!;
    assert.deepEqual(close.chosen, { lanes: 1, rows: 1, keysPerTile: 16 });
    assert.deepEqual(e.ops.tiled, { lanes: 1, rows: 1, keysPerTile: 16 });
    // A timing that fails restores what was there and says why.
    const earlier = { lanes: 2 as const, rows: 2, keysPerTile: 8 };
    e.ops.tiled = earlier;
    await assert.rejects(tunePrefill(e, { reps: 1, measure: async (w) => (w.lanes === 2 ? Promise.reject(new Error('device lost')) : 100) }), /device lost/);
    assert.equal(e.ops.tiled, earlier);
  });
});

test('a way whose output differs from the default way\'s on the device is neither timed nor kept, and the tuning says why', async () => {
  await onGpuProfile(async () => {
    // On the device: every way agrees here; made to attend with a wrong scale, two lanes no longer do.
    const attention = e.ops.attention;
    e.ops.attention = function (a) {
      return attention.call(this, a.tiledLanes === 2 ? { ...a, scale: a.scale * 1.01 } : a);
    };
    const seen: string[] = [];
    try {
      const r = (await tunePrefill(e, { reps: 1, measure: async (w) => (seen.push(tag(w)), w.lanes === 2 ? 10 : 100) }))!;
      assert.deepEqual(seen, ['1/16', '1/8'], 'only one lane timed');
      assert.deepEqual(r.chosen, { lanes: 1, rows: 1, keysPerTile: 16 });
      assert.equal(e.ops.tiled!.lanes, 1);
      for (const w of r.ways.slice(2)) {
        assert.ok(Number.isNaN(w.us));
        assert.match(w.error!, /^its output differs from attention_tiled, 16 keys a tile's by \d\.\d\de-\d+ of a largest \d+\.\d{3} on this device$/);
      }
    } finally {
      e.ops.attention = attention;
    }
    const ok = (await tunePrefill(e, { reps: 1, measure: async (w) => (w.lanes === 2 ? 10 : 100) }))!;
    assert.equal(ok.chosen.lanes, 2, 'unpatched, they agree and are kept');
    assert.ok(ok.ways.every((w) => w.error === undefined));
  });
});

/** Logits of a 48-token prompt's prefill (tiled: over 32 rows), and the attention kernels it built (tiles, lanes). */
async function prefill(): Promise<{ logits: Float32Array; kernels: string[] }> {
  const prompt = Array.from({ length: 48 }, (_, i) => 3 + ((i * 37) % 500));
  const cache = e.newCache(prompt.length);
  const lib = e.ops.lib, pipeline = lib.pipeline;
  const names = new Set<string>();
  // Each attention kernel with its tile and lanes a row group.
  lib.pipeline = (name, defines) => (names.add(name.startsWith('attention_tiled') ? `${name} BK=${defines?.BK} R=${defines?.R ?? 1}` : name), pipeline.call(lib, name, defines));
  try {
    const { logits } = await e.prefill(cache, prompt);
    return { logits, kernels: [...names].filter((n) => n.startsWith('attention')).sort() };
  } finally {
    lib.pipeline = pipeline;
    cache.destroy();
  }
}

test('kept, the way serves every tiled prefill and gives the default way\'s logits', async () => {
  await onGpuProfile(async () => {
    const one = await prefill();
    assert.deepEqual(one.kernels, ['attention_tiled BK=16 R=1']);
    await tunePrefill(e, { reps: 1, measure: async (w) => (w.lanes === 2 && w.keysPerTile === 8 ? 50 : 100) });
    assert.deepEqual(e.ops.tiled, { lanes: 2, rows: 2, keysPerTile: 8 });
    const two = await prefill();
    assert.deepEqual(two.kernels, ['attention_tiled_sg BK=8 R=2']);
    // attention_tiled_sg's bound (attention-kernels.test's TILED_RT), carried through the model's layers.
    assertClose(two.logits, one.logits, 0, 2e-5, 'logits');
  });
});

test('timed for real: every way runs', async () => {
  await onGpuProfile(async () => {
    const r = (await tunePrefill(e, { rows: 64, keys: 256, reps: 1 }))!;
    assert.deepEqual(r.ways.map(tag), ['1/16', '1/8', '2/16', '2/8']);
    for (const w of r.ways) assert.ok(Number.isFinite(w.us) && w.us > 0, `${tag(w)}: ${w.us} µs`);
    assert.ok(r.ways.some((w) => tag(w) === tag(r.chosen)));
  });
});
