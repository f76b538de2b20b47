import type { Progress } from './store';

const mb = (b: number) => `${(b / 2 ** 20).toFixed(1)} MB`;

const STAGES: Record<string, string> = {
  start: 'Starting',
  download: 'Downloading',
  cache: "Copying into the browser's storage",
  parse: 'Reading the model files',
  upload: 'Uploading the weights to the GPU',
  tune: "Timing decode's kernels on this GPU",
};

/** Bytes, percentage and ETA of a download or load, with a cancel button; stages without byte counts show a busy bar. */
export function ProgressBar({ progress, onCancel }: { progress: Progress; onCancel: () => void }) {
  const { loaded, total, stage, startedAt, file } = progress;
  const frac = total > 0 ? loaded / total : 0;
  const elapsed = (performance.now() - startedAt) / 1000;
  const eta = frac > 0.01 && frac < 1 ? (elapsed / frac) * (1 - frac) : null;
  const bytes = total > 0 || loaded > 0;
  return (
    <div className="progress" role="status" data-testid="progress">
      {bytes ? (
        <progress aria-label={`${stage} progress`} value={loaded} max={total || 1} />
      ) : (
        <progress aria-label={`${stage} progress`} />
      )}
      <span>
        {STAGES[stage] ?? stage}
        {file ? ` ${file}` : ''}
        {bytes ? `: ${mb(loaded)}` : '…'}
        {total ? ` of ${mb(total)}` : ''}
        {eta !== null ? ` · about ${eta.toFixed(0)} s left` : ''}
      </span>
      <button onClick={onCancel}>Cancel</button>
    </div>
  );
}
