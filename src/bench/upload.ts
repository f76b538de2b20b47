/**
 * The GPU kit's copy stage: the adapter's buffer-to-buffer copy rate (the decode roofline's bandwidth), and
 * host-to-GPU upload bandwidth through `queue.writeBuffer`, the path a linked chunk's rows take from the host tier
 * (kvlink's RowWriter writes each chunk's layer with one call per keys and one per values). Beside the link's load
 * times it says whether they are bound by the upload itself.
 */
export interface UploadTiming {
  /** Bytes a call (a writeBuffer, or a staging buffer's fill and copy). */
  block: number;
  calls: number;
  /** From the first call until the queue is done, bytes uploaded per second. */
  gbytes_per_s: number;
  /** writeBuffer's calls alone (Dawn copies into its staging memory as it returns), bytes per second. */
  calls_gbytes_per_s?: number;
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

/**
 * The other way to upload: through staging buffers the host maps and fills itself (MAP_WRITE), then copied on the
 * GPU. Two staging buffers of `block` bytes take turns, each mapped again once the GPU has copied it, so no
 * memory is allocated per call as writeBuffer's staging may be (Dawn's upload ring buffers are 4 MiB). Times
 * `total` bytes this way, twice (the second kept), to compare with writeBuffer's rate in the same run.
 */
export async function mappedUploadBandwidth(dev: GPUDevice, block: number, total: number): Promise<UploadTiming> {
  const dst = dev.createBuffer({ size: block, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
  const ring = [0, 1].map(() => dev.createBuffer({ size: block, usage: GPUBufferUsage.MAP_WRITE | GPUBufferUsage.COPY_SRC, mappedAtCreation: true }));
  const src = new Uint8Array(block).fill(7);
  const calls = Math.max(2, Math.round(total / block));
  let timing: UploadTiming | null = null;
  try {
    for (let rep = 0; rep < 2; rep++) {
      const t0 = performance.now();
      for (let i = 0; i < calls; i++) {
        const b = ring[i % 2];
        if (b.mapState === 'unmapped') await b.mapAsync(GPUMapMode.WRITE);
        new Uint8Array(b.getMappedRange()).set(src);
        b.unmap();
        const enc = dev.createCommandEncoder();
        enc.copyBufferToBuffer(b, 0, dst, 0, block);
        dev.queue.submit([enc.finish()]);
      }
      await dev.queue.onSubmittedWorkDone();
      const ms = performance.now() - t0;
      timing = { block, calls, gbytes_per_s: (calls * block) / ms / 1e6 };
    }
  } finally {
    for (const b of [dst, ...ring]) b.destroy();
  }
  return timing!;
}

/** copyBufferToBuffer bandwidth (the GPU kit's copy stage), counting bytes read plus bytes written. */
export async function copyBandwidth(dev: GPUDevice, cpuAdapter: boolean): Promise<number> {
  // 1 GiB each way on a GPU (far past any cache); CPU adapters get 64 MiB, and any size halves until it fits.
  let size = Math.min(cpuAdapter ? 1 << 26 : 1 << 30, dev.limits.maxBufferSize) & ~255;
  const usage = GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST | GPUBufferUsage.STORAGE;
  let src: GPUBuffer, dst: GPUBuffer;
  for (;;) {
    dev.pushErrorScope('out-of-memory');
    src = dev.createBuffer({ size, usage });
    dst = dev.createBuffer({ size, usage });
    if (!(await dev.popErrorScope())) break;
    src.destroy();
    dst.destroy();
    if (size <= 1 << 24) throw new Error('copy bandwidth: not even 16 MiB buffers could be allocated');
    size /= 2;
  }
  const run = async (reps: number) => {
    const enc = dev.createCommandEncoder();
    for (let i = 0; i < reps; i++) enc.copyBufferToBuffer(i % 2 ? dst : src, 0, i % 2 ? src : dst, 0, size);
    dev.queue.submit([enc.finish()]);
    await dev.queue.onSubmittedWorkDone();
  };
  await run(2);
  const reps = cpuAdapter ? 2 : 20;
  const s = performance.now();
  await run(reps);
  const gbps = (2 * size * reps) / ((performance.now() - s) / 1000) / 1e9;
  src.destroy();
  dst.destroy();
  return gbps;
}
