/**
 * WriteBehind on its own: a write that fails while the caller is still busy with its next step is passed on by the
 * next flush, never reported as an unhandled rejection meanwhile (compile-pipeline.test failed so on a busy host,
 * when the next chunk's compile outlasted the failing write). Fails without the handler start() attaches.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WriteBehind } from '../../src/api/write-behind';

test('a write that fails before the next flush is thrown by that flush, and never unhandled', async () => {
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => void unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  try {
    const behind = new WriteBehind();
    let followed = false;
    await behind.start(async () => { throw new Error('disk full'); }, () => { followed = true; });
    // The caller's next step outlasts the write: Node reports unhandled rejections between macrotasks.
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(unhandled, []);
    await assert.rejects(behind.flush(), /disk full/);
    assert.equal(followed, false, 'what was to follow a failed write does not run');
    // settle() lets a failing write go quietly, for a caller already failing.
    await behind.start(() => Promise.reject(new Error('again')), () => {});
    await new Promise((r) => setTimeout(r, 20));
    await behind.settle();
    assert.deepEqual(unhandled, []);
  } finally {
    process.off('unhandledRejection', onUnhandled);
  }
});
