/**
 * The inference worker: owns the WebGPU device, the engine and the loaded
 * model, so the page never blocks. Requests and events are in protocol.ts.
 */
import { createGpuContext, type GpuContext } from '../engine/gpu/device';
import { Engine } from '../engine/engine';
import { OutOfGpuMemoryError } from '../engine/model/gpu-model';
import { kernelSources } from '../engine/kernel-sources';
import { isQuant } from '../engine/quant';
import type { LoadedModel } from '../engine/formats/load';
import '../engine/formats/all';
import { decodeTokens, TextStream } from '../generate/generate';
import { parseModel, resolveSource } from './sources';
import { hfConfigToModelConfig } from '../engine/formats/hf';
import { deleteCachedModel, listCachedModels, opfsRoot } from './opfs-cache';
import type { Event, GenerateRequest, InitResult, LoadResult, LoadStage, Request, GenerateResult, ModelSource } from './protocol';
import { setDecodeDelay } from './linked-answer';
import { STUDIO_TYPES, StudioWorker, type ModelSession } from './studio';
import type { StudioRequest } from './studio-protocol';

let gpu: GpuContext | null = null;
let engine: Engine | null = null;
let model: LoadedModel | null = null;
/** What the loaded model was loaded from, to load it again after a lost device. */
let modelRef: { ref: ModelSource; weightDtype: 'f32' | 'f16' } | null = null;
/** Names the loaded weights, their precision and tokenizer: part of every cache id. */
let modelKey = '';
const aborts = new Map<number, AbortController>();

const post = (e: Event) => (self as unknown as Worker).postMessage(e);

async function init(): Promise<InitResult> {
  if (!gpu) {
    gpu = await createGpuContext(navigator.gpu);
    engine = Engine.create(gpu, kernelSources);
    const ctx = gpu;
    void ctx.lost.then(async (message) => {
      if (gpu !== ctx) return;
      // Lost device: tell the page, then rebuild device, engine and model so work can go on without a reload.
      gpu = null;
      engine = null;
      post({ id: -1, type: 'device-lost', message });
    });
  }
  return { adapter: gpu.adapter };
}

async function load(id: number, ref: ModelSource, requested?: 'f32' | 'f16'): Promise<LoadResult> {
  await init();
  const ac = new AbortController();
  aborts.set(id, ac);
  const { signal } = ac;
  const progress = (stage: LoadStage, loaded: number, total: number, file?: string) =>
    post({ id, type: 'progress', stage, loaded, total, file });
  // A Hub model's config is checked before its weights are downloaded.
  const preflight = (raw: unknown, name: string) => {
    const plan = engine!.plan(hfConfigToModelConfig(raw, undefined, name), requested);
    if (plan.problems.length) throw wontFit(name, plan.problems);
  };
  const resolved = await resolveSource(ref, signal, progress, preflight);
  signal.throwIfAborted();
  progress('parse', 0, 0);
  const m = await parseModel(resolved);
  signal.throwIfAborted();
  progress('upload', 0, 0);
  let gm: Awaited<ReturnType<Engine['load']>>;
  try {
    gm = await engine!.load(m.config, m.weights, { weightDtype: requested });
  } catch (e) {
    // Refused from its plan, before the loaded model was dropped: that one is still loaded.
    if (e instanceof OutOfGpuMemoryError && e.problems.length) throw wontFit(resolved.name, e.problems);
    // The engine dropped the previous model before the upload: nothing is loaded now.
    model = null;
    modelRef = null;
    const err = new Error(`Uploading ${resolved.name} to the GPU failed: ${(e as Error).message}`);
    err.name = 'ModelUploadError';
    throw err;
  }
  const weightDtype = gm.dtype;
  model = m;
  // Packed quantized matrices compute (slightly) different keys and values than the same file dequantized to f16.
  modelKey = `${resolved.name}|${weightDtype}${Object.keys(gm.matrixBytes).some(isQuant) ? '|packed' : ''}`;
  // Files from disk stay readable; a Hub model comes back from the cache (or the network) after a lost device.
  modelRef = { ref: resolved.cacheKey && ref.kind === 'files' ? { kind: 'cached', key: resolved.cacheKey } : ref, weightDtype };
  const c = m.config;
  const plan = gm.plan;
  const format = (m.tokenizer as { chatFormat?: string | null }).chatFormat;
  const chatTemplate = !m.tokenizer.applyChatTemplate ? null : format === 'chatml' ? 'ChatML' : format === 'gemma' ? 'Gemma' : 'its own';
  return {
    id: resolved.name, source: resolved.source, arch: c.arch, params: plan.params, layers: c.nLayers, heads: c.nHeads, hidden: c.hidden,
    vocab: c.vocabSize, gpuBytes: gm.bytes, weightDtype, kvBytesPerToken: plan.kvBytesPerToken, hasChatTemplate: !!chatTemplate,
    chatTemplate, cacheKey: modelKey,
  };
}

/** A model refused before anything was uploaded, because a buffer breaks the adapter's limits; the loaded one stays. */
function wontFit(name: string, problems: readonly string[]): Error {
  const keep = model ? ` ${model.config.name} stays loaded.` : '';
  const err = new Error(`${name} will not fit on this adapter: ${problems.join(' ')}. Nothing was uploaded.${keep}`);
  err.name = 'ModelWontFitError';
  return err;
}

/** The engine and model, loaded again first when the device was lost. */
async function session(): Promise<ModelSession> {
  if (!engine && modelRef) await load(0, modelRef.ref, modelRef.weightDtype);
  if (!engine || !model) throw new Error('No model is loaded');
  return { engine, model, key: modelKey };
}

const studio = new StudioWorker(session);

async function generate(id: number, req: GenerateRequest): Promise<GenerateResult> {
  await session();
  if (!engine || !model) throw new Error('No model is loaded');
  const ac = new AbortController();
  aborts.set(id, ac);
  const tok = model.tokenizer;
  const text = req.chat && tok.applyChatTemplate ? tok.applyChatTemplate([{ role: 'user', content: req.prompt }], { addGenerationPrompt: true }) : req.prompt;
  const prompt = tok.encode(text, { addBos: true });
  const steps = Math.min(req.steps, model.config.maxPositions);
  if (prompt.length >= steps) throw new Error(`The prompt has ${prompt.length} tokens; steps (${steps}) must be larger`);
  const cache = engine.newCache(steps + 8);
  try {
    const t0 = performance.now();
    const { logits } = await engine.prefill(cache, prompt);
    const ttft = performance.now() - t0;
    const stream = new TextStream(tok, prompt);
    let n = 0;
    const t1 = performance.now();
    const gen = decodeTokens(engine, cache, logits, {
      maxNewTokens: steps - prompt.length + 1, sampling: { temperature: req.temperature, topP: req.topP },
      stopIds: model.config.eosIds, signal: ac.signal,
    });
    for await (const t of gen) {
      n++;
      const delta = stream.push(t);
      if (delta) post({ id, type: 'token', text: delta });
    }
    const dt = performance.now() - t1;
    return {
      text: stream.text, cancelled: ac.signal.aborted,
      stats: { promptTokens: prompt.length, generatedTokens: n, ttftMs: ttft, decodeTokensPerS: n > 1 ? (n / dt) * 1000 : 0 },
    };
  } finally {
    cache.destroy();
  }
}

self.onmessage = async (ev: MessageEvent<Request>) => {
  const r = ev.data;
  if (r.type === 'cancel') {
    aborts.get(r.target)?.abort();
    return;
  }
  try {
    let result: unknown;
    if (r.type === 'init') result = await init();
    else if (r.type === 'load') result = await load(r.id, r.model, r.weightDtype);
    else if (r.type === 'simulate-device-loss') result = gpu?.device.destroy();
    else if (r.type === 'set-decode-delay') result = setDecodeDelay(r.ms);
    else if (r.type === 'list-cached') result = await listCachedModels(await opfsRoot());
    else if (r.type === 'delete-cached') result = await deleteCachedModel(await opfsRoot(), r.key);
    else if (r.type === 'generate') result = await generate(r.id, r.req);
    else if (STUDIO_TYPES.has(r.type)) {
      const ac = new AbortController();
      aborts.set(r.id, ac);
      result = await studio.handle(r as StudioRequest, ac.signal, (ev) => post({ id: r.id, type: 'studio', ev }));
    }
    post({ id: r.id, type: 'done', result });
  } catch (e) {
    const err = e as Error;
    post({ id: r.id, type: 'error', name: err.name ?? 'Error', message: err.message ?? String(e) });
  } finally {
    aborts.delete(r.id);
  }
};
