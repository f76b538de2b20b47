/**
 * What the page asks of the worker: start, load a model from any source,
 * manage the cache, generate. Keeps the components free of worker plumbing;
 * every result lands in the zustand store.
 */
import { EngineClient } from '../worker/client';
import { ModelUploadError } from '../worker/errors';
import { RemoteContextCache } from '../worker/remote';
import type { GenerateRequest, ModelSource } from '../worker/protocol';
import { NoWebGPUError } from '../worker/errors';
import { useApp, type BundledModel } from './store';

let client: EngineClient | null = null;
let remote: RemoteContextCache | null = null;
let loadJob: number | null = null;
let genJob: number | null = null;

const state = () => useApp.getState();

/** The worker client, once started (the studio's actions use it too). */
export const engineClient = (): EngineClient | null => client;

/** The worker's ContextCache, as the page reaches it (the studio's asks and compiles go through it). */
export const contextCache = (): RemoteContextCache | null => remote;

/** The Hub address: `?hub=http://127.0.0.1:PORT` in the page URL overrides https://huggingface.co (tests, mirrors). */
export function hubEndpoint(): string | undefined {
  const v = new URLSearchParams(location.search).get('hub');
  if (!v) return undefined;
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.href.replace(/\/+$/, '') : undefined;
  } catch {
    return undefined;
  }
}

/** Starts the worker and WebGPU, reads the bundled models and the cache, and loads the first bundled model. */
export async function startEngine(): Promise<void> {
  if (client) return;
  if (!('gpu' in navigator)) {
    state().set({ fatal: { title: 'WebGPU is not available', message: 'This browser does not expose navigator.gpu.' } });
    return;
  }
  client = new EngineClient();
  remote = new RemoteContextCache(client);
  // ?debug exposes a device-loss switch, a slow-motion decode and the kernels a GPU runs, so recovery, Stop and the
  // GPU profile's kernels can be shown and tested on any adapter.
  if (new URLSearchParams(location.search).has('debug')) {
    const c = client;
    (globalThis as unknown as { legokv: object }).legokv = {
      simulateDeviceLoss: () => c.simulateDeviceLoss(), setDecodeDelay: (ms: number) => c.setDecodeDelay(ms),
      setKernels: (profile: 'cpu' | 'gpu' | null, fuse: boolean | null = null, half: boolean | null = null) => c.setKernels(profile, fuse, half),
    };
  }
  client.onDeviceLost = (message) => {
    state().set({ notice: `The GPU device was lost (${message}). It is re-created on the next request.` });
  };
  try {
    const { adapter } = await client.init();
    state().set({ adapter });
    const index = (await (await fetch('models/index.json')).json()) as { models: BundledModel[] };
    state().set({ bundled: index.models });
    void refreshCached();
    // The first bundled model is the default; ?model=<id> picks another (a bookmarkable choice, and how tests pin one).
    const wanted = new URLSearchParams(location.search).get('model');
    const first = index.models.find((m) => m.id === wanted) ?? index.models[0];
    if (wanted && first?.id !== wanted) state().set({ loadError: `No bundled model is called ${wanted}; loading ${first?.id ?? 'nothing'} instead.` });
    if (first) await loadBundled(first);
  } catch (e) {
    const err = e as Error;
    state().set({ fatal: { title: err instanceof NoWebGPUError ? 'WebGPU is not available' : 'Could not start', message: err.message } });
  }
}

export function loadBundled(m: BundledModel): Promise<void> {
  const base = new URL(m.base, document.baseURI).href;
  return loadModel({ kind: 'url', id: m.id, base, files: m.files }, m.id);
}

/** Loads a model; on failure the previous model stays (unless its GPU copy was already dropped). */
export async function loadModel(source: ModelSource, label: string): Promise<void> {
  if (!client || state().progress || state().running) return;
  const previous = state().model;
  state().set({ model: null, loadError: null, progress: { stage: 'start', loaded: 0, total: 0, startedAt: performance.now() } });
  const job = client.load(source, (stage, loaded, total, file) => {
    const p = state().progress;
    const startedAt = p && p.stage === stage ? p.startedAt : performance.now();
    state().set({ progress: { stage, loaded, total, file, startedAt } });
  });
  loadJob = job.id;
  try {
    state().set({ model: await job.result });
  } catch (e) {
    const err = e as Error;
    const cancelled = err.name === 'AbortError';
    state().set({
      model: err instanceof ModelUploadError ? null : previous,
      loadError: cancelled ? `Loading ${label} was cancelled.` : `Could not load ${label}: ${err.message}`,
    });
  } finally {
    loadJob = null;
    state().set({ progress: null });
    if (source.kind !== 'url' && !(source.kind === 'files' && !source.cache)) void refreshCached();
  }
}

export function cancelLoad(): void {
  if (client && loadJob !== null) client.cancel(loadJob);
}

export async function refreshCached(): Promise<void> {
  if (!client) return;
  try {
    state().set({ cached: await client.listCached() });
  } catch (e) {
    state().set({ loadError: `Could not read the browser's model cache: ${(e as Error).message}` });
  }
}

export async function deleteCached(key: string, label: string): Promise<void> {
  if (!client) return;
  try {
    await client.deleteCached(key);
  } catch (e) {
    state().set({ loadError: `Could not delete ${label}: ${(e as Error).message}` });
  }
  await refreshCached();
}

export async function generate(req: GenerateRequest): Promise<void> {
  if (!client) return;
  state().set({ output: '', running: true, stats: null, notice: null });
  const job = client.generate(req, (t) => state().set({ output: state().output + t }));
  genJob = job.id;
  try {
    state().set({ stats: (await job.result).stats });
  } catch (e) {
    state().set({ notice: (e as Error).message });
  } finally {
    genJob = null;
    state().set({ running: false });
  }
}

export function stopGenerate(): void {
  if (client && genJob !== null) client.cancel(genJob);
}
