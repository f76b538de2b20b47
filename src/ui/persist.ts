/**
 * Documents, their chunks, the composer and the settings are kept in
 * IndexedDB (idb-keyval, database `legokv-studio`) and come back after a
 * reload. Written a moment after each change.
 */
import { createStore, get, set } from 'idb-keyval';
import { DEFAULT_SETTINGS, useStudio, type StudioState } from './studio-store';
import { isChunkTable } from '../worker/chunk-table';

const KEY = 'studio-v1';
const db = () => createStore('legokv-studio', 'state');

type Saved = Pick<StudioState, 'docs' | 'splits' | 'composer' | 'settings'> & { version: 1 };

/** The documents and their chunks, kept under their own key: large, and written only when they change. */
const DOCS_KEY = 'studio-v1-docs';
type SavedDocs = Pick<StudioState, 'docs' | 'splits'>;

let started = false;

/** Loads the saved studio, then saves every change (debounced). Safe to call more than once. */
export async function hydrateStudio(): Promise<void> {
  if (started) return;
  started = true;
  const store = db();
  try {
    // Older saves hold the documents in the main record; newer ones under DOCS_KEY.
    const [saved, savedDocs] = (await Promise.all([get(KEY, store), get(DOCS_KEY, store)])) as [Saved | undefined, SavedDocs | undefined];
    if (saved?.version === 1) {
      // Compare's list was a setting once; older saves still carry one (without prompt), which is not used.
      const { compare: _, ...settings } = (saved.settings ?? {}) as Partial<StudioState['settings']> & { compare?: unknown };
      // Splits saved before chunks were packed into a table are dropped: the documents are cut again once a model is loaded.
      const splits = Object.fromEntries(Object.entries(savedDocs?.splits ?? saved.splits ?? {}).filter(([, sp]) => isChunkTable(sp?.chunks)));
      useStudio.getState().set({
        docs: savedDocs?.docs ?? saved.docs ?? [], splits, composer: saved.composer ?? [],
        settings: { ...DEFAULT_SETTINGS, ...settings },
      });
    }
  } catch (e) {
    useStudio.getState().set({ error: { message: `Saved documents could not be read from this browser's storage: ${(e as Error).message}`, at: 'documents' } });
  }
  useStudio.getState().set({ hydrated: true });
  let timer: ReturnType<typeof setTimeout> | null = null;
  let last: Pick<StudioState, 'docs' | 'splits' | 'composer' | 'settings'> | null = null;
  let docsDirty = false;
  const fail = (e: Error) =>
    useStudio.getState().set({ error: { message: `Documents could not be saved in this browser (${e.name}: ${e.message}); they will be lost on reload.`, at: 'documents' } });
  useStudio.subscribe((s) => {
    if (last && last.docs === s.docs && last.splits === s.splits && last.composer === s.composer && last.settings === s.settings) return;
    // Copying megabytes of documents into IndexedDB blocks the page: only when they changed, not for each keystroke.
    docsDirty ||= !last || last.docs !== s.docs || last.splits !== s.splits;
    last = { docs: s.docs, splits: s.splits, composer: s.composer, settings: s.settings };
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      const now = last!;
      const small: Saved = { version: 1, docs: [], splits: {}, composer: now.composer, settings: now.settings };
      if (docsDirty) {
        docsDirty = false;
        set(DOCS_KEY, { docs: now.docs, splits: now.splits } satisfies SavedDocs, store).catch(fail);
      }
      set(KEY, small, store).catch(fail);
    }, 150);
  });
}
