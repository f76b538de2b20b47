/**
 * The catalogue of real instruction models (worker/model-catalogue.ts), each with
 * its size, the GPU memory it needs and whether this adapter can hold it
 * (both from its config.json), its chat template and question framing, and
 * a one-click load from the Hub through the usual progress, Cancel, cache and
 * memory check.
 */
import { useApp } from './store';
import { loadModel } from './actions';
import { formatBytes } from './CachedModels';
import { CATALOGUE, entrySize, verdictOn, type CatalogueEntry } from '../worker/model-catalogue';

const billions = (n: number) => (n >= 1e9 ? `${(n / 1e9).toFixed(2)}B` : `${(n / 1e6).toFixed(0)}M`);

/** "fits", "fits (embed in 3 buffers)" or why not, on the adapter the page has. */
function fitText(e: CatalogueEntry, limits: { maxStorageBufferBindingSize: number; maxBufferSize: number } | null): string {
  if (!limits) return 'no adapter yet';
  const v = verdictOn(e, limits);
  if (!v.fits) return `will not fit: ${v.problems.join(' ')}`;
  return v.split.length ? `fits (${v.split.map((s) => `${s.label} in ${s.parts} buffers`).join(', ')})` : 'fits';
}

export function ModelCatalogue({ endpoint }: { endpoint: string | undefined }) {
  const s = useApp();
  const busy = !!s.progress || s.running;
  const cached = new Set(s.cached.filter((c) => c.complete).map((c) => c.id));
  return (
    <div className="catalogue" data-testid="catalogue">
      <h3>Instruction models from the Hugging Face Hub</h3>
      <p className="muted small">
        Real models for your own documents, downloaded once into this browser (a network connection is needed the first
        time). Sizes and GPU memory are computed from each model&apos;s config.json; before any weight is downloaded the
        config is checked against this adapter again.
      </p>
      <table className="library">
        <thead>
          <tr><th>Model</th><th>Parameters</th><th>Download</th><th>GPU memory</th><th>This adapter</th><th>Chat template and framing</th><th><span className="visually-hidden">Load</span></th></tr>
        </thead>
        <tbody>
          {CATALOGUE.map((e) => {
            const z = entrySize(e);
            return (
              <tr key={e.repo} data-testid="catalogue-entry">
                <td>
                  <strong>{e.label}</strong><br />
                  <code>{e.repo}</code><br />
                  <span className="muted small">{e.source}; {e.licence}</span>
                </td>
                <td>{billions(z.params)}</td>
                <td>{formatBytes(z.downloadBytes)}{cached.has(e.repo) ? ' (cached)' : ''}</td>
                <td data-testid="catalogue-memory">
                  {formatBytes(z.weightBytes)} of {z.weightDtype} weights + {formatBytes(z.kvBytesPerToken * 1024)} of {z.kvDtype} KV per 1K tokens
                </td>
                <td data-testid="catalogue-fit">{fitText(e, s.adapter)}</td>
                <td className="small">
                  {e.chatTemplate}; question put as <code>{JSON.stringify(e.prompt.framing)}</code>
                </td>
                <td>
                  <button
                    aria-label={`Load ${e.repo}`} disabled={busy}
                    onClick={() => {
                      void navigator.storage?.persist?.().catch(() => false);
                      void loadModel({ kind: 'hub', input: e.repo, endpoint }, e.repo);
                    }}
                  >
                    Load
                  </button>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
