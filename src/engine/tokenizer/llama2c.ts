/**
 * The llama2.c tokenizer (`tokenizer.bin`): int32 max_token_length, then per
 * token a float32 merge score, an int32 byte length and the bytes. Encoding
 * is run.c's: optional BOS, a leading space token when the text is not
 * empty, one token per UTF-8 character (or `<0xXX>` byte tokens, id byte+3,
 * when the character is not in the vocabulary), then repeatedly merge the
 * adjacent pair whose concatenation has the best score.
 */
import { ModelFormatError, type ByteSource } from '../formats/source';
import type { Tokenizer } from './types';

const latin1 = (b: Uint8Array) => String.fromCharCode(...b);

export class Llama2cTokenizer implements Tokenizer {
  readonly bosId = 1;
  readonly eosIds = [1];
  private ids = new Map<string, number>();

  constructor(
    private pieces: Uint8Array[],
    private scores: Float32Array,
  ) {
    pieces.forEach((p, i) => {
      const k = latin1(p);
      if (!this.ids.has(k)) this.ids.set(k, i);
    });
  }

  get vocabSize() {
    return this.pieces.length;
  }

  static async load(src: ByteSource, vocabSize: number): Promise<Llama2cTokenizer> {
    const bytes = await src.read(0, src.size);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const pieces: Uint8Array[] = [];
    const scores = new Float32Array(vocabSize);
    let off = 4;
    for (let i = 0; i < vocabSize; i++) {
      if (off + 8 > bytes.byteLength) {
        throw new ModelFormatError(`${src.name} is truncated: it holds ${i} of the model's ${vocabSize} tokens`);
      }
      scores[i] = view.getFloat32(off, true);
      const len = view.getInt32(off + 4, true);
      if (len < 0 || off + 8 + len > bytes.byteLength) throw new ModelFormatError(`${src.name} is corrupt at token ${i}`);
      pieces.push(bytes.slice(off + 8, off + 8 + len));
      off += 8 + len;
    }
    return new Llama2cTokenizer(pieces, scores);
  }

  encode(text: string, opts: { addBos?: boolean; addEos?: boolean } = {}): number[] {
    const out: number[] = [];
    if (opts.addBos ?? true) out.push(this.bosId);
    const utf8 = new TextEncoder().encode(text);
    const toks: number[] = [];
    // The leading space takes part in the merges, as in run.c.
    const space = this.ids.get(' ');
    if (utf8.length > 0 && space !== undefined) toks.push(space);
    for (let i = 0; i < utf8.length; ) {
      let j = i + 1;
      while (j < utf8.length && (utf8[j] & 0xc0) === 0x80 && j - i < 4) j++;
      const id = this.ids.get(latin1(utf8.subarray(i, j)));
      if (id !== undefined) toks.push(id);
      else for (let b = i; b < j; b++) toks.push(utf8[b] + 3);
      i = j;
    }
    for (const t of this.merge(toks)) out.push(t);
    if (opts.addEos) out.push(2);
    return out;
  }

  /**
   * run.c's merge rule (repeatedly merge the adjacent pair with the best
   * score, the leftmost on ties) in O(n log n): a linked list of tokens and
   * a heap of candidate pairs, stale candidates skipped when popped.
   */
  private merge(toks: number[]): number[] {
    const n = toks.length;
    const id = toks.slice();
    const next = Array.from({ length: n }, (_, i) => (i + 1 < n ? i + 1 : -1));
    const prev = Array.from({ length: n }, (_, i) => i - 1);
    const alive = new Array<boolean>(n).fill(true);
    type Cand = { score: number; left: number; a: number; b: number; merged: number };
    const heap: Cand[] = [];
    const better = (x: Cand, y: Cand) => x.score > y.score || (x.score === y.score && x.left < y.left);
    const push = (c: Cand) => {
      heap.push(c);
      for (let i = heap.length - 1; i > 0; ) {
        const p = (i - 1) >> 1;
        if (!better(heap[i], heap[p])) break;
        [heap[i], heap[p]] = [heap[p], heap[i]];
        i = p;
      }
    };
    const pop = (): Cand => {
      const top = heap[0];
      const last = heap.pop()!;
      if (heap.length) {
        heap[0] = last;
        for (let i = 0; ; ) {
          const l = 2 * i + 1, r = l + 1;
          let m = i;
          if (l < heap.length && better(heap[l], heap[m])) m = l;
          if (r < heap.length && better(heap[r], heap[m])) m = r;
          if (m === i) break;
          [heap[i], heap[m]] = [heap[m], heap[i]];
          i = m;
        }
      }
      return top;
    };
    const consider = (left: number) => {
      const right = left >= 0 ? next[left] : -1;
      if (left < 0 || right < 0) return;
      const merged = this.ids.get(latin1(this.pieces[id[left]]) + latin1(this.pieces[id[right]]));
      if (merged !== undefined) push({ score: this.scores[merged], left, a: id[left], b: id[right], merged });
    };
    for (let i = 0; i + 1 < n; i++) consider(i);
    while (heap.length) {
      const c = pop();
      const right = next[c.left];
      if (!alive[c.left] || right < 0 || id[c.left] !== c.a || id[right] !== c.b) continue;
      id[c.left] = c.merged;
      alive[right] = false;
      next[c.left] = next[right];
      if (next[right] >= 0) prev[next[right]] = c.left;
      consider(prev[c.left]);
      consider(c.left);
    }
    const out: number[] = [];
    for (let i = 0; i >= 0 && i < n; i = next[i]) out.push(id[i]);
    return out;
  }

  /** Bytes run.c prints for `token` following `prev` (`safe_printf` drops lone control bytes). */
  pieceBytes(prev: number, token: number): Uint8Array {
    let p = this.pieces[token] ?? new Uint8Array();
    if (prev === this.bosId && p[0] === 0x20) p = p.subarray(1);
    const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(latin1(p));
    if (m) p = Uint8Array.of(parseInt(m[1], 16));
    if (p.length === 1 && !(p[0] >= 0x20 && p[0] < 0x7f) && !(p[0] >= 0x09 && p[0] <= 0x0d)) return new Uint8Array();
    return p;
  }

  decode(ids: readonly number[]): string {
    const chunks: Uint8Array[] = [];
    let prev = this.bosId;
    for (const id of ids) {
      if (id !== this.bosId) chunks.push(this.pieceBytes(prev, id));
      prev = id;
    }
    const all = new Uint8Array(chunks.reduce((a, c) => a + c.length, 0));
    let o = 0;
    for (const c of chunks) {
      all.set(c, o);
      o += c.length;
    }
    return new TextDecoder().decode(all);
  }
}
