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
    for (;;) {
      let best = -1e10;
      let at = -1;
      let bestId = -1;
      for (let i = 0; i + 1 < toks.length; i++) {
        const id = this.ids.get(latin1(this.pieces[toks[i]]) + latin1(this.pieces[toks[i + 1]]));
        if (id !== undefined && this.scores[id] > best) {
          best = this.scores[id];
          at = i;
          bestId = id;
        }
      }
      if (at < 0) break;
      toks.splice(at, 2, bestId);
    }
    out.push(...toks);
    if (opts.addEos) out.push(2);
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
