/** The WGSL sources of kernels/, bundled by Vite for the browser (Node reads them from disk). */
import type { KernelSources } from './gpu/kernels';

const files = import.meta.glob('../../kernels/*.wgsl', { query: '?raw', import: 'default', eager: true }) as Record<string, string>;

export const kernelSources: KernelSources = Object.fromEntries(
  Object.entries(files).map(([path, src]) => [path.replace(/^.*\//, '').replace(/\.wgsl$/, ''), src]),
);
