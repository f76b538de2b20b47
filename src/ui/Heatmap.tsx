/**
 * One attention map on a canvas: rows are the question and generated tokens,
 * columns the context tokens (chunk boundaries marked above and below the
 * cells, so that a chunk's first column stays visible, and labelled in two
 * rows cut to fit, see label-layout.ts), a column-sum strip under it;
 * hovering shows the tokens and the value. Long
 * contexts are downsampled to the canvas width (each drawn column is the
 * maximum of its tokens), and the panel says so.
 */
import { useEffect, useMemo, useRef, useState, type KeyboardEvent, type MouseEvent } from 'react';
import type { AttentionMap } from '../types/attention';
import { binSums, columnSums, downsample, heatColour, normalizeMap, type Normalization } from '../analysis/attention-math';
import { placeLabels } from './label-layout';
import { hiDpiContext } from './canvas';

const LABEL_H = 34;
const STRIP_H = 40;
const GAP = 6;
const MAX_H = 300;

interface Props {
  map: AttentionMap;
  norm: Normalization;
  width: number;
  /** Colour by the value, or by its square root (brightens small probabilities). */
  contrast: 'linear' | 'sqrt';
}

/** Token text with its whitespace made visible. */
export const visible = (s: string) => s.replace(/\n/g, '⏎').replace(/\t/g, '⇥').replace(/^ | $/g, '␣');

export function Heatmap({ map, norm, width, contrast }: Props) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [hover, setHover] = useState<{ x: number; y: number; text: string } | null>(null);
  const [cursor, setCursor] = useState<{ row: number; col: number } | null>(null);
  const grid = useMemo(() => normalizeMap(map, norm), [map, norm]);
  const binned = useMemo(() => downsample(grid, width), [grid, width]);
  const strip = useMemo(() => binSums(columnSums(grid), binned.factor), [grid, binned.factor]);
  const cellW = width / binned.cols;
  const cellH = Math.max(2, Math.min(14, Math.floor(MAX_H / Math.max(1, binned.rows))));
  const mapH = cellH * binned.rows;
  const height = LABEL_H + mapH + GAP + STRIP_H;
  // Where things are drawn, in CSS pixels and drawn columns (for tests that read the pixels back).
  const layout = useMemo(() => JSON.stringify({
    top: LABEL_H, height: mapH, rows: binned.rows, cols: binned.cols, questionRows: map.rows.filter((r) => r.kind === 'question').length,
    segments: map.segments.map((s) => [Math.floor(s.start / binned.factor), Math.ceil((s.start + s.length) / binned.factor)]),
  }), [map, binned, mapH]);

  useEffect(() => {
    const c = canvas.current;
    if (!c) return;
    const ctx = hiDpiContext(c, width, height);
    ctx.clearRect(0, 0, width, height);
    // The cells, drawn at one pixel each and scaled up without smoothing.
    const img = new ImageData(binned.cols, binned.rows);
    for (let i = 0; i < binned.values.length; i++) {
      const v = binned.values[i];
      const [r, g, b] = heatColour(contrast === 'sqrt' ? Math.sqrt(v) : v);
      img.data.set([r, g, b, 255], i * 4);
    }
    const off = document.createElement('canvas');
    off.width = binned.cols;
    off.height = binned.rows;
    off.getContext('2d')!.putImageData(img, 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(off, 0, LABEL_H, width, mapH);
    // Column sums.
    const top = LABEL_H + mapH + GAP;
    const max = Math.max(1e-12, ...strip);
    ctx.fillStyle = '#33516d';
    strip.forEach((v, j) => {
      const h = (v / max) * STRIP_H;
      ctx.fillRect(j * cellW, top + STRIP_H - h, Math.max(1, cellW - (cellW > 3 ? 1 : 0)), h);
    });
    // Chunk boundaries with labels, then where the question and the answer start.
    const marks = [
      ...map.segments.map((s, i) => ({ at: s.start, text: `${i + 1}: ${s.label}`, short: String(i + 1), colour: '#e11d48' })),
      { at: map.questionStart, text: 'question', short: 'q', colour: '#0f766e' },
      ...(map.columns.length > map.promptTokens ? [{ at: map.promptTokens, text: 'answer', short: 'a', colour: '#7c3aed' }] : []),
    ].map((m) => ({ ...m, x: Math.round((m.at / binned.factor) * cellW) + 0.5 }));
    ctx.font = '11px system-ui, sans-serif';
    ctx.textBaseline = 'top';
    // Labels in two rows, cut to the room before the next label of their row (close boundaries would overlap).
    const labels = new Map(placeLabels(marks, width, (t) => ctx.measureText(t).width).map((l) => [l.mark, l]));
    marks.forEach((m, i) => {
      const label = labels.get(i);
      ctx.strokeStyle = m.colour;
      ctx.lineWidth = 1;
      // Above and below the cells, not across them: a line over a chunk's first column would hide its sink.
      ctx.beginPath();
      ctx.moveTo(m.x, label ? label.row * 14 + 12 : 0);
      ctx.lineTo(m.x, LABEL_H);
      ctx.moveTo(m.x, LABEL_H + mapH);
      ctx.lineTo(m.x, LABEL_H + mapH + GAP + STRIP_H);
      ctx.stroke();
    });
    // The texts over the lines (a first-row mark's line passes the second row), each on a white ground.
    for (const l of labels.values()) {
      ctx.fillStyle = '#fff';
      ctx.fillRect(l.left - 1, l.row * 14, l.width + 2, 13);
      ctx.fillStyle = marks[l.mark].colour;
      ctx.fillText(l.text, l.left, l.row * 14);
    }
  }, [binned, strip, map, width, height, mapH, cellW, contrast]);

  /** What the cell (or, for row −1, the strip) at drawn column `col` holds. */
  function describe(col: number, row: number): string {
    const first = col * binned.factor;
    const last = Math.min(grid.cols, first + binned.factor) - 1;
    const keys = first === last ? `“${visible(map.columns[first])}” (#${first})` : `tokens #${first}–${last} (“${visible(map.columns[first])}”…)`;
    const segment = map.segments.findIndex((s) => first >= s.start && first < s.start + s.length);
    const where = segment >= 0 ? ` in chunk ${segment + 1}` : first >= map.promptTokens ? ' in the answer' : first >= map.questionStart ? ' in the question' : '';
    if (row < 0) return `key ${keys}${where}: column sum ${strip[col].toFixed(3)}`;
    const v = binned.values[row * binned.cols + col];
    const q = map.rows[row];
    return `${q.kind} token “${visible(q.token)}” → key ${keys}${where}: ${Number.isNaN(v) ? 'masked (after the query)' : `${norm === 'softmax' ? 'p' : 'scaled'} = ${v.toFixed(4)}`}`;
  }

  const place = (x: number, y: number, text: string) => setHover({ x: Math.max(0, Math.min(x + 12, width - 240)), y: y + 14, text });

  function onMove(e: MouseEvent<HTMLCanvasElement>) {
    const r = e.currentTarget.getBoundingClientRect();
    const x = e.clientX - r.left;
    const y = e.clientY - r.top;
    const col = Math.floor(x / cellW);
    const row = Math.floor((y - LABEL_H) / cellH);
    if (col < 0 || col >= binned.cols) return setHover(null);
    if (row >= 0 && row < binned.rows) place(x, y, describe(col, row));
    else if (y >= LABEL_H + mapH + GAP) place(x, y, describe(col, -1));
    else setHover(null);
  }

  /** Arrow keys walk the cells (Shift: 10 at a time), Escape hides the read-out. */
  function onKey(e: KeyboardEvent<HTMLCanvasElement>) {
    const step = e.shiftKey ? 10 : 1;
    const d = { ArrowLeft: [0, -step], ArrowRight: [0, step], ArrowUp: [-step, 0], ArrowDown: [step, 0] }[e.key];
    if (e.key === 'Escape') {
      setHover(null);
      setCursor(null);
      return;
    }
    if (!d) return;
    e.preventDefault();
    const c = cursor ?? { row: 0, col: 0 };
    const next = { row: Math.max(0, Math.min(binned.rows - 1, c.row + d[0])), col: Math.max(0, Math.min(binned.cols - 1, c.col + d[1])) };
    setCursor(next);
    place((next.col + 0.5) * cellW, LABEL_H + (next.row + 0.5) * cellH, describe(next.col, next.row));
  }

  return (
    <div className="heatmap" style={{ width }}>
      <canvas
        ref={canvas} style={{ width, height }} data-testid="attention-canvas" data-layout={layout} onMouseMove={onMove} onMouseLeave={() => setHover(null)}
        tabIndex={0} onKeyDown={onKey} onBlur={() => setHover(null)}
        role="img" aria-label={`Attention map of ${map.algorithm}, layer ${map.layer}, head ${map.head}: ${map.rows.length} query rows over ${map.columns.length} tokens. Arrow keys read the cells.`}
      />
      {hover && <div className="heat-tip" role="tooltip" aria-live="polite" style={{ left: hover.x, top: hover.y }}>{hover.text}</div>}
      <p className="muted small">
        {map.rows.length} rows ({map.rows.filter((r) => r.kind === 'question').length} question, {map.rows.filter((r) => r.kind === 'answer').length} answer) ×{' '}
        {map.columns.length} tokens.
        {binned.factor > 1 && <span data-testid="downsampled"> Downsampled: each drawn column is the maximum of {binned.factor} tokens, the strip their sum.</span>}
      </p>
    </div>
  );
}
