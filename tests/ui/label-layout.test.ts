/** The attention map's boundary labels: placed in rows, cut to their room, never over each other. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { placeLabels, type LabelMark } from '../../src/ui/label-layout';

const measure = (s: string) => 6 * [...s].length;

function overlaps(p: ReturnType<typeof placeLabels>): string[] {
  const out: string[] = [];
  p.forEach((a, i) => p.slice(i + 1).forEach((b) => {
    if (a.row === b.row && a.left < b.left + b.width && b.left < a.left + a.width) out.push(`${a.text} / ${b.text}`);
  }));
  return out;
}

test('labels of close boundaries are cut to fit and never overlap; far ones keep their whole text', () => {
  // Chunks of a few tokens each at 6 px per token: boundaries 18 px apart, labels of 60-100 px.
  const marks: LabelMark[] = Array.from({ length: 12 }, (_, i) => ({ x: i * 18, text: `${i + 1}: story.txt · ${i + 1}`, short: String(i + 1) }));
  marks.push({ x: 220, text: 'question', short: 'q' }, { x: 236, text: 'answer', short: 'a' });
  const p = placeLabels(marks, 260, measure);
  assert.deepEqual(overlaps(p), []);
  assert.ok(p.every((l) => l.left >= 0 && l.left + l.width <= 259), 'inside the canvas');
  assert.ok(p.every((l) => l.left >= marks[l.mark].x), 'right of its mark (none was at the edge with room to shift)');
  assert.ok(p.filter((l) => l.text.endsWith('…') || l.text === marks[l.mark].short).length > 6, 'cut where there is no room');
  // Far apart: whole texts, alternating rows, each just right of its mark.
  const far = placeLabels([{ x: 0, text: '1: a.txt · 1', short: '1' }, { x: 200, text: '2: a.txt · 2', short: '2' }, { x: 390, text: 'question', short: 'q' }], 400, measure);
  assert.deepEqual(far.map((l) => [l.row, l.left, l.text]), [[0, 2, '1: a.txt · 1'], [1, 202, '2: a.txt · 2'], [0, 399 - 48, 'question']]);
});
