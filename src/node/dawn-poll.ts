/**
 * Dawn's Node binding waits for GPU work (buffer maps, onSubmittedWorkDone)
 * by queueing `wgpuInstanceProcessEvents` with `setImmediate` again and again
 * for as long as a wait lasts (dawn/node's AsyncRunner looks the global
 * `setImmediate` up at each call): a busy loop on the main thread. On a CPU
 * adapter (SwiftShader, llvmpipe) that loop takes a core from the threads
 * that do the "GPU" work; on a 2-core machine it halved what the CLI and the
 * benchmarks measured. This keeps the first `spinMs` of a wait as it was (a
 * short wait ends as soon as before) and polls the rest of it every
 * `intervalMs` with a timer, leaving the core idle in between.
 *
 * Only Dawn's callbacks are touched: functions made in native code. Every
 * other `setImmediate` call goes straight to Node's.
 */
const NATIVE = /\{\s*\[native code\]\s*\}\s*$/;

export interface PollThrottle {
  /** Polls that went by timer instead of setImmediate (for tests). */
  readonly deferred: number;
  uninstall(): void;
}

let installed: PollThrottle | null = null;

/** The throttle in place, if any. */
export const pollThrottle = (): PollThrottle | null => installed;

export function throttleDawnPolling(spinMs = 2, intervalMs = 1): PollThrottle {
  if (installed) return installed;
  const original = globalThis.setImmediate;
  let streakStart = 0;
  let last = -Infinity;
  let deferred = 0;
  const patched = function (this: unknown, fn: (...a: unknown[]) => void, ...args: unknown[]) {
    if (typeof fn !== 'function' || !NATIVE.test(Function.prototype.toString.call(fn))) return original(fn, ...args);
    const now = performance.now();
    // A poll long after the previous one starts a new wait.
    if (now - last > 3 * intervalMs + 2) streakStart = now;
    last = now;
    if (now - streakStart < spinMs) return original(fn, ...args);
    deferred++;
    return setTimeout(fn, intervalMs, ...args) as unknown as NodeJS.Immediate;
  } as typeof setImmediate;
  Object.assign(patched, original);
  globalThis.setImmediate = patched;
  installed = {
    get deferred() {
      return deferred;
    },
    uninstall() {
      if (globalThis.setImmediate === patched) globalThis.setImmediate = original;
      installed = null;
    },
  };
  return installed;
}
