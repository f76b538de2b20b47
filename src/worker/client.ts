/** The page's side of the worker: promise-returning calls with streamed events. */
import type {
  Event, GenerateRequest, GenerateResult, InitResult, ListCachedResult, LoadResult, LoadStage, ModelSource, Request,
} from './protocol';
import type { StudioEvent, StudioRequest } from './studio-protocol';

export type LoadProgressFn = (stage: LoadStage, loaded: number, total: number, file?: string) => void;

type Pending = { resolve: (v: unknown) => void; reject: (e: Error) => void; onEvent?: (e: Event) => void };

export class WorkerError extends Error {
  constructor(name: string, message: string) {
    super(message);
    this.name = name;
  }
}

export class EngineClient {
  private worker: Worker;
  private next = 1;
  private pending = new Map<number, Pending>();
  onDeviceLost: (message: string) => void = () => {};

  constructor() {
    this.worker = new Worker(new URL('./engine.worker.ts', import.meta.url), { type: 'module' });
    this.worker.onmessage = (ev: MessageEvent<Event>) => {
      const e = ev.data;
      if (e.type === 'device-lost') return this.onDeviceLost(e.message);
      const p = this.pending.get(e.id);
      if (!p) return;
      if (e.type === 'done') {
        this.pending.delete(e.id);
        p.resolve(e.result);
      } else if (e.type === 'error') {
        this.pending.delete(e.id);
        p.reject(new WorkerError(e.name, e.message));
      } else p.onEvent?.(e);
    };
    // A worker that fails to start or crashes must not leave calls waiting forever.
    this.worker.onerror = (ev) => {
      const err = new WorkerError('WorkerError', `The inference worker failed: ${ev.message || 'it could not start'}`);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
  }

  private call<T>(req: Omit<Request, 'id'> & { type: Request['type'] }, onEvent?: (e: Event) => void): { id: number; result: Promise<T> } {
    const id = this.next++;
    const result = new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, onEvent });
      this.worker.postMessage({ ...req, id } as Request);
    });
    return { id, result };
  }

  init() {
    return this.call<InitResult>({ type: 'init' }).result;
  }

  /**
   * Loads a model from any source; File objects in a `files` source are cloned to the worker, not copied. The
   * weights' precision is the worker's choice by size unless given.
   */
  load(model: ModelSource, onProgress: LoadProgressFn, weightDtype?: 'f32' | 'f16') {
    return this.call<LoadResult>({ type: 'load', model, weightDtype } as Omit<Request, 'id'>, (e) => {
      if (e.type === 'progress') onProgress(e.stage, e.loaded, e.total, e.file);
    });
  }

  /** Destroys the worker's GPU device, as a driver reset would; the next request recovers. */
  simulateDeviceLoss() {
    return this.call<void>({ type: 'simulate-device-loss' }).result;
  }

  /** Slow motion: the worker waits `ms` after every token it decodes for a studio answer (0: off). */
  setDecodeDelay(ms: number) {
    return this.call<void>({ type: 'set-decode-delay', ms } as Omit<Request, 'id'>).result;
  }

  listCached() {
    return this.call<ListCachedResult>({ type: 'list-cached' }).result;
  }

  deleteCached(key: string) {
    return this.call<boolean>({ type: 'delete-cached', key } as Omit<Request, 'id'>).result;
  }

  generate(req: GenerateRequest, onText: (t: string) => void) {
    return this.call<GenerateResult>({ type: 'generate', req } as Omit<Request, 'id'>, (e) => {
      if (e.type === 'token') onText(e.text);
    });
  }

  /** A studio request (split, compile, library, ask, sweep); its events stream to `onEvent`. Cancel with its id. */
  studio<T>(req: StudioRequest, onEvent?: (e: StudioEvent) => void): { id: number; result: Promise<T> } {
    return this.call<T>(req as Omit<Request, 'id'>, (e) => {
      if (e.type === 'studio') onEvent?.(e.ev);
    });
  }

  cancel(target: number) {
    this.worker.postMessage({ id: 0, type: 'cancel', target } as Request);
  }
}
