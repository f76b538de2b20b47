/**
 * The GPU kit's cost of a launch: what one more compute dispatch costs the GPU and the host, apart from its work.
 *
 * A decode step of a small model is mostly launches. On the H100, SmolLM2's step took 2.05 ms of GPU time for
 * 204 launches and 270 MB of weights, which the copy rate moves in about 0.1 ms (gpu-h100-13.json). Whether
 * that time is the launches themselves, the barrier between dependent launches, or the compute pass around each
 * (the profile's way) decides what to fuse next, so this times each on its own, with a probe kernel that does
 * almost nothing, through the engine's own dispatcher (its uniform arena and bind-group cache):
 *  - dependent: every launch reads and writes the buffer the one before wrote, as a decode step's launches do;
 *  - dependent, wide: the same over many workgroups, as a GEMV's launch spreads over the whole GPU;
 *  - independent: every launch writes a buffer of its own, so none reads what another wrote (the WebGPU
 *    implementation may still put a barrier between them: against 'dependent', this says what the data
 *    dependency itself costs);
 *  - a pass each: dependent, each launch in a compute pass of its own (the per-kernel profile's way).
 * Each is timed with `LONG` and `SHORT` launches in one submission; the difference over LONG - SHORT is the cost
 * of a launch, so a submission's fixed cost falls out. Fastest of `REPS`.
 */
import type { Engine } from '../engine';

const SHORT = 16, LONG = 256, REPS = 5;
/** The dependent, wide case's workgroups: a few per SM of an H100 (132 SMs). */
const WIDE = 1024;

const PROBE = /* wgsl */ `
struct Params { n: u32 }
@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) g: vec3<u32>) {
  if (g.x < p.n) { x[g.x] += 1.0; }
}`;

export type DispatchCase = 'dependent' | 'dependent, wide' | 'independent' | 'a pass each';
export const DISPATCH_CASES: DispatchCase[] = ['dependent', 'dependent, wide', 'independent', 'a pass each'];

export interface DispatchCost {
  case: DispatchCase;
  workgroups: number;
  /** GPU µs one more launch adds (timestamps around the passes, or the wall clock without them). */
  gpu_us: number;
  /** Host µs to record one launch through the dispatcher (its bind group cached), apart from submitting. */
  host_us: number;
  clock: 'gpu-timestamps' | 'wall';
}

/**
 * Times each case (all by default) on `e`'s device and dispatcher, and checks that every launch ran: the probe
 * adds 1 to the values it owns, so a buffer's first value afterwards is the number of launches that wrote it.
 */
export async function dispatchCosts(e: Engine, cases: DispatchCase[] = DISPATCH_CASES): Promise<DispatchCost[]> {
  const dev = e.gpu.device, d = e.ops.d;
  const module = dev.createShaderModule({ code: PROBE, label: 'dispatch probe' });
  const pipeline = dev.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' }, label: 'dispatch probe' });
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const shared = dev.createBuffer({ size: WIDE * 64 * 4, usage, label: 'dispatch probe' });
  const own = Array.from({ length: LONG }, () => dev.createBuffer({ size: 256, usage, label: 'dispatch probe' }));
  const out: DispatchCost[] = [];
  try {
    for (const c of cases) {
      const groups = c === 'dependent, wide' ? WIDE : 1;
      const enc = d.commandEncoder();
      enc.clearBuffer(shared);
      for (const b of own) enc.clearBuffer(b);
      let launches = 0;
      /** GPU ms and host ms of recording, for `n` launches in one submission. */
      const time = async (n: number) => {
        await dev.queue.onSubmittedWorkDone();
        const timed = d.startGpuTimer(c === 'a pass each');
        launches += n;
        const t0 = performance.now();
        for (let i = 0; i < n; i++) d.run(pipeline, [{ u32: groups * 64 }], { 1: c === 'independent' ? own[i] : shared }, [groups, 1, 1]);
        const host = performance.now() - t0;
        const gpu = timed ? await d.stopGpuTimer() : null;
        if (!timed) d.flush();
        await dev.queue.onSubmittedWorkDone();
        return { gpu: gpu ?? performance.now() - t0, host, clock: timed ? 'gpu-timestamps' as const : 'wall' as const };
      };
      await time(LONG); // pipelines, bind groups and the timer made before timing
      const best = async (n: number) => {
        const runs = [];
        for (let r = 0; r < REPS; r++) runs.push(await time(n));
        return { gpu: Math.min(...runs.map((x) => x.gpu)), host: Math.min(...runs.map((x) => x.host)), clock: runs[0].clock };
      };
      const short = await best(SHORT), long = await best(LONG);
      // Every launch ran: the shared buffer counted them all; the last own buffer, only the long runs'.
      const first = async (b: GPUBuffer) => new Float32Array(await d.read(b, 0, 4))[0];
      const [counted, expected] = c === 'independent' ? [await first(own[LONG - 1]), 1 + REPS] : [await first(shared), launches];
      if (counted !== expected) throw new Error(`dispatch probe (${c}): ${counted} launches counted, ${expected} made`);
      out.push({
        case: c, workgroups: groups, clock: long.clock,
        gpu_us: ((long.gpu - short.gpu) * 1000) / (LONG - SHORT),
        host_us: (long.host * 1000) / LONG,
      });
    }
    d.check();
  } finally {
    await dev.queue.onSubmittedWorkDone();
    shared.destroy();
    for (const b of own) b.destroy();
  }
  return out;
}

/** One line: each case's GPU and host µs a launch. */
export function formatDispatchCosts(adapter: string, rows: DispatchCost[]): string {
  const parts = rows.map((r) => `${r.case} (${r.workgroups} workgroup${r.workgroups > 1 ? 's' : ''}) ${r.gpu_us.toFixed(2)} µs GPU, ${r.host_us.toFixed(2)} µs host`);
  return `[${adapter}] a launch costs: ${parts.join('; ')} (${rows[0]?.clock ?? '?'}, ${LONG} against ${SHORT} launches, fastest of ${REPS})`;
}
