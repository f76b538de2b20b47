/**
 * The model cache in the browser's Origin Private File System: one folder
 * per model under `models/`, named `<sanitized id>@<revision>`.
 *
 * A folder counts as a cached model only when its `manifest.json` exists and
 * every file it lists has the listed size. The manifest is written last,
 * after every file was written in full and closed, and a new download first
 * removes the folder; so an interrupted download (closed tab, lost network,
 * cancel) never leaves a file that is taken as complete. Cached files are
 * read through `File.slice`, never copied whole.
 */
import { blobSource, type ModelFiles } from '../engine';
import type { CachedModel } from './protocol';

/** The parts of the OPFS handles used here (a fake implements them in Node tests). */
export interface CacheWritable {
  write(data: Uint8Array): Promise<void>;
  close(): Promise<void>;
  abort(reason?: unknown): Promise<void>;
}
export interface CacheFileHandle {
  getFile(): Promise<File>;
  createWritable(): Promise<CacheWritable>;
}
export interface CacheDir {
  getDirectoryHandle(name: string, opts?: { create?: boolean }): Promise<CacheDir>;
  getFileHandle(name: string, opts?: { create?: boolean }): Promise<CacheFileHandle>;
  removeEntry(name: string, opts?: { recursive?: boolean }): Promise<void>;
  keys(): AsyncIterable<string>;
}

export interface CacheManifest {
  version: 1;
  id: string;
  revision: string;
  origin: string;
  date: string;
  files: { name: string; size: number }[];
}

export const MANIFEST = 'manifest.json';
const MODELS = 'models';

/** The OPFS root of this origin (in a worker or a page). */
export async function opfsRoot(): Promise<CacheDir> {
  if (!navigator.storage?.getDirectory) {
    throw new Error('This browser has no Origin Private File System (navigator.storage.getDirectory)');
  }
  return (await navigator.storage.getDirectory()) as unknown as CacheDir;
}

const clean = (s: string) => s.replace(/\//g, '--').replace(/[^A-Za-z0-9._-]+/g, '_');

/** Folder name of a model: `HuggingFaceTB/SmolLM2-135M` at `main` → `HuggingFaceTB--SmolLM2-135M@main`. */
export function cacheKey(id: string, revision: string): string {
  return `${clean(id).slice(0, 160)}@${clean(revision).slice(0, 80)}`;
}

/** A name that can be a file directly inside a model folder. */
export function isFlatName(name: string): boolean {
  return name.length > 0 && name.length <= 255 && !/[/\\]/.test(name) && name !== '.' && name !== '..' && name !== MANIFEST;
}

const isNotFound = (e: unknown) => (e as Error)?.name === 'NotFoundError' || (e as Error)?.name === 'TypeMismatchError';

async function modelsDir(root: CacheDir, create: boolean): Promise<CacheDir | null> {
  try {
    return await root.getDirectoryHandle(MODELS, { create });
  } catch (e) {
    if (isNotFound(e)) return null;
    throw e;
  }
}

async function readManifest(dir: CacheDir): Promise<CacheManifest | null> {
  try {
    const m = JSON.parse(await (await (await dir.getFileHandle(MANIFEST)).getFile()).text()) as CacheManifest;
    return m?.version === 1 && Array.isArray(m.files) ? m : null;
  } catch {
    return null;
  }
}

/** ModelFiles over a cached folder, or null when the folder is absent or incomplete. */
export async function openCachedModel(
  root: CacheDir,
  key: string,
): Promise<{ manifest: CacheManifest; files: ModelFiles } | null> {
  const models = await modelsDir(root, false);
  if (!models || !isFlatName(key)) return null;
  let dir: CacheDir;
  try {
    dir = await models.getDirectoryHandle(key);
  } catch (e) {
    if (isNotFound(e)) return null;
    throw e;
  }
  const manifest = await readManifest(dir);
  if (!manifest) return null;
  const files = new Map<string, File>();
  for (const f of manifest.files) {
    try {
      const file = await (await dir.getFileHandle(f.name)).getFile();
      if (file.size !== f.size) return null;
      files.set(f.name, file);
    } catch (e) {
      if (isNotFound(e)) return null;
      throw e;
    }
  }
  return {
    manifest,
    files: {
      names: () => [...files.keys()],
      get: async (n) => (files.has(n) ? blobSource(files.get(n)!, n) : undefined),
    },
  };
}

export async function listCachedModels(root: CacheDir): Promise<CachedModel[]> {
  const models = await modelsDir(root, false);
  if (!models) return [];
  const out: CachedModel[] = [];
  for await (const key of models.keys()) {
    let dir: CacheDir;
    try {
      dir = await models.getDirectoryHandle(key);
    } catch {
      continue; // a stray file
    }
    const manifest = await readManifest(dir);
    const complete = manifest !== null && (await openCachedModel(root, key)) !== null;
    if (manifest && complete) {
      out.push({
        key, id: manifest.id, revision: manifest.revision, origin: manifest.origin, date: manifest.date, complete,
        files: manifest.files.length, bytes: manifest.files.reduce((a, f) => a + f.size, 0),
      });
      continue;
    }
    let bytes = 0;
    let files = 0;
    for await (const name of dir.keys()) {
      try {
        bytes += (await (await dir.getFileHandle(name)).getFile()).size;
        files++;
      } catch {
        // a folder or a file being written
      }
    }
    out.push({ key, id: manifest?.id ?? key, revision: manifest?.revision ?? '', origin: manifest?.origin ?? '', date: '', complete: false, bytes, files });
  }
  return out.sort((a, b) => a.id.localeCompare(b.id));
}

/** Removes a cached model folder; false when there was none. */
export async function deleteCachedModel(root: CacheDir, key: string): Promise<boolean> {
  if (!isFlatName(key)) throw new Error(`Not a cache folder name: ${key}`);
  const models = await modelsDir(root, false);
  if (!models) return false;
  try {
    await models.removeEntry(key, { recursive: true });
    return true;
  } catch (e) {
    if (isNotFound(e)) return false;
    throw e;
  }
}

/** Writes one model folder: files first, the manifest last (commit); discard() removes it all. */
export class CacheWriter {
  private written: { name: string; size: number }[] = [];

  private constructor(
    private root: CacheDir,
    readonly key: string,
    private dir: CacheDir,
  ) {}

  /** Starts a fresh folder for `key`, removing whatever an earlier attempt left there. */
  static async begin(root: CacheDir, key: string): Promise<CacheWriter> {
    await deleteCachedModel(root, key);
    const models = (await modelsDir(root, true))!;
    return new CacheWriter(root, key, await models.getDirectoryHandle(key, { create: true }));
  }

  /** Streams `body` into `name`; returns the byte count. A failed or aborted stream leaves no file behind. */
  async write(name: string, body: ReadableStream<Uint8Array>, onBytes: (n: number) => void): Promise<number> {
    if (!isFlatName(name)) throw new Error(`Cannot cache a file named ${JSON.stringify(name)}`);
    const w = await (await this.dir.getFileHandle(name, { create: true })).createWritable();
    const reader = body.getReader();
    let size = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        await w.write(value);
        size += value.byteLength;
        onBytes(value.byteLength);
      }
    } catch (e) {
      await w.abort().catch(() => {});
      await reader.cancel().catch(() => {});
      await this.dir.removeEntry(name).catch(() => {});
      throw e;
    }
    await w.close();
    this.written = this.written.filter((f) => f.name !== name).concat({ name, size });
    return size;
  }

  /** A file written so far, to read back (e.g. a shard index). */
  async read(name: string): Promise<File> {
    return (await this.dir.getFileHandle(name)).getFile();
  }

  /** Records the folder as complete. Nothing before this makes it a cached model. */
  async commit(meta: Omit<CacheManifest, 'version' | 'files' | 'date'>): Promise<void> {
    const manifest: CacheManifest = { version: 1, ...meta, date: new Date().toISOString(), files: this.written };
    const bytes = new TextEncoder().encode(JSON.stringify(manifest, null, 1));
    const w = await (await this.dir.getFileHandle(MANIFEST, { create: true })).createWritable();
    await w.write(bytes);
    await w.close();
  }

  async discard(): Promise<void> {
    await deleteCachedModel(this.root, this.key).catch(() => {});
  }
}
