/**
 * Dawn's busy wait, throttled (src/node/dawn-poll.ts): on a CPU adapter a
 * long GPU wait is polled by timer after its first moments, results stay
 * exact, and everything that is not Dawn's still goes through setImmediate.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pollThrottle, throttleDawnPolling } from '../../src/node/dawn-poll';
import { createNodeGpu } from '../../src/node/gpu';

test('JavaScript callbacks keep setImmediate; uninstall restores it', async () => {
  const before = globalThis.setImmediate;
  const t = throttleDawnPolling(0, 1);
  try {
    assert.notEqual(globalThis.setImmediate, before);
    const order: string[] = [];
    const done = new Promise<void>((resolve) => {
      setTimeout(() => { order.push('timeout'); resolve(); }, 0);
      setImmediate((x: string) => order.push(x), 'immediate');
    });
    await done;
    assert.equal(order[0], 'immediate', 'a JavaScript callback still runs as an immediate, before a timer');
    assert.equal(t.deferred, 0);
  } finally {
    t.uninstall();
  }
  assert.equal(globalThis.setImmediate, before);
});

test('a long GPU wait on a CPU adapter is polled by timer, and reads back exact data', async () => {
  const gpu = await createNodeGpu();
  const t = pollThrottle()!;
  try {
    assert.equal(gpu.profile, 'cpu', 'this test runs on SwiftShader or llvmpipe');
    assert.ok(t, 'createNodeGpu throttles Dawn\'s polling on a CPU adapter');
    assert.equal(throttleDawnPolling(), t, 'installing again returns the one in place');
    const dev = gpu.device;
    const n = 1 << 20;
    const data = Float32Array.from({ length: n }, (_, i) => i % 977);
    const src = dev.createBuffer({ size: n * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    dev.queue.writeBuffer(src, 0, data);
    const dst = dev.createBuffer({ size: n * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const before = t.deferred;
    // Enough copies that the wait outlasts the spin window on any CPU.
    const enc = dev.createCommandEncoder();
    for (let i = 0; i < 200; i++) enc.copyBufferToBuffer(src, 0, dst, 0, n * 4);
    dev.queue.submit([enc.finish()]);
    const t0 = performance.now();
    await dst.mapAsync(GPUMapMode.READ);
    const waited = performance.now() - t0;
    const got = new Float32Array(dst.getMappedRange().slice(0));
    dst.unmap();
    assert.deepEqual(got.subarray(0, 4096), data.subarray(0, 4096));
    assert.equal(got[n - 1], data[n - 1]);
    // 800 MB of copies take far longer than the 2 ms spin window on any CPU.
    assert.ok(t.deferred > before, `a ${waited.toFixed(0)} ms wait was polled by timer`);
    src.destroy();
    dst.destroy();
  } finally {
    gpu.release();
  }
});
