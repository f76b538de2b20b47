import type { Progress } from './store';

const mb = (b: number) => `${(b / 2 ** 20).toFixed(1)} MB`;

/** Bytes, percentage and ETA of a download or load, with a cancel button. */
export function ProgressBar({ progress, onCancel }: { progress: Progress; onCancel: () => void }) {
  const { loaded, total, stage, startedAt } = progress;
  const frac = total > 0 ? loaded / total : 0;
  const elapsed = (performance.now() - startedAt) / 1000;
  const eta = frac > 0.01 && frac < 1 ? (elapsed / frac) * (1 - frac) : null;
  return (
    <div className="progress" role="status">
      <progress aria-label={`${stage} progress`} value={loaded} max={total || 1} />
      <span>
        {stage}: {mb(loaded)}
        {total ? ` of ${mb(total)}` : ''}
        {eta !== null ? ` · about ${eta.toFixed(0)} s left` : ''}
      </span>
      <button onClick={onCancel}>Cancel</button>
    </div>
  );
}
