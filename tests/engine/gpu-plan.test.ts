/**
 * The GPU memory plan (src/engine/model/gpu-plan.ts) is computed from a
 * config alone, so the page can warn before downloading or uploading: it
 * must count the weights the loaders produce and list the buffers
 * GpuModel.upload allocates (labels and sizes, matrices split in row parts
 * where one buffer cannot hold them), for every architecture's optional
 * tensors; a model that cannot be split to fit the adapter's limits is
 * refused before the loaded model is dropped.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createNodeGpu, loadKernelSources } from '../../src/node/gpu';
import { Engine } from '../../src/engine/engine';
import { GpuModel, OutOfGpuMemoryError } from '../../src/engine/model/gpu-model';
import { kvDtypeFor, paramCount, planGpuMemory, splitRows, weightDtypeFor } from '../../src/engine/model/gpu-plan';
import { KVCache } from '../../src/engine/model/kv-cache';
import { loadHfFolder } from '../../src/engine/formats/hf';
import { loadModelFiles } from '../../src/engine/formats/load';
import { nodeFolderFiles, nodeModelFiles } from '../../src/node/files';
import type { ModelConfig } from '../../src/engine/model/config';
import type { HostWeights } from '../../src/engine/model/weights';

const ROOT = join(import.meta.dirname, '../..');

async function models(): Promise<{ config: ModelConfig; weights: HostWeights }[]> {
  const out: { config: ModelConfig; weights: HostWeights }[] = [
    await loadModelFiles(nodeModelFiles(join(ROOT, 'public/models/stories260K/stories260K.bin')), 'stories260K'),
    await loadModelFiles(nodeModelFiles(join(ROOT, 'public/models/qa-demo')), 'qa-demo'),
  ];
  // qwen2: q/k/v biases; gemma3: q/k norms and sandwich norms; llama3-smollm: untied head, two shards
  for (const name of ['qwen2', 'gemma3', 'llama3-smollm']) {
    out.push(await loadHfFolder(nodeFolderFiles(join(ROOT, 'tests/fixtures/hf', name)), { name }));
  }
  return out;
}

test('the plan counts every weight and lists every buffer GpuModel.upload allocates, whole or split', async () => {
  const gpu = await createNodeGpu();
  try {
    const seen = new Set<string>();
    for (const m of await models()) {
      const c = m.config;
      let n = 0;
      for (const t of m.weights.values()) n += t.data.length;
      assert.equal(paramCount(c), n, `${c.name}: weights`);
      if (c.qkvBias) seen.add('bias');
      if (c.qkNorm && c.postNorms) seen.add('norms');
      if (!c.tiedEmbeddings) seen.add('untied');
      for (const dtype of ['f32', 'f16'] as const) {
        // The adapter's own limits (nothing split), and limits so small that the embedding is (a logits row fits).
        const small = Math.ceil((c.vocabSize * 4 * 1.5) / 16) * 16;
        for (const limits of [gpu.device.limits, { maxStorageBufferBindingSize: small, maxBufferSize: small + 64 }]) {
          const plan = planGpuMemory(c, dtype, limits);
          const gm = await GpuModel.upload(gpu.device, c, m.weights, dtype, limits);
          assert.deepEqual(gm.allocated, plan.buffers, `${c.name} ${dtype}: buffers`);
          assert.equal(plan.weightBytes, gm.bytes, `${c.name} ${dtype}: bytes`);
          assert.deepEqual(plan.problems, []);
          assert.equal(plan.kvBytesPerToken, c.nLayers * 2 * c.nKvHeads * c.headDim * 4);
          // Keys and values kept as f16 (the app's choice above 50M weights) take what the cache allocates for them.
          for (const kv of ['f32', 'f16'] as const) {
            const cache = new KVCache(gpu.device, c.nLayers, c.nKvHeads * c.headDim, kv, 8);
            assert.equal(planGpuMemory(c, dtype, limits, undefined, kv).kvBytesPerToken, cache.bytes / 8, `${c.name} ${kv} KV`);
            cache.destroy();
          }
          assert.ok(plan.buffers.every((b) => b.bytes <= plan.bufferLimit));
          const split = plan.buffers.some((b) => b.label === 'embed[0]');
          assert.equal(split, limits !== gpu.device.limits, `${c.name} ${dtype}: the embedding is split only under the small limit`);
          if (split) seen.add('split');
          gm.destroy();
        }
      }
      assert.equal(weightDtypeFor(c), 'f32', `${c.name} is small`);
      assert.equal(kvDtypeFor(c), 'f32', `${c.name}: its keys and values stay f32`);
    }
    assert.deepEqual([...seen].sort(), ['bias', 'norms', 'split', 'untied'], 'the fixtures cover every optional tensor');
  } finally {
    gpu.release();
  }
});

test('splitRows: whole when it fits, else the fewest near-equal row ranges; never a split row', () => {
  assert.deepEqual(splitRows(10, 48, 480), [{ row0: 0, rows: 10 }]);
  // 160 bytes hold 3 rows of 48: 4 parts of 3, 3, 3 and 1 rows.
  assert.deepEqual(splitRows(10, 48, 160)!.map((r) => [r.row0, r.rows]), [[0, 3], [3, 3], [6, 3], [9, 1]]);
  // 7 rows fit: 2 parts of 5.
  assert.deepEqual(splitRows(10, 48, 7 * 48)!.map((r) => r.rows), [5, 5]);
  // The limit counts in whole 16-byte units (buffers are padded so): 3 rows of 24 bytes need 80.
  assert.deepEqual(splitRows(10, 24, 79)!.map((r) => r.rows), [2, 2, 2, 2, 2]);
  assert.equal(splitRows(10, 48, 47), null, 'one row larger than the limit');
});

test('limits: a large embedding is split into parts; rows and logits that cannot fit are refused, named', async () => {
  const [m] = await models();
  const c = { ...m.config, name: 'wide', vocabSize: 1 << 20 };
  const embed = (1 << 20) * c.hidden;
  // One buffer may hold just under the f32 embedding.
  const limits = { maxStorageBufferBindingSize: embed * 4 - 16, maxBufferSize: 1 << 30 };
  const f32 = planGpuMemory(c, 'f32', limits);
  assert.deepEqual(f32.problems, []);
  assert.deepEqual(f32.buffers.filter((b) => b.label.startsWith('embed')), [
    { label: 'embed[0]', bytes: embed * 2 }, { label: 'embed[1]', bytes: embed * 2 },
  ]);
  assert.equal(f32.largest.bytes, embed * 2);
  assert.equal(f32.bufferLimit, embed * 4 - 16);
  assert.deepEqual(planGpuMemory(c, 'f16', limits).buffers.filter((b) => b.label.startsWith('embed')), [{ label: 'embed', bytes: embed * 2 }]);
  // maxBufferSize counts too.
  assert.equal(planGpuMemory(c, 'f16', { ...limits, maxBufferSize: embed }).buffers.filter((b) => b.label.startsWith('embed')).length, 2);
  // A row cannot be split: the tensor with the largest rows is named, with f16 suggested where its rows would fit.
  const rows = planGpuMemory(c, 'f32', { maxStorageBufferBindingSize: c.intermediate * 4 - 16, maxBufferSize: 1 << 30 });
  assert.deepEqual(rows.problems, [
    `Tensor 0.w_down of wide needs ${c.intermediate * 4} bytes for one row, and rows are not split; ` +
      `this adapter allows ${c.intermediate * 4 - 16} bytes in one buffer (try f16 weights)`,
    `The logits of wide need 4.0 MiB per token in one buffer; this adapter allows ${c.intermediate * 4 - 16} bytes`,
  ]);
  assert.match(planGpuMemory(c, 'f16', { maxStorageBufferBindingSize: c.intermediate * 2 - 16, maxBufferSize: 1 << 30 }).problems[0], /bytes in one buffer$/);
  // One token's logits are one buffer.
  const vocab = { ...c, vocabSize: 40 << 20 };
  assert.deepEqual(planGpuMemory(vocab, 'f16', { maxStorageBufferBindingSize: 128 << 20, maxBufferSize: 2 ** 31 }).problems, [
    'The logits of wide need 160.0 MiB per token in one buffer; this adapter allows 128.0 MiB',
  ]);
  const big = { ...c, hidden: 2048, intermediate: 8192, nLayers: 4, nHeads: 16, nKvHeads: 16, headDim: 128 };
  assert.ok(paramCount(big) > 50e6);
  assert.equal(weightDtypeFor(big), 'f16');
});

test('Gemma 3 270M on a 128 MiB binding limit (llvmpipe, compatibility mode): its embedding in three parts', async () => {
  // Gemma 3 270M's shape (its GGUF's metadata) on the Gemma 3 fixture's config: the 262144 x 640 embedding, tied as
  // the LM head, is 320 MiB in f16.
  const fixture = (await models()).find((m) => m.config.arch === 'gemma3')!.config;
  const gemma = {
    ...fixture, name: 'gemma-3-270m', vocabSize: 262144, hidden: 640, intermediate: 2048, nLayers: 18, nHeads: 4, nKvHeads: 1, headDim: 256,
  };
  assert.ok(gemma.tiedEmbeddings && gemma.qkNorm && gemma.postNorms);
  const llvmpipe = { maxStorageBufferBindingSize: 128 << 20, maxBufferSize: 2 ** 31 };
  assert.equal(weightDtypeFor(gemma), 'f16');
  assert.equal(kvDtypeFor(gemma), 'f16', 'and its keys and values f16');
  const plan = planGpuMemory(gemma, 'f16', llvmpipe);
  assert.deepEqual(plan.problems, []);
  assert.deepEqual(plan.buffers.filter((b) => b.label.startsWith('embed')), [
    { label: 'embed[0]', bytes: 87382 * 1280 }, { label: 'embed[1]', bytes: 87382 * 1280 }, { label: 'embed[2]', bytes: 87380 * 1280 },
  ]);
  assert.equal(plan.buffers.filter((b) => b.label.includes('[')).length, 3, 'nothing else is split');
  assert.ok(plan.largest.bytes <= 128 << 20);
});

test('Engine.load refuses a model that will not fit and keeps the loaded one', async () => {
  const [m] = await models();
  const gpu = await createNodeGpu();
  const engine = Engine.create(gpu, loadKernelSources());
  try {
    await engine.load(m.config, m.weights);
    assert.equal(engine.model!.dtype, weightDtypeFor(m.config), 'without a precision, the engine picks it by the rule');
    const before = (await engine.prefill(engine.newCache(), [1, 403, 407])).logits;
    // A vocabulary whose logits for one token do not fit one buffer (its embedding could be split).
    const max = Math.min(gpu.device.limits.maxStorageBufferBindingSize, gpu.device.limits.maxBufferSize);
    const tooBig = { ...m.config, vocabSize: max / 4 + 4, name: 'too-big' };
    // The check needs no weights: it fails before reading any.
    await assert.rejects(engine.load(tooBig, new Map(), { weightDtype: 'f32' }), { name: 'OutOfGpuMemoryError', message: /The logits of too-big need/ });
    // The refusal carries the plan's problems (the worker words them), and the loaded model keeps its own plan.
    const refusal = await engine.load(tooBig, new Map(), { weightDtype: 'f32' }).catch((e: unknown) => e);
    assert.ok(refusal instanceof OutOfGpuMemoryError);
    assert.deepEqual(refusal.problems, engine.plan(tooBig, 'f32').problems);
    assert.ok(refusal.problems.length > 0);
    assert.deepEqual(engine.model!.plan, engine.plan(m.config));
    assert.equal(engine.config.name, 'stories260K');
    assert.deepEqual((await engine.prefill(engine.newCache(), [1, 403, 407])).logits, before);
  } finally {
    engine.destroy();
    gpu.release();
  }
});
