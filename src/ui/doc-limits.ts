/**
 * How large a document may be, and the refusal that says so in words: the
 * file, its size, the limit, and why the limit is there, which is the
 * storage the KV cache of that many tokens would take for the loaded model
 * (layers × KV values per token and layer, that is KV heads × head dim,
 * × 2 for K and V × 4 bytes, as the studio stores f32 caches).
 */
import { DEFAULT_MAX_DOCUMENT_CHARS } from '../kvsplit/types';

/** Longest document the studio splits, in characters (KVSplit's own limit). */
export const MAX_DOCUMENT_CHARS = DEFAULT_MAX_DOCUMENT_CHARS;
/** Largest file read at all. */
export const MAX_FILE_BYTES = 64 * 2 ** 20;
/** Tokens per character when none was measured: about four characters per token in English text. */
export const DEFAULT_TOKENS_PER_CHAR = 0.25;
export interface LimitModel {
  id: string;
  layers: number;
  /** How the app keeps this model's keys and values: f32 (4 bytes a value) or f16 (2). */
  kvDtype: 'f32' | 'f16';
  /** layers × KV heads × head dim × 2 (K and V) × the bytes of a value. */
  kvBytesPerToken: number;
}

const n = (v: number) => Math.round(v).toLocaleString('en-US');

/** "about 1.3 million tokens" */
function tokensInWords(t: number): string {
  if (t >= 1e6) return `about ${(t / 1e6).toFixed(1)} million tokens`;
  if (t >= 1e4) return `about ${n(Math.round(t / 1000))} thousand tokens`;
  return `about ${n(t)} tokens`;
}

/** Bytes in decimal units, as a person reads a storage size. */
function storage(b: number): string {
  if (b >= 1e12) return `${(b / 1e12).toFixed(1)} TB`;
  if (b >= 1e9) return `${(b / 1e9).toFixed(1)} GB`;
  if (b >= 1e6) return `${(b / 1e6).toFixed(1)} MB`;
  if (b >= 1e3) return `${(b / 1e3).toFixed(1)} kB`;
  return `${n(b)} bytes`;
}

/** What one token's KV cache takes, written out from the model's shape. */
export function kvPerTokenInWords(m: LimitModel): string {
  const bytes = m.kvDtype === 'f16' ? 2 : 4;
  const perLayer = m.kvBytesPerToken / (m.layers * 2 * bytes);
  return `${m.layers} layers × ${n(perLayer)} values (KV heads × head dim) × 2 (K and V) × ${bytes} bytes (${m.kvDtype}) = ${storage(m.kvBytesPerToken)} per token`;
}

/**
 * The refusal of a document over the limit: `bytes` is the file's size (absent for pasted text), `chars` its
 * length once decoded (absent when the file was too large to read), `tokensPerChar` as measured on a sample of it.
 */
export function tooLargeMessage(
  doc: { name: string; bytes?: number; chars?: number },
  model: LimitModel | null,
  tokensPerChar = DEFAULT_TOKENS_PER_CHAR,
): string {
  const size = [doc.bytes !== undefined ? storage(doc.bytes) : null, doc.chars !== undefined ? `${n(doc.chars)} characters` : null].filter(Boolean);
  const limit = doc.chars === undefined && doc.bytes !== undefined && doc.bytes > MAX_FILE_BYTES
    ? `the ${MAX_FILE_BYTES / 2 ** 20} MiB a file may have (and a document may have at most ${n(MAX_DOCUMENT_CHARS)} characters)`
    : `the limit of ${n(MAX_DOCUMENT_CHARS)} characters a document may have`;
  let why = 'The limit keeps a document\'s compiled caches within what a browser can store.';
  if (model) {
    const tokens = MAX_DOCUMENT_CHARS * tokensPerChar;
    why = `The limit is there because of storage: ${n(MAX_DOCUMENT_CHARS)} characters are ${tokensInWords(tokens)} for ${model.id}, and their `
      + `KV cache would take ${storage(tokens * model.kvBytesPerToken)} of browser storage (${kvPerTokenInWords(model)}).`;
  }
  return `"${doc.name}" is too large: ${size.join(', ')}, more than ${limit}. ${why} Split it into smaller documents and add those.`;
}
