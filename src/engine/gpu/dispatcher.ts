/**
 * Records compute dispatches into one command encoder and submits them
 * together. Uniform parameters of every dispatch go into one arena (one
 * 256-byte slot each) that is uploaded once per flush; since a decode step
 * repeats the same dispatches on the same buffers, bind groups are cached by
 * (pipeline, slot, buffers) and reused from step to step: first by what each
 * slot had last time (compared object by object, as a repeated step finds
 * it), then by a key built from them. A run of launches can be recorded into
 * a tape and issued again with some parameters changed (replay: tape.ts).
 */
import { GpuTimer } from './timer';
import type { Tape, TapeSegment } from './tape';
import { StagingUploads, UPLOADS_IN_FLIGHT, type HostWrite } from './staging';
import { flatBindings, slotMatches, type Binding } from './bindings';
import { DeviceLostError, GpuValidationError } from './errors';

export type { Binding } from './bindings';
export type { HostWrite } from './staging';
export type { Tape } from './tape';
export { DeviceLostError, GpuValidationError } from './errors';

/**
 * A uniform parameter. `tag`, on an integer, names the entry of a step's values that it holds, so a tape of
 * launches can be issued again for a later step with that entry patched (Tape, replay).
 */
export type Param = { u32: number; tag?: number } | { i32: number; tag?: number } | { f32: number };

const SLOT = 256;

const MAX_WG = 65535;

/** Bytes a staging buffer of Dispatcher.readMany takes at most (a range larger than this gets one of its own). */
const READ_BATCH = 64 * 2 ** 20;


export class Dispatcher {
  private arena = new ArrayBuffer(SLOT * 256);
  private view = new DataView(this.arena);
  private uniform: GPUBuffer;
  private slot = 0;
  private encoder: GPUCommandEncoder | null = null;
  private pass: GPUComputePassEncoder | null = null;
  private bindCache = new Map<string, GPUBindGroup>();
  /** Per slot, the last bind group made or found for it, its pipeline, and its bindings flattened (slotMatches). */
  private bySlot: ({ pipeline: GPUComputePipeline; parts: unknown[]; bg: GPUBindGroup } | undefined)[] = [];
  private ids = new WeakMap<object, number>();
  private nextId = 1;
  /** Dispatches recorded since creation (for tests and profiling). */
  count = 0;
  /** Of those, the ones issued again from a tape (replay). */
  replayed = 0;
  /**
   * Host milliseconds spent in flush's finish and submit since creation (profiling): where the WebGPU
   * implementation turns the recorded commands into the driver's (Dawn does so at submit), apart from recording.
   */
  submitMs = 0;
  /** Submissions since creation (profiling, and tests of how often work is submitted). */
  submits = 0;

  constructor(private device: GPUDevice) {
    this.uniform = this.makeUniform(this.arena.byteLength);
    this.uploads = new StagingUploads(device);
    device.addEventListener('uncapturederror', this.onError);
  }

  /** The first error WebGPU reported since the last check (out-of-memory is caught in scopes where it is expected). */
  private rejected: string | null = null;
  private onError = (e: Event) => {
    this.rejected ??= (e as GPUUncapturedErrorEvent).error.message;
  };

  /** Throws GpuValidationError when WebGPU reported an error since the last check; results read now would be wrong. */
  check() {
    const m = this.rejected;
    if (m === null) return;
    this.rejected = null;
    throw new GpuValidationError(m);
  }

  private makeUniform(size: number) {
    return this.device.createBuffer({ size, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST, label: 'params' });
  }

  private id(o: object): number {
    let i = this.ids.get(o);
    if (i === undefined) this.ids.set(o, (i = this.nextId++));
    return i;
  }

  /** Runs `pipeline` over `invocations` threads of 64 (1-D, folded into 2-D past 65535 groups). */
  run1d(pipeline: GPUComputePipeline, params: Param[], bindings: Record<number, Binding>, invocations: number) {
    const groups = Math.max(1, Math.ceil(invocations / 64));
    const x = Math.min(groups, MAX_WG);
    this.run(pipeline, params, bindings, [x, Math.ceil(groups / x), 1]);
  }

  run(pipeline: GPUComputePipeline, params: Param[], bindings: Record<number, Binding>, groups: [number, number, number]) {
    if (groups[0] > MAX_WG || groups[1] > MAX_WG) throw new Error(`dispatch too large: ${groups}`);
    if (params.length > SLOT / 4) throw new Error('too many params');
    if ((this.slot + 1) * SLOT > this.arena.byteLength) this.growArena();
    const base = this.slot * SLOT;
    const seg = this.taping;
    for (let i = 0; i < params.length; i++) {
      const p = params[i];
      if ('f32' in p) this.view.setFloat32(base + 4 * i, p.f32, true);
      else {
        if ('u32' in p) this.view.setUint32(base + 4 * i, p.u32, true);
        else this.view.setInt32(base + 4 * i, p.i32, true);
        if (p.tag !== undefined && seg) seg.tags.push((this.slot - seg.slot0) * (SLOT / 4) + i, p.tag);
      }
    }
    // What this slot had last time first: a decode step repeats its dispatches slot for slot. Then the cache key,
    // and the entries only on a miss.
    const last = this.bySlot[this.slot];
    let bg = last && last.pipeline === pipeline && slotMatches(last.parts, bindings) ? last.bg : undefined;
    if (!bg) {
      const parts = flatBindings(bindings);
      let key = `${this.id(pipeline)}:${this.slot}`;
      for (let i = 0; i < parts.length; i += 4) key += `|${parts[i]}=${this.id(parts[i + 1] as GPUBuffer)}@${parts[i + 2]}+${parts[i + 3]}`;
      bg = this.bindCache.get(key);
      if (!bg) {
        const entries: GPUBindGroupEntry[] = [{ binding: 0, resource: { buffer: this.uniform, offset: base, size: SLOT } }];
        for (const k in bindings) {
          const b = bindings[k];
          entries.push({ binding: Number(k), resource: 'mapAsync' in b ? { buffer: b } : b });
        }
        if (this.bindCache.size > 8192) this.bindCache.clear();
        bg = this.device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
        this.bindCache.set(key, bg);
      }
      this.bySlot[this.slot] = { pipeline, parts, bg };
    }
    seg?.launches.push({ pipeline, bg, groups, params: params.length });
    this.slot++;
    this.count++;
    // Profiling gives each dispatch a pass of its own, timed and labelled with its pipeline and workgroup count.
    if (this.profiling && this.pass) this.commandEncoder();
    const pass = this.beginPass(this.profiling ? `${pipeline.label}#${groups[0] * groups[1] * groups[2]}` : undefined);
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, bg);
    dispatch(pass, groups);
    this.onLaunch?.(pipeline, bg, groups, params.length);
  }

  /** Called after every launch, recorded or replayed, with its slot's words in the arena (tests compare the two). */
  onLaunch?: (pipeline: GPUComputePipeline, bg: GPUBindGroup, groups: readonly number[], words: number) => void;

  /** The slot's words as written, for onLaunch (the slot just launched). */
  lastWords(words: number): Uint32Array {
    return new Uint32Array(this.arena, (this.slot - 1) * SLOT, words);
  }

  /** The tape being recorded (startTape), if any: the segments closed so far, and the one being recorded. */
  private tape: TapeSegment[] | null = null;
  private taping: TapeSegment | null = null;
  private tapeEpoch = 0;
  /** Bumped whenever the uniform arena is replaced: bind groups made before then bind the old one. */
  private epoch = 0;

  /** The uniform slot the next launch takes (a replay starts where its tape did). */
  get slotInUse(): number {
    return this.slot;
  }

  /** Starts recording the launches (and submissions) that follow into a tape, until endTape. */
  startTape() {
    this.tape = [];
    this.taping = { slot0: this.slot, words: new Uint32Array(), tags: [], launches: [], flush: false };
    this.tapeEpoch = this.epoch;
  }

  /** Closes the segment being recorded, its slots' words as they stand (before a submission resets the slots). */
  private closeSegment(flush: boolean) {
    const seg = this.taping!;
    seg.words = new Uint32Array(this.arena.slice(seg.slot0 * SLOT, this.slot * SLOT));
    seg.flush = flush;
    this.tape!.push(seg);
    this.taping = flush ? { slot0: 0, words: new Uint32Array(), tags: [], launches: [], flush: false } : null;
  }

  /**
   * The launches recorded since startTape, or null where they cannot be issued again as they are: the arena was
   * replaced meanwhile (their bind groups hold the old one), or each launch was timed in a pass of its own.
   */
  endTape(): Tape | null {
    if (!this.tape) return null;
    this.closeSegment(false);
    const segments = this.tape;
    this.tape = null;
    return this.tapeEpoch === this.epoch && !this.profiling ? { segments, epoch: this.epoch } : null;
  }

  /**
   * Issues a tape's launches again, in the same slots, with each tagged parameter set to `values[tag]`, and
   * submits where the recording submitted. The caller's promise: the same buffers are bound now as then, and only
   * the tagged values differ (ForwardPass.stepKey says when). False, and nothing issued, where the tape cannot go:
   * another slot to start from, the arena replaced, or launches being timed one by one.
   */
  replay(t: Tape, values: ArrayLike<number>): boolean {
    if (this.tape || t.epoch !== this.epoch || t.segments[0].slot0 !== this.slot || this.profiling) return false;
    const words = new Uint32Array(this.arena);
    for (const seg of t.segments) {
      const at = (this.slot * SLOT) / 4;
      words.set(seg.words, at);
      for (let i = 0; i < seg.tags.length; i += 2) words[at + seg.tags[i]] = values[seg.tags[i + 1]];
      for (const l of seg.launches) {
        this.slot++;
        this.count++;
        this.replayed++;
        const pass = this.beginPass();
        pass.setPipeline(l.pipeline);
        pass.setBindGroup(0, l.bg);
        dispatch(pass, l.groups);
        this.onLaunch?.(l.pipeline, l.bg, l.groups, l.params);
      }
      if (seg.flush) this.flush();
    }
    return true;
  }

  private profiling = false;

  private growArena() {
    // Pending dispatches reference the old uniform buffer: submit them first.
    this.flush();
    const bigger = new ArrayBuffer(this.arena.byteLength * 2);
    this.arena = bigger;
    this.view = new DataView(bigger);
    this.uniform.destroy();
    this.uniform = this.makeUniform(bigger.byteLength);
    this.bindCache.clear();
    this.bySlot = [];
    this.epoch++;
  }

  private beginPass(label?: string): GPUComputePassEncoder {
    if (!this.encoder) this.encoder = this.device.createCommandEncoder();
    if (!this.pass) this.pass = this.encoder.beginComputePass({ timestampWrites: this.timer?.passWrites(label) });
    return this.pass;
  }

  /** Present when the device has timestamp queries. */
  private timer: GpuTimer | null = null;

  /**
   * Starts summing the GPU time of compute passes; false when the adapter
   * cannot. With `perDispatch`, every dispatch gets its own pass, so
   * `gpuTimeByKernel` can say where the time went (the separate passes cost
   * some time of their own, so use the plain total for throughput).
   */
  startGpuTimer(perDispatch = false): boolean {
    if (!this.device.features.has('timestamp-query')) return false;
    this.flush();
    this.timer ??= new GpuTimer(this.device);
    this.timer.start();
    this.profiling = perDispatch || this.profileEveryTimer;
    return true;
  }

  /**
   * Makes every timer per-dispatch, also those that work timing itself starts (a link times its passes): a
   * profiler sets it around that work and reads gpuTimeByKernel after.
   */
  profileEveryTimer = false;

  /** GPU milliseconds of the passes since startGpuTimer, or null without timestamp queries. */
  async stopGpuTimer(): Promise<number | null> {
    if (!this.timer?.running) return null;
    this.flush();
    this.profiling = false;
    return this.timer.stop(this.commandEncoder(), (b, o, n) => this.read(b, o, n));
  }

  /**
   * GPU ms and dispatch count per launch kind from the last per-dispatch timing (see startGpuTimer), keyed
   * `pipeline label#workgroups` (the label: the kernel's name, then its defines as |NAME=value).
   */
  gpuTimeByKernel(): Map<string, { ms: number; passes: number }> {
    return this.timer?.byLabel ?? new Map();
  }

  /** The current encoder with no compute pass open, for copies between dispatches. */
  commandEncoder(): GPUCommandEncoder {
    if (this.pass) {
      this.pass.end();
      this.pass = null;
    }
    if (!this.encoder) this.encoder = this.device.createCommandEncoder();
    return this.encoder;
  }

  /** Uploads parameters and submits everything recorded so far. */
  flush() {
    if (!this.encoder) return;
    if (this.taping) this.closeSegment(true);
    if (this.pass) this.pass.end();
    const t = performance.now();
    this.device.queue.writeBuffer(this.uniform, 0, this.arena, 0, Math.max(this.slot, 1) * SLOT);
    this.device.queue.submit([this.encoder.finish()]);
    this.submitMs += performance.now() - t;
    this.submits++;
    this.encoder = null;
    this.pass = null;
    this.slot = 0;
    this.uploads.submitted();
  }

  /**
   * How `upload` moves host bytes to the GPU: `queue.writeBuffer` ('write'), or staging buffers the host fills
   * while they are mapped, copied on the GPU ('mapped'). On CPU adapters writeBuffer is the faster (this project's
   * host: 26-29 GB/s against 7); on the H100's Vulkan driver it ran at 0.7-0.9 GB/s against 5-10 mapped
   * (gpu-h100-7..10.json). Engine.tuneUpload times both on a real GPU and sets this.
   */
  uploadWay: 'write' | 'mapped' = 'write';
  /** The mapped staging buffers of 'mapped' uploads. */
  private uploads: StagingUploads;

  /**
   * Resolves once an upload can go without making a staging buffer: at most UPLOADS_IN_FLIGHT of them submitted and
   * not yet mapped again. A mapped staging buffer comes back only while the host awaits, so a loop that uploads and
   * submits without yielding (a link's layers) made a new one for every upload, and host memory pinned anew each
   * time ran the H100's uploads at the speed of writeBuffer (1.3 s for a 32K link: gpu-h100-11.json). Immediate
   * with writeBuffer uploads.
   */
  async uploadRoom(): Promise<void> {
    while (this.uploadWay === 'mapped' && this.uploads.inFlight >= UPLOADS_IN_FLIGHT) {
      if (!(await this.uploads.next())) this.flush();
    }
  }

  /** Resolves once every submitted staging buffer is mapped again (ready for reuse) or dropped. */
  uploadsSettled(): Promise<void> {
    return this.uploads.settled();
  }

  /**
   * Writes host bytes into GPU buffers, in order with the work recorded around the call (later dispatches see
   * them). 'mapped' packs every piece into one staging buffer and records a copy per run of pieces that lie end to
   * end in the same destination (StagingUploads). Offsets and sizes must be multiples of 4.
   */
  upload(writes: HostWrite[]) {
    if (this.uploadWay === 'mapped') return this.uploads.record(writes, () => this.commandEncoder());
    // Recorded work reads these buffers as they were: submit it first (queue writes land before later submits).
    this.flush();
    for (const w of writes) this.device.queue.writeBuffer(w.dst, w.offset, w.data.buffer, w.data.byteOffset, w.data.byteLength);
  }

  /** Idle staging buffers, reused so a decode step does not allocate one per read. */
  private staging: GPUBuffer[] = [];

  /** Copies `size` bytes of `src` back to the host after flushing pending work. */
  async read(src: GPUBuffer, offset: number, size: number): Promise<ArrayBuffer> {
    return (await this.readMany([{ src, offset, size }]))[0];
  }

  /**
   * Copies several ranges back to the host in one submission, waiting for the GPU once (a read is a round trip:
   * about a millisecond here and on the H100's host, so a compile's 2 reads a layer cost it more than its prefill).
   * Ranges go into staging buffers of at most READ_BATCH bytes (one alone where larger), mapped together.
   */
  async readMany(ranges: { src: GPUBuffer; offset: number; size: number }[]): Promise<ArrayBuffer[]> {
    const groups: { size: number; at: number[]; first: number; staging?: GPUBuffer }[] = [];
    ranges.forEach((r, i) => {
      let g = groups[groups.length - 1];
      if (!g || (g.size && g.size + r.size > READ_BATCH)) groups.push((g = { size: 0, at: [], first: i }));
      g.at.push(g.size);
      g.size += Math.ceil(r.size / 4) * 4;
    });
    const enc = this.commandEncoder();
    for (const g of groups) {
      const at = this.staging.findIndex((b) => b.size >= g.size && b.size <= 4 * g.size + 4096);
      g.staging = at >= 0 ? this.staging.splice(at, 1)[0] : this.device.createBuffer({ size: g.size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      g.at.forEach((o, j) => enc.copyBufferToBuffer(ranges[g.first + j].src, ranges[g.first + j].offset, g.staging!, o, ranges[g.first + j].size));
    }
    this.flush();
    const maps = await Promise.allSettled(groups.map((g) => g.staging!.mapAsync(GPUMapMode.READ, 0, g.size)));
    const lost = maps.find((m) => m.status === 'rejected');
    if (lost) {
      for (const g of groups) g.staging!.destroy();
      throw new DeviceLostError(`The GPU device was lost while reading results back (${((lost as PromiseRejectedResult).reason as Error)?.message}).`);
    }
    const out: ArrayBuffer[] = [];
    for (const g of groups) {
      const mapped = g.staging!.getMappedRange(0, g.size);
      g.at.forEach((o, j) => out.push(mapped.slice(o, o + ranges[g.first + j].size)));
      g.staging!.unmap();
      if (this.staging.length < 8) this.staging.push(g.staging!);
      else g.staging!.destroy();
    }
    this.check();
    return out;
  }

  destroy() {
    this.device.removeEventListener('uncapturederror', this.onError);
    this.timer?.destroy();
    for (const b of this.staging) b.destroy();
    this.staging = [];
    this.uploads.destroy();
    this.uniform.destroy();
    this.bindCache.clear();
    this.bySlot = [];
  }
}

/** dispatchWorkgroups with the trailing 1s left out: each argument costs a conversion in Dawn's Node binding. */
function dispatch(pass: GPUComputePassEncoder, g: readonly number[]) {
  if (g[2] !== 1) pass.dispatchWorkgroups(g[0], g[1], g[2]);
  else if (g[1] !== 1) pass.dispatchWorkgroups(g[0], g[1]);
  else pass.dispatchWorkgroups(g[0]);
}
