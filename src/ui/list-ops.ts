/** Small pure helpers of the studio's editors (tested in Node). */

/** `list` with the item at `from` moved to index `to`. */
export function moveItem<T>(list: T[], from: number, to: number): T[] {
  const out = list.slice();
  const [x] = out.splice(from, 1);
  out.splice(Math.max(0, Math.min(out.length, to)), 0, x);
  return out;
}

/** The start of the word before (dir −1) or after (dir +1) offset `o`; `o` itself when there is none. */
export function wordStep(text: string, o: number, dir: -1 | 1): number {
  const isStart = (i: number) => i > 0 && /\s/.test(text[i - 1]) && /\S/.test(text[i]);
  for (let i = o + dir; i > 0 && i < text.length; i += dir) if (isStart(i)) return i;
  return o;
}
