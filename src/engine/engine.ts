/**
 * The engine's public face: a model on a WebGPU device and the operations
 * the linker needs, none of which know about chunks or documents.
 *
 *  - prefill: append tokens at explicit position ids, computing them;
 *  - recompute: re-run every layer for chosen rows already in the cache
 *    (selective recompute: their K/V are rewritten in place, each row attends
 *    by position id to every row of the cache);
 *  - pass: the layer-by-layer stepper, for algorithms that change the row
 *    set between layers;
 *  - decode: one token at a time.
 *
 * The engine serialises its own GPU work: prefill, recompute, step and decode
 * each take the engine's lock, and work that spans several calls (compiling
 * a chunk, linking a prompt) holds it through `exclusive`, whose callback gets
 * the same calls without the lock (`HeldEngine`).
 *
 * Keys are cached after RoPE for attention; `capturePreRopeK` returns them
 * before RoPE, the position-free form KVCompile stores (see docs/ARCHITECTURE.md).
 */
import type { GpuContext } from './gpu/device';
import { Dispatcher, type HostWrite } from './gpu/dispatcher';
import { KernelLibrary, type KernelSources } from './gpu/kernels';
import type { ModelConfig } from './model/config';
import { validateConfig } from './model/config';
import { ForwardPass, type ScoresRequest, type ScoresResult } from './model/forward';
import { GpuModel, OutOfGpuMemoryError, packedTensors } from './model/gpu-model';
import { kvDtypeFor, planGpuMemory, weightDtypeFor, type AdapterLimits, type GpuPlan } from './model/gpu-plan';
import { KVCache, KVSpare } from './model/kv-cache';
import { readCompiled, readRows, readValues, RowWriter, writeRows, type LayerRows, type RowBlock } from './model/kv-io';
import { Scratch } from './model/scratch';
import { greedySteps, type GreedyStepsOptions, type GreedyStepsResult } from './model/greedy-steps';
import { tuneDecode, tuneUpload, type DecodeTuning, type TuneOptions, type UploadTuning } from './model/tune';
import { tunePrefill, type PrefillTuneOptions, type PrefillTuning } from './model/tune-prefill';
import type { HostWeights } from './model/weights';
import { Ops, type StoreDType } from './ops';
import type { QuantType } from './quant';

export type { GreedyStepsOptions, GreedyStepsResult };

export interface LoadOptions {
  /** Default: by the engine's rule, f32 up to 50M weights and packed f16 above (weightDtypeFor). */
  weightDtype?: StoreDType;
  /** How the cache, and so every chunk compiled and linked, keeps keys and values; default by the same rule (kvDtypeFor). */
  kvDtype?: StoreDType;
  /**
   * Lay weights out as if one buffer could hold at most this many bytes (below the adapter's limits): matrices
   * larger than that are stored in row parts. Tests force split matrices with it on small models.
   */
  bufferLimit?: number;
  /**
   * Quantized tensors (a GGUF's Q4_K, Q8_0, ... blocks) stay packed on the GPU and are dequantized in the
   * kernels' registers; true dequantizes them on load to `weightDtype` instead. The default packs them on real
   * GPUs and dequantizes them on CPU adapters, where unpacking in the kernels halved SmolLM2's speed
   * (SwiftShader, Q4_1: prefill 2.9-3.9 against 5.0-5.2 tok/s, decode 1.0-1.1 against 1.9-2.0).
   */
  dequantize?: boolean;
}

export interface PassOptions {
  /**
   * Which computed rows get logits: the last, all of them, or none; 'greedy' reads back only the last row's
   * argmax (`token`), picked on the GPU, instead of its V logits.
   */
  logits?: 'last' | 'all' | 'none' | 'greedy';
  scores?: ScoresRequest;
  capturePreRopeK?: boolean;
}

export interface PassResult {
  /** [R, vocab] for the requested rows (empty under 'greedy'). */
  logits: Float32Array;
  /** Under 'greedy': the last row's token of largest logit (the first on ties). */
  token?: number;
  scores: ScoresResult[];
  /** Per layer, the pass rows' keys before RoPE, [T, kvDim] f32 (when captured). */
  preRopeK?: GPUBuffer[];
}

/** The calls that take the engine's lock, as `exclusive`'s callback gets them: already inside the lock. */
export interface HeldEngine {
  prefill(cache: KVCache, tokens: ArrayLike<number>, positions?: ArrayLike<number>, opts?: PassOptions): Promise<PassResult>;
  recompute(cache: KVCache, rows: ArrayLike<number>, tokens: ArrayLike<number>, opts?: PassOptions): Promise<PassResult>;
  step(cache: KVCache, token: number, position?: number, opts?: StepOptions): Promise<PassResult>;
}

/** A decode step's options: its row's logits come back, or with `greedy` only its argmax token. */
export type StepOptions = Omit<PassOptions, 'logits'> & { greedy?: boolean };

/**
 * Rows computed in one pass of a plain prefill; longer prompts go in blocks that bound the activations.
 * Real GPUs get larger blocks: their matmuls fill the chip better with more rows.
 */
const PREFILL_BLOCK = { cpu: 1024, gpu: 4096 } as const;

/** Engine.decodeAhead for each kernel profile. */
const DECODE_AHEAD = { cpu: 1, gpu: 16 } as const;

/**
 * Tuning on an adapter that emulates a GPU on the CPU (SwiftShader, llvmpipe, lavapipe), which happens only where
 * the GPU profile is forced there (?debug's setKernels('gpu'), tests, the kit's rehearsal): each way timed once,
 * decode over 2 steps. Its figures say nothing of a GPU, and the full timing takes minutes there (stories260K's 8
 * decode ways took 165 s and its 4 prefill ways 44 s in Chromium 156's SwiftShader on this project's host).
 */
const EMULATED_TUNING = { decode: { steps: 2, reps: 1, warmMs: 0 }, prefill: { reps: 1 } } as const;

/** Bytes a staging buffer of Engine.upload carries at most (a chunk's rows go up in pieces of about this). */
const UPLOAD_BATCH = 8 * 2 ** 20;

export class Engine {
  readonly ops: Ops;
  private scratch: Scratch;
  model: GpuModel | null = null;
  kvDtype: StoreDType = 'f32';
  /** The last destroyed cache's buffers, for the next newCache (KVSpare). */
  private readonly kvSpare = new KVSpare();
  /**
   * Submit each layer's work as soon as it is recorded, so a real GPU runs layer l while the host records layer
   * l + 1 (a decode step is otherwise recorded whole before the GPU starts). Off on CPU adapters, where the
   * "GPU" shares the host's cores. The GPU kit's profile stage times a decode step both ways.
   */
  submitEachLayer: boolean;
  /**
   * The most rows a pass computes together in a layer; default (undefined): as many as one binding of its largest
   * temporary holds (ForwardPass.maxRows). Tests set fewer to exercise the blocks on small models.
   */
  maxPassRows?: number;
  /**
   * Whether greedySteps replays a step from the tape of an earlier one whose launches were the same (the same
   * kernels, slices and buffers; only the new row's values differ: ForwardPass.stepKey), instead of choosing,
   * sizing and binding each launch again: the host's recording of a step is then its launches alone. Default on;
   * bench:record times both ways.
   */
  replaySteps = true;

  private constructor(readonly gpu: GpuContext, sources: KernelSources) {
    const d = new Dispatcher(gpu.device);
    this.ops = new Ops(new KernelLibrary(gpu.device, sources), d);
    // CPU adapters punish workgroup barriers; real GPUs reward shared-memory tiles and bandwidth-bound GEMV
    // (bench:engine and the GPU kit time every variant on the adapter at hand).
    this.ops.matmulProfile = gpu.profile;
    this.ops.fuse = gpu.fuse;
    this.submitEachLayer = gpu.profile === 'gpu';
    this.scratch = new Scratch(gpu.device, () => d.flush());
  }

  static create(gpu: GpuContext, sources: KernelSources): Engine {
    return new Engine(gpu, sources);
  }

  get config(): ModelConfig {
    if (!this.model) throw new Error('no model loaded');
    return this.model.config;
  }

  /**
   * What `config` would need on this device, and whether it fits; allocates nothing. The precision defaults to
   * the one `load` picks: f32 (exact) for small models, packed f16 above 50M weights.
   */
  plan(config: ModelConfig, weightDtype: StoreDType = weightDtypeFor(config), bufferLimit?: number, packed?: ReadonlyMap<string, QuantType>, kvDtype: StoreDType = kvDtypeFor(config)): GpuPlan {
    return planGpuMemory(config, weightDtype, this.limits(bufferLimit), packed, kvDtype);
  }

  /** The device's buffer limits, lowered to `bufferLimit` where given. */
  private limits(bufferLimit = Infinity): AdapterLimits {
    const L = this.gpu.device.limits;
    return {
      maxStorageBufferBindingSize: Math.min(L.maxStorageBufferBindingSize, bufferLimit),
      maxBufferSize: Math.min(L.maxBufferSize, bufferLimit),
    };
  }

  /**
   * Uploads a model in place of the loaded one. A model that breaks the adapter's limits is refused before the
   * loaded one is dropped (it stays in `model`).
   */
  async load(config: ModelConfig, weights: HostWeights, options: LoadOptions = {}): Promise<GpuModel> {
    validateConfig(config);
    const opts = { ...options, dequantize: options.dequantize ?? this.gpu.profile === 'cpu' };
    const kvDtype = opts.kvDtype ?? kvDtypeFor(config);
    const plan = this.plan(config, opts.weightDtype, opts.bufferLimit, packedTensors(weights, opts), kvDtype);
    if (plan.problems.length) throw new OutOfGpuMemoryError(plan.problems.join(' '), plan.problems);
    this.model?.destroy();
    this.model = null;
    this.kvSpare.clear();
    this.model = await GpuModel.upload(this.gpu.device, config, weights, plan.weightDtype, this.limits(opts.bufferLimit), { ...opts, kvDtype });
    this.kvDtype = kvDtype;
    return this.model;
  }

  newCache(capacity = 256): KVCache {
    const m = this.requireModel();
    return new KVCache(this.gpu.device, m.config.nLayers, m.kvDim, this.kvDtype, capacity, this.kvSpare);
  }

  /**
   * Greedy tokens a decode loop asks for in one call of greedySteps, by the kernel profile in use: on real GPUs
   * enough that recording the next steps hides behind the GPU's work; 1 on CPU adapters, whose "GPU" shares the
   * host's cores (nothing to hide behind) and whose tokens should stream one by one.
   */
  get decodeAhead(): number {
    return DECODE_AHEAD[this.ops.matmulProfile];
  }

  /** The layer-by-layer stepper over `cache`. */
  pass(cache: KVCache): ForwardPass {
    return new ForwardPass(this.ops, this.requireModel(), cache, this.scratch, this.maxPassRows);
  }

  /** Appends `tokens` at `positions` (default: continuing after the last row) and computes them. */
  prefill(cache: KVCache, tokens: ArrayLike<number>, positions?: ArrayLike<number>, opts: PassOptions = {}): Promise<PassResult> {
    return this.exclusive((e) => e.prefill(cache, tokens, positions, opts));
  }

  private async prefillHeld(cache: KVCache, tokens: ArrayLike<number>, positions?: ArrayLike<number>, opts: PassOptions = {}): Promise<PassResult> {
    const start = cache.length;
    const next = start ? cache.positions[start - 1] + 1 : 0;
    const pos = positions ? Int32Array.from(positions) : Int32Array.from({ length: tokens.length }, (_, i) => next + i);
    if (pos.length !== tokens.length) throw new Error(`prefill: ${tokens.length} tokens but ${pos.length} positions`);
    if (tokens.length === 0) throw new Error('prefill: no tokens');
    // Blocks keep activations bounded; they are exact only when positions never decrease.
    const monotone = pos.every((p, i) => i === 0 || p >= pos[i - 1]);
    const block = monotone && !opts.capturePreRopeK && !opts.scores ? PREFILL_BLOCK[this.gpu.profile] : tokens.length;
    const logits: Float32Array[] = [];
    let last: PassResult | null = null;
    for (let b = 0; b < tokens.length; b += block) {
      const e = Math.min(tokens.length, b + block);
      cache.setPositions(start + b, pos.subarray(b, e));
      const rows = Array.from({ length: e - b }, (_, i) => start + b + i);
      const want = opts.logits === 'all' || (opts.logits !== 'none' && e === tokens.length) ? opts.logits ?? 'last' : 'none';
      last = await this.run(cache, Array.from(tokens).slice(b, e), rows, { ...opts, logits: want });
      logits.push(last.logits);
    }
    return { ...last!, logits: concat(logits) };
  }

  /** Recomputes rows already in the cache (their positions set), rewriting their K/V in every layer. */
  recompute(cache: KVCache, rows: ArrayLike<number>, tokens: ArrayLike<number>, opts: PassOptions = {}): Promise<PassResult> {
    return this.exclusive((e) => e.recompute(cache, rows, tokens, opts));
  }

  /** One decode step: appends `token` after the last row (or at `position`) and returns its logits. */
  async decode(cache: KVCache, token: number, position?: number): Promise<Float32Array> {
    return (await this.step(cache, token, position)).logits;
  }

  /** A decode step that can also return attention scores of the new row (for the attention maps). */
  step(cache: KVCache, token: number, position?: number, opts: StepOptions = {}): Promise<PassResult> {
    return this.exclusive((e) => e.step(cache, token, position, opts));
  }

  /**
   * Greedy decode steps, feeding `token` first, with the GPU choosing each next token and the next step embedding
   * it from there: the host records up to `depth` steps ahead of the one whose token it waits for, so on a real
   * GPU it never waits for a step before recording the next. Returns the tokens picked, at most `count`, the last
   * being the first stop token met; steps recorded past it are undone (the cache keeps the rows of the tokens fed
   * up to it), with each step's scores where asked for. Tokens and scores are those of as many serial greedy
   * `step`s.
   */
  greedySteps(cache: KVCache, token: number, opts: GreedyStepsOptions): Promise<GreedyStepsResult> {
    return this.exclusive(() => greedySteps(this, cache, token, opts));
  }

  /**
   * Times decode's kernel choices (GEMV kernel, fused launches, one-row attention) on this adapter and keeps the
   * fastest (model/tune.ts); on the 'gpu' profile only, null and nothing changed elsewhere.
   */
  tuneDecode(opts?: TuneOptions): Promise<DecodeTuning | null> {
    return this.exclusive(() => tuneDecode(this, { ...(this.gpu.adapter.isFallback ? EMULATED_TUNING.decode : {}), ...opts }));
  }

  /**
   * On a real GPU, times prefill's attention_tiled with one, two and four subgroup lanes a row group (as the device
   * runs them) at 16 and 8 keys a tile, and keeps the fastest (Ops.tiledLanes, Ops.tiledKeysPerTile); null, and
   * nothing set, on CPU adapters.
   */
  tunePrefill(opts?: PrefillTuneOptions): Promise<PrefillTuning | null> {
    return this.exclusive(() => tunePrefill(this, { ...(this.gpu.adapter.isFallback ? EMULATED_TUNING.prefill : {}), ...opts }));
  }

  /**
   * On a real GPU, times host-to-GPU uploads both ways (writeBuffer, mapped staging) and keeps the faster for the
   * rows a link brings from host memory (Dispatcher.upload); null, and writeBuffer kept, on CPU adapters.
   */
  tuneUpload(opts?: { bytes?: number; reps?: number }): Promise<UploadTuning | null> {
    return this.exclusive(() => tuneUpload(this.ops, this.gpu.device, opts));
  }

  /**
   * Host bytes into GPU buffers, apart from any recorded work: the way tuneUpload kept (mapped staging where the
   * adapter's writeBuffer is slow: 1 GB/s against 8 on the H100), a few MiB a staging buffer, submitted before it
   * resolves. Takes the engine's lock. What KVStore's GPU tier fills its slabs with (ContextCache).
   */
  upload(writes: HostWrite[]): Promise<void> {
    return this.exclusive(async () => {
      const d = this.ops.d;
      for (let i = 0; i < writes.length;) {
        let j = i, bytes = 0;
        while (j < writes.length && (j === i || bytes + writes[j].data.byteLength <= UPLOAD_BATCH)) bytes += writes[j++].data.byteLength;
        await d.uploadRoom();
        d.upload(writes.slice(i, j));
        d.flush();
        i = j;
      }
    });
  }

  /** The locked calls without the lock, for `exclusive`'s callback (which holds it). */
  private readonly held: HeldEngine = {
    prefill: (cache, tokens, positions, opts) => this.prefillHeld(cache, tokens, positions, opts),
    recompute: (cache, rows, tokens, opts = {}) => this.run(cache, Array.from(tokens), Array.from(rows), opts),
    step: (cache, token, position, { greedy, ...opts } = {}) =>
      this.prefillHeld(cache, [token], position === undefined ? undefined : [position], { ...opts, logits: greedy ? 'greedy' : 'last' }),
  };

  /**
   * Places cached rows (keys before RoPE, values) into `cache` at rows
   * [start, start + positions.length) with those position ids, rotating keys.
   */
  writeRows(cache: KVCache, start: number, positions: ArrayLike<number>, layers: LayerRows[]) {
    writeRows(this.ops, this.requireModel(), cache, this.scratch, start, positions, layers);
  }

  /** A layer-at-a-time writer of blocks of cached rows, one per linked chunk (for loading pipelined with recompute). */
  rowWriter(cache: KVCache, blocks: RowBlock[]): RowWriter {
    return new RowWriter(this.ops, this.requireModel(), cache, this.scratch, blocks);
  }

  /** Cache rows of one layer (keys after RoPE); an f16 cache's come back as halves, widened only where read. */
  readRows(cache: KVCache, layer: number, start: number, count: number): Promise<LayerRows> {
    return readRows(this.ops, cache, layer, start, count);
  }

  /** Cache values of one layer as stored: f32, or halves for an f16 cache. */
  readValues(cache: KVCache, layer: number, start: number, count: number): Promise<Float32Array | Uint16Array> {
    return readValues(this.ops, cache, layer, start, count);
  }

  /** The pre-RoPE keys a pass captured, with the cache's values for the same rows: what KVCompile stores. */
  exportRows(cache: KVCache, result: PassResult, start: number, count: number): Promise<LayerRows[]> {
    if (!result.preRopeK) throw new Error('exportRows: the pass did not capture pre-RoPE keys');
    return readCompiled(this.ops, cache, result.preRopeK, start, count);
  }

  private async run(cache: KVCache, tokens: number[], rows: number[], opts: PassOptions): Promise<PassResult> {
    const pass = this.pass(cache);
    pass.begin(tokens, rows);
    for (let l = 0; l < this.config.nLayers; l++) {
      pass.layer(l, opts);
      if (this.submitEachLayer) this.ops.d.flush();
    }
    const which = opts.logits === 'all' ? rows.map((_, i) => i) : opts.logits === 'none' || opts.logits === 'greedy' ? [] : [rows.length - 1];
    const token = opts.logits === 'greedy' ? await pass.greedy() : undefined;
    const logits = which.length ? await pass.logits(which) : new Float32Array();
    this.ops.d.flush();
    return { logits, token, scores: await pass.scores(), preRopeK: opts.capturePreRopeK ? pass.preRopeK : undefined };
  }

  /**
   * Runs `fn` holding the engine's lock: after every earlier locked call has
   * finished, and before any later one starts. Engine calls share scratch
   * buffers and one command stream, so work that spans several awaits
   * (compiling a chunk, linking a prompt) runs in here; inside, `fn` makes its
   * locked calls through `held` (calling the engine's own would wait for
   * itself) and uses the unlocked ones (pass, rowWriter, readRows, sync) freely.
   */
  exclusive<T>(fn: (held: HeldEngine) => Promise<T>): Promise<T> {
    const go = () => fn(this.held);
    const run = this.queue.then(go, go);
    this.queue = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }
  private queue: Promise<void> = Promise.resolve();

  /** Submits recorded work and waits until the GPU has finished it (for timing); throws if WebGPU rejected any of it. */
  async sync(): Promise<void> {
    this.ops.d.flush();
    await this.gpu.device.queue.onSubmittedWorkDone();
    this.ops.d.check();
  }

  private requireModel(): GpuModel {
    if (!this.model) throw new Error('no model loaded');
    return this.model;
  }

  destroy() {
    this.kvSpare.clear();
    this.model?.destroy();
    this.scratch.destroy();
    this.ops.destroy();
  }
}

function concat(parts: Float32Array[]): Float32Array {
  if (parts.length === 1) return parts[0];
  const out = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
