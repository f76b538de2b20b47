/**
 * Waiting for something to happen in a test (a call made, a step taken), checking every millisecond, where a fixed
 * sleep falls short on a busy host.
 */

/** Waits until `ok()` holds or `ms` have passed; says which. */
export async function waitFor(ok: () => boolean, ms: number): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (!ok()) {
    if (performance.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 1));
  }
  return true;
}

/**
 * Waits until `ok()` holds. Throws, naming `what`, if it has not happened within `timeoutMs`, so that a broken
 * implementation fails the test rather than hanging it.
 */
export async function until(ok: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  if (!(await waitFor(ok, timeoutMs))) throw new Error(`${what}: not within ${timeoutMs} ms`);
}
