/**
 * Turning a file the user added into document text: .txt and .md as UTF-8,
 * or as Windows-1252 when they are not UTF-8 (binary files refused), .html
 * through DOMParser's textContent (scripts and styles dropped; never
 * rendered), .pdf through pdfjs-dist. Text is only ever shown as text.
 */
import { decodeText, EmptyDocumentError, type TextEncodingName } from '../kvsplit';
import { MAX_FILE_BYTES } from './doc-limits';
import type { DocKind } from './studio-store';

export class UnsupportedFileError extends Error {
  constructor(name: string) {
    super(`"${name}" is not a supported document: add .txt, .md, .html or .pdf files, or paste text`);
    this.name = 'UnsupportedFileError';
  }
}

/** A file over MAX_FILE_BYTES, not read (doc-actions words the refusal with the loaded model, see doc-limits). */
export class FileTooLargeError extends Error {
  constructor(readonly fileName: string, readonly bytes: number) {
    super(`"${fileName}" is ${(bytes / 2 ** 20).toFixed(1)} MiB, more than the ${MAX_FILE_BYTES / 2 ** 20} MiB a file may have`);
    this.name = 'FileTooLargeError';
  }
}

const KINDS: Record<string, DocKind> = { txt: 'txt', text: 'txt', md: 'md', markdown: 'md', html: 'html', htm: 'html', pdf: 'pdf' };

export function kindOf(file: { name: string; type: string }): DocKind | null {
  const ext = /\.([^.]+)$/.exec(file.name)?.[1]?.toLowerCase() ?? '';
  if (KINDS[ext]) return KINDS[ext];
  if (file.type === 'text/plain') return 'txt';
  if (file.type === 'text/markdown') return 'md';
  if (file.type === 'text/html') return 'html';
  if (file.type === 'application/pdf') return 'pdf';
  return null;
}

const BLOCKS = 'p,div,br,li,tr,h1,h2,h3,h4,h5,h6,section,article,header,footer,blockquote,pre,dt,dd,figcaption,table';

/** The readable text of an HTML document: script, style and template content dropped, blocks on their own lines. */
export function htmlToText(html: string): string {
  const doc = new DOMParser().parseFromString(html, 'text/html');
  doc.querySelectorAll('script,style,noscript,template,iframe,object,svg').forEach((e) => e.remove());
  doc.querySelectorAll(BLOCKS).forEach((e) => e.after(doc.createTextNode('\n')));
  const text = (doc.body ?? doc.documentElement).textContent ?? '';
  return text.replace(/[ \t\u00a0]+/g, ' ').replace(/ *\n */g, '\n').replace(/\n{3,}/g, '\n\n').trim();
}

/** The file's text and kind, and for text files the encoding it was read in (UTF-8, or Windows-1252 when it is not UTF-8). */
export async function extractText(file: File): Promise<{ text: string; kind: DocKind; encoding?: TextEncodingName }> {
  const kind = kindOf(file);
  if (!kind) throw new UnsupportedFileError(file.name);
  if (file.size > MAX_FILE_BYTES) throw new FileTooLargeError(file.name, file.size);
  const bytes = new Uint8Array(await file.arrayBuffer());
  let text: string;
  if (kind === 'pdf') {
    const { pdfText } = await import('./pdf-text');
    try {
      text = await pdfText(bytes);
    } catch (e) {
      const err = new Error(`"${file.name}" could not be read as a PDF: ${(e as Error).message}`);
      err.name = 'PdfError';
      throw err;
    }
    if (!/\S/.test(text)) {
      const err = new EmptyDocumentError(file.name);
      err.message = `"${file.name}" has no text layer (a scanned PDF?): there is no text to split into chunks`;
      throw err;
    }
    return { text, kind };
  }
  const decoded = decodeText(file.name, bytes);
  text = kind === 'html' ? htmlToText(decoded.text) : decoded.text;
  if (!/\S/.test(text)) throw new EmptyDocumentError(file.name);
  return { text, kind, encoding: decoded.encoding };
}
