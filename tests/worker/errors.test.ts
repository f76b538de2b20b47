/**
 * Errors across the worker boundary (src/worker/errors.ts): each known class
 * survives serialisation (plain data, as postMessage carries it) as an
 * instance of itself with its message; aborts come back as AbortError
 * DOMExceptions; an unknown name comes back as a WorkerError carrying it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DeviceLostError, GpuValidationError, ModelUploadError, ModelWontFitError, WorkerError, rebuildError, serializeError } from '../../src/worker/errors';
import { StorageFullError } from '../../src/kvstore/types';
import { EmptyDocumentError, SplitError } from '../../src/kvsplit/types';
import { NoWebGPUError } from '../../src/engine/gpu/device';

/** What the page gets back for `e`: serialised, cloned as the structured clone would, rebuilt. */
const across = (e: unknown) => rebuildError(structuredClone(serializeError(e)));

test('known error classes come back as themselves', () => {
  const cases: [Error, new (...a: never[]) => Error][] = [
    [new ModelUploadError('SmolLM2', 'out of memory'), ModelUploadError],
    [new ModelWontFitError('Big', ['embed is 3 GB, the limit is 2 GB.'], 'qa-demo'), ModelWontFitError],
    [new StorageFullError(10, 5, 'in OPFS'), StorageFullError],
    [new EmptyDocumentError('d1'), EmptyDocumentError],
    [new NoWebGPUError('no adapter'), NoWebGPUError],
    [new GpuValidationError('CopyBufferToBuffer out of bounds'), GpuValidationError],
    [new DeviceLostError('destroyed'), DeviceLostError],
  ];
  for (const [e, cls] of cases) {
    const r = across(e);
    assert.ok(r instanceof cls, `${e.name} is rebuilt as ${cls.name}`);
    assert.ok(r instanceof Error);
    assert.equal(r.name, e.name);
    assert.equal(r.message, e.message);
  }
  // A subclass stays a subclass of its parent too.
  assert.ok(across(new EmptyDocumentError('d2')) instanceof SplitError);
  assert.match(new ModelWontFitError('Big', ['too wide.'], 'qa-demo').message, /^Big will not fit .* qa-demo stays loaded\.$/);
  assert.ok(!(across(new ModelUploadError('a', 'b')) instanceof ModelWontFitError));
});

test('aborts come back as AbortError, unknown names as a WorkerError that keeps them', () => {
  const abort = across(new DOMException('stopped', 'AbortError'));
  assert.ok(abort instanceof DOMException);
  assert.equal(abort.name, 'AbortError');
  const odd = Object.assign(new Error('strange'), { name: 'QuotaExceededError' });
  const r = across(odd);
  assert.ok(r instanceof WorkerError);
  assert.equal(r.name, 'QuotaExceededError');
  assert.equal(r.message, 'strange');
  // Not an error at all: its text, named Error.
  assert.deepEqual(serializeError('plain text'), { name: 'Error', message: 'plain text' });
});
