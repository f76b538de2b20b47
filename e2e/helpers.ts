/** Helpers shared by the studio's end-to-end tests. */
import type { Page } from '@playwright/test';
import type { KernelChoice } from '../src/worker/protocol';

/** True when the canvas holds more than a handful of distinct colours (a drawn heatmap, not a blank box). */
export function canvasColours(page: Page, index: number) {
  return page.getByTestId('attention-canvas').nth(index).evaluate((c: HTMLCanvasElement) => {
    const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
    const seen = new Set<number>();
    for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0) seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
    return seen.size;
  });
}

/** Forces the GPU or CPU kernel profile, decode's fused launches and the f16 slices in the page's worker (needs ?debug). */
export function setKernels(page: Page, profile: 'cpu' | 'gpu' | null, fuse: boolean | null = null, half: boolean | null = null): Promise<KernelChoice> {
  type Debug = { legokv: { setKernels(p: 'cpu' | 'gpu' | null, f: boolean | null, h: boolean | null): Promise<KernelChoice> } };
  return page.evaluate(([p, f, h]) => (globalThis as unknown as Debug).legokv.setKernels(p, f, h), [profile, fuse, half] as const);
}
