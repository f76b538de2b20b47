/**
 * llama.cpp (node-llama-cpp 3.21.1, its prebuilt CPU build) on the same GGUF
 * file and token ids as LegoKV's engine benchmark: the CPU's own reference
 * beside our figures, in the same run. One thread unless told otherwise: on
 * a shared 2-core machine more threads make its decode collapse whenever
 * anything else runs (ENVIRONMENT.md).
 *
 * With `vulkan`, its prebuilt Vulkan build instead, every layer on the GPU:
 * ggml's own GPU kernels on the Vulkan device that VK_ICD_FILENAMES names,
 * which under LEGOKV_NODE_BACKEND=lavapipe is the adapter LegoKV runs on.
 * ggml skips Vulkan devices of the CPU type unless GGML_VK_VISIBLE_DEVICES
 * lists them, so this lists device 0 where nothing else is set.
 */
export interface LlamaCppFigures {
  engine: string;
  threads: number;
  prefill_tokens: number;
  prefill_tokens_per_s: number;
  decode_tokens_per_s: number;
}

export async function benchLlamaCpp(path: string, tokens: number[], decodeSteps: number, o: { threads?: number; vulkan?: boolean } = {}): Promise<LlamaCppFigures | Error> {
  const { threads = 1, vulkan = false } = o;
  let mod: typeof import('node-llama-cpp');
  try {
    mod = await import('node-llama-cpp');
  } catch (e) {
    return e as Error;
  }
  if (vulkan) process.env.GGML_VK_VISIBLE_DEVICES ??= '0';
  let llama: Awaited<ReturnType<typeof mod.getLlama>>;
  try {
    llama = await mod.getLlama({ gpu: vulkan ? 'vulkan' : false, build: 'never', logLevel: mod.LlamaLogLevel.error });
  } catch (e) {
    return e as Error;
  }
  try {
    const devices = vulkan ? await llama.getGpuDeviceNames() : [];
    if (vulkan && (llama.gpu !== 'vulkan' || !devices.length)) return new Error(`llama.cpp's Vulkan build found no device (gpu: ${llama.gpu})`);
    const model = await llama.loadModel({ modelPath: path, gpuLayers: vulkan ? 'max' : 0 });
    const ctx = await model.createContext({ contextSize: tokens.length + decodeSteps + 8, batchSize: tokens.length, threads, sequences: 1 });
    const run = async () => {
      const seq = ctx.getSequence();
      try {
        const t0 = performance.now();
        let first = 0, n = 0;
        for await (const _ of seq.evaluate(tokens as never, { temperature: 0, yieldEogToken: true })) {
          if (n === 0) first = performance.now();
          if (++n > decodeSteps) break;
        }
        return { prefillMs: first - t0, decodeMs: performance.now() - first };
      } finally {
        seq.dispose();
      }
    };
    await run(); // warm-up
    const r = await run();
    await ctx.dispose();
    await model.dispose();
    return {
      engine: vulkan
        ? `llama.cpp (node-llama-cpp 3.21.1, Vulkan, every layer on ${devices.join(', ')})`
        : `llama.cpp (node-llama-cpp 3.21.1, CPU, ${threads} thread${threads > 1 ? 's' : ''})`,
      threads, prefill_tokens: tokens.length,
      prefill_tokens_per_s: (tokens.length / r.prefillMs) * 1000,
      decode_tokens_per_s: (decodeSteps / r.decodeMs) * 1000,
    };
  } finally {
    await llama.dispose();
  }
}
