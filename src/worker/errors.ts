/**
 * The errors that cross the worker boundary, in one place: the worker's own
 * classes, and the registry of every class the page tells apart. An error is
 * sent as its class name and message (`serializeError`) and rebuilt on the
 * page as an instance of the same class (`rebuildError`), so callers test
 * `instanceof ModelUploadError`, never a name string. A name the registry does
 * not know comes back as a `WorkerError` carrying that name.
 */
import { DeviceLostError, GpuValidationError, ModelFormatError, NoWebGPUError, OutOfGpuMemoryError, UnsupportedModelError } from '../engine';

// The engine's own error classes, so the page finds every error that crosses the worker here.
export { DeviceLostError, GpuValidationError, ModelFormatError, NoWebGPUError, OutOfGpuMemoryError, UnsupportedModelError };
import { BinaryDocumentError, DocumentTooLargeError, EmptyDocumentError, SplitError } from '../kvsplit/types';
import { CorruptBlobError, StorageFullError } from '../kvstore/types';

/** Uploading a model's weights failed after the loaded model was dropped: no model is loaded now. */
/** A download from the Hugging Face Hub failed (network, missing file, gated repository, no storage). */
export class HubError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HubError';
  }
}

export class ModelUploadError extends Error {
  constructor(modelName: string, cause: string) {
    super(`Uploading ${modelName} to the GPU failed: ${cause}`);
    this.name = 'ModelUploadError';
  }
}

/** A model refused from its plan before anything was uploaded; the loaded model (if any) stays. */
export class ModelWontFitError extends Error {
  constructor(modelName: string, problems: readonly string[], kept: string | null) {
    super(`${modelName} will not fit on this adapter: ${problems.join(' ')}. Nothing was uploaded.${kept ? ` ${kept} stays loaded.` : ''}`);
    this.name = 'ModelWontFitError';
  }
}

/** A worker that crashed or failed to start, or an error class the page does not know (its name is kept). */
export class WorkerError extends Error {
  constructor(name: string, message: string) {
    super(message);
    this.name = name;
  }
}

/** An error as it travels in a message. */
export interface SerializedError {
  name: string;
  message: string;
}

type ErrorClass = abstract new (...args: never[]) => Error;

/** Every error class the page can get back as itself, by the name its instances carry. */
const CLASSES: Record<string, ErrorClass> = {
  ModelUploadError, ModelWontFitError, NoWebGPUError, OutOfGpuMemoryError, UnsupportedModelError, ModelFormatError, HubError, DeviceLostError, GpuValidationError,
  SplitError, EmptyDocumentError, BinaryDocumentError, DocumentTooLargeError, CorruptBlobError, StorageFullError,
};

export function serializeError(e: unknown): SerializedError {
  const err = e as { name?: unknown; message?: unknown } | null;
  const name = typeof err?.name === 'string' && err.name ? err.name : 'Error';
  const message = typeof err?.message === 'string' ? err.message : String(e);
  return { name, message };
}

/** The error `s` stands for: an instance of its class (message as sent), a DOMException for aborts. */
export function rebuildError(s: SerializedError): Error {
  if (s.name === 'AbortError') return new DOMException(s.message, 'AbortError');
  const cls = Object.hasOwn(CLASSES, s.name) ? CLASSES[s.name] : null;
  if (!cls) return new WorkerError(s.name, s.message);
  // The class's prototype without its constructor (whose arguments are not sent): instanceof and name hold.
  const e = Object.create(cls.prototype) as Error;
  Object.defineProperties(e, {
    name: { value: s.name, writable: true, configurable: true },
    message: { value: s.message, writable: true, configurable: true },
    stack: { value: `${s.name}: ${s.message}\n    (rebuilt from the inference worker)`, writable: true, configurable: true },
  });
  return e;
}
