/**
 * Telling text files from binary ones before splitting, and decoding them.
 *
 * A sample of the bytes (the first 64 KiB) is binary when it holds a NUL
 * byte, when more than 10% of it are control characters other than tab,
 * newline, vertical tab, form feed, carriage return and escape (counting the
 * bytes Windows-1252 leaves undefined when the text is not UTF-8), or when it
 * is neither UTF-8 nor plausible Windows-1252 (Latin-1) text: more than 10%
 * invalid UTF-8 and more than 30% of bytes outside ASCII. Text that is not
 * UTF-8 is decoded as Windows-1252.
 */
import { BinaryDocumentError } from './types';

const SAMPLE = 64 * 1024;
const MAX_SHARE = 0.1;

/** Length of the valid UTF-8 sequence at `i`, or 0 when the bytes there are invalid. */
function utf8SeqLength(b: Uint8Array, i: number, end: number): number {
  const c = b[i];
  if (c < 0x80) return 1;
  let n: number;
  let min: number;
  if (c >= 0xc2 && c <= 0xdf) [n, min] = [2, 0x80];
  else if (c >= 0xe0 && c <= 0xef) [n, min] = [3, 0x800];
  else if (c >= 0xf0 && c <= 0xf4) [n, min] = [4, 0x10000];
  else return 0;
  if (i + n > end) return end - i; // cut by the sample's end: not held against the text
  let cp = c & (0x7f >> n);
  for (let k = 1; k < n; k++) {
    const x = b[i + k];
    if ((x & 0xc0) !== 0x80) return 0;
    cp = (cp << 6) | (x & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

/** Byte statistics of the sample that tell text from binary and UTF-8 from Windows-1252. */
function sampleCounts(bytes: Uint8Array, end: number) {
  let control = 0;
  let invalid = 0;
  let multi = 0;
  let high = 0;
  let undefined1252 = 0;
  let nul = -1;
  for (let i = 0; i < end; i++) {
    const c = bytes[i];
    if (c === 0 && nul < 0) nul = i;
    if ((c < 0x20 && !(c >= 0x09 && c <= 0x0d) && c !== 0x1b) || c === 0x7f) control++;
    if (c >= 0x80) high++;
    // The five bytes Windows-1252 leaves undefined (they decode to C1 control characters).
    if (c === 0x81 || c === 0x8d || c === 0x8f || c === 0x90 || c === 0x9d) undefined1252++;
  }
  for (let i = 0; i < end; ) {
    const n = utf8SeqLength(bytes, i, end);
    if (n === 0) {
      invalid++;
      i++;
    } else {
      if (n > 1) multi++;
      i += n;
    }
  }
  return { control, invalid, multi, high, undefined1252, nul };
}

/** Share of non-ASCII bytes above which text that is not UTF-8 is not taken for Windows-1252 (Western prose has a few %). */
const MAX_HIGH_1252 = 0.3;

/** Why `bytes` look binary, or null when they look like text (UTF-8, or Windows-1252 / Latin-1). */
export function binaryReason(bytes: Uint8Array): string | null {
  const end = Math.min(bytes.length, SAMPLE);
  if (end === 0) return null;
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) {
    return 'it starts with a UTF-16 byte order mark; save it as UTF-8';
  }
  const k = sampleCounts(bytes, end);
  if (k.nul >= 0) return `it contains NUL bytes (first at byte ${k.nul})`;
  const pct = (n: number) => `${((100 * n) / end).toFixed(0)}%`;
  const control = k.control + (k.invalid > k.multi ? k.undefined1252 : 0);
  if (control / end > MAX_SHARE) return `${pct(control)} of its first ${end} bytes are control characters`;
  // Mostly-UTF-8 text with a few bad bytes is UTF-8; otherwise it must read as Western (Windows-1252) prose.
  if (k.invalid > k.multi && k.invalid / end > MAX_SHARE && k.high / end > MAX_HIGH_1252) {
    return `${pct(k.invalid)} of its first ${end} bytes are not valid UTF-8, and ${pct(k.high)} are outside ASCII, too many for Windows-1252 (Latin-1) text`;
  }
  return null;
}

/** True when `bytes` look like a binary file rather than text. */
export function looksBinary(bytes: Uint8Array): boolean {
  return binaryReason(bytes) !== null;
}

export type TextEncodingName = 'UTF-8' | 'Windows-1252';

/** Windows-1252's characters for the bytes 0x80-0x9f (empty where it leaves the byte undefined). */
const CP1252_80_9F = [...'€\0‚ƒ„…†‡ˆ‰Š‹Œ\0Ž\0\0‘’“”•–—˜™š›œ\0žŸ'].map((c) => (c === '\0' ? '' : c));

/**
 * Decodes a text file, or throws BinaryDocumentError: UTF-8 (BOM dropped) when the bytes are valid UTF-8, or
 * mostly so (a few bad bytes become U+FFFD); otherwise Windows-1252, the superset of Latin-1 that Western
 * text editors write, where every byte is a character. Says which encoding it used.
 */
export function decodeText(docId: string, bytes: Uint8Array): { text: string; encoding: TextEncodingName } {
  const reason = binaryReason(bytes);
  if (reason) throw new BinaryDocumentError(docId, reason);
  try {
    return { text: new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes), encoding: 'UTF-8' };
  } catch {
    const k = sampleCounts(bytes, bytes.length);
    if (k.multi > k.invalid) return { text: new TextDecoder('utf-8', { ignoreBOM: false }).decode(bytes), encoding: 'UTF-8' };
    // Node's decoder treats the label as ISO-8859-1 (0x80-0x9f as C1 controls); browsers follow WHATWG. Map them here.
    const text = new TextDecoder('windows-1252').decode(bytes).replace(/[\x80-\x9f]/g, (c) => CP1252_80_9F[c.charCodeAt(0) - 0x80] || c);
    return { text, encoding: 'Windows-1252' };
  }
}

/** Decodes a text file (see decodeText) to its text. */
export function decodeDocumentBytes(docId: string, bytes: Uint8Array): string {
  return decodeText(docId, bytes).text;
}
