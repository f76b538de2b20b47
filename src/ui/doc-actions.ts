/**
 * Documents, chunks, compiling and the cache library: what the studio asks
 * of the worker for them. Results land in the studio store.
 */
import type { SplitMode } from '../kvsplit/types';
import type { ChunkRef } from '../worker/studio-protocol';
import { contextCache, engineClient } from './actions';
import { extractText, FileTooLargeError } from './doc-import';
import { MAX_DOCUMENT_CHARS, tooLargeMessage } from './doc-limits';
import { describeError, isAbort } from './errors';
import { useApp } from './store';
import { chunkKey, docChunkKeys, modeKey, resolveChunk, studio, type DocKind, type DocSplit, type StudioDoc } from './studio-store';
import { chunkAt } from '../worker/chunk-table';

let nextErrorId = 1;
let compileAbort: AbortController | null = null;
let persistAsked = false;

export function client() {
  const c = engineClient();
  if (!c) throw new Error('The engine is not running');
  return c;
}

/** The worker's ContextCache (compile, ask). */
export function lego() {
  const c = contextCache();
  if (!c) throw new Error('The engine is not running');
  return c;
}

/** Resolves once a model is loaded (documents are cut with its tokenizer). */
export function whenModel(): Promise<string> {
  const ready = () => {
    const a = useApp.getState();
    return a.model && !a.progress ? a.model.cacheKey : null;
  };
  const now = ready();
  if (now) return Promise.resolve(now);
  return new Promise((resolve) => {
    const off = useApp.subscribe(() => {
      const k = ready();
      if (k) {
        off();
        resolve(k);
      }
    });
  });
}

export function reportImportError(message: string) {
  studio().set((s) => ({ importErrors: [...s.importErrors, { id: nextErrorId++, message }] }));
}

export function dismissImportError(id: number) {
  studio().set((s) => ({ importErrors: s.importErrors.filter((e) => e.id !== id) }));
}

async function split(doc: Pick<StudioDoc, 'id' | 'text' | 'mode'>): Promise<DocSplit> {
  await whenModel();
  const r = await client().call('split', { docId: doc.id, text: doc.text, mode: doc.mode }).result;
  return { ...r, modeKey: modeKey(doc.mode) };
}

/** Tokens per character of `text`, measured on its start with the loaded model's tokenizer (for the size refusal). */
async function tokensPerChar(text: string): Promise<number | undefined> {
  const sample = text.slice(0, 20_000);
  try {
    return (await split({ id: 'sample', text: sample, mode: { kind: 'fixed', tokens: 4096 } })).totalTokens / sample.length;
  } catch {
    return undefined;
  }
}

/** Adds a document once KVSplit accepts it (an empty or oversized one is refused with a message). */
export async function addDocument(
  name: string, kind: DocKind, text: string, mode?: SplitMode, file: { bytes?: number; encoding?: string } = {},
): Promise<StudioDoc | null> {
  if (text.length > MAX_DOCUMENT_CHARS) {
    reportImportError(tooLargeMessage({ name, bytes: file.bytes, chars: text.length }, useApp.getState().model, await tokensPerChar(text)));
    return null;
  }
  const doc: StudioDoc = { id: crypto.randomUUID().slice(0, 8), name, kind, text, mode: mode ?? studio().settings.defaultMode, addedAt: Date.now() };
  if (file.encoding && file.encoding !== 'UTF-8') doc.encoding = file.encoding;
  try {
    const sp = await split(doc);
    studio().set((s) => ({ docs: [...s.docs, doc], splits: { ...s.splits, [doc.id]: sp } }));
    return doc;
  } catch (e) {
    reportImportError(describeError(e, `Adding "${name}"`));
    return null;
  }
}

/**
 * Sample documents shipped under public/samples/ (each added once, as a
 * 'sample' document cut with `mode`); returns the chunk keys of each, in order.
 */
export async function addSamples(files: { file: string; title: string }[], mode: SplitMode): Promise<string[][]> {
  const keys: string[][] = [];
  for (const sm of files) {
    let doc = studio().docs.find((x) => x.name === sm.title && x.kind === 'sample');
    if (!doc) {
      const r = await fetch(`samples/${sm.file}`);
      if (!r.ok) throw new Error(`the sample ${sm.file} could not be fetched (HTTP ${r.status})`);
      doc = (await addDocument(sm.title, 'sample', await r.text(), mode)) ?? undefined;
    }
    if (!doc) throw new Error(`the sample ${sm.file} could not be added`);
    const id = doc.id;
    keys.push(docChunkKeys(studio(), id));
  }
  return keys;
}

/** Files dropped or picked: each becomes a document, or an alert saying why not. */
export async function importFiles(files: File[]): Promise<void> {
  for (const f of files) {
    try {
      const { text, kind, encoding } = await extractText(f);
      await addDocument(f.name, kind, text, undefined, { bytes: f.size, encoding });
    } catch (e) {
      reportImportError(e instanceof FileTooLargeError ? tooLargeMessage({ name: f.name, bytes: f.size }, useApp.getState().model) : describeError(e, `Reading "${f.name}"`));
    }
  }
}

export function removeDocument(id: string) {
  studio().set((s) => {
    const { [id]: _gone, ...splits } = s.splits;
    const { [id]: _err, ...splitErrors } = s.splitErrors;
    return { docs: s.docs.filter((d) => d.id !== id), splits, splitErrors, composer: s.composer.filter((k) => !k.startsWith(`${id}#`)) };
  });
}

/** Cuts a document again under `mode`; composer entries of chunks that did not change stay. */
export async function setDocumentMode(id: string, mode: SplitMode): Promise<void> {
  const doc = studio().docs.find((d) => d.id === id);
  if (!doc) return;
  try {
    const sp = await split({ ...doc, mode });
    studio().set((s) => {
      // A composer entry stays where the new cut has a chunk of exactly the same text (it may have another index).
      const old = s.splits[id];
      let byRange: Map<string, number> | undefined;
      const composer = s.composer.flatMap((k) => {
        if (!k.startsWith(`${id}#`)) return [k];
        const o = old && chunkAt(old.chunks, Number(k.slice(id.length + 1)));
        if (!o) return [];
        if (!byRange) {
          byRange = new Map();
          for (let i = 0; i < sp.chunks.count; i++) byRange.set(`${sp.chunks.starts[i]}:${sp.chunks.ends[i]}`, i);
        }
        const i = byRange.get(`${o.start}:${o.end}`);
        return i === undefined ? [] : [chunkKey(id, i)];
      });
      const { [id]: _e, ...splitErrors } = s.splitErrors;
      return { docs: s.docs.map((d) => (d.id === id ? { ...d, mode } : d)), splits: { ...s.splits, [id]: sp }, splitErrors, composer };
    });
  } catch (e) {
    studio().set((s) => ({ splitErrors: { ...s.splitErrors, [id]: describeError(e, 'Splitting') } }));
  }
}

/**
 * Cuts again every document whose chunks were made for another model (after a model change), and says what
 * that did to the composer: chunks whose text is unchanged stay, the others are taken out.
 */
export async function resplitStale(modelKey: string): Promise<void> {
  const before = studio().composer.length;
  let cut = 0;
  for (const doc of studio().docs) {
    const sp = studio().splits[doc.id];
    if (!sp || sp.modelKey !== modelKey || sp.modeKey !== modeKey(doc.mode)) {
      cut++;
      await setDocumentMode(doc.id, doc.mode);
    }
  }
  const kept = studio().composer.length;
  if (!cut || !before) return;
  const model = useApp.getState().model?.id ?? 'the new model';
  const note = `The documents were cut again with ${model}'s tokenizer: ${kept} of ${before} chunks in the composer kept`
    + (kept < before ? `; ${before - kept} changed and were taken out (add them again from the documents).` : ' (their text is unchanged).');
  studio().set((s) => ({ composerNote: [s.composerNote, note].filter(Boolean).join(' ') }));
}

/** Chunks per compile request: the worker hears Cancel between requests even when every chunk is an instant cache hit. */
const COMPILE_BATCH = 256;

/** Compiles chunks (by key) that are not in the store yet, with per-chunk progress, in batches. */
export async function compileKeys(keys: string[]): Promise<void> {
  const s = studio();
  if (s.busy || !keys.length) return;
  if (!persistAsked) {
    persistAsked = true;
    void navigator.storage?.persist?.().catch(() => false);
  }
  // Chunks are looked up a batch at a time: a large document has tens of thousands, and all at once blocked the page.
  const refsOf = (batch: string[]): ChunkRef[] => batch.flatMap((k) => {
    const c = resolveChunk(studio(), k);
    return c ? [{ key: k, label: c.label, tokens: c.chunk.tokens }] : [];
  });
  s.set({ busy: 'compile', error: null, compile: { running: true, done: 0, total: keys.length, compiled: 0, reused: 0, current: keys[0] ?? null } });
  // Progress is counted here and shown at most every 100 ms: cache hits arrive by the thousand, and a store update
  // (and render) for each froze the page.
  const seen = { done: 0, compiled: 0, reused: 0 };
  let timer: ReturnType<typeof setTimeout> | null = null;
  const show = () => {
    timer = null;
    const { done, compiled, reused } = seen;
    studio().set((st) => ({ compile: { ...st.compile, done, compiled, reused, current: keys[done] ?? null } }));
  };
  const ac = new AbortController();
  compileAbort = ac;
  let cancelled = false;
  try {
    for (let at = 0; at < keys.length && !ac.signal.aborted; at += COMPILE_BATCH) {
      await lego().compileContext(refsOf(keys.slice(at, at + COMPILE_BATCH)).map((r) => r.tokens), {
        variant: { kind: 'plain' }, signal: ac.signal,
        onProgress: (ev) => {
          seen.done = at + ev.done;
          seen[ev.status === 'cached' ? 'reused' : 'compiled']++;
          timer ??= setTimeout(show, 100);
        },
      });
    }
    cancelled = ac.signal.aborted;
  } catch (e) {
    cancelled = isAbort(e);
    if (!cancelled) studio().set({ error: { message: describeError(e, 'Compiling'), at: 'documents' } });
  } finally {
    compileAbort = null;
    if (timer) clearTimeout(timer);
    show();
    studio().set((st) => ({ busy: null, compile: { ...st.compile, running: false, cancelled, current: null } }));
    await refreshLibrary();
  }
}

export function compileAll() {
  const s = studio();
  return compileKeys(s.docs.flatMap((d) => docChunkKeys(s, d.id)));
}

export function cancelCompile() {
  compileAbort?.abort();
}

export async function refreshLibrary(): Promise<void> {
  try {
    studio().set({ library: await client().call('library', null).result });
  } catch (e) {
    studio().set({ error: { message: describeError(e, 'Reading the cache library'), at: 'library' } });
  }
}

/** Sets the GPU tier's budget (null: the loaded model's default), kept in the settings for later loads and reloads. */
export async function setGpuTierBudget(mib: number | null): Promise<void> {
  studio().set((s) => ({ settings: { ...s.settings, gpuTierMiB: mib } }));
  try {
    studio().set({ library: await client().call('gpu-budget', { bytes: mib === null ? null : mib * 2 ** 20 }).result });
  } catch (e) {
    studio().set({ error: { message: describeError(e, 'Setting the GPU tier\'s budget'), at: 'library' } });
  }
}

export async function expireCache(id: string): Promise<void> {
  try {
    await lego().expireCache(id);
  } catch (e) {
    studio().set({ error: { message: describeError(e, 'Expiring a cache'), at: 'library' } });
  }
  await refreshLibrary();
}

export async function clearLibrary(): Promise<void> {
  try {
    await client().call('clear-library', null).result;
  } catch (e) {
    studio().set({ error: { message: describeError(e, 'Clearing the library'), at: 'library' } });
  }
  await refreshLibrary();
}
