/**
 * One write at a time, running behind the caller's next step: ContextCache.compileContext stores a chunk (host work:
 * encoding, checksums, the OPFS write and its check) while the next chunk compiles on the GPU.
 */
export class WriteBehind {
  private last: { done: Promise<unknown>; then: () => void } | null = null;

  /** Waits for the write under way (its failure is thrown here), then runs what was to follow it. */
  async flush(): Promise<void> {
    const last = this.last;
    this.last = null;
    if (!last) return;
    await last.done;
    last.then();
  }

  /** Flushes the write under way, then starts `write`, with `then` to run once it is done. */
  async start(write: () => Promise<unknown>, then: () => void): Promise<void> {
    await this.flush();
    const done = write();
    // A write can fail while the caller is busy (the next chunk compiling): its failure waits for flush (or settle)
    // rather than being reported unhandled meanwhile.
    done.catch(() => {});
    this.last = { done, then };
  }

  /** Lets a write under way finish, whatever it gives (writes are atomic), so none runs after a failure is passed on. */
  async settle(): Promise<void> {
    const last = this.last;
    this.last = null;
    await last?.done.catch(() => {});
  }
}
