/**
 * npm run bench:record [-- --shape smollm2-135m] [--contexts 64,32768] [--profile gpu] [--steps 200] [--reps 5]
 *
 * The host's cost of a decode step, apart from the GPU's: greedy steps recorded ahead as the app decodes
 * (Engine.greedySteps), on a model of real shape with random weights, after `context` cached rows, with the
 * GPU's work dropped at submit (queue.submit does nothing; command buffers are still recorded and finished, and
 * parameters still written). Small models on fast GPUs are bound by it: SmolLM2 on the H100 took 3.35 ms a step
 * to record against 2.05 ms of GPU time (gpu-h100-13.json). Times it both ways in turns: steps replayed from an
 * earlier step's tape where their launches are the same (Engine.replaySteps, as the app decodes) and every step
 * recorded anew; prints milliseconds a step, launches a step and microseconds a launch, the fastest of `reps` runs
 * each way, and the ratio, with the adapter's name. The GPU profile's kernels can be forced on any adapter
 * (`--profile gpu`, the default), since nothing runs.
 */
import { parseCommand } from '../cli/options';
import { createNodeGpu, loadKernelSources } from '../node/gpu';
import { Engine } from '../engine';
import { shapeConfig, syntheticWeights, SHAPE_NAMES } from './shapes';

const a = parseCommand({
  command: 'npm run bench:record',
  summary: 'Host milliseconds to record a greedy decode step, the GPU\'s work dropped at submit, on a model of real shape.',
  options: {
    shape: { type: 'string', default: 'smollm2-135m', help: `model shape (${SHAPE_NAMES.join(', ')})` },
    contexts: { type: 'numbers', default: [64, 32768], min: 1, help: 'cached rows before the timed steps' },
    profile: { type: 'string', default: 'gpu', choices: ['gpu', 'cpu'], help: 'kernel profile: gpu (fused decode, attention_decode) or cpu' },
    steps: { type: 'integer', default: 200, min: 1, help: 'steps a timed run' },
    reps: { type: 'integer', default: 5, min: 1, help: 'timed runs (the fastest counts)' },
  },
});

const gpu = await createNodeGpu();
const adapter = gpu.adapter.description;
const e = Engine.create(gpu, loadKernelSources());
try {
  e.ops.matmulProfile = a.profile as 'gpu' | 'cpu';
  const c = shapeConfig(a.shape);
  await e.load(c, syntheticWeights(c, 1), { weightDtype: 'f16', dequantize: false });
  const queue = gpu.device.queue as GPUQueue & { submit: GPUQueue['submit'] };
  for (const context of a.contexts) {
    const cache = e.newCache(context + a.steps + 8);
    try {
      // The first rows computed (pipelines built), the rest placed at the next positions (attention's cost on the
      // host does not depend on their keys and values, left zero).
      const first = Math.min(context, 64);
      await e.prefill(cache, Array.from({ length: first }, (_, i) => 3 + (i % 100)));
      if (context > first) cache.setPositions(first, Int32Array.from({ length: context - first }, (_, i) => first + i));
      await e.greedySteps(cache, 5, { count: 4, stopIds: [] });
      cache.truncate(context);
      const submit = queue.submit;
      queue.submit = () => {};
      const best = { on: Infinity, off: Infinity };
      let launches = 0, replayed = 0;
      try {
        for (let r = 0; r < 2 * a.reps; r++) {
          const way = r % 2 ? 'off' : 'on';
          e.replaySteps = way === 'on';
          const d0 = e.ops.d.count, r0 = e.ops.d.replayed, t0 = performance.now();
          await e.greedySteps(cache, 5, { count: a.steps, stopIds: [] });
          best[way] = Math.min(best[way], (performance.now() - t0) / a.steps);
          launches = (e.ops.d.count - d0) / a.steps;
          if (way === 'on') replayed = (e.ops.d.replayed - r0) / a.steps;
          cache.truncate(context);
        }
      } finally {
        queue.submit = submit;
        e.replaySteps = true;
      }
      const line = (ms: number, how: string) => `${ms.toFixed(3)} ms a step to record (${launches.toFixed(0)} launches, ${((ms * 1000) / launches).toFixed(2)} µs a launch; ${how})`;
      console.log(`[${adapter}] ${a.shape}, ${a.profile} profile, ${context} cached rows, the GPU's work dropped at submit, fastest of ${a.reps} runs of ${a.steps} steps each way, in turns:`);
      console.log(`  ${line(best.on, `replayed: ${replayed.toFixed(0)} launches a step from tapes`)}`);
      console.log(`  ${line(best.off, 'every step recorded anew')}`);
      console.log(`  recorded anew / replayed: ${(best.off / best.on).toFixed(2)}x`);
    } finally {
      cache.destroy();
    }
  }
} finally {
  e.destroy();
  gpu.release();
}
