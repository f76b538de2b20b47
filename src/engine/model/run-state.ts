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
 * Shapes, for a pass of T rows (R: rows whose logits or scores are read;
 * n: cache rows; D hidden; HD head dim; I intermediate; V vocabulary;
 * qDim = heads · HD; kvDim = kv heads · HD). All f32 unless stated.
 */
import type { LayerKind } from './config';
import type { Scratch } from './scratch';

type Name =
  | 'tokens' | 'rows' | 'qpos' | `cs.${LayerKind}` | `bounds.${LayerKind}`
  | 'x0' | 'x1' | 'xn' | 'qkv' | 'att' | 'gu' | 'act' | 'tmp'
  | 'ident' | `prek${number}` | 'probe.rows' | `probe.${number}` | 'xsel' | 'logits' | 'argmax';

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
  putRows(rows: Uint32Array) {
    return this.put('rows', rows);
  }
  rows() {
    return this.get('rows', 0);
  }
  /** i32 [T]: the position id of each pass row. */
  putQpos(pos: Int32Array) {
    return this.put('qpos', pos);
  }
  qpos() {
    return this.get('qpos', 0);
  }
  /** [T, HD/2, 2]: (cos, sin) of each row's position, per layer kind (their RoPE bases differ). */
  putRope(kind: LayerKind, table: Float32Array) {
    return this.put(`cs.${kind}`, table);
  }
  rope(kind: LayerKind) {
    return this.get(`cs.${kind}`, 0);
  }
  /** u32 [T, 2]: [first, last) cache rows visible to each row's query, per layer kind (local layers see a window). */
  putBounds(kind: LayerKind, bounds: Uint32Array) {
    return this.put(`bounds.${kind}`, bounds);
  }
  bounds(kind: LayerKind) {
    return this.get(`bounds.${kind}`, 0);
  }

  // Activations.

  /** [T, D]: the residual stream, in two buffers that each residual add swaps (reads one, writes the other). */
  x(which: 0 | 1, T: number) {
    return this.get(which === 0 ? 'x0' : 'x1', T * this.dims.D * 4);
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

  /** u32 [T]: 0, 1, …, T-1 (an identity scatter index). */
  putIdentity(T: number) {
    return this.put('ident', Uint32Array.from({ length: T }, (_, i) => i));
  }
  /** [T, kvDim]: layer l's keys after the k-norm and before RoPE, one buffer per layer. */
  preRopeK(l: number, T: number) {
    return this.get(`prek${l}`, T * this.dims.kvDim * 4);
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
