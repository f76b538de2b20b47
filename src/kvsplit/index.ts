/** KVSplit: documents → chunks (text, character offsets, token ids). */
export { splitDocument, cutAt, snapOffset, SNAP_CHARS } from './split';
export { binaryReason, looksBinary, decodeDocumentBytes, decodeText, type TextEncodingName } from './binary';
export { allSentences, passages, paragraphs, sentences, trimSpan, type Span } from './units';
export { alignPieces } from './align';
export {
  BinaryDocumentError, DocumentTooLargeError, EmptyDocumentError, SplitError, DEFAULT_FIXED_TOKENS,
  DEFAULT_MAX_DOCUMENT_CHARS, type Chunk, type SplitMode, type SplitOptions,
} from './types';
