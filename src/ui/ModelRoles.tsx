/**
 * Which model answers what, in the Documents panel: the model offered for
 * the user's own documents (SmolLM2-135M-Instruct where it was fetched, with
 * a button to load it), and one line per model the page offers (its `use`
 * from the model index), the loaded one marked with its chat template.
 */
import { useApp } from './store';
import { useStudio } from './studio-store';
import { loadBundled } from './actions';

/** The bundled models, the loaded one, whether either side is busy, and the model offered for the user's own documents. */
export function useModelRoles() {
  const bundled = useApp((a) => a.bundled);
  const model = useApp((a) => a.model);
  const loading = useApp((a) => !!a.progress || a.running);
  const busy = useStudio((s) => !!s.busy);
  return { bundled, model, loading, busy, own: bundled.find((m) => m.ownDocuments) };
}

export function ModelRoles() {
  const { bundled, model, loading, busy, own } = useModelRoles();
  if (!bundled.length) return null;
  return (
    <div className="model-roles small" data-testid="model-roles">
      <p className="row">
        {own ? (
          <>
            <span>For your own documents: <b>{own.id}</b>{model?.id === own.id ? ' (loaded).' : '.'}</span>
            {model?.id !== own.id && (
              <button className="small-btn" disabled={loading || busy} onClick={() => void loadBundled(own)}>Load {own.id}</button>
            )}
          </>
        ) : (
          <span>
            For your own documents, no model here answers well: <code>npm run fetch:models</code> fetches SmolLM2-135M-Instruct (98 MB),
            which the page then offers for them.
          </span>
        )}
      </p>
      <ul className="muted" aria-label="Which model answers what">
        {bundled.map((m) => (
          <li key={m.id}>
            <b>{m.id}</b>
            {m.id === model?.id && <> (loaded{model.chatTemplate ? `; the question goes into its ${model.chatTemplate} chat template` : ''})</>}
            : {m.use ?? 'no description'}
          </li>
        ))}
      </ul>
    </div>
  );
}
