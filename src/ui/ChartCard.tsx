/** A chart with its title and Export PNG / Export JSON buttons. */
import { useRef, useState, type ReactNode } from 'react';
import { downloadJson, downloadPng } from './chart-export';

export function ChartCard({ title, file, data, children, testId }: { title: string; file: string; data: unknown; children: ReactNode; testId?: string }) {
  const box = useRef<HTMLDivElement>(null);
  const [error, setError] = useState<string | null>(null);
  return (
    <figure className="chart-card" data-testid={testId}>
      <figcaption className="row-between">
        <strong>{title}</strong>
        <span className="row tight">
          <button className="small-btn" aria-label={`Export ${title} as PNG`} onClick={() => downloadPng(box.current, `${file}.png`).then(() => setError(null), (e: Error) => setError(e.message))}>PNG</button>
          <button className="small-btn" aria-label={`Export ${title} as JSON`} onClick={() => downloadJson(`${file}.json`, data)}>JSON</button>
        </span>
      </figcaption>
      <div ref={box}>{children}</div>
      {error && <p className="error-text">{error}</p>}
    </figure>
  );
}
