/**
 * GPU failure paths: a model that cannot fit gives a clear error and leaves
 * nothing allocated; a lost device makes calls fail with DeviceLostError
 * instead of hanging, and a new device can run the model again, also when it
 * goes under decode steps recorded ahead (nothing left unhandled); work that
 * WebGPU rejects fails the next read or sync instead of returning wrong numbers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createNodeGpu, loadKernelSources } from '../../src/node/gpu';
import { Engine } from '../../src/engine/engine';
import { GpuModel, OutOfGpuMemoryError } from '../../src/engine/model/gpu-model';
import { DeviceLostError, GpuValidationError } from '../../src/engine/gpu/dispatcher';
import { loadModelFiles } from '../../src/engine/formats/load';
import { nodeModelFiles } from '../../src/node/files';

const STORIES = join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin');

test('a tensor whose rows do not fit one buffer is named in the error, before any weight is read', async () => {
  const gpu = await createNodeGpu();
  try {
    const m = await loadModelFiles(nodeModelFiles(STORIES), 'stories260K');
    // A hidden size whose one embedding row (f32) is larger than one buffer may be: no split can help.
    const max = Math.min(gpu.device.limits.maxStorageBufferBindingSize, gpu.device.limits.maxBufferSize);
    const hidden = max / 4 + 4;
    const config = { ...m.config, hidden, name: 'too-wide' };
    await assert.rejects(GpuModel.upload(gpu.device, config, new Map(), 'f32'), (e: Error) => {
      assert.ok(e instanceof OutOfGpuMemoryError);
      assert.match(e.message, /^Tensor \S+ of too-wide needs [\d.]+ MiB for one row, and rows are not split; this adapter allows [\d.]+ MiB in one buffer \(try f16 weights\)/);
      return true;
    });
  } finally {
    gpu.release();
  }
});

/** stories260K loaded on a device of its own (which the test may lose). */
async function storiesOnNewDevice() {
  const m = await loadModelFiles(nodeModelFiles(STORIES), 'stories260K');
  const gpu = await createNodeGpu();
  const engine = Engine.create(gpu, loadKernelSources());
  await engine.load(m.config, m.weights);
  return { gpu, engine };
}

test('a lost device fails calls with DeviceLostError, and a new device works', async () => {
  const { gpu, engine } = await storiesOnNewDevice();
  const cache = engine.newCache();
  const before = (await engine.prefill(cache, [1, 403, 407])).logits;
  gpu.device.destroy();
  assert.match(await gpu.lost, /destroyed/);
  await assert.rejects(engine.prefill(cache, [261]), DeviceLostError);
  gpu.release();
  const { gpu: again, engine: e2 } = await storiesOnNewDevice();
  const after = (await e2.prefill(e2.newCache(), [1, 403, 407])).logits;
  assert.deepEqual(after, before);
  e2.destroy();
  again.release();
});

test('a device lost while decode runs ahead with scores: DeviceLostError, nothing unhandled, no row of an unread token', async () => {
  const { gpu, engine } = await storiesOnNewDevice();
  const cache = engine.newCache();
  await engine.prefill(cache, [1, 403, 407]);
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => void unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  try {
    // Three steps are recorded (their tokens' and scores' reads pending) before the device goes.
    const run = engine.greedySteps(cache, 261, { count: 8, stopIds: [], scores: { layer: [0, 4], heads: [0, 1] } });
    gpu.device.destroy();
    await assert.rejects(run, DeviceLostError);
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(unhandled, []);
    assert.equal(cache.length, 3, 'the rows of the steps whose tokens were never read are dropped');
  } finally {
    process.off('unhandledRejection', onUnhandled);
    gpu.release();
  }
});

// A command WebGPU rejects does not run, and what was computed around it is wrong: the bug behind a chunk's layer
// left zero when the staging grew under a recorded copy. The next read or sync says so instead of returning numbers;
// the error is reported once, and the engine then works as before.
test('work WebGPU rejects fails the next read and sync with GpuValidationError, once', async () => {
  const m = await loadModelFiles(nodeModelFiles(STORIES), 'stories260K');
  const gpu = await createNodeGpu();
  const engine = Engine.create(gpu, loadKernelSources());
  await engine.load(m.config, m.weights);
  const before = (await engine.prefill(engine.newCache(), [1, 403, 407])).logits;
  const small = gpu.device.createBuffer({ size: 16, usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  // Past the end of both buffers.
  const reject = () => engine.ops.d.commandEncoder().copyBufferToBuffer(small, 0, small, 16, 64);
  reject();
  await assert.rejects(engine.prefill(engine.newCache(), [1, 403, 407]), (e: Error) => {
    assert.ok(e instanceof GpuValidationError);
    assert.match(e.message, /^WebGPU rejected the engine's work, so its result was discarded .*: .*CopyBufferToBuffer/s);
    return true;
  });
  assert.deepEqual((await engine.prefill(engine.newCache(), [1, 403, 407])).logits, before, 'reported once; later work is right');
  reject();
  await assert.rejects(engine.sync(), GpuValidationError);
  await engine.sync();
  small.destroy();
  engine.destroy();
  gpu.release();
});
