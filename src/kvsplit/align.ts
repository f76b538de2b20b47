/**
 * Where decoded token runs lie in the source text.
 *
 * Decoding a run of ids rarely gives back the source verbatim: llama2.c's
 * decoder drops the leading space of a run and every byte-fallback character,
 * byte-level BPE decoders give U+FFFD for a character whose bytes straddle two
 * runs, normalizers may change characters. `alignPieces` walks the decoded
 * runs and the document side by side with a few forgiving rules and returns,
 * for each run, the document offset where it ends. The offsets are monotone,
 * the last one is the document's length, and a run boundary never falls
 * inside a surrogate pair.
 */

const REPLACEMENT = '\ufffd';
const isSpace = (c: string) => /\s/.test(c);
const isControl = (c: string) => c < ' ' || c === '\x7f';
/** Code units of the code point starting at `j`. */
const cpLen = (s: string, j: number) => {
  const c = s.charCodeAt(j);
  return c >= 0xd800 && c <= 0xdbff && j + 1 < s.length ? 2 : 1;
};

/** How far to look ahead to re-synchronize after a mismatch, and the lengths of text tried. */
const LOOKAHEAD = 32;
const PROBES = [8, 3];

/** End offsets in `doc` of each of `pieces` (decoded runs, in order). */
export function alignPieces(doc: string, pieces: readonly string[]): number[] {
  const P = pieces.join('');
  const ends: number[] = [];
  let acc = 0;
  for (const p of pieces) ends.push((acc += p.length));
  const out = new Array<number>(pieces.length);
  let bi = 0;
  let i = 0;
  let j = 0;
  const record = () => {
    while (bi < ends.length && ends[bi] <= i) out[bi++] = j;
  };
  while (i < P.length && j < doc.length) {
    record();
    const p = P[i];
    const d = doc[j];
    if (p === d) {
      i++;
      j++;
    } else if (p === REPLACEMENT) {
      // A character split between runs (or undecodable): all of its U+FFFDs stand for one source character.
      // A run boundary among them goes after that character.
      while (i < P.length && P[i] === REPLACEMENT) i++;
      j += cpLen(doc, j);
    } else if (d.charCodeAt(0) > 0x7f && p.charCodeAt(0) <= 0x7f && !isSpace(p)) {
      j += cpLen(doc, j); // a character the decoder dropped (llama2.c's byte fallback)
    } else if (isSpace(d) || isControl(d)) {
      j++; // whitespace or a control character the decoder left out
    } else if (isSpace(p)) {
      i++; // whitespace the decoder added (a tokenizer's prefix space)
    } else {
      const skip = resync(doc, j, P, i);
      if (skip.doc) j += skip.doc;
      else if (skip.piece) i += skip.piece;
      else {
        i++;
        j += cpLen(doc, j);
      }
    }
  }
  record();
  while (bi < out.length) out[bi++] = j;
  if (out.length) out[out.length - 1] = doc.length;
  for (let k = 0; k < out.length; k++) {
    // Never cut a surrogate pair.
    const c = doc.charCodeAt(out[k]);
    if (out[k] > 0 && out[k] < doc.length && c >= 0xdc00 && c <= 0xdfff) out[k]++;
    if (k > 0 && out[k] < out[k - 1]) out[k] = out[k - 1];
  }
  return out;
}

/** The smallest skip in the document, or else in the decoded text, after which they agree again. */
function resync(doc: string, j: number, P: string, i: number): { doc: number; piece: number } {
  for (const probe of PROBES) {
    const want = P.slice(i, i + probe);
    const have = doc.slice(j, j + probe);
    for (let d = 1; d <= LOOKAHEAD; d++) {
      if (want.length === probe && doc.startsWith(want, j + d)) return { doc: d, piece: 0 };
      if (have.length === probe && P.startsWith(have, i + d)) return { doc: 0, piece: d };
    }
  }
  return { doc: 0, piece: 0 };
}
