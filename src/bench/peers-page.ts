/**
 * The page `npm run bench:peers` drives (served by Vite as
 * /src/bench/peers-page.html, no studio UI): LegoKV's engine on this page's
 * WebGPU device, and wllama (llama.cpp in WebAssembly, with ggml-webgpu) in
 * its own worker, on the same GGUF file and the same prompt token ids, one
 * after the other, exposed on `window.legokvPeers` for src/bench/peers.ts.
 */
import { Wllama, type RawCompletionResponse } from '@wllama/wllama';
import { createGpuContext, describeAdapter, Engine, bundledKernelSources, loadModelFiles } from '../engine';
import { argmax } from '../generate/sampling';
import { fetchModelFiles } from '../worker/fetch-files';

/** What one engine measured on one model; `error` instead of figures when it failed. */
export interface PeerFigures {
  adapter: string;
  load_ms: number;
  prompt_tokens: number;
  prefill_ms: number;
  prefill_tokens_per_s: number;
  /** Tokens produced one decode step each (the first comes from the prefill's logits). */
  decode_steps: number;
  decode_ms: number;
  decode_tokens_per_s: number;
  /** The greedy continuation as text. */
  text: string;
  weight_dtype?: string;
  /** LegoKV: each generated token's text, and the gap between its logit and the runner-up's (where other arithmetic may pick the runner-up). */
  pieces?: string[];
  top2_gaps?: number[];
  /** llama.cpp's own timings, as wllama reported them (wllama only). */
  timings?: RawCompletionResponse['timings'];
  log?: string[];
}

/** wllama's figures, or, where its WebGPU backend got no device, why (`skipped`, with no figures). */
export type WllamaFigures = (PeerFigures & { skipped?: undefined }) | (Pick<PeerFigures, 'adapter' | 'load_ms' | 'log'> & { skipped: string });

export interface LegoOptions {
  url: string;
  name: string;
  text: string;
  promptTokens: number;
  decodeTokens: number;
  featureLevel?: 'compatibility';
}

export interface WllamaOptions {
  url: string;
  /** The prompt LegoKV ran, as text (without BOS): llama.cpp tokenizes it and adds BOS where the GGUF asks. */
  text: string;
  decodeTokens: number;
  threads: number;
  /** false: n_gpu_layers 0, llama.cpp's WASM CPU path alone. */
  webgpu: boolean;
  /** Requests the worker's adapter at WebGPU's compatibility feature level (llvmpipe offers no other). */
  forceCompatibility?: boolean;
}

export interface PeersPageApi {
  /** The adapter `requestAdapter()` gives this page, or why none; `featureLevel` as the engine would ask. */
  adapter(featureLevel?: 'compatibility'): Promise<string>;
  /** The same, asked from a dedicated module worker (where wllama's llama.cpp runs). */
  workerAdapter(featureLevel?: 'compatibility'): Promise<string>;
  /** Loads the GGUF into LegoKV, takes the first `promptTokens` ids of the text (BOS first where the model has one), prefills, decodes greedily. */
  legokv(o: LegoOptions): Promise<PeerFigures & { ids: number[]; prompt: string }>;
  wllama(o: WllamaOptions): Promise<WllamaFigures>;
}

declare global {
  interface Window {
    legokvPeers?: PeersPageApi;
  }
}

const now = () => performance.now();
const DEBUG_ALL = location.search.includes('debug');

async function legokv(o: LegoOptions): Promise<PeerFigures & { ids: number[]; prompt: string }> {
  const t0 = now();
  const gpu = await createGpuContext(navigator.gpu, o.featureLevel ? { featureLevel: o.featureLevel } : {});
  const engine = Engine.create(gpu, bundledKernelSources());
  try {
    const files = await fetchModelFiles({ kind: 'url', id: o.name, base: new URL(o.url.replace(/[^/]*$/, ''), location.href).href, files: [o.url.replace(/^.*\//, '')] }, new AbortController().signal, () => {});
    const model = await loadModelFiles(files, o.name);
    const gm = await engine.load(model.config, model.weights);
    const tok = model.tokenizer;
    const ids = tok.encode(o.text, { addBos: true }).slice(0, o.promptTokens);
    if (ids.length < o.promptTokens) throw new Error(`The prompt text gives only ${ids.length} tokens, ${o.promptTokens} asked`);
    const loadMs = now() - t0;
    // Warm-up: every pipeline a prefill and a decode step use, at a short length.
    const warm = engine.newCache(16);
    await engine.prefill(warm, ids.slice(0, 8), undefined, { logits: 'last' });
    await engine.decode(warm, ids[8]);
    warm.destroy();
    const cache = engine.newCache(ids.length + o.decodeTokens + 1);
    try {
      // Greedy, noting how close the runner-up came (where engines with other arithmetic may part ways).
      const out: number[] = [], gaps: number[] = [];
      const pick = (logits: Float32Array) => {
        const t = argmax(logits);
        let second = -Infinity;
        for (let i = 0; i < logits.length; i++) if (i !== t && logits[i] > second) second = logits[i];
        gaps.push(Math.round((logits[t] - second) * 1e4) / 1e4);
        return t;
      };
      const t1 = now();
      let next = pick((await engine.prefill(cache, ids, undefined, { logits: 'last' })).logits);
      const prefillMs = now() - t1;
      out.push(next);
      const t2 = now();
      for (let i = 1; i < o.decodeTokens; i++) out.push((next = pick(await engine.decode(cache, next))));
      const decodeMs = now() - t2;
      const steps = o.decodeTokens - 1;
      return {
        adapter: gpu.adapter.description, load_ms: loadMs, prompt_tokens: ids.length, prefill_ms: prefillMs,
        prefill_tokens_per_s: (ids.length / prefillMs) * 1000, decode_steps: steps, decode_ms: decodeMs,
        decode_tokens_per_s: (steps / decodeMs) * 1000, text: tok.decode(out), weight_dtype: gm.dtype, top2_gaps: gaps,
        pieces: out.map((_, i) => tok.decode(out.slice(0, i + 1)).slice(tok.decode(out.slice(0, i)).length)), ids, prompt: tok.decode(ids),
      };
    } finally {
      cache.destroy();
    }
  } finally {
    engine.destroy();
    gpu.device.destroy();
  }
}

/**
 * Code run in wllama's worker before llama.cpp starts: notes what ggml-webgpu
 * asks of WebGPU (the adapter, the features it checks, the device), as
 * `[webgpu] …` lines of wllama's log, and with `compat` asks for the adapter at
 * the compatibility feature level (llama.cpp's glue asks at the core level,
 * where Chromium's OpenGL ES path has no adapter).
 */
function workerPrelude(compat: boolean): string {
  const lines = [
    'const say = (...a) => postMessage({ verb: "console.log", args: ["[webgpu] " + a.join(" ")] });',
    'const ra = GPU.prototype.requestAdapter; GPU.prototype.requestAdapter = function (o) { o = ' + (compat ? '{ ...(o ?? {}), featureLevel: "compatibility" }' : 'o') +
      '; return ra.call(this, o).then((a) => { say("requestAdapter(" + JSON.stringify(o) + "):", a ? [a.info.description, a.info.vendor, a.info.architecture, a.info.device].filter(Boolean).join(" / ") : "null"); return a; }); };',
    'const fh = GPUSupportedFeatures.prototype.has; GPUSupportedFeatures.prototype.has = function (f) { const r = fh.call(this, f); say("adapter has " + f + ":", r); return r; };',
    'const rd = GPUAdapter.prototype.requestDevice; GPUAdapter.prototype.requestDevice = function (d) { say("requestDevice, features", (d?.requiredFeatures ?? []).join(", ")); return rd.call(this, d).then((x) => { say("device created"); return x; }, (e) => { say("requestDevice failed:", e.message); throw e; }); };',
  ];
  return lines.join('\n');
}

/** Wraps `new Worker(blob:…, {type: 'module'})`, as wllama starts its worker, so that `prelude` runs first. Returns the undo. */
function patchWorkers(prelude: string): () => void {
  const Original = window.Worker;
  const preludeUrl = URL.createObjectURL(new Blob([prelude], { type: 'text/javascript' }));
  window.Worker = class extends Original {
    constructor(url: string | URL, opts?: WorkerOptions) {
      const u = String(url);
      if (!u.startsWith('blob:') || opts?.type !== 'module') super(url, opts);
      else super(URL.createObjectURL(new Blob([`import ${JSON.stringify(preludeUrl)};\nimport ${JSON.stringify(u)};`], { type: 'text/javascript' })), opts);
    }
  };
  return () => void (window.Worker = Original);
}

async function wllama(o: WllamaOptions): Promise<WllamaFigures> {
  const log: string[] = [];
  const keep = (level: string) => (...a: unknown[]) => {
    const line = a.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join(' ');
    if (DEBUG_ALL || level !== 'debug' || /webgpu|buffer size|offload|thread|error/i.test(line)) log.push(`${level}: ${line}`.slice(0, 400));
  };
  const logger = { debug: keep('debug'), log: keep('log'), info: keep('info'), warn: keep('warn'), error: keep('error') };
  const undo = o.webgpu ? patchWorkers(workerPrelude(!!o.forceCompatibility)) : () => {};
  const w = new Wllama({ default: '/@legokv-peers/wllama.wasm' }, { logger });
  try {
    const t0 = now();
    const blob = await (await fetch(o.url)).blob();
    await w.loadModel([new File([blob], o.url.replace(/^.*\//, ''))], {
      n_threads: o.threads, n_gpu_layers: o.webgpu ? 999 : 0, n_ctx: 512, n_parallel: 1,
    });
    const loadMs = now() - t0;
    const got = /\[webgpu\] requestAdapter\([^)]*\): (.*)/.exec(log.find((l) => l.includes('[webgpu] requestAdapter')) ?? '')?.[1];
    // llama.cpp names the backend of every weight buffer: only "CPU" ones mean ggml-webgpu offered no device.
    if (o.webgpu && !log.some((l) => /load_tensors:\s+(?!CPU\b)\S+ model buffer size/.test(l))) {
      const why = log.filter((l) => l.includes('[webgpu]')).map((l) => l.replace(/^\w+: \[webgpu\] /, '')).join('; ');
      return { adapter: got ?? 'none', load_ms: loadMs, skipped: `ggml-webgpu offered llama.cpp no device, so every layer stayed on the WASM CPU path (${why || 'no WebGPU call seen'})`, log };
    }
    // wllama's completion takes text only; the same tokenizer (tests/engine/llamacpp-parity.test.ts) gives the
    // same ids, which peers.ts checks by their count.
    const greedy = { temperature: 0, top_k: 1, ignore_eos: true, cache_prompt: false };
    await w.createCompletion({ prompt: o.text.slice(0, 40), max_tokens: 2, ...greedy });
    const r = await w.createCompletion({ prompt: o.text, max_tokens: o.decodeTokens, ...greedy });
    const t = r.timings;
    if (!t) throw new Error('wllama returned no timings');
    // llama-server counts the token sampled from the prompt's logits in predicted_n but times from it on:
    // predicted_ms covers predicted_n - 1 decode steps, as LegoKV's decode_ms covers its steps.
    const steps = t.predicted_n - 1;
    return {
      adapter: o.webgpu ? got ?? 'unknown' : 'none (WebAssembly on the CPU)', load_ms: loadMs, prompt_tokens: t.prompt_n, prefill_ms: t.prompt_ms,
      prefill_tokens_per_s: (t.prompt_n / t.prompt_ms) * 1000, decode_steps: steps, decode_ms: t.predicted_ms,
      decode_tokens_per_s: (steps / t.predicted_ms) * 1000, text: r.choices[0]?.text ?? '', timings: t, log,
    };
  } catch (e) {
    throw new Error(`${(e as Error).message}\n${log.slice(-20).join('\n')}`);
  } finally {
    undo();
    await w.exit().catch(() => {});
  }
}

async function adapter(featureLevel?: 'compatibility'): Promise<string> {
  if (!navigator.gpu) return 'no navigator.gpu';
  const a = await navigator.gpu.requestAdapter(featureLevel ? ({ featureLevel } as GPURequestAdapterOptions) : {});
  return a ? describeAdapter(a).description : `requestAdapter(${featureLevel ? `{featureLevel: '${featureLevel}'}` : ''}) returned null`;
}

function workerAdapter(featureLevel?: 'compatibility'): Promise<string> {
  const opts = JSON.stringify(featureLevel ? { featureLevel } : {});
  const code = `const g = self.navigator.gpu;
    if (!g) postMessage('no navigator.gpu in the worker');
    else g.requestAdapter(${opts}).then((a) => postMessage(a ? [a.info.description, a.info.vendor, a.info.architecture, a.info.device].filter(Boolean).join(' / ') : 'requestAdapter(${opts}) returned null'), (e) => postMessage('requestAdapter threw ' + e));`;
  const w = new Worker(URL.createObjectURL(new Blob([code], { type: 'text/javascript' })), { type: 'module' });
  return new Promise<string>((resolve) => {
    w.onmessage = (e) => resolve(String(e.data));
    w.onerror = (e) => resolve(`worker error: ${e.message}`);
  }).finally(() => w.terminate());
}

window.legokvPeers = { adapter, workerAdapter, legokv, wllama };
