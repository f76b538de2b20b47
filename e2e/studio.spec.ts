/**
 * The studio in real headless Chromium on WebGPU (SwiftShader), with the
 * bundled stories260K, driven through the UI with real mouse and drag
 * events: documents dropped (a DataTransfer drop with Files made in the page)
 * and picked (the file input), compiled, still listed after a reload, linked
 * in a new order by drag and drop, asked with three algorithms; answers with
 * TTFT, a drawn attention map and a TTFT chart. Bad files get clear alerts.
 * Screenshots of the main screens go to test-results/screens/. The guided
 * demo has its own file (demo.spec.ts).
 */
import { test, expect, type Page } from '@playwright/test';
import { readFile } from 'node:fs/promises';
import { canvasColours } from './helpers';

const LILY = 'Lily had a red kite. She ran to the hill to fly it every day.\n\nOne day the string broke and the kite flew away. Lily was sad, but her friend Ben helped her find it in a tree.';
const TOM = 'Tom had a big dog named Max. Max liked to run in the park.\n\nOne day Max jumped into the pond to get a blue ball. Tom laughed and gave him a warm towel.';
const HTML = '<!doctype html><html><head><title>t</title><style>p { color: red }</style><script>window.pwned = 1; document.title = "x";</script></head><body><h1>Sue and the bird</h1><p>Sue saw a little bird in the garden.</p><p>The bird sang a <b>happy</b> song.</p></body></html>';

/** Drops files made in the page onto a drop zone, as a browser does for files dragged from the desktop. */
async function dropFiles(page: Page, testId: string, files: { name: string; type: string; text?: string; bytes?: number[] }[]) {
  const dt = await page.evaluateHandle((fs) => {
    const dt = new DataTransfer();
    for (const f of fs) dt.items.add(new File([f.bytes ? new Uint8Array(f.bytes) : f.text ?? ''], f.name, { type: f.type }));
    return dt;
  }, files);
  await page.getByTestId(testId).dispatchEvent('dragover', { dataTransfer: dt });
  await page.getByTestId(testId).dispatchEvent('drop', { dataTransfer: dt });
}

/** The studio's settings as persist.ts saved them in IndexedDB. */
function savedSettings(page: Page): Promise<{ gpuTierMiB?: number | null } | undefined> {
  return page.evaluate(() => new Promise((resolve, reject) => {
    const open = indexedDB.open('legokv-studio');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const get = open.result.transaction('state').objectStore('state').get('studio-v1');
      get.onsuccess = () => { resolve(get.result?.settings); open.result.close(); };
      get.onerror = () => reject(get.error);
    };
  }));
}

async function ready(page: Page) {
  await expect(page.getByTestId('model-ready')).toContainText('stories260K');
}

/** The ?debug page's slow-motion decode: the worker waits `ms` after every token of an answer. */
function setDecodeDelay(page: Page, ms: number) {
  return page.evaluate((d) => (globalThis as unknown as { legokv: { setDecodeDelay(ms: number): Promise<void> } }).legokv.setDecodeDelay(d), ms);
}

test('documents → compile → reload → link in a new order → three algorithms, attention map and TTFT chart', async ({ page }) => {
  test.setTimeout(360_000); // the longest flow: about 30 s alone, several times that on a loaded 2-core machine
  await page.goto('/?debug&model=stories260K');
  await ready(page);

  // Two documents dropped, one HTML file picked (its tags and script are not kept).
  await dropFiles(page, 'doc-dropzone', [{ name: 'lily.txt', type: 'text/plain', text: LILY }, { name: 'tom.md', type: 'text/markdown', text: TOM }]);
  await expect(page.getByTestId('document')).toHaveCount(2);
  await page.getByLabel('Add document files').setInputFiles({ name: 'sue.html', mimeType: 'text/html', buffer: Buffer.from(HTML) });
  await expect(page.getByTestId('document')).toHaveCount(3);
  const sue = page.getByTestId('document').filter({ hasText: 'sue.html' });
  await expect(sue.getByTestId('chunk').first()).toContainText('Sue saw a little bird');
  await expect(sue).not.toContainText('pwned');
  expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();

  // Smaller chunks for Lily's story, then one boundary moved by hand: a click in the text cuts it there.
  const lily = page.getByTestId('document').filter({ hasText: 'lily.txt' });
  await lily.getByLabel('Chunk tokens (lily.txt)').fill('24');
  await expect(lily.getByTestId('chunk')).not.toHaveCount(2);
  // Where the middle character of the first chunk is drawn (a Range over the text node), clicked with the mouse.
  await lily.locator('.chunk-text').first().scrollIntoViewIfNeeded();
  const at = await lily.locator('.chunk-text').first().evaluate((el) => {
    const node = el.firstChild!;
    const r = document.createRange();
    const mid = Math.floor((node.textContent ?? '').length / 2);
    r.setStart(node, mid);
    r.setEnd(node, mid + 1);
    const b = r.getBoundingClientRect();
    return { x: b.left + 1, y: b.top + b.height / 2 };
  });
  const oldFirst = (await lily.locator('.chunk-text').first().textContent())!;
  await page.mouse.click(at.x, at.y);
  await expect(lily.getByLabel('Split mode (lily.txt)')).toHaveValue('boundaries');
  await expect(lily.locator('.chunk-text').first()).not.toHaveText(oldFirst);
  const [a, b] = await lily.locator('.chunk-text').allTextContents();
  expect(`${a} ${b}`).toBe(oldFirst);

  // Compile every chunk, with per-chunk progress.
  const total = await page.getByTestId('chunk').count();
  await page.getByRole('button', { name: 'Compile all chunks' }).click();
  await expect(page.getByTestId('compile-progress')).toContainText(`Compiled ${total} of ${total} chunks`);
  await expect(page.getByTestId('cache-entry')).toHaveCount(total);
  // Compiled chunks stay on the GPU (the GPU tier) too, so the first question reads no rows from the host.
  await expect(page.getByTestId('library-gpu')).toContainText(new RegExp(`GPU tier ${total} caches, [\\d.]+ KiB of rows in 1 slab \\([\\d.]+ MiB of 256.0 MiB\\), 0 hits`));
  await expect(page.getByTestId('cache-entry').filter({ hasText: 'GPU + ' })).toHaveCount(total);
  await page.screenshot({ path: 'test-results/screens/studio-documents.png', fullPage: true });

  // After a reload the documents, chunks and caches are still there.
  await page.reload();
  await ready(page);
  await expect(page.getByTestId('document')).toHaveCount(3);
  await expect(page.getByTestId('cache-entry')).toHaveCount(total);
  await expect(page.getByTestId('library-stats')).toContainText(`${total} caches`);

  // Composer: Tom's first chunk by its button, Lily's first and Sue's by real drags; then reorder by dragging.
  const tom = page.getByTestId('document').filter({ hasText: 'tom.md' });
  await tom.getByRole('button', { name: 'Add tom.md · 1 to the composer' }).click();
  const end = page.getByTestId('composer-end');
  await lily.getByTestId('chunk').first().locator('.grip').dragTo(end);
  await sue.getByTestId('chunk').first().locator('.grip').dragTo(end);
  const items = page.getByTestId('composer-item');
  await expect(items).toHaveCount(3);
  await expect(items.nth(0)).toContainText('tom.md · 1');
  await expect(items.nth(1)).toContainText('lily.txt · 1');
  await items.nth(2).dragTo(items.nth(0));
  await expect(items.nth(0)).toContainText('sue.html · 1');
  await expect(items.nth(1)).toContainText('tom.md · 1');
  // And with the keyboard buttons.
  await page.getByRole('button', { name: 'Move lily.txt · 1 up' }).click();
  await expect(items.nth(1)).toContainText('lily.txt · 1');
  await expect(items.nth(2)).toContainText('tom.md · 1');

  // Three algorithms.
  await page.getByLabel('Question', { exact: true }).fill('\nOne day, Lily and Max');
  await page.getByLabel('Answer tokens').fill('12');
  for (const [algo, spec] of [['naive', 'naive'], ['legolink', 'legolink:16'], ['full', 'full']]) {
    await page.getByLabel('Linking algorithm').selectOption(algo);
    await page.getByRole('button', { name: `Ask (${spec})` }).click();
    const card = page.getByTestId('answer-card').filter({ has: page.getByRole('heading', { name: spec }) }).first();
    await expect(card).toContainText('done');
    await expect(card.getByTestId('ttft')).toHaveText(/^\d+(\.\d)? ms$/);
    await expect(card.getByTestId('answer-text')).not.toHaveText('…');
  }
  // The linked chunks now sit in the GPU tier, where the links after the first found them.
  await expect(page.getByTestId('library-gpu')).toContainText(/GPU tier 3 caches, [\d.]+ KiB of rows in 1 slab \([\d.]+ MiB of 256.0 MiB\), 6 hits/);
  await expect(page.getByTestId('cache-entry').filter({ hasText: 'GPU + ' })).toHaveCount(3);
  const full = page.getByTestId('answer-card').filter({ has: page.getByRole('heading', { name: 'full' }) }).first();
  const naive = page.getByTestId('answer-card').filter({ has: page.getByRole('heading', { name: 'naive' }) }).first();
  const [fullRe, naiveRe] = [await full.getByTestId('recomputed').textContent(), await naive.getByTestId('recomputed').textContent()];
  const n = (s: string | null) => Number(/^(\d+) of (\d+)/.exec(s ?? '')![1]);
  expect(n(naiveRe)).toBeLessThan(n(fullRe));

  // Attention maps side by side (naive and legolink:16) and the TTFT chart.
  await page.getByTestId('map-0').scrollIntoViewIfNeeded();
  expect(await canvasColours(page, 0)).toBeGreaterThan(20);
  expect(await canvasColours(page, 1)).toBeGreaterThan(20);
  await expect(page.getByTestId('sink-share').first()).toContainText('sue.html · 1');
  const canvas = page.getByTestId('attention-canvas').first();
  const cb = (await canvas.boundingBox())!;
  await page.mouse.move(cb.x + 3, cb.y + 40);
  await expect(page.getByRole('tooltip')).toContainText('→ key');
  await canvas.focus();
  await page.keyboard.press('ArrowRight');
  await expect(page.getByRole('tooltip')).toContainText('question token');
  await page.screenshot({ path: 'test-results/screens/studio-attention.png', fullPage: false });
  const bars = page.getByTestId('ttft-chart').locator('svg.recharts-surface .recharts-bar-rectangle');
  expect(await bars.count()).toBeGreaterThanOrEqual(3);
  // Export as PNG (the SVG drawn on a canvas) and as JSON.
  for (const [kind, file] of [['PNG', 'ttft-breakdown.png'], ['JSON', 'ttft-breakdown.json']]) {
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: `Export TTFT breakdown as ${kind}` }).click()]);
    expect(download.suggestedFilename()).toBe(file);
    const body = await readFile((await download.path())!);
    expect(kind === 'PNG' ? body.subarray(1, 4).toString() : JSON.parse(body.toString()).length).toBe(kind === 'PNG' ? 'PNG' : 3);
  }

  // Compare: six algorithms side by side, the ordinary prompt first; LegoLink-0's chunks are compiled on demand
  // (their own variant), the prompt's never: it has one BOS where full has one per chunk, and computes every token.
  await page.getByRole('button', { name: 'Compare 6 algorithms' }).click();
  const latest = page.getByTestId('answers-latest').getByTestId('answer-card');
  await expect(latest).toHaveCount(6);
  for (let i = 0; i < 6; i++) await expect(latest.nth(i)).toContainText('done');
  await expect(latest.filter({ has: page.getByRole('heading', { name: 'legolink0' }) })).toContainText('compiled first');
  await expect(page.getByTestId('cache-entry')).toHaveCount(total + 3);
  const byName = (name: string) => latest.filter({ has: page.getByRole('heading', { name, exact: true }) });
  const prompt = byName('prompt');
  await expect(latest.nth(0)).toHaveAttribute('aria-label', 'Answer with prompt');
  await expect(prompt.getByTestId('answer-text')).not.toHaveText('…');
  await expect(prompt).toContainText('lookup 0.0 · load 0.0');
  await expect(prompt).not.toContainText('compiled first');
  const counts = async (card: typeof prompt) => /^(\d+) of (\d+)/.exec((await card.getByTestId('recomputed').textContent()) ?? '')!.slice(1).map(Number);
  const [promptRe, promptAll] = await counts(prompt);
  expect(promptRe).toBe(promptAll);
  expect((await counts(byName('full')))[1]).toBe(promptAll + 2);

  // Stop ends a long answer early. Decoding runs in slow motion (?debug: 50 ms after every token), so the answer
  // is still streaming when Stop is pressed even on a busy machine; otherwise it can end (EOS) before the click.
  await setDecodeDelay(page, 50);
  await page.getByLabel('Answer tokens').fill('400');
  await page.getByRole('button', { name: 'Ask (full)' }).click();
  await expect(latest).toHaveCount(7);
  const long = latest.nth(6);
  await expect(long).toContainText('answering');
  await page.getByRole('button', { name: 'Stop answering' }).click();
  await expect(long).toContainText('stopped');
  await setDecodeDelay(page, 0);
  await expect(page.getByRole('button', { name: 'Stop answering' })).toBeDisabled();

  // A small TTFT sweep draws one line per algorithm.
  await page.getByLabel('Sweep chunk tokens').fill('16');
  await page.getByLabel('Sweep context lengths').fill('32, 64');
  await page.getByRole('button', { name: 'Run sweep' }).click();
  await expect(page.getByTestId('sweep-chart').locator('svg.recharts-surface .recharts-line')).toHaveCount(3);
  await page.getByTestId('sweep-chart').scrollIntoViewIfNeeded();
  await page.screenshot({ path: 'test-results/screens/studio-charts.png' });
  await page.screenshot({ path: 'test-results/screens/studio-full.png', fullPage: true });
});

test('the GPU tier\'s budget: chosen in the library, emptying the tier, kept after a reload, back to the model\'s default', async ({ page }) => {
  await page.goto('/?model=stories260K');
  await ready(page);
  await dropFiles(page, 'doc-dropzone', [{ name: 'lily.txt', type: 'text/plain', text: LILY }]);
  // Its two paragraphs, a chunk each.
  await expect(page.getByTestId('chunk')).toHaveCount(2);
  const total = 2;
  await page.getByRole('button', { name: 'Compile all chunks' }).click();
  await expect(page.getByTestId('compile-progress')).toContainText(`Compiled ${total} of ${total} chunks`);
  const gpu = page.getByTestId('library-gpu');
  // The default on this CPU adapter: 256 MiB, holding the compiled chunks.
  await expect(gpu).toContainText(new RegExp(`GPU tier ${total} caches, .* of 256\\.0 MiB\\)`));
  const budget = page.getByLabel('GPU tier budget');
  await budget.selectOption({ label: '1.00 GiB' });
  await expect(gpu).toContainText(/GPU tier 0 caches, 0\.0 KiB of rows in 0 slabs \(0\.0 KiB of 1\.00 GiB\)/);
  // The choice is in the saved settings (written a moment after each change) before the page goes.
  await expect.poll(() => savedSettings(page).then((x) => x?.gpuTierMiB)).toBe(1024);
  await page.reload();
  await ready(page);
  await expect(budget).toHaveValue('1024');
  await expect(gpu).toContainText(/of 1\.00 GiB\)/);
  // Asked once: the linked chunks come back into the tier under the new budget.
  await page.getByRole('button', { name: 'Add lily.txt · 1 to the composer' }).click();
  await page.getByLabel('Question', { exact: true }).fill('\nOne day, Lily');
  await page.getByRole('button', { name: /^Ask \(/ }).click();
  await expect(page.getByTestId('answer-card').first()).toContainText('done');
  await page.getByRole('button', { name: 'Refresh' }).click();
  await expect(gpu).toContainText(/GPU tier 1 caches, .* of 1\.00 GiB\)/);
  await budget.selectOption({ label: "the model's default" });
  await expect(gpu).toContainText(/GPU tier 0 caches, .* of 256\.0 MiB\)/);
});

test('bad files get clear messages and are not added', async ({ page }) => {
  await page.goto('/?model=stories260K');
  await ready(page);
  await dropFiles(page, 'doc-dropzone', [
    { name: 'photo.txt', type: 'text/plain', bytes: [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52] },
    { name: 'empty.md', type: 'text/markdown', text: '  \n\n ' },
    { name: 'tool.exe', type: 'application/octet-stream', bytes: [0x4d, 0x5a, 0, 0] },
  ]);
  const alerts = page.getByTestId('import-error');
  await expect(alerts).toHaveCount(3);
  await expect(alerts.nth(0)).toContainText('does not look like text');
  await expect(alerts.nth(1)).toContainText('empty');
  await expect(alerts.nth(2)).toContainText('not a supported document');
  await expect(page.getByTestId('document')).toHaveCount(0);
  await page.getByTestId('doc-dropzone').scrollIntoViewIfNeeded();
  await page.screenshot({ path: 'test-results/screens/studio-bad-files.png' });
  await alerts.nth(0).getByRole('button', { name: 'Dismiss this message' }).click();
  await expect(alerts).toHaveCount(2);
});

/** A one-page PDF with a text layer, written by hand (pdfjs tolerates approximate xref offsets, but these are exact). */
function tinyPdf(text: string): Buffer {
  const stream = `BT /F1 18 Tf 20 100 Td (${text}) Tj ET`;
  const objs = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 400 144] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let out = '%PDF-1.4\n';
  const offsets: number[] = [];
  objs.forEach((o, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${o}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${objs.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  out += `trailer\n<< /Size ${objs.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

test('a PDF (through pdfjs) and pasted text become documents; evaluation results become the Pareto plot', async ({ page }) => {
  await page.goto('/?model=stories260K');
  await ready(page);
  await page.getByLabel('Add document files').setInputFiles({ name: 'ball.pdf', mimeType: 'application/pdf', buffer: tinyPdf('Max found a blue ball in the park.') });
  const pdf = page.getByTestId('document').filter({ hasText: 'ball.pdf' });
  await expect(pdf.getByTestId('chunk').first()).toContainText('Max found a blue ball in the park.');
  await page.getByText('Paste text').click();
  await page.getByLabel('Name of the pasted document').fill('note');
  await page.getByLabel('Pasted document text').fill('<b>Sue</b> had a cat.');
  await page.getByRole('button', { name: 'Add pasted text' }).click();
  await expect(page.getByTestId('document').filter({ hasText: 'note' }).getByTestId('chunk')).toHaveText(/<b>Sue<\/b> had a cat\./);
  // An evaluation results file becomes the accuracy-against-TTFT plot.
  const results = { kind: 'eval', results: [
    { algorithm: 'full', accuracy: 0.8, ttft_ms_mean: 90, agreement_with_full: 1 },
    { algorithm: 'naive', accuracy: 0.3, ttft_ms_mean: 10, agreement_with_full: 0.4 },
    { algorithm: 'legolink:16', accuracy: 0.75, ttft_ms_mean: 20, agreement_with_full: 0.9 },
  ] };
  await page.getByLabel('Evaluation results file').setInputFiles({ name: 'eval.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(results)) });
  await expect(page.getByTestId('pareto-chart').locator('.recharts-scatter-symbol')).toHaveCount(6);
  await page.getByLabel('Pareto metric').selectOption('agreement');
  await expect(page.getByTestId('pareto-chart')).toContainText('legolink:16');
});
