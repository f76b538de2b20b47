/**
 * Waits until `ok()` holds, checking every millisecond: for a test that must act once something has happened
 * (a call made, a step taken), where a fixed sleep falls short on a busy host. Throws, naming `what`, if it has
 * not happened within `timeoutMs`, so that a broken implementation fails the test rather than hanging it.
 */
export async function until(ok: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!ok()) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 1));
  }
}
