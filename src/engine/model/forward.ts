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
 * Data layout per block of T rows: x [T, D]; qkv [T, qDim + 2 kvDim] with q
 * heads first, then k heads, then v heads; att [T, qDim]; gu [T, 2I]. The
 * buffers are the named fields of RunState (run-state.ts), with every shape.
 *
 * Blocks: a layer's temporaries must each fit one binding (gu, 2I floats a
 * row, is the largest: 128 MiB holds 8K rows of Gemma 3 270M, 2 GiB 32K rows
 * of Llama-3.2-1B). A pass with more rows computes each layer in blocks of
 * rows, one after another, each with its own residual stream. That is exact
 * when the rows' positions never decrease and blocks are cut where the
 * position rises: a block's queries then see the rows of earlier blocks,
 * already written in this layer, and none of later blocks, whose positions
 * are greater (see rowBlocks).
 */
import type { LayerKind } from './config';
import type { GpuModel } from './gpu-model';
import type { KVCache } from './kv-cache';
import { ropeTable } from './rope';
import type { Scratch } from './scratch';
import { RunState } from './run-state';
import { joinScores, requestScores, wantsLayer, type ScoresRequest, type ScoresResult } from './pass-scores';
import { rowBlocks } from './row-blocks';
import { foldsStep, keyBounds, type AttentionArgs, type AttentionStep, type Ops, type StepTags, type WeightMatrix, type XPrologue } from '../ops';

export type { ScoresRequest, ScoresResult } from './pass-scores';

/** Where each layer kind's attention finds its step values in a pass's stepValues (Param.tag). */
const STEP_TAGS: Record<LayerKind, StepTags> = {
  global: { n: 0, qp: 1, row: 2, first: 3, last: 4 },
  local: { n: 0, qp: 1, row: 2, first: 5, last: 6 },
};

/** Rows [a, b) of the pass, computed together in each layer, and their residual stream (one of block k's x pair). */
interface Block {
  a: number;
  b: number;
  x: GPUBuffer;
  other: GPUBuffer;
  /** A sandwich norm not yet added to x (the residual stream is x + rmsnorm(tmp; w)): the next norm's GEMV adds it. */
  post?: { tmp: GPUBuffer; w: GPUBuffer };
}

export class ForwardPass {
  T = 0;
  rows: Uint32Array = new Uint32Array();
  private blocks: Block[] = [];
  /** Whether this pass's rows rotate by the model's table by position (else by their own tables: setRows). */
  private ropeByPosition = false;
  /** A one-row pass's key range per layer kind (what putBounds uploads), for attention_decode's STEP. */
  private oneRowBounds: Partial<Record<LayerKind, [number, number]>> = {};
  private pendingScores: Promise<ScoresResult>[] = [];
  private s: RunState;
  preRopeK: GPUBuffer[] = [];
  /** The most rows computed together: what one binding of the largest temporary holds, unless the caller asks fewer. */
  readonly maxRows: number;
  private bindLimit: number;

  constructor(
    private ops: Ops,
    private m: GpuModel,
    private cache: KVCache,
    scratch: Scratch,
    maxRows?: number,
  ) {
    this.s = new RunState(scratch, { D: m.config.hidden, qDim: m.qDim, kvDim: m.kvDim, I: m.config.intermediate, V: m.config.vocabSize });
    this.bindLimit = scratch.limit;
    this.maxRows = Math.max(1, Math.min(maxRows ?? Infinity, Math.floor(this.bindLimit / this.s.rowBytes)));
  }

  private get c() {
    return this.m.config;
  }

  /**
   * Embeds `tokens` as the pass's rows, placed at cache rows `rows`. Positions come from the cache. The tokens may
   * be a GPU buffer of rows.length u32 ids instead (an earlier pass's `greedyOn`), so a decode step can follow the
   * one before it without the host reading its token.
   */
  begin(tokens: ArrayLike<number> | GPUBuffer, rows: ArrayLike<number>) {
    const onGpu = 'mapAsync' in tokens;
    if (onGpu ? tokens.size < 4 * rows.length : tokens.length !== rows.length) throw new Error('begin: tokens and rows differ in length');
    for (const r of Array.from(rows)) if (r >= this.cache.length) throw new Error(`begin: row ${r} is outside the cache (${this.cache.length})`);
    this.ops.d.flush();
    this.cache.syncPositions();
    const spans = this.setRows(Uint32Array.from(rows));
    if (onGpu && spans.length > 1) throw new Error(`begin: tokens on the GPU fill one block, not ${spans.length}`);
    // Every block's buffers before any launch: a scratch buffer that grows submits the work recorded so far.
    this.blocks = spans.map(([a, b], k) => ({ a, b, x: this.s.x(0, b - a, k), other: this.s.x(1, b - a, k) }));
    if (onGpu) {
      // Ids unknown to the host: every part of a split table is launched, each writing the rows it holds.
      this.ops.embedParts({ tokens, table: this.m.embed, x: this.blocks[0].x, T: this.T, scale: this.c.embedScale });
      return;
    }
    const ids = Uint32Array.from(tokens);
    for (const blk of this.blocks) {
      const part = ids.subarray(blk.a, blk.b);
      const tok = this.s.putTokens(part);
      this.ops.embedParts({ tokens: tok, ids: part, table: this.m.embed, x: blk.x, T: blk.b - blk.a, scale: this.c.embedScale });
    }
  }

  /** Sets the pass's rows and uploads each block's inputs (cache rows, positions, RoPE tables, key bounds). */
  private setRows(rows: Uint32Array): [number, number][] {
    this.rows = rows;
    this.T = rows.length;
    const pos = Int32Array.from(rows, (r) => this.cache.positions[r]);
    const spans = rowBlocks(pos, this.maxRows, () => `A pass of ${rows.length} rows needs ${Math.ceil((rows.length * this.s.rowBytes) / 2 ** 20)} MiB in one buffer, more than this adapter binds (${Math.floor(this.bindLimit / 2 ** 20)} MiB)`);
    const n = this.cache.length;
    const kinds = this.c.layerKinds.includes('local') ? (['global', 'local'] as const) : (['global'] as const);
    // RoPE by the model's table by position (kept on the GPU; rope_scatter reads row qpos[t]), as RowWriter places
    // keys; where positions are negative or past what that table may hold, by tables of these rows' own.
    let lo = 0, hi = 0;
    for (const p of pos) (lo = Math.min(lo, p)), (hi = Math.max(hi, p));
    this.ropeByPosition = lo >= 0 && kinds.every((kind) => this.m.positionTable(kind).covering(hi, () => this.ops.d.flush()) !== null);
    const ascending = this.cache.ascending;
    for (const kind of kinds) {
      const bounds = keyBounds(this.cache.positions, n, pos, kind === 'local' ? this.c.slidingWindow : 0, ascending);
      if (rows.length === 1) this.oneRowBounds[kind] = [bounds[0], bounds[1]];
      // The model's frequencies (a pass is made every decode step: they are not recomputed for it).
      const inv = this.m.positionTable(kind).inv;
      const table = this.ropeByPosition ? null : ropeTable(inv, pos);
      const per = 2 * inv.length;
      spans.forEach(([a, b], k) => {
        if (table) this.s.putRope(kind, table.subarray(a * per, b * per), k);
        this.s.putBounds(kind, bounds.subarray(2 * a, 2 * b), k);
      });
    }
    spans.forEach(([a, b], k) => {
      this.s.putRows(rows.subarray(a, b), k);
      this.s.putQpos(pos.subarray(a, b), k);
      if (!this.ropeByPosition) this.s.putCsRows(b - a, k);
    });
    return spans;
  }

  /** The block holding pass row `i`, and the row's index in it. */
  private locate(i: number): [Block, number] {
    const blk = this.blocks.find((b) => i < b.b)!;
    return [blk, i - blk.a];
  }

  /** Keeps only the pass rows at `keep` (indices into the current rows), in that order. */
  select(keep: number[]) {
    this.settle();
    const D = this.c.hidden;
    const from = keep.map((k) => this.locate(k));
    const old = this.blocks;
    const spans = this.setRows(Uint32Array.from(keep, (k) => this.rows[k]));
    // Each new block's rows go into the buffer of its pair that holds no residual stream now, which no copy reads.
    // Buffers before the encoder: a scratch buffer that grows submits the work recorded so far.
    const dst = spans.map(([a, b], k) => {
      const which: 0 | 1 = old[k] && old[k].x === this.s.x(0, 0, k) ? 1 : 0;
      return { a, b, which, x: this.s.x(which, Math.max(1, b - a), k) };
    });
    const enc = this.ops.d.commandEncoder();
    for (const blk of dst) {
      for (let i = blk.a; i < blk.b; i++) {
        const [src, o] = from[i];
        enc.copyBufferToBuffer(src.x, o * D * 4, blk.x, (i - blk.a) * D * 4, D * 4);
      }
    }
    // The other buffer of each pair last: growing it (a block larger than before) submits the copies from it first.
    this.blocks = dst.map(({ a, b, which, x }, k) => ({ a, b, x, other: this.s.x(which === 0 ? 1 : 0, Math.max(1, b - a), k) }));
  }

  /** Runs layer `l` for the pass's rows, a block at a time. */
  layer(l: number, opts: { scores?: ScoresRequest; capturePreRopeK?: boolean } = {}) {
    this.blocks.forEach((blk, k) => this.layerBlock(l, k, blk, opts));
  }

  private layerBlock(l: number, k: number, blk: Block, opts: { scores?: ScoresRequest; capturePreRopeK?: boolean }) {
    const { ops, c } = this;
    const T = blk.b - blk.a;
    const Lw = this.m.layers[l];
    const D = c.hidden, HD = c.headDim, qDim = this.m.qDim, kvDim = this.m.kvDim, I = c.intermediate;
    const W = qDim + 2 * kvDim;
    const eps = c.rmsEps, plusOne = c.normPlusOne;
    const xn = this.s.xn(T);
    const qkv = this.s.qkv(T);
    const att = this.s.att(T);
    const rowsBuf = this.s.rows(k);
    const kv = this.cache.dtype;

    this.normMatmul(Lw.attnNorm, xn, { x: blk.x, w: Lw.wqkv, y: qkv, T, K: D, bias: Lw.bqkv }, blk);
    const scores = !!opts.scores && wantsLayer(opts.scores.layer, l);
    const args = this.attentionArgs(l, k, scores, !!opts.capturePreRopeK);
    const step = args.step;
    // Gemma 3's q/k norm: inside a decode step's attention where it has one (and no pre-RoPE key is captured from
    // qkv, which must then hold it normalised), else two launches in place.
    if (Lw.qkNorm && !step?.qkNorm) {
      ops.rmsnorm({ x: qkv, w: Lw.qkNorm, T, D: HD, G: c.nHeads, stride: W, offset: 0, eps, plusOne });
      ops.rmsnorm({ x: qkv, w: Lw.qkNorm, wOffset: HD, T, D: HD, G: c.nKvHeads, stride: W, offset: qDim, eps, plusOne });
    }
    if (opts.capturePreRopeK) {
      // In the cache's precision: an f16 cache's keys are rounded here as its values are, and read back as halves.
      const dst = this.s.preRopeK(l, this.T, kv);
      const ident = this.s.putIdentity(T, blk.a, k);
      ops.scatter({ src: qkv, stride: W, offset: qDim, idx: ident, dst, dstDtype: kv, T, W: kvDim });
      this.preRopeK[l] = dst;
    }
    // One launch rotates the q and k heads of each row and writes its k and v heads into the cache; a decode step
    // that fuses does it inside attention_decode instead.
    if (!step) ops.ropeScatter({ x: qkv, cs: args.cs, csRows: args.csRows, idx: rowsBuf, dstK: this.cache.k[l], dstV: this.cache.v[l], dstDtype: kv, T, H: c.nHeads, NKV: c.nKvHeads, HD, stride: W, interleaved: c.ropeStyle === 'interleaved' });
    // Where decode fuses, the output projection merges a few key slices as it reads them: no attention_combine.
    const slices = ops.attention(args);
    if (scores) this.pendingScores.push(...requestScores(ops, this.s, opts.scores!, l, args, blk, this.rows));

    if (slices) this.residual(blk, slices.part, Lw.wo, qDim, Lw.postAttnNorm, { pre: { combine: slices } });
    else this.residual(blk, att, Lw.wo, qDim, Lw.postAttnNorm);
    const gu = this.s.gu(T);
    this.normMatmul(Lw.ffnNorm, xn, { x: blk.x, w: Lw.wGateUp, y: gu, T, K: D }, blk);
    if (ops.fuses(T)) {
      // The down projection applies the GLU as it reads gu: the activation is never stored.
      this.residual(blk, gu, Lw.wDown, I, Lw.postFfnNorm, { pre: { glu: c.activation } });
    } else {
      const act = this.s.act(T);
      ops.glu({ gu, out: act, T, I, act: c.activation });
      // The GLU's output is where LLMs' massive activations show (SmolLM2: up to 3065, 16-deep sums up to 18009,
      // against f16's 65504): the down projection keeps f32 math where the others take f16 slices (Ops.half).
      this.residual(blk, act, Lw.wDown, I, Lw.postFfnNorm, { half: false });
    }
  }

  /**
   * Layer l's attention for block k (the q/k/v rows in qkv), with the RoPE table and rows it rotates by and, for a
   * decode step that folds them, its RoPE and cache write (step; with Gemma 3's q/k norm unless pre-RoPE keys are
   * captured, which must then be normalised in qkv).
   */
  private attentionArgs(l: number, k: number, scores: boolean, capture: boolean): AttentionArgs & { cs: GPUBuffer; csRows: GPUBuffer } {
    const c = this.c, kind = c.layerKinds[l], Lw = this.m.layers[l];
    // The table as it is now: a link's RowWriter may have grown it since setRows.
    const cs = this.ropeByPosition ? this.m.positionTable(kind).buffer! : this.s.rope(kind, k);
    const csRows = this.ropeByPosition ? this.s.qpos(k) : this.s.csRows(k);
    const step = this.stepOf(kind, cs, c.ropeStyle === 'interleaved', scores, !!Lw.qkNorm && !capture);
    if (Lw.qkNorm && step && !capture) step.qkNorm = { w: Lw.qkNorm, eps: c.rmsEps, plusOne: c.normPlusOne };
    const T = this.blocks[k].b - this.blocks[k].a;
    // Written out, not spread from a shared object: this runs for every layer of every decode step, and spreading
    // was a tenth of the host's time recording a step (a CPU profile on lavapipe).
    return {
      q: this.s.qkv(T), qStride: this.m.qDim + 2 * this.m.kvDim, qOffset: 0, k: this.cache.k[l], v: this.cache.v[l], kvDtype: this.cache.dtype,
      qpos: this.s.qpos(k), kpos: this.cache.kpos, out: this.s.att(T), T, n: this.cache.length, H: c.nHeads, NKV: c.nKvHeads, HD: c.headDim,
      window: kind === 'local' ? c.slidingWindow : 0, scale: c.attnScale, bounds: this.s.bounds(kind, k), step: step ?? undefined,
      leaveSlices: this.ops.combineFold(T, this.m.qDim, c.nHeads), tags: STEP_TAGS[kind], cs, csRows,
    };
  }

  /**
   * What a decode step's launches depend on besides its step values (stepValues), for the step to be replayed from
   * an earlier one's tape (Dispatcher.replay, which also needs the tape to start at the uniform slot in use): how each layer kind attends
   * (Ops.attentionKey: kernel, key slices, workgroups), the one launch whose shape follows the keys a step scans;
   * and the versions of every buffer the layers bind (the scratch's, the ops' own, the cache's, the RoPE tables').
   * Null where a pass is not replayed: more than one row. Call it after `begin`, before the layers.
   */
  stepKey(): string | null {
    if (this.T !== 1 || this.blocks.length !== 1) return null;
    let key = `${this.s.version}|${this.ops.tempsVersion}|${this.cache.version}|${this.ropeByPosition ? 1 : 0}`;
    for (const kind of ['global', 'local'] as const) {
      const l = this.c.layerKinds.indexOf(kind);
      if (l >= 0) key += `|${kind} ${this.m.positionTable(kind).version} ${this.ops.attentionKey(this.attentionArgs(l, 0, false, false))}`;
    }
    return key;
  }

  /** A decode step's values, as its launches' tagged parameters take them (STEP_TAGS): n, the row's position and row, each kind's keys. */
  stepValues(): Int32Array {
    const row = this.rows[0], g = this.oneRowBounds.global ?? [0, 0], lo = this.oneRowBounds.local ?? [0, 0];
    return Int32Array.of(this.cache.length, this.cache.positions[row], row, g[0], g[1], lo[0], lo[1]);
  }

  /**
   * attention_decode's STEP for this layer, or null: a decode step's one row where decode fuses (Ops.fuses) and
   * attends with attention_decode (or attention_grouped, where `qkNorm`, a q/k norm to fold, is false), rotating by
   * the model's table; not where scores are read from this layer's q (attn_scores wants it rotated in place).
   */
  private stepOf(kind: LayerKind, cs: GPUBuffer, interleaved: boolean, scores: boolean, qkNorm: boolean): AttentionStep | null {
    const { ops, c } = this;
    const HD = c.headDim;
    if (this.T !== 1 || !this.ropeByPosition || scores || !ops.fuses(1) || HD % 8 !== 0) return null;
    const [first, last] = this.oneRowBounds[kind]!;
    const variant = ops.attentionVariant ?? ops.pickAttention(1, HD, Math.max(1, last - first));
    if (!foldsStep(variant, qkNorm)) return null;
    return { cs, qp: this.cache.positions[this.rows[0]], row: this.rows[0], first, last, interleaved };
  }

  /**
   * y = rmsnorm(x; norm) · Wᵀ: one launch where decode fuses (Ops.fuses; the normed rows are used by this
   * product alone, so they need not be stored), otherwise the norm into `xn` and the product from it. Where x is
   * `blk`'s residual stream with a sandwich norm still to add (Block.post), the same launch adds it first.
   */
  private normMatmul(norm: GPUBuffer, xn: GPUBuffer, a: Parameters<Ops['matmulParts']>[0], blk?: Block) {
    const { ops, c } = this;
    const eps = c.rmsEps, plusOne = c.normPlusOne;
    const post = blk?.post;
    if (blk && post) {
      blk.post = undefined;
      a.x = post.tmp;
      ops.matmulParts(a, { norm, eps, plusOne, post: { w: post.w, res: blk.x, out: blk.other } });
      [blk.x, blk.other] = [blk.other, blk.x];
      return;
    }
    if (ops.fuses(a.T)) return ops.matmulParts(a, { norm, eps, plusOne });
    ops.rmsnorm({ x: a.x, w: norm, y: xn, T: a.T, D: a.K, eps, plusOne });
    // The caller's arguments are a literal of its own: the product reads the normed rows, with no spread (the CPU
    // profile's decode runs this for every product of every step).
    a.x = xn;
    ops.matmulParts(a);
  }

  /** A block's x ← x + (norm?)(a · Wᵀ), ping-ponging between its two x buffers; `pre` and `half` as MatmulArgs'. */
  private residual(blk: Block, a: GPUBuffer, w: WeightMatrix, K: number, postNorm?: GPUBuffer, opt: { pre?: XPrologue; half?: boolean } = {}) {
    const { c } = this;
    const D = c.hidden, T = blk.b - blk.a;
    if (postNorm) {
      const tmp = this.s.tmp(T);
      this.ops.matmulParts({ x: a, w, y: tmp, T, K, half: opt.half }, opt.pre);
      blk.post = { tmp, w: postNorm };
      // Where x is staged, the next norm's GEMV adds the sandwich norm as it reads x (one block: tmp is shared).
      if (!(this.blocks.length === 1 && this.ops.foldsPostNorm(T, D))) this.settleBlock(blk);
      return;
    }
    this.ops.matmulParts({ x: a, w, y: blk.other, T, K, residual: blk.x, half: opt.half }, opt.pre);
    [blk.x, blk.other] = [blk.other, blk.x];
  }

  /** Adds a block's pending sandwich norm (Block.post) to its residual stream, a launch of its own. */
  private settleBlock(blk: Block) {
    const c = this.c, post = blk.post!;
    this.ops.rmsnorm({ x: post.tmp, w: post.w, y: blk.other, T: blk.b - blk.a, D: c.hidden, eps: c.rmsEps, plusOne: c.normPlusOne, residual: blk.x });
    [blk.x, blk.other] = [blk.other, blk.x];
    blk.post = undefined;
  }

  /** Every block's pending sandwich norm added: before x is read otherwise than by a norm's GEMV. */
  private settle() {
    for (const blk of this.blocks) if (blk.post) this.settleBlock(blk);
  }

  /** Scores requested during the pass (resolved after the work is submitted): one result per layer and head. */
  async scores(): Promise<ScoresResult[]> {
    const parts = await Promise.all(this.pendingScores);
    this.pendingScores = [];
    return joinScores(parts);
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
    return new Uint32Array(await this.ops.d.read(this.greedyOn(), 0, 4))[0];
  }

  /** Records greedy sampling of the last pass row; returns the u32 buffer its token lands in, unread. */
  greedyOn(): GPUBuffer {
    const out = this.logitsOn([this.T - 1]);
    const token = this.s.argmax();
    this.ops.argmax({ x: out, out: token, R: 1, V: this.c.vocabSize });
    return token;
  }

  private async logitsOf(which: number[]): Promise<Float32Array> {
    const out = this.logitsOn(which);
    return new Float32Array(await this.ops.d.read(out, 0, which.length * this.c.vocabSize * 4));
  }

  /** Records the logits of pass rows `which` into the logits buffer, [R, V]. */
  private logitsOn(which: number[]): GPUBuffer {
    const { c } = this;
    const D = c.hidden, R = which.length;
    let src = this.blocks[0].x;
    const whole = this.blocks.length === 1 && R === this.T && which.every((w, i) => w === i);
    if (!whole) {
      this.settle();
      src = this.s.xsel(R);
      const enc = this.ops.d.commandEncoder();
      which.forEach((w, i) => {
        const [blk, o] = this.locate(w);
        enc.copyBufferToBuffer(blk.x, o * D * 4, src, i * D * 4, D * 4);
      });
    }
    const out = this.s.logits(R);
    this.normMatmul(this.m.finalNorm, this.s.xn(R), { x: src, w: this.m.lmHead, y: out, T: R, K: D }, whole ? this.blocks[0] : undefined);
    return out;
  }
}
