/** Puts the KVStore module and a few helpers on `window` for e2e/kvstore.spec.ts. */
import * as kv from '../../src/kvstore';
import { layers, maxDiff, type WorkerReply, type WorkerRequest } from './kvstore-fixtures';

let worker: Worker | null = null;

const helpers = {
  layers,
  maxDiff,
  /** Sends one request to the test worker (started on first use) and waits for its reply. */
  worker(req: WorkerRequest): Promise<WorkerReply> {
    worker ??= new Worker(new URL('./kvstore-worker.ts', import.meta.url), { type: 'module' });
    const w = worker;
    return new Promise((resolve, reject) => {
      w.onmessage = (e: MessageEvent<WorkerReply>) => resolve(e.data);
      w.onerror = (e) => reject(new Error(e.message));
      w.postMessage(req);
    });
  },
  async dir(): Promise<FileSystemDirectoryHandle> {
    const root = await navigator.storage.getDirectory();
    return root.getDirectoryHandle('kvstore', { create: true });
  },
  async files(): Promise<string[]> {
    const out: string[] = [];
    const dir = (await helpers.dir()) as unknown as { keys(): AsyncIterable<string> };
    for await (const k of dir.keys()) out.push(k);
    return out.sort();
  },
  /** Flips one byte of an OPFS file in place. */
  async flipByte(name: string, at: number): Promise<void> {
    const fh = await (await helpers.dir()).getFileHandle(name);
    const bytes = new Uint8Array(await (await fh.getFile()).arrayBuffer());
    const w = await fh.createWritable({ keepExistingData: true });
    await w.write({ type: 'write', position: at, data: Uint8Array.of(bytes[at] ^ 0xff) });
    await w.close();
  },
};

Object.assign(window, { kv, kvTest: helpers });
document.body.dataset.ready = '1';

export type KvTestHelpers = typeof helpers;
