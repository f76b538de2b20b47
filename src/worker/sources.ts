/**
 * Where a model's files come from: the app's own folder, the Hugging Face
 * Hub (through the OPFS cache), files from the user's disk (optionally copied
 * into the cache), or the cache alone. Each becomes a ModelFiles for
 * loadModelFiles; a cached copy that fails to parse is deleted.
 */
import { detectFormat, loadModelFiles, blobSource, ModelFormatError, type LoadedModel, type ModelFiles } from '../engine';
import { fetchModelFiles } from './fetch-files';
import { DEFAULT_HUB, hubModelFiles, parseHubInput } from './hub';
import { CacheWriter, cacheKey, deleteCachedModel, isFlatName, openCachedModel, opfsRoot, type CacheDir } from './opfs-cache';
import type { LoadStage, LocalFile, ModelSource } from './protocol';

export type ProgressFn = (stage: LoadStage, loaded: number, total: number, file?: string) => void;

export interface ResolvedModel {
  files: ModelFiles;
  name: string;
  /** How it was obtained, for the page. */
  source: string;
  /** Cache folder the files live in, if they do. */
  cacheKey?: string;
}

async function freeBytes(): Promise<number | undefined> {
  try {
    const e = await navigator.storage.estimate();
    return e.quota !== undefined && e.usage !== undefined ? e.quota - e.usage : undefined;
  } catch {
    return undefined;
  }
}

/** ModelFiles over File objects: reads go through File.slice. */
export function localModelFiles(files: LocalFile[]): ModelFiles {
  const byName = new Map(files.map((f) => [f.path, f.file]));
  return {
    names: () => [...byName.keys()],
    get: async (n) => (byName.has(n) ? blobSource(byName.get(n)!, n) : undefined),
  };
}

/** The files of a local folder that a loader of its format can use (top level only). */
export function modelFilesToKeep(files: LocalFile[]): LocalFile[] {
  const flat = files.filter((f) => isFlatName(f.path));
  const format = detectFormat(flat.map((f) => f.path));
  const keep = format === 'hf' ? /\.(json|safetensors)$/ : format === 'gguf' ? /\.gguf$/ : /\.bin$/;
  return flat.filter((f) => keep.test(f.path));
}

async function copyToCache(root: CacheDir, key: string, name: string, files: LocalFile[], signal: AbortSignal, progress: ProgressFn) {
  const keep = modelFilesToKeep(files);
  const total = keep.reduce((a, f) => a + f.file.size, 0);
  let loaded = 0;
  const writer = await CacheWriter.begin(root, key);
  try {
    for (const f of keep) {
      signal.throwIfAborted();
      await writer.write(f.path, f.file.stream(), (n) => {
        loaded += n;
        progress('cache', loaded, total, f.path);
        signal.throwIfAborted();
      });
    }
    await writer.commit({ id: name, revision: 'local', origin: 'local' });
  } catch (e) {
    await writer.discard();
    throw e;
  }
}

/**
 * The model's files, wherever they are. `checkConfig` sees a Hub model's
 * config.json before its weights are downloaded, and may throw to stop.
 */
export async function resolveSource(
  src: ModelSource, signal: AbortSignal, progress: ProgressFn, checkConfig?: (config: unknown, id: string) => void,
): Promise<ResolvedModel> {
  switch (src.kind) {
    case 'url': {
      const files = await fetchModelFiles(src, signal, (l, t) => progress('download', l, t));
      return { files, name: src.id, source: 'bundled' };
    }
    case 'hub': {
      const t = parseHubInput(src.input, src.revision, src.endpoint || DEFAULT_HUB);
      const { files, fromCache } = await hubModelFiles(t, {
        root: await opfsRoot(), signal, freeBytes, checkConfig, onProgress: (l, tot, f) => progress('download', l, tot, f),
      });
      return { files, name: t.id, source: fromCache ? 'Hugging Face Hub, cached copy' : 'Hugging Face Hub', cacheKey: t.key };
    }
    case 'files': {
      if (!src.files.length) throw new ModelFormatError('No files were given');
      if (!src.cache) return { files: localModelFiles(src.files), name: src.name, source: 'local files' };
      const root = await opfsRoot();
      const key = cacheKey(`local/${src.name}`, 'local');
      await copyToCache(root, key, src.name, src.files, signal, progress);
      const hit = await openCachedModel(root, key);
      if (!hit) throw new Error(`The copy of ${src.name} could not be read back from the browser's storage`);
      return { files: hit.files, name: src.name, source: 'local files, cached', cacheKey: key };
    }
    case 'cached': {
      const hit = await openCachedModel(await opfsRoot(), src.key);
      if (!hit) throw new Error(`${src.key} is not (or no longer) a complete model in the browser's cache`);
      return { files: hit.files, name: hit.manifest.id, source: 'browser cache', cacheKey: src.key };
    }
  }
}

/** Parses resolved files; files that turn out corrupt, truncated or mismatched are removed from the cache. */
export async function parseModel(r: ResolvedModel): Promise<LoadedModel> {
  try {
    return await loadModelFiles(r.files, r.name);
  } catch (e) {
    const err = e as Error;
    if (r.cacheKey && (err.name === 'ModelFormatError' || err.name === 'UnsupportedModelError')) {
      await deleteCachedModel(await opfsRoot(), r.cacheKey).catch(() => {});
      err.message += ' The cached copy was deleted.';
    }
    throw err;
  }
}
