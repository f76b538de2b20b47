/**
 * Telling text files from binary ones before splitting, and decoding them.
 *
 * A sample of the bytes (the first 64 KiB) is binary when it holds a NUL
 * byte, when more than 10% of it are control characters other than tab,
 * newline, vertical tab, form feed, carriage return and escape, or when more
 * than 10% of it are bytes of invalid UTF-8 sequences (so Latin-1 text with a
 * few accented letters still passes).
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

/** Why `bytes` look binary, or null when they look like text. */
export function binaryReason(bytes: Uint8Array): string | null {
  const end = Math.min(bytes.length, SAMPLE);
  if (end === 0) return null;
  if ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff)) {
    return 'it starts with a UTF-16 byte order mark; save it as UTF-8';
  }
  let control = 0;
  let invalid = 0;
  for (let i = 0; i < end; ) {
    const c = bytes[i];
    if (c === 0) return `it contains NUL bytes (first at byte ${i})`;
    if ((c < 0x20 && !(c >= 0x09 && c <= 0x0d) && c !== 0x1b) || c === 0x7f) control++;
    const n = utf8SeqLength(bytes, i, end);
    if (n === 0) {
      invalid++;
      i++;
    } else i += n;
  }
  if (control / end > MAX_SHARE) return `${((100 * control) / end).toFixed(0)}% of its first ${end} bytes are control characters`;
  if (invalid / end > MAX_SHARE) return `${((100 * invalid) / end).toFixed(0)}% of its first ${end} bytes are not valid UTF-8`;
  return null;
}

/** True when `bytes` look like a binary file rather than text. */
export function looksBinary(bytes: Uint8Array): boolean {
  return binaryReason(bytes) !== null;
}

/** Decodes a text file (UTF-8, BOM dropped, invalid bytes replaced), or throws BinaryDocumentError. */
export function decodeDocumentBytes(docId: string, bytes: Uint8Array): string {
  const reason = binaryReason(bytes);
  if (reason) throw new BinaryDocumentError(docId, reason);
  return new TextDecoder('utf-8', { ignoreBOM: false }).decode(bytes);
}
