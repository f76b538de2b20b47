/**
 * How attention's work is cut on the host (engine/attention-plan.ts): the cache rows a query scans, and the key
 * slices attention_decode runs in parallel. The kernels' parity tests (attention-kernels.test.ts) show any bounds and slices
 * give the same output; these show which ones the engine asks for.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpuAttentionSplits, keyBounds, keysSplits, lanesSplits } from '../../src/engine/attention-plan';

test('keyBounds: sorted positions narrow the scan, unsorted ones scan every row', () => {
  const sorted = Int32Array.from([0, 1, 2, 5, 6, 9]);
  assert.deepEqual([...keyBounds(sorted, 6, [2, 6, 9], 0)], [0, 3, 0, 5, 0, 6]);
  // Window 3: query at 6 sees positions 4..6, i.e. rows 3..4.
  assert.deepEqual([...keyBounds(sorted, 6, [6], 3)], [3, 5]);
  const unsorted = Int32Array.from([0, 1, 7, 2, 3]);
  assert.deepEqual([...keyBounds(unsorted, 5, [2], 0)], [0, 5]);
  // A caller that knows the order (KVCache.ascending) spares the scan; told wrong, it gets what it said.
  assert.deepEqual([...keyBounds(sorted, 6, [2], 0, true)], [0, 3]);
  assert.deepEqual([...keyBounds(sorted, 6, [2], 0, false)], [0, 6]);
});

test('keysSplits: about 4096 workgroups, slices of whole rounds of 64 keys a thread, at most 512', () => {
  // 32 heads over 512 keys: 8 slices of one 64-key round each (the H100's fastest, gpu-h100-13.json).
  assert.equal(keysSplits(32, 512), 8);
  // Keys a thread lengthen a round: 8 a thread make 512 keys one round, one slice, nothing to combine.
  assert.equal(keysSplits(32, 512, 2), 4);
  assert.equal(keysSplits(32, 512, 8), 1);
  // Long contexts: the workgroup target (4096 / 9 heads → 456 slices wanted, so two rounds a slice → 256), with
  // rounds of 512 keys one round a slice, and 32 heads four rounds a slice.
  assert.equal(keysSplits(9, 32768), 256);
  assert.equal(keysSplits(9, 32768, 8), 64);
  assert.equal(keysSplits(32, 32768), 128);
  // A slice is never under a round: 1000 keys are 15 slices, not 16 of 62 keys.
  assert.equal(keysSplits(9, 1000), 15);
  // The cap of 512.
  assert.equal(keysSplits(1, 1 << 20), 512);
  // Never fewer than one, however few keys.
  assert.equal(keysSplits(32, 10, 8), 1);
});

test('lanesSplits: about 1024 workgroups, at least a key an invocation a slice, at most 512', () => {
  // 32 heads over 512 keys: 8 slices of 64, one key an invocation (few enough for the output projection to merge).
  assert.equal(lanesSplits(32, 512), 8);
  // Long contexts: 9 heads over 32K keys in 114 slices (1026 workgroups) of about 287 keys; 32 heads in 32 of 1024.
  assert.equal(lanesSplits(9, 32768), 114);
  assert.equal(lanesSplits(32, 32768), 32);
  // Fewer keys than a workgroup's invocations: one slice; and the cap of 512.
  assert.equal(lanesSplits(4, 40), 1);
  assert.equal(lanesSplits(1, 1 << 20), 512);
});

test('cpuAttentionSplits: a decode row\'s keys over about 256 invocations on CPU adapters, slices of 64 keys or more, prefill whole', () => {
  // 9 heads (SmolLM2) over 4096 keys: 29 slices (261 invocations); 32 heads over 4096: 8.
  assert.equal(cpuAttentionSplits(1, 9, 4096), 29);
  assert.equal(cpuAttentionSplits(1, 32, 4096), 8);
  // Few keys: slices of at least 64 keys, so the 64-token prompts bench:engine decodes after stay whole.
  assert.equal(cpuAttentionSplits(1, 9, 512), 8);
  assert.equal(cpuAttentionSplits(1, 9, 64), 1);
  assert.equal(cpuAttentionSplits(1, 9, 10), 1);
  // At most 32; and more than 4 rows (prefill) keep one.
  assert.equal(cpuAttentionSplits(1, 1, 1 << 20), 32);
  assert.equal(cpuAttentionSplits(5, 9, 4096), 1);
});
