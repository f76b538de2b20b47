/**
 * Host bytes into GPU buffers through staging buffers the host fills while they are mapped, copied on the GPU
 * (Dispatcher.upload's 'mapped' way, where the adapter's writeBuffer is slow). Each buffer is mapped again once
 * the submission that copies from it is done, and kept for reuse: the most recent few, of the sizes still asked for.
 */

/** Host bytes for a GPU buffer at a byte offset (Dispatcher.upload; offset and length multiples of 4). */
export interface HostWrite {
  dst: GPUBuffer;
  offset: number;
  data: ArrayBufferView;
}

/** Mapped staging buffers that uploads may have in flight before Dispatcher.uploadRoom waits for one. */
export const UPLOADS_IN_FLIGHT = 3;

export class StagingUploads {
  /** Mapped staging buffers ready to fill, and those copied from by recorded work not yet submitted. */
  private ready: GPUBuffer[] = [];
  private recorded: GPUBuffer[] = [];
  private remaps = new Set<Promise<void>>();
  private destroyed = false;

  constructor(private device: GPUDevice) {}

  /** Staging buffers copied from and not yet mapped again (recorded, submitted or being mapped). */
  get inFlight(): number {
    return this.remaps.size + this.recorded.length;
  }

  /** Resolves when the next buffer being mapped again is; false at once where none is (its copies are unsubmitted). */
  async next(): Promise<boolean> {
    if (!this.remaps.size) return false;
    await Promise.race(this.remaps);
    return true;
  }

  /** Resolves once every submitted staging buffer is mapped again (ready for reuse) or dropped. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.remaps]);
  }

  /**
   * Packs every piece into one staging buffer and records into `enc` a copy per run of pieces that lie end to end
   * in the same destination.
   */
  record(writes: HostWrite[], enc: () => GPUCommandEncoder) {
    const total = writes.reduce((a, w) => a + w.data.byteLength, 0);
    if (!total) return;
    const at = this.ready.findIndex((b) => b.size >= total && b.size <= 4 * total + 4096);
    const staging = at >= 0 ? this.ready.splice(at, 1)[0]
      : this.device.createBuffer({ label: 'upload staging', size: Math.ceil(total / 4) * 4, usage: GPUBufferUsage.MAP_WRITE | GPUBufferUsage.COPY_SRC, mappedAtCreation: true });
    const bytes = new Uint8Array(staging.getMappedRange(0, Math.ceil(total / 4) * 4));
    const copies: { dst: GPUBuffer; from: number; to: number; size: number }[] = [];
    let o = 0;
    for (const w of writes) {
      bytes.set(new Uint8Array(w.data.buffer, w.data.byteOffset, w.data.byteLength), o);
      const last = copies[copies.length - 1];
      if (last && last.dst === w.dst && last.to + last.size === w.offset && last.from + last.size === o) last.size += w.data.byteLength;
      else copies.push({ dst: w.dst, from: o, to: w.offset, size: w.data.byteLength });
      o += w.data.byteLength;
    }
    staging.unmap();
    const e = enc();
    for (const c of copies) e.copyBufferToBuffer(staging, c.from, c.dst, c.to, c.size);
    this.recorded.push(staging);
  }

  /** After a submission: the staging buffers its copies read are mapped again once the GPU is done with them. */
  submitted() {
    for (const b of this.recorded.splice(0)) {
      // The pool keeps the most recent: buffers of sizes no longer asked for (an earlier link's) make way.
      const remap = b.mapAsync(GPUMapMode.WRITE).then(
        () => {
          if (this.destroyed) return b.destroy();
          this.ready.push(b);
          if (this.ready.length > UPLOADS_IN_FLIGHT + 1) this.ready.shift()!.destroy();
        },
        () => b.destroy(),
      );
      this.remaps.add(remap);
      void remap.finally(() => this.remaps.delete(remap));
    }
  }

  destroy() {
    this.destroyed = true;
    for (const b of [...this.ready, ...this.recorded]) b.destroy();
    this.ready = [];
    this.recorded = [];
  }
}
