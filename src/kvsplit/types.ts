/** KVSplit's public types and errors. */

/** How a document is cut into chunks. */
export type SplitMode =
  /** Consecutive runs of exactly `tokens` ids of the whole document (the last run may be shorter). */
  | { kind: 'fixed'; tokens: number }
  /** Passages, then paragraphs, then sentences, packed greedily up to `maxTokens` ids per chunk. */
  | { kind: 'semantic'; maxTokens: number }
  /** The whole document as one chunk. */
  | { kind: 'document' }
  /** Cuts at character offsets chosen by the user (snapped to nearby whitespace when inside a word). */
  | { kind: 'boundaries'; offsets: readonly number[] };

export const DEFAULT_FIXED_TOKENS = 512;
export const DEFAULT_MAX_DOCUMENT_CHARS = 5_000_000;

export interface Chunk {
  docId: string;
  /** 0, 1, 2, ... in document order. */
  index: number;
  /** Always `doc.text.slice(start, end)`. */
  text: string;
  /**
   * Character (UTF-16 code unit) offsets into the document, monotone across chunks. `start === end` only for a
   * fixed run whose ids decode to nothing locatable (e.g. byte tokens of part of one character).
   */
  start: number;
  end: number;
  /** Token ids without BOS (KVCompile adds it). */
  tokens: number[];
}

export interface SplitOptions {
  /** Longest document accepted, in characters (default 5,000,000). */
  maxDocumentChars?: number;
}

export class SplitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SplitError';
  }
}

export class EmptyDocumentError extends SplitError {
  constructor(docId: string) {
    super(`Document "${docId}" is empty or holds only whitespace: there is nothing to split into chunks`);
    this.name = 'EmptyDocumentError';
  }
}

export class BinaryDocumentError extends SplitError {
  constructor(docId: string, reason: string) {
    super(`Document "${docId}" does not look like text (${reason}); only plain-text documents can be split`);
    this.name = 'BinaryDocumentError';
  }
}

export class DocumentTooLargeError extends SplitError {
  constructor(docId: string, chars: number, max: number) {
    super(
      `Document "${docId}" has ${chars.toLocaleString('en-US')} characters, more than the limit of ` +
        `${max.toLocaleString('en-US')} (maxDocumentChars); split it into smaller files first`,
    );
    this.name = 'DocumentTooLargeError';
  }
}
