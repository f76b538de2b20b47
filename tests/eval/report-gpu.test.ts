/**
 * RESULTS.md's GPU section from a kit run: the upload bandwidth beside the copy rate, and the link from rows kept
 * as halves beside the host and GPU tiers, with its own line among the targets; decode timed each way, and its
 * kernels as tuned at load; the f16 stage (Dawn's toggle for NVIDIA), or why it ran nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gpuRunsPage, gpuSection, gpuTargets, type GpuRun } from '../../src/eval/report-gpu';

const ttft = (algorithm: string, totalMs: number, loadMs: number) => ({
  algorithm, tokens: 32776, recomputed: algorithm === 'full' ? 32776 : 1016, lookupMs: 0, loadMs, recomputeMs: totalMs - loadMs,
  firstTokenMs: 1, totalMs, gpuMs: null, overlapMs: null, pipelined: true,
});

test('the GPU section shows writeBuffer beside the copy rate, and the link from halves as a tier of its own', () => {
  const link = (tier: 'host' | 'host-f16' | 'gpu', legolink: number) => ({
    model: 'smollm2-135m', context: 32768, chunks: 64, chunk_tokens: 512, tier,
    // The GPU tier's row as kits now record it, with the host's recording times; the others as older kits did.
    results: [...(tier === 'host' ? [ttft('full', 8000, 0)] : []), { ...ttft('legolink:16', legolink, legolink / 2), ...(tier === 'gpu' ? { recordMs: 150.4, cacheMs: 30.2, waitMs: 0, submitMs: 20.6, submits: 34 } : {}) }, ...(tier === 'gpu' ? [] : [ttft('naive', legolink - 100, legolink / 2)])],
    ratios: { 'full/legolink:16': 8000 / legolink, ...(tier === 'gpu' ? {} : { 'naive/legolink:16': (legolink - 100) / legolink }) },
  });
  const r: GpuRun = {
    command: 'bash scripts/gpu-check.sh',
    kit: {
      started: '2026-11-27T00:00:00Z', budget_s: 300, node: 'v20',
      adapter: { description: 'Test GPU', vendor: 'test', features: [], limits: { maxStorageBufferBindingSize: 2 ** 31 } },
      copy: { gbytes_per_s: 800, upload: [{ block: 393216, gbytes_per_s: 2.5 }, { block: 4 << 20, gbytes_per_s: 11.25 }], upload_mapped: { block: 12 << 20, gbytes_per_s: 20.5 } },
      link: [link('host', 1600), link('host-f16', 1000), {
        ...link('gpu', 400), put: { ms: 150, bytes: 755 * 2 ** 20, way: 'mapped' }, profiles: [
          { algorithm: 'full', tokens: 32776, recomputed: 32776, ttft_ms: 8100, kernels_gpu_ms: 7900, kernels: [{ kernel: 'attention_tiled', dispatches: 30, us: 6_500_000 }, { kernel: 'matmul_tiled', dispatches: 90, us: 1_400_000 }] },
          { algorithm: 'legolink:16', tokens: 32776, recomputed: 1016, ttft_ms: 450, kernels_gpu_ms: 420.5, kernels: [{ kernel: 'attention_tiled', dispatches: 30, us: 300_000 }, { kernel: 'kv_scatter', dispatches: 90, us: 120_500 }] },
        ],
        decode_after_link: { algorithm: 'legolink:16', context: 32776, ways: [
          { fused: true, attention: 'keys', chosen: true, steps: 32, decode_tokens_per_s: 100, decode_wall_ms: 10, decode_gpu_ms: 8.5, dispatches_per_step: 152 },
          { fused: true, attention: 'lanes', chosen: false, steps: 32, decode_tokens_per_s: 250, decode_wall_ms: 4, dispatches_per_step: 152 },
        ] },
      }],
      engine: [{
        adapter: 'Test GPU', model: 'llama-3.2-1b', weight_bytes: 2e9, weight_dtype: 'f16', tokens: 512, prefill_ms: 100, tokens_per_s: 5120, gflops: 1, attention_share: 0,
        profile: 'no timestamp queries',
        attention: [
          { fused: true, attention: 'keys', chosen: true, steps: 8, decode_tokens_per_s: 250, decode_wall_ms: 4, decode_gpu_ms: 3.25, dispatches_per_step: 130 },
          { fused: true, attention: 'rows', chosen: false, steps: 8, decode_tokens_per_s: 200, decode_wall_ms: 5, dispatches_per_step: 130 },
        ],
        gemv: [
          { fused: true, attention: 'default', gemv: 'gemv_sg', chosen: true, steps: 8, decode_tokens_per_s: 260, decode_wall_ms: 3.85, dispatches_per_step: 130 },
          { fused: true, attention: 'default', gemv: 'gemv', chosen: false, steps: 8, decode_tokens_per_s: 240, decode_wall_ms: 4.17, dispatches_per_step: 130 },
        ],
      }],
      tune: [{
        model: 'llama-3.2-1b', quant: null, context: 512, steps: 8, reps: 3, ms: 1234,
        defaults: { gemv: 'gemv_sg', fuse: true, attention: 'keys' }, chosen: { gemv: 'gemv_sg', fuse: false, attention: 'keys' },
        trials: [
          { settings: { gemv: 'gemv_sg', fuse: true, attention: 'keys' }, msPerStep: 4 },
          { settings: { gemv: 'gemv', fuse: true, attention: 'keys' }, msPerStep: 4.1 },
          { settings: { gemv: 'gemv_sg', fuse: false, attention: 'keys' }, msPerStep: 3.5 },
          { settings: { gemv: 'gemv_sg', fuse: false, attention: 'rows' }, msPerStep: 3.9 },
        ],
        long: {
          short: 512, long: 8192, ms: 300,
          ways: [
            { attention: 'keys', keysPerThread: 1, usShort: 10, usLong: 100 },
            { attention: 'keys', keysPerThread: 4, usShort: 12, usLong: 70 },
            { attention: 'lanes', keysPerThread: 1, usShort: 20, usLong: 40 },
          ],
          chosen: { from: 1609, attention: 'lanes', keysPerThread: 1 },
        },
      }],
    },
    torch: null,
  };
  const md = gpuSection([{ file: 'gpu-test.json', r }]);
  // Decode's kernels tuned at load: every way timed, the defaults marked, the one kept.
  assert.match(md, /after 512 cached rows, the fastest of 3 or more runs of 8 steps a way/);
  assert.match(md, /\| llama-3\.2-1b \| f16 \| fused, attention keys, gemv_sg \(the defaults\) \| 4\.00 \| {2}\| 1\.2 \|/);
  assert.match(md, /\| llama-3\.2-1b \| f16 \| fused, attention keys, gemv \| 4\.10 \| {2}\| {2}\|/);
  assert.match(md, /\| llama-3\.2-1b \| f16 \| unfused, attention keys, gemv_sg \| 3\.50 \| yes \| {2}\|/);
  assert.match(md, /\| llama-3\.2-1b \| f16 \| unfused, attention rows, gemv_sg \| 3\.90 \| {2}\| {2}\|/);
  // Then attention alone over a short and a long span: the short spans' kernel first, the long spans' kept from where they cross.
  assert.match(md, /over the 512 keys the steps scanned and over 8192 \(µs a layer/);
  assert.match(md, /\| llama-3\.2-1b \| f16 \| attention_decode \(the short spans'\) \| 10\.0 \| 100\.0 \| {2}\| {2}\|/);
  assert.match(md, /\| llama-3\.2-1b \| f16 \| attention_decode, 4 keys a thread \| 12\.0 \| 70\.0 \| {2}\| {2}\|/);
  assert.match(md, /\| llama-3\.2-1b \| f16 \| attention_decode \(lanes\) \| 20\.0 \| 40\.0 \| yes \| 1609 \|/);
  assert.match(md, /WebGPU `copyBufferToBuffer` 800 GB\/s\. Host to GPU through `writeBuffer` \(what a link's host-tier load does\): 384 KiB blocks 2\.5 GB\/s, 4096 KiB blocks 11\.3 GB\/s\. Through two mapped staging buffers taking turns, 12288 KiB each: 20\.5 GB\/s\./);
  assert.match(md, /kept in host memory as halves, as KVStore's f16 blobs hold them, uploaded at link time and widened on the GPU/);
  // How long putting the chunks on the GPU took, the app's way (kits since the tier's puts went through Engine.upload).
  assert.match(md, /resident on the GPU \(put there as the app puts a chunk it compiles, 150 ms for 755 MiB: 5\.3 GB\/s by mapped staging\), as KVStore's GPU tier/);
  const g = gpuTargets(r);
  assert.deepEqual([g.link32k, g.link32kHalves, g.link32kGpu], [5, 8, 20]);
  // The ceiling: TTFT(full) / TTFT(naive), where naive was run (8000 / 1500, 8000 / 900); none without it.
  assert.deepEqual([g.ceiling32k, g.ceiling32kHalves, g.ceiling32kGpu], [8000 / 1500, 8000 / 900, undefined]);
  assert.match(md, /\| TTFT\(full\) \/ TTFT\(legolink:16\) at 32K tokens, chunks in host memory \| 5\.0 \| ≥ 20 \| no \| 5\.3 \|/);
  assert.match(md, /\| TTFT\(full\) \/ TTFT\(legolink:16\) at 32K tokens, chunks in host memory as f16 \| 8\.0 \| ≥ 20 \| no \| 8\.9 \|/);
  assert.match(md, /\| TTFT\(full\) \/ TTFT\(legolink:16\) at 32K tokens, chunks on the GPU \| 20\.0 \| ≥ 20 \| yes \| – \|/);
  // The host's recording times where the kit kept them (the GPU tier's table), no columns for them where it did not.
  assert.match(md, /\| algorithm \| TTFT \| load \| recompute \| first token \| GPU busy \| host: cache \/ recording \/ waiting; finish \+ submit \(submissions\) \| recomputed rows \| × legolink:16 \|\n[^\n]*\n\| legolink:16 \| 400 \| 200 \| 200 \| 1 \| – \| 30 \/ 150 \/ 0; 21 \(34\) \| 1016 \/ 32776 \| 1\.0 \|/);
  assert.equal(md.match(/\| host: cache/g)?.length, 1);
  assert.match(md, /\*host\*: of the recompute, the host's time laying the parts out and making the working cache, recording the launches/);
  // Decode each way (the profile itself missing: no timestamp queries).
  assert.match(md, /\| llama-3\.2-1b \| f16 \| fused, attention keys \| 250\.0 \| 4\.00 \| 3\.25 \| 130 \| yes \|/);
  assert.match(md, /\| llama-3\.2-1b \| f16 \| fused, attention rows \| 200\.0 \| 5\.00 \| – \| 130 \| {2}\|/);
  assert.match(md, /\| llama-3\.2-1b \| f16 \| fused, gemv_sg \| 260\.0 \| 3\.85 \| – \| 130 \| yes \|/);
  assert.match(md, /\| llama-3\.2-1b \| f16 \| fused, gemv \| 240\.0 \| 4\.17 \| – \| 130 \| {2}\|/);
  assert.doesNotMatch(md, /One decode step kernel by kernel/);
  // Both links kernel by kernel, below the GPU tier's table.
  assert.match(md, /Where those links' GPU time goes, kernel by kernel \(32768 tokens;/);
  assert.match(md, /\| full \| 8100 \| 7900\.0 \| 120 \| attention_tiled 6500\.0, matmul_tiled 1400\.0 \|/);
  assert.match(md, /\| legolink:16 \| 450 \| 420\.5 \| 120 \| attention_tiled 300\.0, kv_scatter 120\.5 \|/);
  // Then decode on the linked cache, each attention kernel, after the profiles.
  assert.match(md, /kernel by kernel[^]*Then the answer: decode on legolink:16's linked cache \(32776 rows, from the GPU tier\)/);
  assert.match(md, /\| keys \| 100\.0 \| 10\.00 \| 8\.50 \| 152 \| yes \|\n\| lanes \| 250\.0 \| 4\.00 \| – \| 152 \| {2}\|/);
});

test('a real model\'s run shows its answers, its check against llama.cpp and the reference, its speed and its links; a failed one says why', () => {
  const prompt = (question: string, answer: string, equal: boolean) => ({
    text: `<|im_start|>user\n${question}<|im_end|>\n<|im_start|>assistant\n`, answer, tokens: [1, 2, 3], greedy_equal: equal, max_err: 2.5e-6, min_gap: 0.96,
  });
  const run = (real: NonNullable<GpuRun['kit']['real']>): GpuRun => ({
    command: 'bash scripts/gpu-check.sh',
    kit: { started: '2026-11-27T00:00:00Z', budget_s: 300, node: 'v20', adapter: { description: 'Test GPU', vendor: 'test', features: [], limits: { maxStorageBufferBindingSize: 2 ** 31 } }, copy: { gbytes_per_s: 800 }, real },
    torch: null,
  });
  const base = {
    model: 'smollm2-135m-instruct', file: 'SmolLM2-135M-Instruct.Q4_1.gguf', bytes: 98362432, parts: 3, gather_ms: 400,
    reference: { llama: 'llama.cpp (CPU)', adapter: 'SwiftShader', profile: 'cpu' },
  };
  const md = gpuSection([{ file: 'gpu-test.json', r: run({
    ...base, load_ms: 1500, check_weight_bytes: 96 * 2 ** 20, weight_bytes: 90 * 2 ** 20, weight_dtype: 'f16', kv_dtype: 'f16', profile: 'gpu', half: false, tolerance: 2e-5,
    check: { prompts: [prompt('What is the capital of France?', 'The capital of France is Paris.\n', true), prompt('What is the capital of Italy?', 'Rome, of course', false)], max_err: 2.5e-6, pass: false },
    throughput: [{ tokens: 512, prefill_ms: 20, tokens_per_s: 25600, gflops: 1, attention_share: 0, decode_tokens_per_s: 400, decode_context: 512, decode_share_of_roofline: 0.05, decode_roofline_tokens_per_s: 8000 }],
    link: [
      { context: 8000, chunks: 16, chunk_tokens: 512, results: [ttft('full', 300, 0), ttft('legolink:16', 20, 10)], ratios: { 'full/legolink:16': 15 } },
      // From the GPU tier, as kits since Engine.upload run it; older runs have the host row alone, with no tier.
      { context: 8000, chunks: 16, chunk_tokens: 512, tier: 'gpu', put: { ms: 40, bytes: 176 * 2 ** 20, way: 'mapped' }, results: [ttft('legolink:16', 12, 1)], ratios: { 'full/legolink:16': 25 } },
    ],
    decode_tuning: {
      context: 512, steps: 8, reps: 3, ms: 800, defaults: { gemv: 'gemv_sg', fuse: true, attention: 'keys' }, chosen: { gemv: 'gemv_sg', fuse: true, attention: 'keys' },
      trials: [{ settings: { gemv: 'gemv_sg', fuse: true, attention: 'keys' }, msPerStep: 2.5 }, { settings: { gemv: 'gemv_sg', fuse: false, attention: 'keys' }, msPerStep: 2.6 }],
    },
  }) }]);
  // Its decode as tuned at load, in the tuning table.
  assert.match(md, /\| smollm2-135m-instruct \| GGUF, f16 \| fused, attention keys, gemv_sg \(the defaults\) \| 2\.50 \| yes \| 0\.8 \|/);
  assert.match(md, /\| smollm2-135m-instruct \| GGUF, f16 \| unfused, attention keys, gemv_sg \| 2\.60 \| {2}\| {2}\|/);
  assert.match(md, /A real model on this GPU: \*\*smollm2-135m-instruct\*\* \(`SmolLM2-135M-Instruct\.Q4_1\.gguf`, 94 MiB, carried in 3 parts over as many device calls, joined and verified by its sha256 there in 0\.4 s\), loaded in 1\.5 s with its quantized matrices kept packed on the GPU \(96 MiB of weights; gpu kernel profile\)\./);
  assert.match(md, /tolerance 0\.00002, f32 math on both\)/);
  assert.match(md, /\| "user What is the capital of France\? assistant" \| "The capital of France is Paris\.\\n" \| all 3 equal \| 2\.5e-6 \| 0\.96 \|/);
  assert.match(md, /\| "user What is the capital of Italy\? assistant" \| "Rome, of course" \| differ \|/);
  assert.match(md, /Its speed, loaded as the app loads it \(90 MiB of weights, f16 where not packed; f16 keys and values\): prefill 25600 tok\/s at 512; decode 400\.0 tok\/s after 512, 5% of the 8000 tok\/s that its weight bytes allow at WebGPU's copy rate \(800 GB\/s\)\./);
  assert.match(md, /Its TTFT at 8000 tokens in 16 chunks of about 512/);
  assert.match(md, /\| full \| 300 \| 0 \| 300 \| 1 \| 32776 \/ 32776 \| 15\.0 \|/);
  assert.match(md, /Its TTFT at 8000 tokens in 16 chunks of about 512 \(ms; loaded as above, chunks compiled ahead and kept in host memory\):/);
  assert.match(md, /Its TTFT at 8000 tokens in 16 chunks of about 512 \(ms; loaded as above, chunks compiled ahead and resident on the GPU \(put there as the app puts a chunk it compiles, 40 ms for 176 MiB: 4\.6 GB\/s by mapped staging\), as the app keeps the chunks it compiles; full recompute's time is the host run's\):\n\n[^\n]*\n[^\n]*\n\| legolink:16 \| 12 \| 1 \| 11 \| 1 \| 1016 \/ 32776 \| 1\.0 \|\n\nTTFT\(full\), timed from host memory above, over TTFT\(legolink:16\) from here: 25\.0\./);
  // A run with no engine rows (the real model's call alone) draws no empty prefill or decode table.
  assert.doesNotMatch(md, /^Prefill \(tokens\/s/m);
  const failed = gpuSection([{ file: 'gpu-test.json', r: run({ ...base, error: 'Error: real model: part 2 of 3 is corrupt\n    at gatherModel' }) }]);
  assert.match(failed, /- the real model's stage failed: Error: real model: part 2 of 3 is corrupt\n/);
  assert.doesNotMatch(failed, /Its speed/);
  // Refused while gathering, before anything was known of the model (gpu-check records the adapter and the error).
  const refused = gpuSection([{ file: 'gpu-test.json', r: run({ error: 'Error: real model: part 3 of 3 (m.part3) is missing' } as NonNullable<GpuRun['kit']['real']>) }]);
  assert.match(refused, /- the real model's stage failed: Error: real model: part 3 of 3 \(m\.part3\) is missing\n/);
  assert.doesNotMatch(refused, /A real model on this GPU/);
});

test('decode is judged the way the app decodes on the adapter: steps recorded ahead where its engine does so', () => {
  const run = (ahead: number): GpuRun => ({
    command: 'bash scripts/gpu-check.sh',
    kit: {
      started: '2026-11-27T00:00:00Z', budget_s: 300, node: 'v20',
      adapter: { description: 'Test GPU', vendor: 'test', features: [], limits: { maxStorageBufferBindingSize: 2 ** 31 } },
      copy: { gbytes_per_s: 800 },
      engine: [{
        adapter: 'Test GPU', model: 'llama-3.2-1b', weight_bytes: 2e9, weight_dtype: 'f16', tokens: 512, prefill_ms: 100, tokens_per_s: 5120, gflops: 1, attention_share: 0,
        decode_tokens_per_s: 200, decode_ahead_tokens_per_s: 320, decode_ahead: ahead, decode_logits_tokens_per_s: 150, decode_context: 512, decode_gpu_ms: 2.5, decode_record_ms: 1.25,
      }],
    },
    torch: { device: 'Test GPU', torch: '2', transformers: '5', copy_gbytes_per_s: 3000, rows: [] },
  });
  // Roofline: 3000 GB/s over 2 GB of weights, 1500 tok/s.
  assert.equal(gpuTargets(run(16)).decode, 320 / 1500);
  assert.equal(gpuTargets(run(1)).decode, 200 / 1500);
  const md = gpuSection([{ file: 'gpu-test.json', r: run(16) }]);
  assert.match(md, /\| llama-3\.2-1b \| 1907 MiB f16 \| 200\.0 \| 320\.0 \| 150\.0 \| 2\.5 \/ 5\.0 \| 1\.25 \| 1500 \| 21% \| – \|/);
  assert.match(md, /\| Decode of llama-3\.2-1b, against its roofline \| 21% of 1500 tok\/s \| ≥ 50% \| no \|/);
});

test('decode recorded ahead shows the same run with no step replayed beside it, where the kit timed both', () => {
  const md = gpuSection([{ file: 'gpu-test.json', r: {
    command: 'bash scripts/gpu-check.sh',
    kit: {
      started: '2026-12-01T00:00:00Z', budget_s: 300, node: 'v20', adapter: { description: 'Test GPU', vendor: 'test', features: [], limits: {} }, copy: { gbytes_per_s: 800 },
      engine: [{
        adapter: 'Test GPU', model: 'smollm2-135m', weight_bytes: 2.5e8, weight_dtype: 'f16', tokens: 512, prefill_ms: 10, tokens_per_s: 51200, gflops: 1, attention_share: 0,
        decode_tokens_per_s: 200, decode_ahead_tokens_per_s: 480, decode_ahead: 16, decode_logits_tokens_per_s: 150, decode_context: 512, decode_gpu_ms: 2.0,
        decode_record_ms: 1.1, decode_submit_ms: 0.4, decode_unreplayed_tokens_per_s: 282.5, decode_unreplayed_record_ms: 3.35,
      }],
    },
    torch: null,
  } }]);
  assert.match(md, /\| smollm2-135m \| 238 MiB f16 \| 200\.0 \| 480\.0; 282\.5 unreplayed \| 150\.0 \| 2\.0 \/ 5\.0 \| 1\.10 \(0\.40 submitting\); 3\.35 unreplayed \|/);
  assert.match(md, /\*unreplayed\*: every step recorded anew/);
});

test('a decode profile shows the step launch by launch where the kit kept its launches, slowest first', () => {
  const profile = {
    context: 512, steps: 8, step_gpu_ms: 2.3, step_wall_ms: 3.3, submit_each_layer: true, step_wall_ms_other_way: 5.8, kernels_gpu_ms: 2.5,
    kernels: [{ kernel: 'gemv', dispatches: 65, us: 2100 }, { kernel: 'attention_decode', dispatches: 16, us: 400 }],
    launches: [
      { kernel: 'gemv TX=1 NORM · 2048 workgroups', dispatches: 16, us: 700 },
      { kernel: 'gemv TX=1 GLU · 256 workgroups', dispatches: 16, us: 500 },
      { kernel: 'attention_decode HD4=16 STEP · 256 workgroups', dispatches: 16, us: 400 },
    ],
  };
  const md = gpuSection([{ file: 'gpu-test.json', r: {
    command: 'bash scripts/gpu-check.sh',
    kit: {
      started: '2026-11-27T00:00:00Z', budget_s: 300, node: 'v20', adapter: { description: 'Test GPU', vendor: 'test', features: [], limits: {} }, copy: { gbytes_per_s: 800 },
      engine: [{ adapter: 'Test GPU', model: 'llama-3.2-1b', weight_bytes: 2e9, weight_dtype: 'f16', tokens: 512, prefill_ms: 100, tokens_per_s: 5120, gflops: 1, attention_share: 0, profile }],
    },
    torch: null,
  } as GpuRun }]);
  assert.match(md, /One decode step kernel by kernel/);
  assert.match(md, /The same step of llama-3\.2-1b \(f16\) launch by launch[^\n]*\n\n\| launch \| a step \| µs a step \| µs a launch \|\n[^\n]*\n\| gemv TX=1 NORM · 2048 workgroups \| 16 \| 700 \| 43\.8 \|\n\| gemv TX=1 GLU · 256 workgroups \| 16 \| 500 \| 31\.3 \|\n\| attention_decode HD4=16 STEP · 256 workgroups \| 16 \| 400 \| 25\.0 \|/);
});

test('with several runs, RESULTS.md has each run\'s targets, oldest first, and the newest in full; the others are on a page of their own', () => {
  const run = (started: string, decodeTokS: number, gpuTier: number, command: string): GpuRun => ({
    command,
    kit: {
      started, budget_s: 300, node: 'v20',
      adapter: { description: 'Test GPU', vendor: 'test', features: [], limits: { maxStorageBufferBindingSize: 2 ** 31 } },
      copy: { gbytes_per_s: 800 },
      engine: [{ adapter: 'Test GPU', model: 'llama-3.2-1b', weight_bytes: 2e9, weight_dtype: 'f16', tokens: 2048, prefill_ms: 100, tokens_per_s: 20480, gflops: 1, attention_share: 0, decode_tokens_per_s: decodeTokS, decode_context: 512 }],
      link: [{ model: 'smollm2-135m', context: 32768, chunks: 64, chunk_tokens: 512, tier: 'gpu', results: [ttft('legolink:16', 8000 / gpuTier, 10)], ratios: { 'full/legolink:16': gpuTier } }],
    },
    torch: { device: 'Test H100', torch: '2', transformers: '5', copy_gbytes_per_s: 3000, rows: [{ model: 'llama-3.2-1b', tokens: 2048, tokens_per_s: 25600, gflops: 1 }] },
  });
  // Listed in some other order: the table and the page go by when each run started.
  const runs = [
    { file: 'gpu-test-2.json', r: run('2026-11-27T00:00:00Z', 300, 12.5, 'bash scripts/gpu-check.sh (kit at abc1234)') },
    { file: 'gpu-test-10.json', r: run('2026-11-28T00:00:00Z', 600, 21, 'bash scripts/gpu-check.sh --budget-s 330') },
    { file: 'gpu-test-3.json', r: run('2026-11-27T12:00:00Z', 450, 15, 'bash scripts/gpu-check.sh') },
  ];
  const md = gpuSection(runs);
  // Roofline 1500 tok/s (3000 GB/s over 2 GB); prefill 20480 / 25600.
  assert.match(md, /\| `gpu-test-2\.json` \| 2026-11-27 \| abc1234 \| Test H100 \| 80% \| 20% of 1500 tok\/s \| – \/ – \/ 12\.5 \|\n\| `gpu-test-3\.json` \| 2026-11-27 \| – \| Test H100 \| 80% \| 30% of 1500 tok\/s \| – \/ – \/ 15\.0 \|\n\| `gpu-test-10\.json` \| 2026-11-28 \| – \| Test H100 \| 80% \| 40% of 1500 tok\/s \| – \/ – \/ 21\.0 \|/);
  assert.deepEqual(md.match(/^### .*$/gm), ['### Test GPU · 2026-11-28 · `gpu-test-10.json`']);
  assert.match(md, /every run's tables, oldest first, are in \[GPU-RUNS\.md\]\(GPU-RUNS\.md\)/);
  const page = gpuRunsPage(runs);
  assert.deepEqual(page.match(/^### .*`$/gm), ['### Test GPU · 2026-11-27 · `gpu-test-2.json`', '### Test GPU · 2026-11-27 · `gpu-test-3.json`', '### Test GPU · 2026-11-28 · `gpu-test-10.json`']);
  assert.equal(page.match(/Decode of llama-3\.2-1b, against its roofline/g)?.length, 3);
  // One run alone: no history table, the run in full.
  const one = gpuSection(runs.slice(0, 1));
  assert.doesNotMatch(one, /run by run|GPU-RUNS/);
  assert.match(one, /### Test GPU · 2026-11-27 · `gpu-test-2\.json`/);
});

test('the f16 stage: the toggle, the f16 tests\' outcome, the prefill both ways and each product\'s f16 / f32 speed; or why nothing ran', () => {
  const run = (f16: NonNullable<GpuRun['kit']['f16']>) => gpuRunsPage([{ file: 'gpu-test.json', r: {
    command: 'bash scripts/gpu-check.sh',
    kit: { started: '2026-11-29T00:00:00Z', budget_s: 300, node: 'v20', adapter: { description: 'Test GPU', vendor: 'nvidia', features: [], limits: {} }, f16 },
    torch: null,
  } as GpuRun }]);
  const mm = (half: boolean, ms: number) => ({ variant: 'tiled128', half, T: 2048, K: 2048, N: 3072, ms, gflops: (2 * 2048 * 2048 * 3072) / ms / 1e6, chosen: false });
  const md = run({
    toggle: 'vulkan_enable_f16_on_nvidia', adapter: 'Test GPU', shader_f16: true, parity: { pass: 10, fail: 0, skipped: 0, failed: [] },
    matmul: [mm(false, 2), mm(true, 1)], prefill: [{ model: 'llama-3.2-1b', tokens: 2048, f32_ms: 160, f16_ms: 100, runs: 3 }],
  });
  assert.match(md, /With Dawn's toggle `vulkan_enable_f16_on_nvidia` [^\n]*Test GPU offers `shader-f16`; the f16 path's tests \(half-kernels\.test\): \*\*10 passed, 0 failed\*\*\./);
  assert.match(md, /llama-3\.2-1b's prefill of 2048 tokens [^\n]*160\.0 ms with f32 math, 100\.0 ms with f16 math, \*\*1\.60×\*\* the speed\./);
  assert.match(md, /\| tiled128 \| \[2048×2048\]·\[2048×3072\] \| 2\.000 \| 1\.000 \| 25770 \| 2\.00× \|/);
  const none = run({ toggle: 'vulkan_enable_f16_on_nvidia', adapter: 'Test GPU', shader_f16: false, skipped: 'the adapter offers no shader-f16, even with the toggle' });
  assert.match(none, /Test GPU still offers no `shader-f16`; the adapter offers no shader-f16, even with the toggle\./);
  assert.doesNotMatch(none, /f16 math ms/);
});
