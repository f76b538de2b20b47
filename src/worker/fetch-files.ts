/** Fetches a model's files from a URL folder with byte progress and cancellation. */
import { bufferSource, ModelFormatError, type ModelFiles } from '../engine';
import type { BundledModelRef } from './protocol';

export async function fetchModelFiles(
  ref: BundledModelRef,
  signal: AbortSignal,
  progress: (loaded: number, total: number) => void,
): Promise<ModelFiles> {
  const base = new URL(ref.base);
  const heads = await Promise.all(ref.files.map((f) => fetch(new URL(f, base), { signal })));
  for (const [i, r] of heads.entries()) {
    // A dev server answers unknown paths with index.html: never parse that as a model.
    if (!r.ok || (r.headers.get('content-type') ?? '').startsWith('text/html')) {
      throw new ModelFormatError(`Could not fetch ${ref.files[i]} from ${base.href} (HTTP ${r.status})`);
    }
  }
  const total = heads.reduce((a, r) => a + Number(r.headers.get('content-length') ?? 0), 0);
  let loaded = 0;
  const bytes = new Map<string, Uint8Array>();
  for (const [i, r] of heads.entries()) {
    const reader = r.body!.getReader();
    const parts: Uint8Array[] = [];
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
      loaded += value.byteLength;
      progress(loaded, Math.max(total, loaded));
    }
    const all = new Uint8Array(parts.reduce((a, p) => a + p.byteLength, 0));
    let o = 0;
    for (const p of parts) {
      all.set(p, o);
      o += p.byteLength;
    }
    bytes.set(ref.files[i], all);
  }
  return {
    names: () => [...bytes.keys()],
    get: async (n) => (bytes.has(n) ? bufferSource(n, bytes.get(n)!) : undefined),
  };
}
