/**
 * Downloads from the Hugging Face Hub into the OPFS model cache.
 *
 * Files are fetched with the Hub's URL layout,
 * `{endpoint}/{id}/resolve/{revision}/{file}`: config.json (required), the
 * tokenizer and generation JSON files (optional), and `model.safetensors` or
 * `model.safetensors.index.json` with its shards. A URL of one `.gguf` file
 * is fetched as it is. Bytes stream straight into OPFS (never held whole in
 * memory), with byte progress across files and an AbortSignal to cancel.
 */
import { ModelFormatError, type ModelFiles } from '../engine';
import { HubError } from './errors';
import { CacheWriter, cacheKey, isFlatName, openCachedModel, type CacheDir } from './opfs-cache';

export const DEFAULT_HUB = 'https://huggingface.co';
const INDEX = 'model.safetensors.index.json';
const SINGLE = 'model.safetensors';
const OPTIONAL_JSON = ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json'];

export { HubError };

/** What to download: a repository at a revision, or one file. */
export interface HubTarget {
  /** Shown name: `org/name`, `org/name/file.gguf`, or a URL's host and path. */
  id: string;
  revision: string;
  /** URL of the folder the files are fetched from, ending in `/`. */
  base: string;
  /** The one file to fetch (a `.gguf` URL); a repository's files are discovered. */
  file?: string;
  /** Folder name in the cache. */
  key: string;
}

const ID_RE = /^[A-Za-z0-9][\w.-]*(\/[\w.-]+)?$/;
const enc = (path: string) => path.split('/').map(encodeURIComponent).join('/');

function repoTarget(hub: string, id: string, revision: string): HubTarget {
  if (!ID_RE.test(id) || id.split('/').some((p) => p === '.' || p === '..')) {
    throw new HubError(`"${id}" is not a Hugging Face model id (like HuggingFaceTB/SmolLM2-135M-Instruct)`);
  }
  return { id, revision, base: `${hub}/${enc(id)}/resolve/${encodeURIComponent(revision)}/`, key: cacheKey(id, revision) };
}

/** Reads what the user typed: `org/name`, `https://huggingface.co/org/name[/tree/rev]`, or a `.gguf` URL. */
export function parseHubInput(input: string, revision?: string, endpoint = DEFAULT_HUB): HubTarget {
  const text = input.trim();
  const rev = revision?.trim() || 'main';
  const hub = endpoint.replace(/\/+$/, '');
  if (!/^https?:\/\//i.test(text)) {
    if (!text) throw new HubError('Enter a Hugging Face model id, a huggingface.co URL or the URL of a .gguf file');
    return repoTarget(hub, text, rev);
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new HubError(`Not a valid URL: ${text}`);
  }
  let parts: string[];
  try {
    parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  } catch {
    throw new HubError(`Not a valid URL: ${text}`);
  }
  const onHub = url.origin === new URL(hub).origin || ['huggingface.co', 'hf.co'].includes(url.hostname);
  const inRepo = onHub && parts.length >= 4 && ['resolve', 'blob', 'tree'].includes(parts[2]);
  if (url.pathname.toLowerCase().endsWith('.gguf')) {
    const file = parts[parts.length - 1];
    if (inRepo && parts.length >= 5) {
      // …/org/name/resolve/<rev>/<dirs>/<file>.gguf (a "blob" page URL means the same file)
      const repo = `${parts[0]}/${parts[1]}`;
      const dirs = parts.slice(4, -1).map((d) => `${encodeURIComponent(d)}/`).join('');
      const id = [repo, ...parts.slice(4)].join('/');
      const base = `${url.origin}/${enc(repo)}/resolve/${encodeURIComponent(parts[3])}/${dirs}`;
      return { id, revision: parts[3], base, file, key: cacheKey(id, parts[3]) };
    }
    const id = `${url.host}${url.pathname}`;
    return { id, revision: 'url', base: new URL('.', url).href, file, key: cacheKey(id, 'url') };
  }
  if (onHub && (parts.length === 1 || parts.length === 2 || inRepo)) {
    const id = parts.length === 1 ? parts[0] : `${parts[0]}/${parts[1]}`;
    return repoTarget(url.origin === new URL(hub).origin ? hub : url.origin, id, inRepo ? parts[3] : rev);
  }
  throw new HubError(`${text} is neither a Hugging Face model page nor the URL of a .gguf file`);
}

export interface DownloadDeps {
  root: CacheDir;
  signal: AbortSignal;
  onProgress: (loaded: number, total: number, file: string) => void;
  /** Bytes this origin may still store, when known (navigator.storage.estimate). */
  freeBytes?: () => Promise<number | undefined>;
  /** Sees config.json (and the model's id) before any weights are downloaded; throws to stop (unsupported, will not fit). */
  checkConfig?: (config: unknown, id: string) => void;
}

const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;

/** Downloads a target's files into a fresh cache folder, then writes its manifest; on any failure removes the folder. */
export async function downloadToCache(t: HubTarget, deps: DownloadDeps): Promise<void> {
  const { signal } = deps;
  const writer = await CacheWriter.begin(deps.root, t.key);
  let loaded = 0;
  let total = 0;
  const urlOf = (name: string) => new URL(enc(name), t.base).href;

  async function get(name: string, required: boolean): Promise<Response | null> {
    let r: Response;
    try {
      r = await fetch(urlOf(name), { signal, cache: 'no-store' });
    } catch (e) {
      if (signal.aborted) throw e;
      throw new HubError(`Could not reach ${urlOf(name)} (${(e as Error).message}). Loading from the Hub needs a network connection.`);
    }
    if (r.status === 404 && !required) {
      await r.body?.cancel();
      return null;
    }
    if (r.status === 401 || r.status === 403) {
      throw new HubError(`${t.id}: HTTP ${r.status} for ${name}. The model may be gated or private; LegoKV sends no Hugging Face token, so only public models can be downloaded.`);
    }
    if (r.status === 404) {
      const hint = name === 'config.json' ? ' Is the id right? For a GGUF repository, paste the URL of one .gguf file.' : '';
      throw new HubError(`${t.id} has no ${name} at revision "${t.revision}" (HTTP 404).${hint}`);
    }
    if (!r.ok) throw new HubError(`Could not download ${name} of ${t.id} (HTTP ${r.status})`);
    if ((r.headers.get('content-type') ?? '').startsWith('text/html')) {
      throw new HubError(`${urlOf(name)} answered with a web page instead of the file; check the model id and the Hub address`);
    }
    return r;
  }

  /** Streams a response into the cache; weights are checked against their announced size. */
  async function save(name: string, r: Response, expected?: number): Promise<void> {
    const announced = Number(r.headers.get('content-length') ?? NaN);
    if (expected === undefined && Number.isFinite(announced)) total += announced;
    let n: number;
    try {
      n = await writer.write(name, r.body ?? new Blob([]).stream(), (k) => {
        loaded += k;
        deps.onProgress(loaded, Math.max(total, loaded), name);
      });
    } catch (e) {
      const err = e as Error;
      if (signal.aborted || err.name === 'QuotaExceededError') throw e;
      throw new HubError(`The download of ${name} failed (${err.message}); nothing was cached, try again`);
    }
    const want = expected ?? announced;
    if (!/\.json$/.test(name) && Number.isFinite(want) && n < want) {
      throw new HubError(`The download of ${name} was cut short: ${n} of ${want} bytes`);
    }
  }

  async function headSize(name: string): Promise<number | undefined> {
    try {
      const r = await fetch(urlOf(name), { method: 'HEAD', signal, cache: 'no-store' });
      const n = Number(r.headers.get('content-length') ?? NaN);
      return r.ok && Number.isFinite(n) ? n : undefined;
    } catch (e) {
      if (signal.aborted) throw e;
      return undefined;
    }
  }

  async function saveWeights(names: string[]): Promise<void> {
    const sizes = await Promise.all(names.map(headSize));
    const need = sizes.reduce<number>((a, s) => a + (s ?? 0), 0);
    total += need;
    deps.onProgress(loaded, Math.max(total, loaded), names[0]);
    const free = await deps.freeBytes?.();
    if (free !== undefined && need > free) {
      throw new HubError(`Not enough browser storage for ${t.id}: it needs ${mib(need)}, ${mib(free)} are free. Delete cached models or free disk space.`);
    }
    for (const [i, name] of names.entries()) await save(name, (await get(name, true))!, sizes[i]);
  }

  try {
    if (t.file) {
      await saveWeights([t.file]);
    } else {
      await save('config.json', (await get('config.json', true))!);
      if (deps.checkConfig) deps.checkConfig(await readConfig(await writer.read('config.json')), t.id);
      for (const name of OPTIONAL_JSON) {
        const r = await get(name, false);
        if (r) await save(name, r);
      }
      const index = await get(INDEX, false);
      if (index) {
        await save(INDEX, index);
        await saveWeights(await shardsOf(await writer.read(INDEX)));
      } else {
        await saveWeights([SINGLE]);
      }
    }
    await writer.commit({ id: t.id, revision: t.revision, origin: t.base });
  } catch (e) {
    await writer.discard();
    throw e;
  }
}

async function readConfig(file: File): Promise<unknown> {
  try {
    return JSON.parse(await file.text());
  } catch (e) {
    throw new ModelFormatError(`config.json is not valid JSON (${(e as Error).message})`);
  }
}

async function shardsOf(indexFile: File): Promise<string[]> {
  let index: { weight_map?: unknown };
  try {
    index = JSON.parse(await indexFile.text());
  } catch (e) {
    throw new ModelFormatError(`${INDEX} is not valid JSON (${(e as Error).message})`);
  }
  const map = index?.weight_map;
  if (!map || typeof map !== 'object' || Array.isArray(map)) throw new ModelFormatError(`${INDEX} has no "weight_map" object`);
  const shards = [...new Set(Object.values(map as Record<string, unknown>))];
  for (const s of shards) {
    if (typeof s !== 'string' || !isFlatName(s) || !s.endsWith('.safetensors')) {
      throw new ModelFormatError(`${INDEX} names a shard LegoKV cannot fetch: ${JSON.stringify(s)}`);
    }
  }
  return shards as string[];
}

/** The target's files from the cache, downloading them first when they are not there. */
export async function hubModelFiles(t: HubTarget, deps: DownloadDeps): Promise<{ files: ModelFiles; fromCache: boolean }> {
  const hit = await openCachedModel(deps.root, t.key);
  if (hit) return { files: hit.files, fromCache: true };
  await downloadToCache(t, deps);
  const fresh = await openCachedModel(deps.root, t.key);
  if (!fresh) throw new Error(`The download of ${t.id} could not be read back from the browser's storage`);
  return { files: fresh.files, fromCache: false };
}
