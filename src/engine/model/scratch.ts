/**
 * Activation buffers of a forward pass, sized for a number of rows and grown
 * by doubling, so repeated decode steps reuse the same buffers (and the
 * dispatcher's cached bind groups). Doubling stops at the adapter's limit
 * for a buffer bound whole, so a request that fits the limit gets a buffer
 * that does.
 */
import { bufferLimit } from './gpu-plan';

export class Scratch {
  private bufs = new Map<string, { buf: GPUBuffer; bytes: number }>();
  /** Bumped whenever a buffer is made or replaced: work recorded before binds what was there then (Dispatcher.replay). */
  version = 0;

  /** `beforeWrite` submits recorded work first, so pending dispatches see the old contents. */
  constructor(
    private device: GPUDevice,
    private beforeWrite: () => void = () => {},
  ) {}

  /** The largest buffer a kernel can bind whole: what a request gets at most, unless it asks for more. */
  get limit(): number {
    return bufferLimit(this.device.limits);
  }

  /** A buffer of at least `bytes` bytes under `name`, reallocated (contents lost) when too small. */
  get(name: string, bytes: number): GPUBuffer {
    const have = this.bufs.get(name);
    if (have && have.bytes >= bytes) return have.buf;
    let size = 256;
    while (size < bytes) size *= 2;
    const cap = this.limit;
    if (size > cap) size = Math.max(Math.ceil(bytes / 16) * 16, cap);
    if (have) {
      // Work recorded against the old buffer but not yet submitted would fail validation once it is destroyed.
      this.beforeWrite();
      have.buf.destroy();
    }
    const buf = this.device.createBuffer({ label: name, size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    this.bufs.set(name, { buf, bytes: size });
    this.version++;
    return buf;
  }

  /** Uploads typed data into the named buffer. */
  put(name: string, data: ArrayBufferView & { byteLength: number }): GPUBuffer {
    this.beforeWrite();
    const buf = this.get(name, Math.max(4, data.byteLength));
    if (data.byteLength) this.device.queue.writeBuffer(buf, 0, data.buffer, data.byteOffset, data.byteLength);
    return buf;
  }

  destroy() {
    for (const { buf } of this.bufs.values()) buf.destroy();
    this.bufs.clear();
    this.version++;
  }
}
