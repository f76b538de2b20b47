/**
 * The GPU memory plan (src/engine/model/gpu-plan.ts) is computed from a
 * config alone, so the page can warn before downloading or uploading: it
 * must count the weights the loaders produce and the bytes GpuModel.upload
 * allocates, for every architecture's optional tensors; a model that breaks
 * the adapter's limits is refused before the loaded model is dropped.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createNodeGpu, loadKernelSources } from '../../src/node/gpu';
import { Engine } from '../../src/engine/engine';
import { GpuModel, OutOfGpuMemoryError } from '../../src/engine/model/gpu-model';
import { paramCount, planGpuMemory, weightDtypeFor } from '../../src/engine/model/gpu-plan';
import { loadHfFolder } from '../../src/engine/formats/hf';
import { loadModelFiles } from '../../src/engine/formats/load';
import '../../src/engine/formats/all';
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

test('the plan counts every weight and every byte GpuModel.upload allocates', async () => {
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
        const plan = planGpuMemory(c, dtype, gpu.device.limits);
        const gm = await GpuModel.upload(gpu.device, c, m.weights, dtype);
        assert.equal(plan.weightBytes, gm.bytes, `${c.name} ${dtype}: bytes`);
        assert.deepEqual(plan.problems, []);
        assert.equal(plan.kvBytesPerToken, c.nLayers * 2 * c.nKvHeads * c.headDim * 4);
        gm.destroy();
      }
      assert.equal(weightDtypeFor(c), 'f32', `${c.name} is small`);
    }
    assert.deepEqual([...seen].sort(), ['bias', 'norms', 'untied'], 'the fixtures cover every optional tensor');
  } finally {
    gpu.release();
  }
});

test('limits: the largest buffer is named, f16 is suggested for f32, big models default to f16', async () => {
  const [m] = await models();
  const c = { ...m.config, name: 'wide', vocabSize: 1 << 20 };
  const embed = (1 << 20) * c.hidden;
  const limits = { maxStorageBufferBindingSize: embed * 4 - 16, maxBufferSize: 1 << 30 };
  const f32 = planGpuMemory(c, 'f32', limits);
  assert.equal(f32.largest.label, 'embed');
  assert.equal(f32.largest.bytes, embed * 4);
  assert.equal(f32.problems.length, 1);
  assert.match(f32.problems[0], /^Tensor embed of wide needs 256\.0 MiB in one buffer; this adapter allows 256\.0 MiB \(try f16 weights\)$/);
  assert.deepEqual(planGpuMemory(c, 'f16', limits).problems, []);
  // maxBufferSize counts too
  assert.equal(planGpuMemory(c, 'f16', { ...limits, maxBufferSize: embed }).problems.length, 1);
  const big = { ...c, hidden: 2048, intermediate: 8192, nLayers: 4, nHeads: 16, nKvHeads: 16, headDim: 128 };
  assert.ok(paramCount(big) > 50e6);
  assert.equal(weightDtypeFor(big), 'f16');
});

test('Engine.load refuses a model that will not fit and keeps the loaded one', async () => {
  const [m] = await models();
  const gpu = await createNodeGpu();
  const engine = Engine.create(gpu, loadKernelSources());
  try {
    await engine.load(m.config, m.weights);
    assert.equal(engine.model!.dtype, weightDtypeFor(m.config), 'without a precision, the engine picks it by the rule');
    const before = (await engine.prefill(engine.newCache(), [1, 403, 407])).logits;
    const max = gpu.device.limits.maxStorageBufferBindingSize;
    const vocab = Math.ceil(max / 4 / m.config.hidden) + 1;
    const tooBig = { ...m.config, vocabSize: vocab, name: 'too-big' };
    // The check needs no weights: it fails before reading any. (By default a model this big would be stored as
    // f16, where its embedding fits: f32 is asked for.)
    await assert.rejects(engine.load(tooBig, new Map(), { weightDtype: 'f32' }), { name: 'OutOfGpuMemoryError', message: /Tensor embed of too-big/ });
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
