/** The studio's current problem, in the panel it belongs to, with a way to dismiss it. */
import { useStudio, type ErrorPlace } from './studio-store';

export function StudioError({ at }: { at: ErrorPlace }) {
  const error = useStudio((s) => s.error);
  const set = useStudio((s) => s.set);
  if (!error || error.at !== at) return null;
  return (
    <div role="alert" className="notice row-between" data-testid="studio-error">
      <span>{error.message}</span>
      <button className="small-btn" aria-label="Dismiss this message" onClick={() => set({ error: null })}>×</button>
    </div>
  );
}
