/** Saving a chart: its data as JSON, or its SVG drawn onto a canvas as PNG (white background, 2× scale). */

function download(blob: Blob, name: string) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function downloadJson(name: string, data: unknown) {
  download(new Blob([JSON.stringify(data, null, 2)], { type: 'application/json' }), name);
}

/** The chart's SVG as a PNG blob. */
export async function svgToPng(svg: SVGSVGElement, scale = 2): Promise<Blob> {
  const { width, height } = svg.getBoundingClientRect();
  const clone = svg.cloneNode(true) as SVGSVGElement;
  clone.setAttribute('xmlns', 'http://www.w3.org/2000/svg');
  clone.setAttribute('width', String(width));
  clone.setAttribute('height', String(height));
  // Text in recharts inherits the page font; make it explicit for the standalone image.
  clone.setAttribute('style', 'font-family: system-ui, sans-serif; font-size: 12px');
  const src = new XMLSerializer().serializeToString(clone);
  const url = URL.createObjectURL(new Blob([src], { type: 'image/svg+xml;charset=utf-8' }));
  try {
    const img = new Image();
    await new Promise<void>((resolve, reject) => {
      img.onload = () => resolve();
      img.onerror = () => reject(new Error('the chart could not be drawn as an image'));
      img.src = url;
    });
    const canvas = document.createElement('canvas');
    canvas.width = Math.ceil(width * scale);
    canvas.height = Math.ceil(height * scale);
    const ctx = canvas.getContext('2d')!;
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.scale(scale, scale);
    ctx.drawImage(img, 0, 0, width, height);
    return await new Promise<Blob>((resolve, reject) => canvas.toBlob((b) => (b ? resolve(b) : reject(new Error('PNG encoding failed'))), 'image/png'));
  } finally {
    URL.revokeObjectURL(url);
  }
}

/**
 * The chart's own SVG inside `container`: the largest `svg.recharts-surface`, since the legend's icons are
 * small SVGs of the same class and may come first.
 */
export function chartSvg(container: ParentNode | null): SVGSVGElement | null {
  let best: SVGSVGElement | null = null;
  let area = 0;
  for (const svg of container?.querySelectorAll<SVGSVGElement>('svg.recharts-surface') ?? []) {
    const r = svg.getBoundingClientRect();
    if (r.width * r.height > area) [best, area] = [svg, r.width * r.height];
  }
  return best;
}

/** Saves the chart SVG inside `container` as `name` (PNG). */
export async function downloadPng(container: HTMLElement | null, name: string) {
  const svg = chartSvg(container);
  if (!svg) throw new Error('There is no chart to export yet');
  download(await svgToPng(svg), name);
}
