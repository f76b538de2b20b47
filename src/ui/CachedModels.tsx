/** The models kept in this browser's storage (OPFS), with Load and Delete. */
import { useApp } from './store';
import { deleteCached, loadModel } from './actions';

export const formatBytes = (b: number) =>
  b >= 2 ** 30 ? `${(b / 2 ** 30).toFixed(2)} GiB` : b >= 2 ** 20 ? `${(b / 2 ** 20).toFixed(1)} MiB` : `${(b / 1024).toFixed(1)} KiB`;

export function CachedModels() {
  const { cached, progress, running } = useApp();
  const busy = !!progress || running;
  const total = cached.reduce((a, m) => a + m.bytes, 0);
  return (
    <div className="cached" data-testid="cached-models">
      <h3>Kept in this browser</h3>
      {cached.length === 0 ? (
        <p className="muted">No models are cached in this browser.</p>
      ) : (
        <table>
          <thead>
            <tr><th>Model</th><th>Revision</th><th>Size</th><th>Files</th><th>Saved</th><th><span className="visually-hidden">Actions</span></th></tr>
          </thead>
          <tbody>
            {cached.map((m) => (
              <tr key={m.key} data-testid="cached-model">
                <td>{m.id}{m.complete ? '' : ' (incomplete download)'}</td>
                <td>{m.revision}</td>
                <td data-testid="cached-size">{formatBytes(m.bytes)}</td>
                <td>{m.files}</td>
                <td>{m.date ? new Date(m.date).toLocaleString() : '—'}</td>
                <td className="actions">
                  <button aria-label={`Load ${m.id}`} disabled={busy || !m.complete} onClick={() => void loadModel({ kind: 'cached', key: m.key }, m.id)}>
                    Load
                  </button>
                  <button aria-label={`Delete ${m.id}`} disabled={busy} onClick={() => void deleteCached(m.key, m.id)}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
          <tfoot>
            <tr><td>Total</td><td /><td>{formatBytes(total)}</td><td colSpan={3} /></tr>
          </tfoot>
        </table>
      )}
    </div>
  );
}
