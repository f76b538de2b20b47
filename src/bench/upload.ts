/**
 * Host-to-GPU upload bandwidth through `queue.writeBuffer`, for the GPU kit's copy stage: the path a linked
 * chunk's rows take from the host tier (kvlink's RowWriter writes each chunk's layer with one call per keys and
 * one per values). Beside the link's load times it says whether they are bound by the upload itself.
 */
export interface UploadTiming {
  /** Bytes a writeBuffer call. */
  block: number;
  calls: number;
  /** From the first call until the queue is done, bytes uploaded per second. */
  gbytes_per_s: number;
  /** The calls alone (Dawn copies into its staging memory as it returns), bytes per second. */
  calls_gbytes_per_s: number;
}

/** Times `total` bytes uploaded in blocks of each size into one destination buffer, twice each (the second kept). */
export async function uploadBandwidth(dev: GPUDevice, blocks: number[], total: number): Promise<UploadTiming[]> {
  const span = Math.max(...blocks) * 16;
  const dst = dev.createBuffer({ size: span, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  const out: UploadTiming[] = [];
  try {
    for (const block of blocks) {
      const src = new Uint8Array(block).fill(7);
      const calls = Math.max(1, Math.round(total / block));
      let timing: UploadTiming | null = null;
      for (let rep = 0; rep < 2; rep++) {
        const t0 = performance.now();
        for (let i = 0; i < calls; i++) dev.queue.writeBuffer(dst, (i % 16) * block, src.buffer, 0, block);
        const t1 = performance.now();
        await dev.queue.onSubmittedWorkDone();
        const t2 = performance.now();
        const bytes = calls * block;
        timing = { block, calls, gbytes_per_s: bytes / (t2 - t0) / 1e6, calls_gbytes_per_s: bytes / Math.max(t1 - t0, 1e-3) / 1e6 };
      }
      out.push(timing!);
    }
  } finally {
    dst.destroy();
  }
  return out;
}
