/**
 * The page's side of the worker: one typed `call` per entry of protocol.ts's
 * `Calls` map (its arguments, result and events fixed by the call's type),
 * cancellable by id. Errors come back as instances of their classes (errors.ts).
 * ContextCache's calls are wrapped as a ContextCacheApi by remote.ts.
 */
import type { CallType, Calls, GenerateRequest, LoadStage, ModelSource, Reply, Request } from './protocol';
import { rebuildError, WorkerError } from './errors';

export type LoadProgressFn = (stage: LoadStage, loaded: number, total: number, file?: string) => void;

export { WorkerError } from './errors';

/** A call in flight: its id (for `cancel`) and its result. */
export interface Job<T> {
  id: number;
  result: Promise<T>;
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  onEvent?: (e: unknown) => void;
}

export class EngineClient {
  private worker: Worker;
  private next = 1;
  private pending = new Map<number, Pending>();
  onDeviceLost: (message: string) => void = () => {};

  constructor() {
    this.worker = new Worker(new URL('./engine.worker.ts', import.meta.url), { type: 'module' });
    this.worker.onmessage = (ev: MessageEvent<Reply>) => {
      const e = ev.data;
      if (e.type === 'device-lost') return this.onDeviceLost(e.message);
      const p = this.pending.get(e.id);
      if (!p) return;
      if (e.type === 'done') {
        this.pending.delete(e.id);
        p.resolve(e.result);
      } else if (e.type === 'error') {
        this.pending.delete(e.id);
        p.reject(rebuildError(e.error));
      } else p.onEvent?.(e.event);
    };
    // A worker that fails to start or crashes must not leave calls waiting forever.
    this.worker.onerror = (ev) => {
      const err = new WorkerError('WorkerError', `The inference worker failed: ${ev.message || 'it could not start'}`);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
  }

  /** Sends one call; its events go to `onEvent` until the result (or error) arrives. */
  call<K extends CallType>(type: K, args: Calls[K]['args'], onEvent?: (e: Calls[K]['event']) => void): Job<Calls[K]['result']> {
    const id = this.next++;
    const result = new Promise<Calls[K]['result']>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, onEvent: onEvent as ((e: unknown) => void) | undefined });
      this.worker.postMessage({ id, type, args } as Request);
    });
    return { id, result };
  }

  cancel(target: number) {
    this.worker.postMessage({ id: 0, type: 'cancel', target } satisfies Request);
  }

  init() {
    return this.call('init', null).result;
  }

  /**
   * Loads a model from any source; File objects in a `files` source are cloned to the worker, not copied. The
   * weights' precision is the worker's choice by size unless given.
   */
  load(model: ModelSource, onProgress: LoadProgressFn, weightDtype?: 'f32' | 'f16') {
    return this.call('load', { model, weightDtype }, (e) => onProgress(e.stage, e.loaded, e.total, e.file));
  }

  /** Destroys the worker's GPU device, as a driver reset would; the next request recovers. */
  simulateDeviceLoss() {
    return this.call('simulate-device-loss', null).result;
  }

  /** Slow motion: the worker waits `ms` after every token it decodes for a studio answer (0: off). */
  setDecodeDelay(ms: number) {
    return this.call('set-decode-delay', { ms }).result;
  }

  /** Forces the kernel profile, decode's fused launches and the f16 slices (as on GPUs) on any adapter; null gives the choice back. */
  setKernels(profile: 'cpu' | 'gpu' | null, fuse: boolean | null = null, half: boolean | null = null) {
    return this.call('set-kernels', { profile, fuse, half }).result;
  }

  listCached() {
    return this.call('list-cached', null).result;
  }

  deleteCached(key: string) {
    return this.call('delete-cached', { key }).result;
  }

  generate(req: GenerateRequest, onText: (t: string) => void) {
    return this.call('generate', req, (e) => onText(e.text));
  }
}
