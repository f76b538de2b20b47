/**
 * An in-memory stand-in for the OPFS handles src/worker/opfs-cache.ts uses,
 * so the cache and the Hub download run in Node. As in Chromium, a writable's
 * bytes become the file's content only on close().
 */
import type { CacheDir, CacheFileHandle, CacheWritable } from '../../src/worker/opfs-cache';

const named = (name: string, message: string) => Object.assign(new Error(message), { name });

export class FakeDir implements CacheDir {
  readonly entries = new Map<string, FakeDir | Uint8Array>();

  async getDirectoryHandle(name: string, opts?: { create?: boolean }): Promise<FakeDir> {
    const e = this.entries.get(name);
    if (e instanceof FakeDir) return e;
    if (e) throw named('TypeMismatchError', `${name} is a file`);
    if (!opts?.create) throw named('NotFoundError', `${name} not found`);
    const d = new FakeDir();
    this.entries.set(name, d);
    return d;
  }

  async getFileHandle(name: string, opts?: { create?: boolean }): Promise<CacheFileHandle> {
    const e = this.entries.get(name);
    if (e instanceof FakeDir) throw named('TypeMismatchError', `${name} is a folder`);
    if (!e) {
      if (!opts?.create) throw named('NotFoundError', `${name} not found`);
      this.entries.set(name, new Uint8Array(0));
    }
    return {
      getFile: async () => {
        const bytes = this.entries.get(name);
        if (!(bytes instanceof Uint8Array)) throw named('NotFoundError', `${name} not found`);
        return new File([bytes as Uint8Array<ArrayBuffer>], name);
      },
      createWritable: async (): Promise<CacheWritable> => {
        const parts: Uint8Array[] = [];
        return {
          write: async (d) => void parts.push(d.slice()),
          close: async () => {
            const out = new Uint8Array(parts.reduce((a, p) => a + p.byteLength, 0));
            let o = 0;
            for (const p of parts) {
              out.set(p, o);
              o += p.byteLength;
            }
            this.entries.set(name, out);
          },
          abort: async () => {},
        };
      },
    };
  }

  async removeEntry(name: string, opts?: { recursive?: boolean }): Promise<void> {
    const e = this.entries.get(name);
    if (!e) throw named('NotFoundError', `${name} not found`);
    if (e instanceof FakeDir && e.entries.size && !opts?.recursive) throw named('InvalidModificationError', `${name} is not empty`);
    this.entries.delete(name);
  }

  async *keys(): AsyncIterable<string> {
    yield* [...this.entries.keys()];
  }

  /** Test helper: a nested entry by path, e.g. `models/x@main/config.json`. */
  at(path: string): FakeDir | Uint8Array | undefined {
    let cur: FakeDir | Uint8Array | undefined = this;
    for (const part of path.split('/')) cur = cur instanceof FakeDir ? cur.entries.get(part) : undefined;
    return cur;
  }
}
