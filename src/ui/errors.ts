/** What the studio tells the user when something fails: one clear sentence per kind of problem. */

export function describeError(e: unknown, what = 'That'): string {
  const err = e as { name?: string; message?: string };
  const name = err?.name ?? 'Error';
  const msg = err?.message ?? String(e);
  switch (name) {
    case 'StorageFullError':
      return `Browser storage is full. ${msg}. Expire caches in the cache library (or Clear it) and compile again.`;
    case 'QuotaExceededError':
      return `Browser storage is full (${msg}). Expire caches in the cache library (or Clear it) and try again.`;
    case 'EmptyDocumentError':
    case 'BinaryDocumentError':
    case 'DocumentTooLargeError':
    case 'UnsupportedFileError':
    case 'PdfError':
      return msg;
    case 'AbortError':
      return `${what} was cancelled.`;
  }
  if (/device (was )?lost|destroyed|GPUDevice/i.test(msg)) {
    return `The GPU device was lost (${msg}). It is re-created on the next request: try again.`;
  }
  return `${what} failed: ${msg}`;
}

export function isAbort(e: unknown): boolean {
  return (e as { name?: string })?.name === 'AbortError';
}
