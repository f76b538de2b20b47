/**
 * npm run bench:record-link [-- --shape smollm2-135m] [--context 32768] [--chunk-tokens 512] [--tier gpu]
 *   [--algorithms legolink:16,naive] [--reps 5]
 *
 * The host's cost of a link, apart from the GPU's: a context of cached chunks linked with each algorithm, on a model
 * of real shape with random weights, with the GPU's work dropped at submit (queue.submit does nothing; command
 * buffers are still recorded and finished, parameters and rows still written). The chunks' rows are random halves
 * (their values cost the host nothing), resident on a GPU tier as the app keeps hot chunks (`--tier gpu`) or in host
 * memory as KVStore's f16 blobs hand them over (`--tier host`). On the H100 (gpu-h100-13.json) legolink:16 at 32K
 * from the GPU tier took 133 ms against 101 ms of GPU time, and naive 54 against 24: where the host's part bounds the
 * link, this is the figure to cut. Prints, for the fastest of `reps` links, each part of the TTFT breakdown the host
 * spends (laying out and making the cache, placing the cached rows, recording the recompute's layers with WebGPU's
 * finish and submit among them, and the rest: positions, the writer's plan, the pass's rows, the wait and the logits),
 * launches a link and microseconds a launch, with the adapter's name; and the first timed link and the median, since
 * the links before the JIT has compiled the host's code take twice as long (this host, SwiftShader, SmolLM2 at 32K:
 * legolink:16 about 21 ms in the first 5, 9 ms from about the 20th on), and an app's first link is one of those.
 */
import { parseCommand } from '../cli/options';
import { createNodeGpu, loadKernelSources } from '../node/gpu';
import { Engine } from '../engine';
import { link, type TtftBreakdown } from '../kvlink/link';
import { parseAlgorithm } from '../kvlink/catalogue';
import type { CompiledChunk } from '../types/kv';
import { shapeConfig, syntheticWeights, SHAPE_NAMES } from './shapes';
import { benchParts, putOnGpuTier } from './ttft';

const a = parseCommand({
  command: 'npm run bench:record-link',
  summary: 'Host milliseconds of a link at a long context, the GPU\'s work dropped at submit, on a model of real shape.',
  options: {
    shape: { type: 'string', default: 'smollm2-135m', help: `model shape (${SHAPE_NAMES.join(', ')})` },
    context: { type: 'integer', default: 32768, min: 1, help: 'cached tokens linked' },
    'chunk-tokens': { type: 'integer', default: 512, min: 1, help: 'tokens a chunk' },
    tier: { type: 'string', default: 'gpu', choices: ['gpu', 'host'], help: 'where the cached rows are: a GPU tier, or host memory as halves' },
    algorithms: { type: 'algorithms', default: ['legolink:16', 'naive'], help: 'the linking algorithms to time, comma-separated' },
    profile: { type: 'string', default: 'gpu', choices: ['gpu', 'cpu'], help: 'kernel profile: gpu (tiled attention, kv_gather from the tier) or cpu' },
    reps: { type: 'integer', default: 30, min: 1, help: 'timed links an algorithm (the fastest is broken down; the first and the median are printed too)' },
  },
});

/** The parts of a link's TTFT that are the host's own, as TtftBreakdown names them (submitMs is part of recordMs). */
const HOST_PARTS = ['cacheMs', 'loadMs', 'recordMs'] as const satisfies readonly (keyof TtftBreakdown)[];

/** One line for a link's host time: its parts, what the parts leave of the total, and WebGPU's finish and submit. */
function describeLink(t: TtftBreakdown): string {
  const parts = HOST_PARTS.map((k) => `${k.replace(/Ms$/, '')} ${t[k].toFixed(2)}`).join(', ');
  const rest = t.totalMs - HOST_PARTS.reduce((s, k) => s + t[k], 0);
  return `${t.totalMs.toFixed(2)} ms (${parts}, of which submit ${t.submitMs.toFixed(2)}; the rest ${rest.toFixed(2)})`;
}

/** `n` chunks of `tokens` rows each, every layer's keys and values the same random halves (the host never reads them). */
function randomChunks(n: number, tokens: number, layers: number, kvDim: number, bosId: number): CompiledChunk[] {
  const halves = new Uint16Array(tokens * kvDim);
  // Halves of magnitude below 1 (exponent 0x3000 upward), never a NaN or an infinity.
  for (let i = 0; i < halves.length; i++) halves[i] = 0x3000 + ((i * 2654435761) >>> 22);
  const f32 = new Float32Array(0);
  return Array.from({ length: n }, (_, i) => ({
    id: `random-${i}`,
    variant: { kind: 'plain' as const },
    tokens: Array.from({ length: tokens }, (_, j) => (j === 0 ? bosId : 10 + ((i * 7 + j) % 200))),
    positions: Array.from({ length: tokens }, (_, j) => j),
    // k and v are never read: rows kept as halves are uploaded as they are (LayerRows.halves).
    layers: Array.from({ length: layers }, () => ({ k: f32, v: f32, halves: { k: halves, v: halves } })),
  }));
}

const gpu = await createNodeGpu();
const adapter = gpu.adapter.description;
const e = Engine.create(gpu, loadKernelSources());
const queue = gpu.device.queue as GPUQueue & { submit: GPUQueue['submit'] };
const submit = queue.submit;
try {
  e.ops.matmulProfile = a.profile as 'gpu' | 'cpu';
  const c = shapeConfig(a.shape);
  await e.load(c, syntheticWeights(c, 1), { weightDtype: 'f16', dequantize: false });
  const n = Math.max(1, Math.round(a.context / a['chunk-tokens']));
  const chunks = randomChunks(n, a['chunk-tokens'], c.nLayers, e.model!.kvDim, c.bosId ?? 1);
  queue.submit = () => {};
  const linked = a.tier === 'gpu' ? (await putOnGpuTier(e, chunks)).onTier : chunks;
  console.log(`[${adapter}] ${a.shape}, ${n} chunks of ${a['chunk-tokens']} tokens ${a.tier === 'gpu' ? 'on a GPU tier' : 'in host memory as halves'}, ${a.profile} profile, the GPU's work dropped at submit, fastest of ${a.reps} links each:`);
  for (const spec of a.algorithms) {
    const algo = parseAlgorithm(spec);
    // The first link builds the pipelines and the model's position table; the rest are timed.
    await link(e, benchParts(linked), algo, { bosId: c.bosId }).then((r) => r.cache.destroy());
    const runs: TtftBreakdown[] = [];
    let launches = 0;
    for (let r = 0; r < a.reps; r++) {
      const d0 = e.ops.d.count;
      const res = await link(e, benchParts(linked), algo, { bosId: c.bosId });
      res.cache.destroy();
      launches = e.ops.d.count - d0;
      runs.push(res.ttft);
    }
    const totals = runs.map((t) => t.totalMs).sort((x, y) => x - y);
    const best = runs.reduce((b, t) => (t.totalMs < b.totalMs ? t : b));
    const median = totals[(totals.length - 1) >> 1];
    console.log(`  ${spec}: fastest ${describeLink(best)}; ${launches} launches in ${best.submits} submissions, ${((best.totalMs * 1000) / launches).toFixed(1)} µs a launch`);
    console.log(`    first timed link ${runs[0].totalMs.toFixed(2)} ms, median ${median.toFixed(2)} ms of ${runs.length}`);
  }
} finally {
  queue.submit = submit;
  e.destroy();
  gpu.release();
}
