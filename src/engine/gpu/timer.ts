/**
 * GPU time of compute passes from timestamp queries, where the adapter has
 * the 'timestamp-query' feature: every pass begun while the timer runs
 * writes its start and end ticks; `stop` sums the passes' durations.
 */
const CAPACITY = 1024;

export class GpuTimer {
  private set: GPUQuerySet;
  private resolve: GPUBuffer;
  private used = 0;
  running = false;

  constructor(private device: GPUDevice) {
    this.set = device.createQuerySet({ type: 'timestamp', count: CAPACITY });
    this.resolve = device.createBuffer({ size: CAPACITY * 8, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  }

  start() {
    this.used = 0;
    this.running = true;
  }

  /** Timestamp writes for a pass about to begin, or undefined when not timing (or full). */
  passWrites(): GPUComputePassTimestampWrites | undefined {
    if (!this.running || this.used + 2 > CAPACITY) return undefined;
    const w = { querySet: this.set, beginningOfPassWriteIndex: this.used, endOfPassWriteIndex: this.used + 1 };
    this.used += 2;
    return w;
  }

  /** Stops timing: resolves every query written (in `encoder`, submitted by `read`) and sums pass times in ms. */
  async stop(encoder: GPUCommandEncoder, read: (buf: GPUBuffer, offset: number, size: number) => Promise<ArrayBuffer>): Promise<number> {
    this.running = false;
    if (this.used === 0) return 0;
    encoder.resolveQuerySet(this.set, 0, this.used, this.resolve, 0);
    const ticks = new BigInt64Array(await read(this.resolve, 0, this.used * 8));
    let ns = 0n;
    for (let i = 0; i + 1 < ticks.length; i += 2) if (ticks[i + 1] > ticks[i]) ns += ticks[i + 1] - ticks[i];
    return Number(ns) / 1e6;
  }

  destroy() {
    this.set.destroy();
    this.resolve.destroy();
  }
}
