/**
 * In-memory backends for tests (and for running without OPFS/IndexedDB).
 * They keep their data across KVStore instances, so a "reload" is a new
 * store over the same backends. Faults: a quota (writes past it reject with a
 * QuotaExceededError and leave nothing), and `crashAfter`, a predicate
 * checked after each completed operation; when it returns true the operation
 * has happened but the call rejects with `SimulatedCrash`, as if the page died
 * right there, and so does every later call (a dead page does nothing more)
 * until `revive()`, the reload.
 */
import type { BlobBackend, IndexBackend, IndexRecord } from './types';

export class SimulatedCrash extends Error {
  constructor(step: string) {
    super(`simulated crash after ${step}`);
    this.name = 'SimulatedCrash';
  }
}

export type BlobOp = 'write' | 'rename' | 'delete';

export interface MemoryBlobOptions {
  /** Total bytes the backend may hold. */
  quotaBytes?: number;
  /** Whether `rename` is offered (default true). */
  rename?: boolean;
}

export class MemoryBlobBackend implements BlobBackend {
  readonly files = new Map<string, Uint8Array>();
  quotaBytes: number;
  crashAfter: ((op: BlobOp, name: string) => boolean) | null = null;
  /** Corrupts what `write` stores (flips a bit) while set, to test the read-back check. */
  corruptWrites = false;
  readonly ops: string[] = [];
  rename?: (from: string, to: string) => Promise<void>;

  constructor(opts: MemoryBlobOptions = {}) {
    this.quotaBytes = opts.quotaBytes ?? Infinity;
    if (opts.rename !== false) this.rename = (from, to) => this.doRename(from, to);
  }

  get usedBytes(): number {
    let n = 0;
    for (const f of this.files.values()) n += f.length;
    return n;
  }

  dead = false;

  /** The page reloads: calls work again and no crash is armed. */
  revive() {
    this.dead = false;
    this.crashAfter = null;
  }

  private alive() {
    if (this.dead) throw new SimulatedCrash('an earlier crash');
  }

  private done(op: BlobOp, name: string) {
    this.ops.push(`${op} ${name}`);
    if (this.crashAfter?.(op, name)) {
      this.dead = true;
      throw new SimulatedCrash(`${op} ${name}`);
    }
  }

  async write(name: string, data: Uint8Array): Promise<void> {
    this.alive();
    const old = this.files.get(name)?.length ?? 0;
    if (this.usedBytes - old + data.length > this.quotaBytes) {
      throw new DOMException(`quota of ${this.quotaBytes} bytes exceeded`, 'QuotaExceededError');
    }
    const copy = data.slice();
    if (this.corruptWrites && copy.length) copy[copy.length - 1] ^= 1;
    this.files.set(name, copy);
    this.done('write', name);
  }

  async read(name: string): Promise<Uint8Array | null> {
    this.alive();
    return this.files.get(name)?.slice() ?? null;
  }

  async delete(name: string): Promise<void> {
    this.alive();
    this.files.delete(name);
    this.done('delete', name);
  }

  async list(): Promise<string[]> {
    this.alive();
    return [...this.files.keys()];
  }

  private async doRename(from: string, to: string): Promise<void> {
    this.alive();
    const f = this.files.get(from);
    if (!f) throw new DOMException(`${from} not found`, 'NotFoundError');
    this.files.delete(from);
    this.files.set(to, f);
    this.done('rename', `${from} -> ${to}`);
  }

  async available(): Promise<number | null> {
    return Number.isFinite(this.quotaBytes) ? this.quotaBytes - this.usedBytes : null;
  }
}

export class MemoryIndexBackend implements IndexBackend {
  readonly records = new Map<string, IndexRecord>();
  crashAfter: ((op: 'set' | 'del', key: string) => boolean) | null = null;
  dead = false;

  revive() {
    this.dead = false;
    this.crashAfter = null;
  }

  private step(op: 'set' | 'del', key: string) {
    if (this.crashAfter?.(op, key)) {
      this.dead = true;
      throw new SimulatedCrash(`index ${op} ${key}`);
    }
  }

  private alive() {
    if (this.dead) throw new SimulatedCrash('an earlier crash');
  }

  async get(key: string) {
    this.alive();
    const r = this.records.get(key);
    return r && structuredClone(r);
  }
  async set(key: string, value: IndexRecord) {
    this.alive();
    this.records.set(key, structuredClone(value));
    this.step('set', key);
  }
  async del(key: string) {
    this.alive();
    this.records.delete(key);
    this.step('del', key);
  }
  async entries(): Promise<[string, IndexRecord][]> {
    this.alive();
    return [...this.records].map(([k, v]) => [k, structuredClone(v)]);
  }
}
