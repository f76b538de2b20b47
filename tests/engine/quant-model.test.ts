/**
 * Quantized GGUF models kept packed on the GPU (quant.ts, kernels/quant.wgsl),
 * end to end on SwiftShader:
 * - the tiny GGUF fixtures (Q8_0 gemma3, Q4_0 llama) give the same logits
 *   packed as dequantized on load to f32. Measured on SwiftShader: equal bits
 *   (the kernels dequantize exactly as the CPU does). The tolerance, 2e-6 of the
 *   logits' range, leaves room for a GPU that fuses a multiply-add (~1e-7);
 * - the real files (SmolLM2-135M Q4_1, Gemma 3 270M Q4_K_M): the plan lists
 *   every buffer the upload makes, the GPU holds about the file's tensor bytes
 *   (the before/after figures are printed), and Gemma still loads under
 *   llvmpipe's 128 MiB binding limit (its Q8_0 embedding in row parts) with the
 *   same logits as whole. llamacpp-parity.test.ts holds both files to llama.cpp.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createNodeGpu, loadKernelSources } from '../../src/node/gpu';
import { Engine } from '../../src/engine/engine';
import { loadGguf } from '../../src/engine/formats/gguf-model';
import { bufferSource } from '../../src/engine/formats/source';
import { nodeFileSource } from '../../src/node/files';
import { planGpuMemory, splitMatrices } from '../../src/engine/model/gpu-plan';
import { GpuModel, packedTensors } from '../../src/engine/model/gpu-model';
import { shapeConfig, syntheticWeights } from '../../src/bench/shapes';
import { noiseBlocks } from '../../src/engine/quant';
import { assertWithinRange } from '../helpers/gpu';

const ROOT = join(import.meta.dirname, '../..');
const FIX = join(ROOT, 'tests/fixtures/gguf');
const MODELS = join(ROOT, '.cache/models');
const LOGITS_RT = 2e-6;
const MiB = 2 ** 20;


test('tiny GGUF models: packed weights give the logits of weights dequantized on load', async (t) => {
  const gpu = await createNodeGpu();
  const e = Engine.create(gpu, loadKernelSources());
  try {
    for (const [file, q] of [['tiny-gemma3.gguf', 'q8_0'], ['tiny-llama.gguf', 'q4_0']]) {
      const m = await loadGguf(bufferSource(file, new Uint8Array(readFileSync(join(FIX, file)))));
      const tokens = [1, 7, 3, 12, 5, 9];
      const run = async (dequantize: boolean) => {
        const gm = await e.load(m.config, m.weights, { weightDtype: 'f32', dequantize });
        const cache = e.newCache(16);
        const r = await e.prefill(cache, tokens, undefined, { logits: 'all' });
        const next = await e.decode(cache, 4);
        cache.destroy();
        return { logits: r.logits, next, bytes: gm.matrixBytes };
      };
      const packed = await run(false), f32 = await run(true);
      assert.ok(packed.bytes[q as 'q8_0']! > 0 && !packed.bytes.f32, `${file}: matrices stored as ${Object.keys(packed.bytes)}`);
      const d = Math.max(assertWithinRange(packed.logits, f32.logits, LOGITS_RT, `${file}: prefill's logits, packed against dequantized`),
        assertWithinRange(packed.next, f32.next, LOGITS_RT, `${file}: a decode step's logits, packed against dequantized`));
      t.diagnostic(`${file}: ${JSON.stringify(packed.bytes)} vs ${JSON.stringify(f32.bytes)}; logits |Δ| / range ${d.toExponential(2)}`);
    }
  } finally {
    e.destroy();
    gpu.release();
  }
});

test('Llama-3.2-1B with Q4_K matrices plans well under 1 GB (f16: 2.5 GB), a quarter of the bytes a decode step reads', () => {
  const c = shapeConfig('llama-3.2-1b');
  const limits = { maxStorageBufferBindingSize: 2 ** 31, maxBufferSize: 2 ** 40 };
  const f16 = planGpuMemory(c, 'f16', limits).weightBytes;
  const q4k = planGpuMemory(c, 'f16', limits, packedTensors(syntheticWeights(c, 1, 'q4_k'))).weightBytes;
  assert.ok(f16 > 2.4e9 && q4k < 0.75e9 && q4k / f16 < 0.3, `f16 ${f16} bytes, q4_k ${q4k}`);
});

test('packed uploads make exactly the planned buffers: mixed types in a fused matrix, packed row parts', async () => {
  const gpu = await createNodeGpu();
  try {
    const c = shapeConfig('tiny-llama');
    const w = syntheticWeights(c, 3, 'q4_0');
    // q/k/v of two types (as Gemma's Q5_0 and Q8_0): wqkv is stored as one matrix per run of equal types.
    const wv = w.get('layers.0.wv')!;
    w.set('layers.0.wv', { ...wv, dtype: 'q8_0', data: noiseBlocks('q8_0', (wv.shape[0] * wv.shape[1]) / 32, 5, 0.1) });
    const limits = { maxStorageBufferBindingSize: 16384, maxBufferSize: 1 << 20 };
    const plan = planGpuMemory(c, 'f32', limits, packedTensors(w));
    const gm = await GpuModel.upload(gpu.device, c, w, 'f32', limits);
    assert.deepEqual(gm.allocated, plan.buffers);
    const labels = plan.buffers.map((b) => b.label);
    assert.ok(labels.includes('0.wqkv/0') && labels.includes('0.wqkv/1') && labels.includes('1.wqkv'), labels.join(' '));
    assert.ok(splitMatrices(plan).some((s) => s.label === 'embed' && s.parts > 1), 'the packed embedding is in row parts');
    assert.deepEqual(gm.layers[0].wqkv.parts.map((p) => p.dtype ?? gm.layers[0].wqkv.dtype), ['q4_0', 'q8_0']);
    gm.destroy();
  } finally {
    gpu.release();
  }
});

for (const file of ['SmolLM2-135M-Instruct.Q4_1.gguf', 'gemma-3-270m-q4_k_m.gguf']) {
  test(`${file}: packed on the GPU in about the file's tensor bytes, planned exactly, and split under 128 MiB bindings`, async (t) => {
    const path = join(MODELS, file);
    if (!existsSync(path)) return t.skip(`${path} is absent (npm run fetch:models)`);
    const src = await nodeFileSource(path);
    const m = await loadGguf(src);
    const fileBytes = m.gguf.tensors.reduce((a, x) => a + x.nBytes, 0);
    const gpu = await createNodeGpu();
    const e = Engine.create(gpu, loadKernelSources());
    try {
      const packed = packedTensors(m.weights);
      const gm = await e.load(m.config, m.weights, { weightDtype: 'f16', dequantize: false });
      assert.deepEqual(gm.allocated, gm.plan.buffers, 'the plan lists every buffer');
      assert.deepEqual(gm.plan, e.plan(m.config, 'f16', undefined, packed));
      assert.ok(gm.bytes >= fileBytes * 0.99 && gm.bytes <= fileBytes * 1.01, `${gm.bytes} bytes on the GPU for ${fileBytes} in the file`);
      const f16 = planGpuMemory(m.config, 'f16', gpu.device.limits);
      t.diagnostic(`${file}: ${(fileBytes / MiB).toFixed(1)} MiB of tensors in the file; on the GPU ${(gm.bytes / MiB).toFixed(1)} MiB packed ` +
        `(${Object.entries(gm.matrixBytes).map(([k, v]) => `${k} ${(v! / MiB).toFixed(1)}`).join(', ')}) against ${(f16.weightBytes / MiB).toFixed(1)} MiB dequantized to f16`);
      const tokens = [1, 450, 4996, 17354, 1701];
      const cache = e.newCache(8);
      const whole = (await e.prefill(cache, tokens)).logits;
      cache.destroy();
      // llvmpipe's binding limit: the embedding (Gemma's 262144 x 640 Q8_0, 170 MiB) goes in row parts.
      const gs = await e.load(m.config, m.weights, { weightDtype: 'f16', bufferLimit: 128 * MiB, dequantize: false });
      const split = splitMatrices(gs.plan);
      t.diagnostic(`under 128 MiB: ${JSON.stringify(split)}`);
      if (gm.plan.largest.bytes > 128 * MiB) assert.ok(split.some((s) => s.label === 'embed'), 'the embedding is split');
      const c2 = e.newCache(8);
      const parts = (await e.prefill(c2, tokens)).logits;
      c2.destroy();
      assert.deepEqual(parts, whole, 'split equals whole');
    } finally {
      e.destroy();
      gpu.release();
    }
  });
}
