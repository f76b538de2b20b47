/**
 * The inference worker: owns the WebGPU device, the engine, the loaded model
 * and the studio's ContextCache, so the page never blocks. Every call of
 * protocol.ts's `Calls` map has one handler here (`handlers`, checked by
 * type); errors go back serialised by name (errors.ts).
 */
import { createGpuContext, Engine, OutOfGpuMemoryError, bundledKernelSources, hfConfigToModelConfig, isQuant, describeAttentionWay, describeSettings, describeTiledWay, sameTiledWay, type GpuContext, type LoadedModel } from '../engine';
import { decodeTokens, TextStream } from '../generate/generate';
import { parseModel, resolveSource } from './sources';
import { deleteCachedModel, listCachedModels, opfsRoot } from './opfs-cache';
import type { CallType, Calls, DecodeTuningInfo, PrefillTuningInfo, UploadTuningInfo, GenerateRequest, GenerateResult, InitResult, LoadStage, ModelInfo, ModelSource, Reply, Request } from './protocol';
import { StudioWorker, type ModelSession } from './studio';
import { ModelUploadError, ModelWontFitError, serializeError } from './errors';

let gpu: GpuContext | null = null;
let engine: Engine | null = null;
let model: LoadedModel | null = null;
/** What the loaded model was loaded from, to load it again after a lost device. */
let modelRef: { ref: ModelSource; weightDtype: 'f32' | 'f16' } | null = null;
/** Names the loaded weights, their precision and tokenizer: part of every cache id. */
let modelKey = '';
const aborts = new Map<number, AbortController>();
/** Slow motion for the studio's answers (?debug): a pause after every decoded token. */
let decodeDelayMs = 0;

const post = (e: Reply) => (self as unknown as Worker).postMessage(e);

async function init(): Promise<InitResult> {
  if (!gpu) {
    gpu = await createGpuContext(navigator.gpu);
    engine = Engine.create(gpu, bundledKernelSources());
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

async function load(ref: ModelSource, requested: 'f32' | 'f16' | undefined, signal: AbortSignal, id = 0): Promise<ModelInfo> {
  await init();
  const progress = (stage: LoadStage, loaded: number, total: number, file?: string) =>
    id && post({ id, type: 'event', call: 'load', event: { stage, loaded, total, file } });
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
    throw new ModelUploadError(resolved.name, (e as Error).message);
  }
  const weightDtype = gm.dtype;
  model = m;
  // Packed quantized matrices compute (slightly) different keys and values than the same file dequantized to f16.
  // Keys and values kept as f16 are other bytes than f32 ones: chunks compiled either way are never mixed.
  modelKey = `${resolved.name}|${weightDtype}${Object.keys(gm.matrixBytes).some(isQuant) ? '|packed' : ''}${engine!.kvDtype === 'f16' ? '|kv-f16' : ''}`;
  // Files from disk stay readable; a Hub model comes back from the cache (or the network) after a lost device.
  modelRef = { ref: resolved.cacheKey && ref.kind === 'files' ? { kind: 'cached', key: resolved.cacheKey } : ref, weightDtype };
  const decodeTuning = await tuneDecode(engine!, () => progress('tune', 0, 0));
  const uploadTuning = await tuneUpload(engine!);
  const prefillTuning = await tunePrefill(engine!);
  const c = m.config;
  const plan = gm.plan;
  const format = (m.tokenizer as { chatFormat?: string | null }).chatFormat;
  const chatTemplate = !m.tokenizer.applyChatTemplate ? null : format === 'chatml' ? 'ChatML' : format === 'gemma' ? 'Gemma' : 'its own';
  return {
    id: resolved.name, source: resolved.source, arch: c.arch, params: plan.params, layers: c.nLayers, heads: c.nHeads, hidden: c.hidden,
    vocab: c.vocabSize, gpuBytes: gm.bytes, weightDtype, kvDtype: plan.kvDtype, kvBytesPerToken: plan.kvBytesPerToken, hasChatTemplate: !!chatTemplate,
    chatTemplate, cacheKey: modelKey, decodeTuning, uploadTuning, prefillTuning,
  };
}

/**
 * On a real GPU, times decode's kernel choices for the model just loaded and keeps the fastest (Engine.tuneDecode:
 * 26 greedy steps each way, up to four ways); null on CPU adapters. A failed timing keeps the defaults, which are
 * always correct, and says why; a lost device is also reported to the page by the device's own handler.
 */
async function tuneDecode(e: Engine, onStart: () => void): Promise<DecodeTuningInfo | null> {
  try {
    const t = await e.tuneDecode({ onStart });
    if (!t) return null;
    const chosenMs = t.trials.find((x) => x.settings === t.chosen)!.msPerStep;
    const long = t.long?.chosen;
    const longWay = long && t.long!.ways.find((w) => w.attention === long.attention && w.keysPerThread === long.keysPerThread)!;
    return {
      chosen: describeSettings(t.chosen), msPerStep: chosenMs, defaults: describeSettings(t.defaults), defaultMsPerStep: t.trials[0].msPerStep, ways: t.trials.length, ms: t.ms,
      long: long ? { attention: describeAttentionWay(long), from: long.from, span: t.long!.long, us: longWay!.usLong, shortUs: t.long!.ways[0].usLong } : null,
      ...(t.longError === undefined ? {} : { longError: t.longError }),
    };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/**
 * On a real GPU, times how host rows go up (writeBuffer or mapped staging; Engine.tuneUpload, 32 MiB a way, a
 * fraction of a second) and keeps the faster for links; null on CPU adapters. A failed timing keeps writeBuffer.
 */
async function tuneUpload(e: Engine): Promise<UploadTuningInfo | null> {
  try {
    const t = await e.tuneUpload();
    return t && { chosen: t.chosen === 'mapped' ? 'mapped staging' : 'writeBuffer', writeGBps: t.gbPerS.write, mappedGBps: t.gbPerS.mapped, ms: t.ms };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/**
 * On a real GPU, times prefill's attention with one, two and four lanes a row group at 16 and 8 keys a tile
 * (Engine.tunePrefill, a fraction of a second) and keeps the fastest; null elsewhere. A failed timing keeps the default.
 */
async function tunePrefill(e: Engine): Promise<PrefillTuningInfo | null> {
  try {
    const t = await e.tunePrefill();
    if (!t) return null;
    const kept = t.ways.find((w) => sameTiledWay(w, t.chosen))!;
    const refused = t.ways.filter((w) => w.error).map((w) => `${describeTiledWay(w)} (${w.error})`);
    return { chosen: describeTiledWay(t.chosen), us: kept.us, defaults: describeTiledWay(t.ways[0]), defaultUs: t.ways[0].us, ways: t.ways.length, rows: t.rows, keys: t.keys, ms: t.ms, refused };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** A model refused before anything was uploaded, because a buffer breaks the adapter's limits; the loaded one stays. */
function wontFit(name: string, problems: readonly string[]): Error {
  return new ModelWontFitError(name, problems, model ? model.config.name : null);
}

/** The engine and model, loaded again first when the device was lost. */
async function session(): Promise<ModelSession> {
  if (!engine && modelRef) await load(modelRef.ref, modelRef.weightDtype, new AbortController().signal);
  if (!engine || !model) throw new Error('No model is loaded');
  return { engine, model, key: modelKey };
}

const studio = new StudioWorker(session);

async function generate(req: GenerateRequest, signal: AbortSignal, onText: (text: string) => void): Promise<GenerateResult> {
  await session();
  if (!engine || !model) throw new Error('No model is loaded');
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
      stopIds: model.config.eosIds, signal,
    });
    for await (const t of gen) {
      n++;
      const delta = stream.push(t);
      if (delta) onText(delta);
    }
    const dt = performance.now() - t1;
    return {
      text: stream.text, cancelled: signal.aborted,
      stats: { promptTokens: prompt.length, generatedTokens: n, ttftMs: ttft, decodeTokensPerS: n > 1 ? (n / dt) * 1000 : 0 },
    };
  } finally {
    cache.destroy();
  }
}

/** What a handler gets besides its arguments: the call's abort signal and its event channel. */
interface CallContext<K extends CallType> {
  id: number;
  signal: AbortSignal;
  emit: (event: Calls[K]['event']) => void;
}

type Handlers = { [K in CallType]: (args: Calls[K]['args'], c: CallContext<K>) => Promise<Calls[K]['result']> };

const handlers: Handlers = {
  init: () => init(),
  load: (a, c) => load(a.model, a.weightDtype, c.signal, c.id),
  'simulate-device-loss': async () => {
    gpu?.device.destroy();
    return null;
  },
  'set-decode-delay': async ({ ms }) => {
    decodeDelayMs = Math.max(0, Math.min(10_000, ms));
    return null;
  },
  'set-kernels': async ({ profile, fuse, half }) => {
    await init();
    const e = engine!;
    if (half && !e.ops.shaderF16) throw new Error(`f16 slices need the shader-f16 feature, which this adapter (${gpu!.adapter.description}) does not offer`);
    e.ops.matmulProfile = profile ?? gpu!.profile;
    e.submitEachLayer = e.ops.matmulProfile === 'gpu';
    e.ops.fuse = fuse ?? undefined;
    e.ops.half = half ?? undefined;
    return { profile: e.ops.matmulProfile, fused: e.ops.fuses(1), gemv: e.ops.pickGemv(), subgroupMin: e.ops.subgroupMin, half: e.ops.halfByDefault(), decodeAhead: e.decodeAhead };
  },
  'list-cached': async () => listCachedModels(await opfsRoot()),
  'delete-cached': async ({ key }) => deleteCachedModel(await opfsRoot(), key),
  generate: (req, c) => generate(req, c.signal, (text) => c.emit({ text })),
  'compile-context': async ({ chunks, opts }, c) => (await studio.cc()).compileContext(chunks, { ...opts, signal: c.signal, onProgress: c.emit }),
  'chat-completion': async (req, c) => {
    const delay = req.decodeDelayMs ?? decodeDelayMs;
    for await (const ev of (await studio.cc()).chatCompletion({ ...req, decodeDelayMs: delay, signal: c.signal })) c.emit(ev);
    return null;
  },
  'expire-cache': async ({ id }) => (await studio.cc()).expireCache(id),
  tokenize: async ({ text }) => (await studio.cc()).tokenize(text),
  'token-pieces': async ({ tokens }) => (await studio.cc()).tokenPieces(tokens),
  split: (a) => studio.split(a.docId, a.text, a.mode),
  library: () => studio.library(),
  'clear-library': () => studio.clearLibrary(),
  'gpu-budget': ({ bytes }) => studio.setGpuBudget(bytes),
  'sink-map': (req, c) => studio.sinkMap(req, c.signal),
  sweep: (req, c) => studio.sweep(req, c.signal, c.emit),
};

/** Runs one call with its handler; the result, events and any error go back tagged with the call's id. */
async function serve<K extends CallType>(id: number, type: K, args: Calls[K]['args'], signal: AbortSignal) {
  const handler = handlers[type] as Handlers[K];
  const emit = (event: Calls[K]['event']) => post({ id, type: 'event', call: type, event } as Reply);
  const result = await handler(args, { id, signal, emit });
  post({ id, type: 'done', call: type, result } as Reply);
}

self.onmessage = async (ev: MessageEvent<Request>) => {
  const r = ev.data;
  if (r.type === 'cancel') {
    aborts.get(r.target)?.abort();
    return;
  }
  const ac = new AbortController();
  aborts.set(r.id, ac);
  try {
    await serve(r.id, r.type, r.args, ac.signal);
  } catch (e) {
    post({ id: r.id, type: 'error', error: serializeError(e) });
  } finally {
    aborts.delete(r.id);
  }
};
