/**
 * RESULTS.md's GPU section from a kit run: the upload bandwidth beside the copy rate, and the link from rows kept
 * as halves beside the host and GPU tiers, with its own line among the targets.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gpuSection, gpuTargets, type GpuRun } from '../../src/eval/report-gpu';

const ttft = (algorithm: string, totalMs: number, loadMs: number) => ({
  algorithm, tokens: 32776, recomputed: algorithm === 'full' ? 32776 : 1016, lookupMs: 0, loadMs, recomputeMs: totalMs - loadMs,
  firstTokenMs: 1, totalMs, gpuMs: null, overlapMs: null, pipelined: true,
});

test('the GPU section shows writeBuffer beside the copy rate, and the link from halves as a tier of its own', () => {
  const link = (tier: 'host' | 'host-f16' | 'gpu', legolink: number) => ({
    model: 'smollm2-135m', context: 32768, chunks: 64, chunk_tokens: 512, tier,
    results: [...(tier === 'host' ? [ttft('full', 8000, 0)] : []), ttft('legolink:16', legolink, legolink / 2)],
    ratios: { 'full/legolink:16': 8000 / legolink },
  });
  const r: GpuRun = {
    command: 'bash scripts/gpu-check.sh',
    kit: {
      started: '2026-11-27T00:00:00Z', budget_s: 300, node: 'v20',
      adapter: { description: 'Test GPU', vendor: 'test', features: [], limits: { maxStorageBufferBindingSize: 2 ** 31 } },
      copy: { gbytes_per_s: 800, upload: [{ block: 393216, gbytes_per_s: 2.5 }, { block: 4 << 20, gbytes_per_s: 11.25 }] },
      link: [link('host', 1600), link('host-f16', 1000), link('gpu', 400)],
    },
    torch: null,
  };
  const md = gpuSection([{ file: 'gpu-test.json', r }]);
  assert.match(md, /WebGPU `copyBufferToBuffer` 800 GB\/s\. Host to GPU through `writeBuffer` \(what a link's host-tier load does\): 384 KiB blocks 2\.5 GB\/s, 4096 KiB blocks 11\.3 GB\/s\./);
  assert.match(md, /kept in host memory as halves, as KVStore's f16 blobs hold them, uploaded at link time and widened on the GPU/);
  const g = gpuTargets(r);
  assert.deepEqual([g.link32k, g.link32kHalves, g.link32kGpu], [5, 8, 20]);
  assert.match(md, /\| TTFT\(full\) \/ TTFT\(legolink:16\) at 32K tokens, chunks in host memory as f16 \| 8\.0 \| ≥ 20 \| no \|/);
  assert.match(md, /\| TTFT\(full\) \/ TTFT\(legolink:16\) at 32K tokens, chunks on the GPU \| 20\.0 \| ≥ 20 \| yes \|/);
});
