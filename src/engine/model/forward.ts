/**
 * One forward pass over a set of rows of a KVCache, a layer at a time.
 *
 * The rows may be any subset of the cache (a prompt, one decode token, or
 * the scattered tokens of a selective recompute). For each layer the pass
 * computes those rows' q, k and v, writes k (rotated) and v into the cache at
 * the rows' indices, and lets each row's query attend to every cache row
 * whose position id is at or before its own. Rows not in the pass keep
 * whatever K/V the cache holds for them. Layer by layer so a caller can
 * inspect or change the row set between layers (CacheBlend), and capture
 * pre-RoPE keys (KVCompile) or attention scores (the sink maps).
 *
 * Data layout per pass of T rows: x [T, D]; qkv [T, qDim + 2 kvDim] with q
 * heads first, then k heads, then v heads; att [T, qDim]; gu [T, 2I]. The
 * buffers are the named fields of RunState (run-state.ts), with every shape.
 */
import type { GpuModel } from './gpu-model';
import type { KVCache } from './kv-cache';
import { inverseFrequencies, ropeTable } from './rope';
import type { Scratch } from './scratch';
import { RunState } from './run-state';
import { keyBounds, unmaskScores, type Ops, type WeightMatrix, type XPrologue } from '../ops';

export interface ScoresRequest {
  /** One layer, or several (each gives its own results, in the same pass). */
  layer: number | readonly number[];
  heads: number[];
  /** Indices into the pass's rows whose scores are wanted. */
  rows: number[];
}
export interface ScoresResult {
  layer: number;
  head: number;
  /** Cache rows of the queries. */
  rows: number[];
  /** Raw scaled scores q·k, [rows, keys], -Infinity where masked. */
  scores: Float32Array;
  keys: number;
}

/** Whether a scores request covers layer `l`. */
function wantsLayer(layer: ScoresRequest['layer'], l: number): boolean {
  return typeof layer === 'number' ? layer === l : layer.includes(l);
}

export class ForwardPass {
  T = 0;
  rows: Uint32Array = new Uint32Array();
  private x: GPUBuffer | null = null;
  private other: GPUBuffer | null = null;
  private invFreq: { global: Float32Array; local: Float32Array };
  private pendingScores: Promise<ScoresResult>[] = [];
  private s: RunState;
  preRopeK: GPUBuffer[] = [];

  constructor(
    private ops: Ops,
    private m: GpuModel,
    private cache: KVCache,
    scratch: Scratch,
  ) {
    this.s = new RunState(scratch, { D: m.config.hidden, qDim: m.qDim, kvDim: m.kvDim, I: m.config.intermediate, V: m.config.vocabSize });
    this.invFreq = { global: inverseFrequencies(m.config, 'global'), local: inverseFrequencies(m.config, 'local') };
  }

  private get c() {
    return this.m.config;
  }

  /** Embeds `tokens` as the pass's rows, placed at cache rows `rows`. Positions come from the cache. */
  begin(tokens: ArrayLike<number>, rows: ArrayLike<number>) {
    if (tokens.length !== rows.length) throw new Error('begin: tokens and rows differ in length');
    for (const r of Array.from(rows)) if (r >= this.cache.length) throw new Error(`begin: row ${r} is outside the cache (${this.cache.length})`);
    this.ops.d.flush();
    this.cache.syncPositions();
    this.setRows(Uint32Array.from(rows));
    const tok = this.s.putTokens(Uint32Array.from(tokens));
    this.x = this.s.x(0, this.T);
    this.other = this.s.x(1, this.T);
    this.ops.embedParts({ tokens: tok, ids: tokens, table: this.m.embed, x: this.x, T: this.T, scale: this.c.embedScale });
  }

  private setRows(rows: Uint32Array) {
    this.rows = rows;
    this.T = rows.length;
    const pos = Int32Array.from(rows, (r) => this.cache.positions[r]);
    this.s.putRows(rows);
    this.s.putQpos(pos);
    this.s.putRope('global', ropeTable(this.invFreq.global, pos));
    const n = this.cache.length;
    this.s.putBounds('global', keyBounds(this.cache.positions, n, pos, 0));
    if (this.c.layerKinds.includes('local')) {
      this.s.putRope('local', ropeTable(this.invFreq.local, pos));
      this.s.putBounds('local', keyBounds(this.cache.positions, n, pos, this.c.slidingWindow));
    }
  }

  /** Keeps only the pass rows at `keep` (indices into the current rows), in that order. */
  select(keep: number[]) {
    const D = this.c.hidden;
    // The buffer before the encoder: a scratch buffer that grows submits the work recorded so far.
    const next = this.s.x(this.x === this.s.x(0, 0) ? 1 : 0, Math.max(1, keep.length));
    const enc = this.ops.d.commandEncoder();
    keep.forEach((k, i) => enc.copyBufferToBuffer(this.x!, k * D * 4, next, i * D * 4, D * 4));
    this.other = this.x;
    this.x = next;
    this.setRows(Uint32Array.from(keep, (k) => this.rows[k]));
  }

  /** Runs layer `l` for the pass's rows. */
  layer(l: number, opts: { scores?: ScoresRequest; capturePreRopeK?: boolean } = {}) {
    const { ops, c, T } = this;
    const Lw = this.m.layers[l];
    const D = c.hidden, HD = c.headDim, qDim = this.m.qDim, kvDim = this.m.kvDim, I = c.intermediate;
    const W = qDim + 2 * kvDim;
    const eps = c.rmsEps, plusOne = c.normPlusOne;
    const xn = this.s.xn(T);
    const qkv = this.s.qkv(T);
    const att = this.s.att(T);
    const rowsBuf = this.s.rows();
    const kind = c.layerKinds[l];

    this.normMatmul(Lw.attnNorm, xn, { x: this.x!, w: Lw.wqkv, y: qkv, T, K: D, bias: Lw.bqkv });
    if (Lw.qNorm && Lw.kNorm) {
      ops.rmsnorm({ x: qkv, w: Lw.qNorm, T, D: HD, G: c.nHeads, stride: W, offset: 0, eps, plusOne });
      ops.rmsnorm({ x: qkv, w: Lw.kNorm, T, D: HD, G: c.nKvHeads, stride: W, offset: qDim, eps, plusOne });
    }
    if (opts.capturePreRopeK) {
      const dst = this.s.preRopeK(l, T);
      const ident = this.s.putIdentity(T);
      ops.scatter({ src: qkv, stride: W, offset: qDim, idx: ident, dst, dstDtype: 'f32', T, W: kvDim });
      this.preRopeK[l] = dst;
    }
    const cs = this.s.rope(kind);
    const interleaved = c.ropeStyle === 'interleaved';
    // The k heads follow the q heads in each row: one launch rotates both, and one writes k and v into the cache.
    ops.rope({ x: qkv, cs, T, H: c.nHeads + c.nKvHeads, HD, stride: W, offset: 0, interleaved });
    const kv = this.cache.dtype;
    ops.scatter({ src: qkv, stride: W, offset: qDim, idx: rowsBuf, dst: this.cache.k[l], dst2: this.cache.v[l], dstDtype: kv, T, W: kvDim });
    const window = kind === 'local' ? c.slidingWindow : 0;
    const common = {
      q: qkv, qStride: W, qOffset: 0, k: this.cache.k[l], kvDtype: kv, qpos: this.s.qpos(), kpos: this.cache.kpos,
      n: this.cache.length, H: c.nHeads, NKV: c.nKvHeads, HD, window, scale: c.attnScale,
    };
    ops.attention({ ...common, v: this.cache.v[l], out: att, T, bounds: this.s.bounds(kind) });
    if (opts.scores && wantsLayer(opts.scores.layer, l)) this.requestScores(opts.scores, l, common);

    this.residual(att, Lw.wo, qDim, Lw.postAttnNorm);
    const gu = this.s.gu(T);
    this.normMatmul(Lw.ffnNorm, xn, { x: this.x!, w: Lw.wGateUp, y: gu, T, K: D });
    if (ops.fuses(T)) {
      // The down projection applies the GLU as it reads gu: the activation is never stored.
      this.residual(gu, Lw.wDown, I, Lw.postFfnNorm, { pre: { glu: c.activation } });
    } else {
      const act = this.s.act(T);
      ops.glu({ gu, out: act, T, I, act: c.activation });
      // The GLU's output is where LLMs' massive activations show (SmolLM2: up to 3065, 16-deep sums up to 18009,
      // against f16's 65504): the down projection keeps f32 math where the others take f16 slices (Ops.half).
      this.residual(act, Lw.wDown, I, Lw.postFfnNorm, { half: false });
    }
  }

  /**
   * y = rmsnorm(x; norm) · Wᵀ: one launch where decode fuses (Ops.fuses; the normed rows are used by this
   * product alone, so they need not be stored), otherwise the norm into `xn` and the product from it.
   */
  private normMatmul(norm: GPUBuffer, xn: GPUBuffer, a: Parameters<Ops['matmulParts']>[0]) {
    const { ops, c } = this;
    const eps = c.rmsEps, plusOne = c.normPlusOne;
    if (ops.fuses(a.T)) return ops.matmulParts({ ...a, pre: { norm, eps, plusOne } });
    ops.rmsnorm({ x: a.x, w: norm, y: xn, T: a.T, D: a.K, eps, plusOne });
    ops.matmulParts({ ...a, x: xn });
  }

  /** x ← x + (norm?)(a · Wᵀ), ping-ponging between the two x buffers; `pre` and `half` as MatmulArgs'. */
  private residual(a: GPUBuffer, w: WeightMatrix, K: number, postNorm?: GPUBuffer, opt: { pre?: XPrologue; half?: boolean } = {}) {
    const { T, c } = this;
    const D = c.hidden;
    if (postNorm) {
      const tmp = this.s.tmp(T);
      this.ops.matmulParts({ x: a, w, y: tmp, T, K, ...opt });
      this.ops.rmsnorm({ x: tmp, w: postNorm, y: this.other!, T, D, eps: c.rmsEps, plusOne: c.normPlusOne, residual: this.x! });
    } else {
      this.ops.matmulParts({ x: a, w, y: this.other!, T, K, residual: this.x!, ...opt });
    }
    [this.x, this.other] = [this.other, this.x];
  }

  private requestScores(req: ScoresRequest, layer: number, common: Parameters<Ops['attnScores']>[0] extends infer A ? Omit<A, 'rows' | 'R' | 'head' | 'out'> : never) {
    const R = req.rows.length;
    const n = this.cache.length;
    const rowsBuf = this.s.putProbeRows(Uint32Array.from(req.rows));
    for (const head of req.heads) {
      const out = this.s.probe(head, R, n);
      this.ops.attnScores({ ...common, rows: rowsBuf, R, head, out });
      const cacheRows = req.rows.map((r) => this.rows[r]);
      this.pendingScores.push(
        this.ops.d.read(out, 0, R * n * 4).then((b) => ({
          layer, head, rows: cacheRows, scores: unmaskScores(new Float32Array(b)), keys: n,
        })),
      );
    }
  }

  /** Scores requested during the pass (resolved after the work is submitted). */
  async scores(): Promise<ScoresResult[]> {
    const all = await Promise.all(this.pendingScores);
    this.pendingScores = [];
    return all;
  }

  /** Logits [R, V] for pass rows `which` (indices into the current rows). */
  async logits(which: number[]): Promise<Float32Array> {
    // The logits of the rows computed together are one buffer, which a binding must hold: blocks of rows.
    const V = this.c.vocabSize;
    const block = Math.max(1, Math.floor(this.m.plan.bufferLimit / (V * 4)));
    if (which.length <= block) return this.logitsOf(which);
    const out = new Float32Array(which.length * V);
    for (let i = 0; i < which.length; i += block) out.set(await this.logitsOf(which.slice(i, i + block)), i * V);
    return out;
  }

  /** Greedy sampling of the last pass row on the GPU: its argmax token, reading back 4 bytes instead of V floats. */
  async greedy(): Promise<number> {
    const out = this.logitsOn([this.T - 1]);
    const token = this.s.argmax();
    this.ops.argmax({ x: out, out: token, R: 1, V: this.c.vocabSize });
    return new Uint32Array(await this.ops.d.read(token, 0, 4))[0];
  }

  private async logitsOf(which: number[]): Promise<Float32Array> {
    const out = this.logitsOn(which);
    return new Float32Array(await this.ops.d.read(out, 0, which.length * this.c.vocabSize * 4));
  }

  /** Records the logits of pass rows `which` into the logits buffer, [R, V]. */
  private logitsOn(which: number[]): GPUBuffer {
    const { c } = this;
    const D = c.hidden, R = which.length;
    let src = this.x!;
    if (!(R === this.T && which.every((w, i) => w === i))) {
      src = this.s.xsel(R);
      const enc = this.ops.d.commandEncoder();
      which.forEach((w, i) => enc.copyBufferToBuffer(this.x!, w * D * 4, src, i * D * 4, D * 4));
    }
    const out = this.s.logits(R);
    this.normMatmul(this.m.finalNorm, this.s.xn(R), { x: src, w: this.m.lmHead, y: out, T: R, K: D });
    return out;
  }
}
