/**
 * ContextCache over postMessage: the page's ContextCacheApi, answered by the
 * worker's ContextCache (as web-llm's WebWorkerMLCEngine implements its engine
 * interface). An AbortSignal becomes a `cancel` message for the call; a
 * streamed completion is an async generator of the worker's events.
 */
import type { CompileOptions, CompletionEvent, CompletionRequest, ContextCacheApi } from '../api/context-cache';
import type { EngineClient, Job } from './client';

/** Runs `job` with `signal` cancelling it in the worker. */
async function cancellable<T>(client: EngineClient, signal: AbortSignal | undefined, start: () => Job<T>): Promise<T> {
  signal?.throwIfAborted();
  const job = start();
  const onAbort = () => client.cancel(job.id);
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await job.result;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

export class RemoteContextCache implements ContextCacheApi {
  constructor(private client: EngineClient) {}

  compileContext(chunks: (string | number[])[], opts: CompileOptions = {}): Promise<string[]> {
    const { onProgress, signal, ...wire } = opts;
    return cancellable(this.client, signal, () => this.client.call('compile-context', { chunks, opts: wire }, onProgress));
  }

  async *chatCompletion(req: CompletionRequest): AsyncGenerator<CompletionEvent> {
    const { signal, ...wire } = req;
    // Events queue here until the consumer pulls them; the result settles the stream.
    const queue: CompletionEvent[] = [];
    let wake: (() => void) | null = null;
    let settled = false;
    let failure: unknown = null;
    const poke = () => {
      wake?.();
      wake = null;
    };
    const ended = cancellable(this.client, signal, () => this.client.call('chat-completion', wire, (ev) => {
      queue.push(ev);
      poke();
    }));
    ended.then(
      () => {
        settled = true;
        poke();
      },
      (e) => {
        settled = true;
        failure = e ?? new Error('The completion failed');
        poke();
      },
    );
    while (true) {
      if (queue.length) {
        yield queue.shift()!;
        continue;
      }
      if (settled) break;
      await new Promise<void>((r) => (wake = r));
    }
    if (failure) throw failure;
  }

  expireCache(id: string): Promise<boolean> {
    return this.client.call('expire-cache', { id }).result;
  }

  tokenize(text: string): Promise<number[]> {
    return this.client.call('tokenize', { text }).result;
  }

  tokenPieces(tokens: number[]): Promise<string[]> {
    return this.client.call('token-pieces', { tokens }).result;
  }
}
