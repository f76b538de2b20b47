/**
 * Placing the labels of marks along a line (the attention map's chunk
 * boundaries) in a few rows so that none overlaps another: labels alternate
 * rows, each starts just right of its mark and is cut (ending in "…") where
 * it would reach the next label of its row or the edge; at the edge it may
 * move left of its mark, never over its neighbour. A label with no room even
 * for its short form (the chunk's number) is left out.
 */

export interface LabelMark {
  /** Where the mark is, in pixels. */
  x: number;
  text: string;
  /** What to show when even a cut text does not fit. */
  short: string;
}

export interface PlacedLabel {
  mark: number;
  row: number;
  /** Left edge of the drawn text. */
  left: number;
  text: string;
  width: number;
}

/** Label positions for `marks` (in x order) in `rows` rows, within [0, width]; `measure` gives a text's drawn width. */
export function placeLabels(marks: readonly LabelMark[], width: number, measure: (s: string) => number, rows = 2, gap = 4): PlacedLabel[] {
  const out: PlacedLabel[] = [];
  const end = new Array<number>(rows).fill(-Infinity);
  marks.forEach((m, i) => {
    const row = i % rows;
    const next = marks[i + rows];
    const right = Math.min(width - 1, next ? next.x + 2 - gap : Infinity);
    const minLeft = end[row] + gap;
    let left = Math.max(m.x + 2, minLeft);
    let text = m.text;
    let w = measure(text);
    if (left + w > right) {
      // Shift left (at the edge) if that clears the previous label; else cut the text to the room there is.
      const shifted = right - w;
      if (!next && shifted >= minLeft && shifted >= 0) left = shifted;
      else {
        while (text.length > 1 && left + measure(`${text}…`) > right) text = text.slice(0, -1);
        text = text === m.text ? text : `${text}…`;
        w = measure(text);
        if (left + w > right || text.length <= m.short.length + 1) {
          text = m.short;
          w = measure(text);
          if (left + w > right) return;
        }
      }
    }
    out.push({ mark: i, row, left, text, width: w });
    end[row] = left + w;
  });
  return out;
}
