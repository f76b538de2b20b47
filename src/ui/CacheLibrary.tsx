/** The KVStore's compiled chunk caches: size, tier, age and hits of each, with Expire and Clear, and the store's totals. */
import { useEffect, useState } from 'react';
import { useStudio } from './studio-store';
import { chunkIndexOfId } from '../worker/chunk-table';
import { clearLibrary, expireCache, refreshLibrary, setGpuTierBudget } from './doc-actions';
import { formatBytes } from './CachedModels';
import { useApp } from './store';
import { StudioError } from './StudioError';

/** Rows drawn at most (a large document compiles to tens of thousands of caches). */
const MAX_ROWS = 200;

/** The GPU tier budgets offered, in MiB, beside the loaded model's default. */
const GPU_TIER_MIB = [256, 512, 1024, 2048, 4096, 8192];

export function age(ms: number): string {
  const s = Math.max(0, (Date.now() - ms) / 1000);
  if (s < 60) return `${Math.floor(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h`;
  return `${Math.floor(s / 86400)} d`;
}

export function CacheLibrary() {
  const library = useStudio((s) => s.library);
  const docs = useStudio((s) => s.docs);
  const splits = useStudio((s) => s.splits);
  const busy = useStudio((s) => s.busy);
  const model = useApp((s) => s.model);
  const gpuTierMiB = useStudio((s) => s.settings.gpuTierMiB);
  const [confirm, setConfirm] = useState(false);
  const [, setNow] = useState(0);
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 10_000);
    return () => clearInterval(t);
  }, []);
  const hydrated = useStudio((s) => s.hydrated);
  useEffect(() => {
    // A model loaded anew gets the budget chosen before (kept in the settings, so once they are read back), which
    // also reads the library. On a model change only: the select sets the budget itself.
    if (model && hydrated) void (gpuTierMiB === null ? refreshLibrary() : setGpuTierBudget(gpuTierMiB));
  }, [model, hydrated]);

  /** The document chunk a cache entry holds, if one of today's documents has it. */
  const labelOf = (id: string) => {
    for (const d of docs) {
      const t = splits[d.id]?.chunks;
      const i = t && chunkIndexOfId(t, id);
      if (i !== undefined) return `${d.name} · ${i + 1}`;
    }
    return undefined;
  };
  const entries = library?.entries ?? [];
  const st = library?.stats;
  const gpu = library?.gpu;
  return (
    <section className="panel" id="library" aria-labelledby="library-title">
      <div className="row-between">
        <h2 id="library-title">Cache library</h2>
        <span className="row tight">
          <button className="small-btn" onClick={() => void refreshLibrary()}>Refresh</button>
          {confirm ? (
            <>
              <button className="small-btn danger" disabled={!!busy} onClick={() => { setConfirm(false); void clearLibrary(); }}>Yes, clear every cache</button>
              <button className="small-btn" onClick={() => setConfirm(false)}>Keep them</button>
            </>
          ) : (
            <button className="small-btn" disabled={!entries.length || !!busy} onClick={() => setConfirm(true)}>Clear library…</button>
          )}
        </span>
      </div>
      <StudioError at="library" />
      {entries.length === 0 ? (
        <p className="muted" data-testid="library-empty">No compiled caches are stored. Compile chunks to fill the library.</p>
      ) : (
        <div className="table-wrap">
          <table className="library">
            <thead>
              <tr><th>Chunk</th><th>Variant</th><th>Model</th><th title="The chunk's tokens and the BOS compiled before them">Tokens (with BOS)</th><th>Size</th><th>Tier</th><th>Age</th><th>Hits</th><th><span className="visually-hidden">Actions</span></th></tr>
            </thead>
            <tbody>
              {entries.slice(0, MAX_ROWS).map((e) => (
                <tr key={e.id} data-testid="cache-entry">
                  <td title={e.id}>{labelOf(e.id) ?? <span className="muted">{e.id.slice(0, 10)}… (no document)</span>}</td>
                  <td>{e.variant}</td>
                  <td>{e.modelId.split('|')[0]}</td>
                  <td>{e.tokens}</td>
                  <td>{formatBytes(e.bytes)}</td>
                  <td>{e.tier}</td>
                  <td>{age(e.createdAt)}</td>
                  <td>{e.hits}</td>
                  <td><button className="small-btn" aria-label={`Expire ${labelOf(e.id) ?? e.id} (${e.variant})`} disabled={!!busy} onClick={() => void expireCache(e.id)}>Expire</button></td>
                </tr>
              ))}
            </tbody>
          </table>
          {entries.length > MAX_ROWS && <p className="muted small">Showing the {MAX_ROWS} most recently used of {entries.length.toLocaleString('en-US')} caches.</p>}
        </div>
      )}
      {st && (
        <p className="muted small" data-testid="library-stats">
          {st.opfs.entries} caches · OPFS {formatBytes(st.opfs.bytes)} of {formatBytes(st.opfs.budget)} · RAM {formatBytes(st.ram.bytes)} of{' '}
          {formatBytes(st.ram.budget)} ({st.ram.entries} held) · {st.hits} hits ({st.ramHits} RAM, {st.opfsHits} OPFS), {st.misses} misses, {st.evictions} evictions
          {gpu && (
            <span data-testid="library-gpu">
              {' '}· GPU tier {gpu.entries} caches, {formatBytes(gpu.bytes)} of rows in {gpu.slabs} {gpu.slabs === 1 ? 'slab' : 'slabs'} ({formatBytes(gpu.slabBytes)} of{' '}
              {formatBytes(gpu.budget)}), {gpu.hits} hits
            </span>
          )}
        </p>
      )}
      {model && (
        <label className="muted small">
          GPU tier budget{' '}
          <select
            value={gpuTierMiB ?? ''} disabled={!!busy}
            onChange={(ev) => void setGpuTierBudget(ev.target.value === '' ? null : Number(ev.target.value))}
          >
            <option value="">the model's default</option>
            {GPU_TIER_MIB.map((m) => <option key={m} value={m}>{formatBytes(m * 2 ** 20)}</option>)}
          </select>{' '}
          (compiled and linked chunks kept on the GPU; a new budget empties it)
        </label>
      )}
    </section>
  );
}
