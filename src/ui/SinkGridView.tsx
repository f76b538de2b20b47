/**
 * The measured sink map as a small picture: one cell per layer (across) and
 * head (down), coloured by the share of the question's attention on chunk
 * starts (brightest = the largest share), the picked cell outlined; hovering
 * or the arrow keys read a cell.
 */
import { useEffect, useRef, useState, type KeyboardEvent, type MouseEvent } from 'react';
import { heatColour } from '../analysis/attention-math';
import type { SinkMapResult } from '../worker/studio-protocol';
import { hiDpiContext } from './canvas';

const CELL = 12;
const pct = (v: number) => `${(100 * v).toFixed(1)}%`;

export function SinkGridView({ grid }: { grid: SinkMapResult }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [cell, setCell] = useState<{ layer: number; head: number } | null>(null);
  const { layers, heads, start, ordinary, best } = grid;
  const max = Math.max(1e-12, ...start.filter((v) => !Number.isNaN(v)));
  const width = layers * CELL;
  const height = heads * CELL;

  useEffect(() => {
    const c = canvas.current;
    if (!c) return;
    const ctx = hiDpiContext(c, width, height);
    for (let l = 0; l < layers; l++) {
      for (let h = 0; h < heads; h++) {
        const [r, g, b] = heatColour(start[l * heads + h] / max);
        ctx.fillStyle = `rgb(${r},${g},${b})`;
        ctx.fillRect(l * CELL, h * CELL, CELL, CELL);
      }
    }
    ctx.strokeStyle = '#10b981';
    ctx.lineWidth = 2;
    ctx.strokeRect(best.layer * CELL + 1, best.head * CELL + 1, CELL - 2, CELL - 2);
  }, [layers, heads, start, max, best, width, height]);

  const read = (c: { layer: number; head: number }) => {
    const i = c.layer * heads + c.head;
    return `Layer ${c.layer}, head ${c.head}: ${pct(start[i])} on each chunk start, ${pct(ordinary[i])} on an ordinary token`;
  };
  function onMove(e: MouseEvent<HTMLCanvasElement>) {
    const r = e.currentTarget.getBoundingClientRect();
    const layer = Math.floor((e.clientX - r.left) / CELL);
    const head = Math.floor((e.clientY - r.top) / CELL);
    setCell(layer >= 0 && layer < layers && head >= 0 && head < heads ? { layer, head } : null);
  }
  function onKey(e: KeyboardEvent<HTMLCanvasElement>) {
    const d = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] }[e.key];
    if (e.key === 'Escape') setCell(null);
    if (!d) return;
    e.preventDefault();
    const c = cell ?? { layer: best.layer, head: best.head };
    setCell({ layer: Math.max(0, Math.min(layers - 1, c.layer + d[0])), head: Math.max(0, Math.min(heads - 1, c.head + d[1])) });
  }

  return (
    <figure className="sink-grid" data-testid="sink-grid">
      <canvas
        ref={canvas} style={{ width, height }} tabIndex={0} onMouseMove={onMove} onMouseLeave={() => setCell(null)} onKeyDown={onKey}
        onBlur={() => setCell(null)} role="img"
        aria-label={`Sink map: ${layers} layers across, ${heads} heads down, brighter where chunk starts draw more of the question's attention. Arrow keys read the cells.`}
      />
      <figcaption className="muted small" aria-live="polite">
        {cell ? read(cell) : `Layers 0–${layers - 1} across, heads 0–${heads - 1} down; the brightest cell (${pct(max)} on each chunk start) is outlined.`}
      </figcaption>
    </figure>
  );
}
