/** Standalone matmul throughput of each of our kernel variants, for bench:engine's reference line and the GPU kit. */
import { takesWideLoads, WARM_MS, type Engine, type MatmulVariant, type StoreDType } from '../engine';

export interface MatmulTiming {
  variant: MatmulVariant;
  /** The tiled kernels' f16 slices (kernels/matmul_half.wgsl), timed both ways where the device has `shader-f16`. */
  half?: boolean;
  /** gemv's 16-byte loads of f16 weights (Ops.gemvWide), timed both ways where K is a multiple of 8. */
  wide?: boolean;
  T: number; K: number; N: number;
  ms: number;
  gflops: number;
  /** Weight bytes read per product over its time (what bounds matrix-vector products). */
  weightGBps: number;
  clock: KernelClock;
}

/**
 * Milliseconds per repetition of `run(reps)` (which ends with one read back): the slope between `reps` and
 * `2 * reps` repetitions, so the fixed cost of submitting and reading back, large on CPU adapters, drops out.
 */
export async function perRep(run: (reps: number) => Promise<number>, reps: number): Promise<number> {
  const a = await run(reps);
  const b = await run(2 * reps);
  return b > a ? (b - a) / reps : b / (2 * reps);
}

/**
 * Milliseconds per repetition for kernel timings: on a real GPU with timestamp queries, the GPU's own time for
 * `reps` repetitions (wall-clock slopes there were off by up to 25x, the submit and read-back jitter being as
 * large as the work: gpu-h100-5.json); elsewhere `perRep`'s slope.
 */
export async function kernelPerRep(e: Engine, run: (reps: number) => Promise<number>, reps: number): Promise<{ ms: number; clock: KernelClock }> {
  if (e.gpu.profile !== 'gpu' || !e.ops.d.startGpuTimer()) return { ms: await perRep(run, reps), clock: 'wall-slope' };
  await run(reps);
  const ms = await e.ops.d.stopGpuTimer();
  return { ms: ms! / reps, clock: 'gpu-timestamps' };
}
/** How a kernel timing was taken (see kernelPerRep). */
export type KernelClock = 'gpu-timestamps' | 'wall-slope';

/** Times every variant that can compute [T, K]·[K, N] on the engine's device (repetitions fill about `targetMs`). */
export async function timeMatmuls(e: Engine, T: number, K: number, N: number, wDtype: StoreDType, targetMs = 60, only?: MatmulVariant[]): Promise<MatmulTiming[]> {
  const dev = e.gpu.device;
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const wBytes = N * K * (wDtype === 'f16' ? 2 : 4);
  const x = dev.createBuffer({ size: T * K * 4, usage });
  const w = dev.createBuffer({ size: wBytes, usage });
  const y = dev.createBuffer({ size: T * N * 4, usage });
  const out: MatmulTiming[] = [];
  try {
    const tiled = (v: MatmulVariant) => v === 'tiled' || v === 'tiled128';
    const gemv = (v: MatmulVariant) => v === 'gemv' || v === 'gemv_sg';
    type Way = { variant: MatmulVariant; half?: boolean; wide?: boolean };
    const ways = (only ?? e.ops.matmulVariants(T)).flatMap((variant): Way[] =>
      tiled(variant) && e.ops.shaderF16 && wDtype === 'f16' ? [{ variant, half: false }, { variant, half: true }]
        : gemv(variant) && takesWideLoads(wDtype, K) ? [{ variant, wide: false }, { variant, wide: true }] : [{ variant }]);
    const runner = ({ variant, half, wide }: Way) => async (reps: number) => {
      const was = e.ops.gemvWide;
      e.ops.gemvWide = wide ?? was;
      const t0 = performance.now();
      try {
        for (let i = 0; i < reps; i++) e.ops.matmul({ x, w, wDtype, y, T, N, K, variant, half });
      } finally {
        e.ops.gemvWide = was;
      }
      await e.ops.d.read(y, 0, 16);
      return performance.now() - t0;
    };
    // A real GPU idle until now clocks up under load (as decode tuning warms it): the first way timed cold ran 4x
    // slow (gpu-h100-11.json).
    if (e.gpu.profile === 'gpu') {
      const warm = runner(ways[ways.length - 1]);
      for (const until = performance.now() + WARM_MS; performance.now() < until; ) await warm(4);
    }
    for (const way of ways) {
      const { variant, half, wide } = way;
      const run = runner(way);
      await run(1);
      const once = await run(1);
      const reps = Math.max(3, Math.min(500, Math.ceil(targetMs / Math.max(once, 0.01))));
      const { ms, clock } = await kernelPerRep(e, run, reps);
      out.push({ variant, ...(half === undefined ? {} : { half }), ...(wide === undefined ? {} : { wide }), T, K, N, ms, clock, gflops: (2 * T * N * K) / ms / 1e6, weightGBps: wBytes / ms / 1e6 });
    }
  } finally {
    for (const b of [x, w, y]) b.destroy();
  }
  return out;
}

export async function bestMatmul(e: Engine, T: number, K: number, N: number, wDtype: StoreDType): Promise<{ gflops: number; variant: string }> {
  const all = await timeMatmuls(e, T, K, N, wDtype);
  return all.reduce((a, b) => (b.gflops > a.gflops ? b : a));
}

/** The matrix-vector products of one decode token, [K, N, times]: q/k/v, output, gate/up, down in each layer, then the LM head. */
function decodeProducts(e: Engine): [number, number, number][] {
  const c = e.config;
  const qDim = c.nHeads * c.headDim, kvDim = c.nKvHeads * c.headDim;
  return [[c.hidden, qDim + 2 * kvDim, c.nLayers], [qDim, c.hidden, c.nLayers], [c.hidden, 2 * c.intermediate, c.nLayers], [c.intermediate, c.hidden, c.nLayers], [c.hidden, c.vocabSize, 1]];
}

/**
 * What decode's matrix-vector products cost on their own: every product of
 * one token timed alone, repeated on the same weights, with the variant the
 * engine picks (productMs), summed. Repeated, a
 * layer's matrix stays in the CPU's caches, which a model's weights, read
 * once a token, do not: see decodeMatmulStreamed for that.
 */
export async function decodeMatmulReference(e: Engine): Promise<{ ms: number; gflops: number; variant: string }> {
  let ms = 0, flops = 0;
  const variants = new Set<string>();
  for (const [K, N, times] of decodeProducts(e)) {
    const t = await productMs(e, K, N);
    variants.add(t.variant);
    ms += t.ms * times;
    flops += 2 * K * N * times;
  }
  return { ms, gflops: flops / ms / 1e6, variant: [...variants].join('+') };
}

/**
 * One [1, K]·[K, N] product with the variant the engine picks, repeated on the same weights: the median of three
 * timings (on a CPU adapter one slope of a few repetitions varied up to 2x between runs). A matrix larger than one
 * binding is timed on the rows that fit and scaled, as the engine runs it in parts.
 */
async function productMs(e: Engine, K: number, N: number): Promise<{ ms: number; variant: string }> {
  const dtype = e.model!.dtype;
  const limit = Math.min(e.gpu.device.limits.maxStorageBufferBindingSize, e.gpu.device.limits.maxBufferSize);
  const fit = Math.min(N, Math.floor(limit / (K * (dtype === 'f16' ? 2 : 4))));
  const variant = e.ops.pickMatmul(1, fit);
  const t: number[] = [];
  for (let i = 0; i < 3; i++) t.push((await timeMatmuls(e, 1, K, fit, dtype, 40, [variant]))[0].ms);
  return { ms: t.sort((a, b) => a - b)[1] * (N / fit), variant };
}

/**
 * The same products as decodeMatmulReference, in the order one decode token runs them and each layer on weights
 * of its own (buffers the size of the model's layers, made for this and freed after), so that the weights stream
 * from memory as the model's do. The LM head, read once a token, is timed as there. What decode loses to this
 * is the rest of a step: attention, norms, launches and the host.
 */
export async function decodeMatmulStreamed(e: Engine): Promise<{ ms: number; gflops: number }> {
  const c = e.config;
  const dtype = e.model!.dtype;
  const dev = e.gpu.device;
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST;
  const [head, ...layerProducts] = decodeProducts(e).reverse();
  const x = dev.createBuffer({ size: 4 * Math.max(...layerProducts.map(([K]) => K)), usage });
  const y = dev.createBuffer({ size: 4 * Math.max(...layerProducts.map(([, N]) => N)), usage: usage | GPUBufferUsage.COPY_SRC });
  const products = layerProducts.reverse().map(([K, N]) => ({ K, N, variant: e.ops.pickMatmul(1, N) }));
  const weights: GPUBuffer[][] = [];
  try {
    for (let l = 0; l < c.nLayers; l++) weights.push(products.map(({ K, N }) => dev.createBuffer({ size: K * N * (dtype === 'f16' ? 2 : 4), usage })));
    const run = async (reps: number) => {
      const t0 = performance.now();
      for (let r = 0; r < reps; r++) {
        for (const ws of weights) products.forEach(({ K, N, variant }, i) => e.ops.matmul({ x, w: ws[i], wDtype: dtype, y, T: 1, N, K, variant }));
      }
      await e.ops.d.read(y, 0, 16);
      return performance.now() - t0;
    };
    // On a GPU, the kernels' own time; on a CPU adapter the median of single runs, whose fixed cost (a submit and a
    // 16-byte read) is small beside a token's products, and whose spread on a busy 2-core host is not.
    await run(1);
    let layersMs: number;
    if (e.gpu.profile === 'gpu') layersMs = (await kernelPerRep(e, run, 3)).ms;
    else {
      const runs: number[] = [];
      for (let i = 0; i < 7; i++) runs.push(await run(1));
      layersMs = runs.sort((p, q) => p - q)[3];
    }
    // The LM head, timed as in decodeMatmulReference (one matrix, read once a token either way).
    const ms = layersMs + (await productMs(e, head[0], head[1])).ms;
    const flops = decodeProducts(e).reduce((f, [k, n, times]) => f + 2 * k * n * times, 0);
    return { ms, gflops: flops / ms / 1e6 };
  } finally {
    for (const b of [x, y, ...weights.flat()]) b.destroy();
  }
}
