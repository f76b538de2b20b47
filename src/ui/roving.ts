/**
 * One tab stop per list (roving tabindex): in a list of items with
 * `data-roving`, only one item is in the Tab order; Up and Down (Home, End)
 * move between items, Left and Right between an item and its buttons (which
 * leave the Tab order), Escape back to the item. Long chunk lists no longer
 * cost 4-5 Tab presses per chunk.
 */
import { useEffect, useRef, type KeyboardEvent, type RefObject } from 'react';

const ITEM = ':scope > [data-roving]';

function items(list: HTMLElement): HTMLElement[] {
  return [...list.querySelectorAll<HTMLElement>(ITEM)];
}

/** The item's own stop, then its enabled buttons. */
function stops(item: HTMLElement): HTMLElement[] {
  return [item, ...item.querySelectorAll<HTMLElement>('button:not(:disabled)')];
}

function activate(list: HTMLElement, target: HTMLElement) {
  for (const it of items(list)) {
    it.tabIndex = it === target ? 0 : -1;
    for (const b of it.querySelectorAll<HTMLElement>('button')) b.tabIndex = -1;
  }
  target.focus();
}

/**
 * Keeps `list`'s items roving after every render (the current item, or the first, holds the tab stop) and
 * returns the list's keydown handler.
 */
export function useRovingList<T extends HTMLElement>(): [RefObject<T | null>, (e: KeyboardEvent<T>) => void] {
  const ref = useRef<T>(null);
  useEffect(() => {
    const list = ref.current;
    if (!list) return;
    const all = items(list);
    const current = all.find((it) => it.tabIndex === 0) ?? all[0];
    for (const it of all) {
      it.tabIndex = it === current ? 0 : -1;
      for (const b of it.querySelectorAll<HTMLElement>('button')) b.tabIndex = -1;
    }
  });
  function onKeyDown(e: KeyboardEvent<T>) {
    const list = ref.current;
    const from = e.target as HTMLElement;
    const item = from.closest<HTMLElement>('[data-roving]');
    if (!list || !item || item.parentElement !== list) return;
    const all = items(list);
    const i = all.indexOf(item);
    const own = stops(item);
    const j = own.indexOf(from);
    let to: HTMLElement | undefined;
    if (e.key === 'ArrowDown') to = all[i + 1];
    else if (e.key === 'ArrowUp') to = all[i - 1];
    else if (e.key === 'Home') to = all[0];
    else if (e.key === 'End') to = all[all.length - 1];
    else if (e.key === 'ArrowRight') to = own[(j + 1) % own.length];
    else if (e.key === 'ArrowLeft') to = own[(j - 1 + own.length) % own.length];
    else if (e.key === 'Escape' && from !== item) to = item;
    if (!to) return;
    e.preventDefault();
    if (to.dataset.roving !== undefined) activate(list, to);
    else to.focus();
  }
  return [ref, onKeyDown];
}
