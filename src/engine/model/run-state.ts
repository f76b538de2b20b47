/**
 * The named activation buffers of a forward pass: the counterpart of
 * llama2.c's `RunState`. Every buffer ForwardPass uses has one accessor here,
 * with its shape and layout, so a misspelt name is a type error instead of a
 * fresh, empty buffer.
 *
 * The buffers live in the engine's Scratch, which grows each one by doubling
 * and stops at the adapter's binding limit; the accessors only compute the
 * bytes. Passes share them: a buffer's contents last until the next pass
 * writes it.
 *
 * A pass computes its rows in blocks (ForwardPass): each block keeps its own
 * residual stream and per-row inputs (the `block` argument, 0 by default),
 * and the temporaries of a layer (xn, qkv, att, gu, act, tmp) serve one
 * block at a time.
 *
 * Shapes, for a block of T rows (R: rows whose logits or scores are read;
 * n: cache rows; D hidden; HD head dim; I intermediate; V vocabulary;
 * qDim = heads · HD; kvDim = kv heads · HD). All f32 unless stated.
 */
import type { LayerKind } from './config';
import type { Scratch } from './scratch';
import type { StoreDType } from '../ops-args';

/** Buffers each block of a pass's rows has of its own (block 0 under the plain name, block k under `name#k`). */
type PerBlock = 'rows' | 'qpos' | 'csrows' | `cs.${LayerKind}` | `bounds.${LayerKind}` | 'x0' | 'x1' | 'ident';
type Name =
  | PerBlock | `${PerBlock}#${number}`
  | 'tokens' | 'xn' | 'qkv' | 'att' | 'gu' | 'act' | 'tmp'
  | `prek${number}` | 'probe.rows' | `probe.${number}` | 'xsel' | 'logits' | 'argmax';

const named = (name: PerBlock, block: number): Name => (block ? `${name}#${block}` : name);

export interface RunDims {
  D: number;
  qDim: number;
  kvDim: number;
  I: number;
  V: number;
}

export class RunState {
  constructor(
    private scratch: Scratch,
    private dims: RunDims,
  ) {}

  /** The scratch's version (Scratch.version): bumped whenever one of these buffers is made or replaced. */
  get version(): number {
    return this.scratch.version;
  }

  private get(name: Name, bytes: number) {
    return this.scratch.get(name, bytes);
  }

  private put(name: Name, data: ArrayBufferView & { byteLength: number }) {
    return this.scratch.put(name, data);
  }

  // Inputs of the pass's rows, uploaded from the host.

  /** u32 [T]: the token ids to embed. */
  putTokens(ids: Uint32Array) {
    return this.put('tokens', ids);
  }
  /** u32 [T]: the cache row of each pass row, where its K and V are written. */
  putRows(rows: Uint32Array, block = 0) {
    return this.put(named('rows', block), rows);
  }
  rows(block = 0) {
    return this.get(named('rows', block), 0);
  }
  /** i32 [T]: the position id of each pass row. */
  putQpos(pos: Int32Array, block = 0) {
    return this.put(named('qpos', block), pos);
  }
  qpos(block = 0) {
    return this.get(named('qpos', block), 0);
  }
  /** u32 [T]: 0, 1, …, T - 1: the rows of a block's own RoPE tables (putRope), where the model's by position cannot serve. */
  putCsRows(T: number, block = 0) {
    return this.put(named('csrows', block), Uint32Array.from({ length: T }, (_, i) => i));
  }
  csRows(block = 0) {
    return this.get(named('csrows', block), 0);
  }
  /** [T, HD/2, 2]: (cos, sin) of each row's position, per layer kind (their RoPE bases differ). */
  putRope(kind: LayerKind, table: Float32Array, block = 0) {
    return this.put(named(`cs.${kind}`, block), table);
  }
  rope(kind: LayerKind, block = 0) {
    return this.get(named(`cs.${kind}`, block), 0);
  }
  /** u32 [T, 2]: [first, last) cache rows visible to each row's query, per layer kind (local layers see a window). */
  putBounds(kind: LayerKind, bounds: Uint32Array, block = 0) {
    return this.put(named(`bounds.${kind}`, block), bounds);
  }
  bounds(kind: LayerKind, block = 0) {
    return this.get(named(`bounds.${kind}`, block), 0);
  }

  // Activations.

  /** [T, D]: the residual stream, in two buffers that each residual add swaps (reads one, writes the other). */
  x(which: 0 | 1, T: number, block = 0) {
    return this.get(named(which === 0 ? 'x0' : 'x1', block), T * this.dims.D * 4);
  }
  /** Bytes a row takes in the largest of a layer's temporaries, which one buffer (one binding) must hold for a block. */
  get rowBytes(): number {
    const { D, qDim, kvDim, I } = this.dims;
    return 4 * Math.max(D, qDim + 2 * kvDim, 2 * I);
  }
  /** [T, D]: RMS-normed x, the input of a layer's matmuls (and of the LM head, with T = R). */
  xn(T: number) {
    return this.get('xn', T * this.dims.D * 4);
  }
  /** [T, qDim + 2 kvDim]: per row, the q heads, then the k heads, then the v heads. */
  qkv(T: number) {
    return this.get('qkv', T * (this.dims.qDim + 2 * this.dims.kvDim) * 4);
  }
  /** [T, qDim]: attention output, head after head. */
  att(T: number) {
    return this.get('att', T * this.dims.qDim * 4);
  }
  /** [T, 2I]: per row, the gate projection, then the up projection. */
  gu(T: number) {
    return this.get('gu', T * 2 * this.dims.I * 4);
  }
  /** [T, I]: act(gate) · up, the input of the down projection. */
  act(T: number) {
    return this.get('act', T * this.dims.I * 4);
  }
  /** [T, D]: an output projection before its post-norm (models with post-norms only). */
  tmp(T: number) {
    return this.get('tmp', T * this.dims.D * 4);
  }

  // Captures and read-backs.

  /** u32 [T]: first, first + 1, …, first + T - 1 (a block's rows of the pass, as a scatter index). */
  putIdentity(T: number, first = 0, block = 0) {
    return this.put(named('ident', block), Uint32Array.from({ length: T }, (_, i) => first + i));
  }
  /**
   * [T, kvDim] (every row of the pass): layer l's keys after the k-norm and before RoPE, one buffer per layer, in the
   * cache's precision (f32, or halves packed two a u32).
   */
  preRopeK(l: number, T: number, dtype: StoreDType) {
    return this.get(`prek${l}`, T * this.dims.kvDim * (dtype === 'f16' ? 2 : 4));
  }
  /** u32 [R]: the pass rows whose attention scores are read. */
  putProbeRows(rows: Uint32Array) {
    return this.put('probe.rows', rows);
  }
  /** [R, n]: one head's raw attention scores for the probed rows, one buffer per head. */
  probe(head: number, R: number, n: number) {
    return this.get(`probe.${head}`, R * n * 4);
  }
  /** [R, D]: the rows of x whose logits are read, gathered when not all of them in order. */
  xsel(R: number) {
    return this.get('xsel', R * this.dims.D * 4);
  }
  /** [R, V]: logits. */
  logits(R: number) {
    return this.get('logits', R * this.dims.V * 4);
  }
  /** u32 [1]: the greedy token of the last row (argmax of its logits). */
  argmax() {
    return this.get('argmax', 4);
  }
}
