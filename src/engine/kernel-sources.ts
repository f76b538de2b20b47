/**
 * The WGSL sources of kernels/, bundled by Vite for the browser (Node reads them from disk: src/node/gpu.ts).
 * A function, not a constant: Vite replaces the glob at build time, and Node, which has no such glob, can import
 * the engine as long as it never calls this.
 */
import type { KernelSources } from './gpu/kernels';

export function bundledKernelSources(): KernelSources {
  const files = import.meta.glob('../../kernels/*.wgsl', { query: '?raw', import: 'default', eager: true }) as Record<string, string>;
  return Object.fromEntries(Object.entries(files).map(([path, src]) => [path.replace(/^.*\//, '').replace(/\.wgsl$/, ''), src]));
}
