/**
 * Documents, their chunks, the composer and the settings are kept in
 * IndexedDB (idb-keyval, database `legokv-studio`) and come back after a
 * reload. Written a moment after each change.
 */
import { createStore, get, set } from 'idb-keyval';
import { DEFAULT_SETTINGS, useStudio, type StudioState } from './studio-store';

const KEY = 'studio-v1';
const db = () => createStore('legokv-studio', 'state');

type Saved = Pick<StudioState, 'docs' | 'splits' | 'composer' | 'settings'> & { version: 1 };

let started = false;

/** Loads the saved studio, then saves every change (debounced). Safe to call more than once. */
export async function hydrateStudio(): Promise<void> {
  if (started) return;
  started = true;
  const store = db();
  try {
    const saved = (await get(KEY, store)) as Saved | undefined;
    if (saved?.version === 1) {
      // Compare's list was a setting once; older saves still carry one (without prompt), which is not used.
      const { compare: _, ...settings } = (saved.settings ?? {}) as Partial<StudioState['settings']> & { compare?: unknown };
      useStudio.getState().set({
        docs: saved.docs ?? [], splits: saved.splits ?? {}, composer: saved.composer ?? [],
        settings: { ...DEFAULT_SETTINGS, ...settings },
      });
    }
  } catch (e) {
    useStudio.getState().set({ error: { message: `Saved documents could not be read from this browser's storage: ${(e as Error).message}`, at: 'documents' } });
  }
  useStudio.getState().set({ hydrated: true });
  let timer: ReturnType<typeof setTimeout> | null = null;
  let last: Saved | null = null;
  useStudio.subscribe((s) => {
    const next: Saved = { version: 1, docs: s.docs, splits: s.splits, composer: s.composer, settings: s.settings };
    if (last && last.docs === next.docs && last.splits === next.splits && last.composer === next.composer && last.settings === next.settings) return;
    last = next;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      set(KEY, next, store).catch((e: Error) =>
        useStudio.getState().set({ error: { message: `Documents could not be saved in this browser (${e.name}: ${e.message}); they will be lost on reload.`, at: 'documents' } }),
      );
    }, 150);
  });
}
