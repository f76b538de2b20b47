/**
 * GPU time of compute passes from timestamp queries, where the adapter has
 * the 'timestamp-query' feature: every pass begun while the timer runs
 * writes its start and end ticks; `stop` sums the passes' durations, and
 * keeps each labelled pass's time in `byLabel` (for per-kernel profiles,
 * where the dispatcher gives every dispatch a pass of its own).
 */
const CAPACITY = 4096;

export class GpuTimer {
  private set: GPUQuerySet;
  private resolve: GPUBuffer;
  private used = 0;
  private labels: string[] = [];
  running = false;
  /** GPU ms and pass count per label, from the last `stop` (unlabelled passes are left out). */
  byLabel = new Map<string, { ms: number; passes: number }>();

  constructor(private device: GPUDevice) {
    this.set = device.createQuerySet({ type: 'timestamp', count: CAPACITY });
    this.resolve = device.createBuffer({ size: CAPACITY * 8, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  }

  start() {
    this.used = 0;
    this.labels = [];
    this.running = true;
  }

  /** Timestamp writes for a pass about to begin, or undefined when not timing (or full). */
  passWrites(label = ''): GPUComputePassTimestampWrites | undefined {
    if (!this.running || this.used + 2 > CAPACITY) return undefined;
    const w = { querySet: this.set, beginningOfPassWriteIndex: this.used, endOfPassWriteIndex: this.used + 1 };
    this.used += 2;
    this.labels.push(label);
    return w;
  }

  /** Stops timing: resolves every query written (in `encoder`, submitted by `read`) and sums pass times in ms. */
  async stop(encoder: GPUCommandEncoder, read: (buf: GPUBuffer, offset: number, size: number) => Promise<ArrayBuffer>): Promise<number> {
    this.running = false;
    if (this.used === 0) return 0;
    encoder.resolveQuerySet(this.set, 0, this.used, this.resolve, 0);
    const ticks = new BigInt64Array(await read(this.resolve, 0, this.used * 8));
    let ns = 0n;
    this.byLabel = new Map();
    for (let i = 0; i + 1 < ticks.length; i += 2) {
      const d = ticks[i + 1] > ticks[i] ? ticks[i + 1] - ticks[i] : 0n;
      ns += d;
      const label = this.labels[i / 2];
      if (!label) continue;
      const e = this.byLabel.get(label) ?? { ms: 0, passes: 0 };
      e.ms += Number(d) / 1e6;
      e.passes++;
      this.byLabel.set(label, e);
    }
    return Number(ns) / 1e6;
  }

  destroy() {
    this.set.destroy();
    this.resolve.destroy();
  }
}
