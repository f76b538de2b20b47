/**
 * The studio as a newcomer meets it (issue 37), each check small: files in
 * other encodings and files too large, answers that are easy to see, charts
 * whose exports are the charts, numbers that belong to the current model
 * and prompt, a first screen that says what the page does, and chunk lists
 * that are one Tab stop each. The 4 MB document has its own file
 * (large-document.spec.ts).
 */
import { test, expect, type Page } from '@playwright/test';
import { readFile } from 'node:fs/promises';

async function ready(page: Page, model = 'stories260K') {
  await expect(page.getByTestId('model-ready')).toContainText(model);
}

/** Drops files built in the page (bytes, or a text repeated to a length) onto the documents' drop zone. */
async function dropBuilt(page: Page, files: { name: string; type: string; bytes?: number[]; repeat?: [string, number] }[]) {
  const dt = await page.evaluateHandle((fs) => {
    const dt = new DataTransfer();
    for (const f of fs) dt.items.add(new File([f.bytes ? new Uint8Array(f.bytes) : f.repeat![0].repeat(f.repeat![1])], f.name, { type: f.type }));
    return dt;
  }, files);
  await page.getByTestId('doc-dropzone').dispatchEvent('drop', { dataTransfer: dt });
}

/** Pastes a document and cuts it into chunks of `chunkTokens`. */
async function pasteDocument(page: Page, name: string, text: string, chunkTokens: number) {
  await page.getByText('Paste text').click();
  await page.getByLabel('Name of the pasted document').fill(name);
  await page.getByLabel('Pasted document text').fill(text);
  await page.getByRole('button', { name: 'Add pasted text' }).click();
  await page.getByLabel(`Chunk tokens (${name})`).fill(String(chunkTokens));
}

const birds = (n: number) => Array.from({ length: n }, (_, i) => `Tom saw ${i} birds in the park. `).join('');

/** Windows-1252 bytes of a French sentence: accents, curly quotes, a euro sign. */
const FRENCH = '\u201cÉlève à l\u2019école\u201d: été, hôtel, façade, naïve, où, déjà vu. Le café coûte 2 \u20ac.';
const CP1252: Record<string, number> = { '\u201c': 0x93, '\u201d': 0x94, '\u2019': 0x92, '\u20ac': 0x80 };
const frenchBytes = [...FRENCH].map((c) => CP1252[c] ?? c.charCodeAt(0));

test('a Windows-1252 file is read (and says so); a 50 MB file is refused by name, size, limit and the storage it would take', async ({ page }) => {
  await page.goto('/?model=stories260K');
  await ready(page);
  await dropBuilt(page, [
    { name: 'eleve.txt', type: 'text/plain', bytes: frenchBytes },
    { name: 'big.txt', type: 'text/plain', repeat: ['Lily had a red kite and flew it every day. ', 1_219_275] },
  ]);
  const doc = page.getByTestId('document').filter({ hasText: 'eleve.txt' });
  await expect(doc.getByTestId('doc-encoding')).toHaveText(' · read as Windows-1252 (not UTF-8)');
  await expect(doc.locator('.chunk-text').first()).toContainText('\u201cÉlève à l\u2019école\u201d: été');
  expect((await doc.locator('.chunk-text').allTextContents()).join(' ').replace(/\s+/g, ' ')).toBe(FRENCH);
  const refusal = page.getByTestId('import-error');
  await expect(refusal).toHaveCount(1);
  await expect(refusal).toContainText('"big.txt" is too large: 52.4 MB, 52,428,825 characters, more than the limit of 5,000,000 characters a document may have.');
  await expect(refusal).toContainText(/5,000,000 characters are about [\d.]+ million tokens for stories260K, and their KV cache would take [\d.]+ GB of browser storage \(5 layers × \d+ values/);
  await expect(refusal).not.toContainText('maxDocumentChars');
  await expect(page.getByTestId('document')).toHaveCount(1);
});

/** Exports a chart as PNG and returns its size, the chart's drawn size and how many colours the image has. */
async function exportPng(page: Page, title: string, testId: string) {
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: `Export ${title} as PNG` }).click()]);
  const bytes = await readFile((await download.path())!);
  const png = { width: bytes.readUInt32BE(16), height: bytes.readUInt32BE(20) };
  const chart = await page.getByTestId(testId).evaluate((el) => {
    const sizes = [...el.querySelectorAll('svg.recharts-surface')].map((s) => s.getBoundingClientRect()).map((r) => ({ width: r.width, height: r.height }));
    return sizes.sort((a, b) => b.width * b.height - a.width * a.height)[0];
  });
  const colours = await page.evaluate(async (b64) => {
    const img = await createImageBitmap(new Blob([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], { type: 'image/png' }));
    const c = new OffscreenCanvas(img.width, img.height);
    const ctx = c.getContext('2d')!;
    ctx.drawImage(img, 0, 0);
    const d = ctx.getImageData(0, 0, img.width, img.height).data;
    const seen = new Set<number>();
    for (let i = 0; i < d.length; i += 4) seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
    return seen.size;
  }, bytes.toString('base64'));
  return { png, chart, colours };
}

function expectChartPng(r: Awaited<ReturnType<typeof exportPng>>) {
  expect(r.chart.width).toBeGreaterThan(300);
  expect(r.png).toEqual({ width: Math.ceil(r.chart.width * 2), height: Math.ceil(r.chart.height * 2) });
  expect(r.colours).toBeGreaterThan(20);
}

const LILY = 'Lily had a red kite. She ran to the hill to fly it every day.\n\nOne day the string broke and the kite flew away. Lily was sad, but her friend Ben helped her find it in a tree.';

test('answers in plain view; the TTFT chart holds every algorithm of the current prompt only; every PNG export is its chart', async ({ page }) => {
  test.setTimeout(240_000);
  await page.goto('/?model=stories260K');
  await ready(page);
  await pasteDocument(page, 'lily', LILY, 8);
  await expect(page.getByTestId('chunk')).toHaveCount(12);
  await page.getByRole('button', { name: 'Add all to composer' }).click();
  await page.getByLabel('Question', { exact: true }).fill('\nOne day, Lily');
  await page.getByLabel('Answer tokens').fill('1');

  // One answer token: the card says "1 token", not "1 tokens · 0.0 tok/s"; the answer is in view, in no nested scroll box.
  await page.getByRole('button', { name: 'Ask (legolink:16)' }).click();
  const card = page.getByTestId('answer-card').first();
  await expect(card).toContainText('done');
  await expect(card.getByTestId('decode')).toHaveText(/^1 token \(/);
  await expect(card.getByTestId('answer-text')).toBeInViewport();
  const nested = await card.evaluate((el) => {
    const out: string[] = [];
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowY;
      if ((o === 'auto' || o === 'scroll') && p.scrollHeight > p.clientHeight) out.push(p.className);
    }
    return out;
  });
  expect(nested).toEqual([]);

  // Compare (six) and one more: seven algorithms, seven labelled bars.
  await page.getByRole('button', { name: 'Compare 6 algorithms' }).click();
  await expect(page.getByTestId('answers-latest').getByTestId('answer-card')).toHaveCount(6);
  for (const c of await page.getByTestId('answers-latest').getByTestId('answer-card').all()) await expect(c).toContainText('done');
  await page.getByLabel('Linking algorithm').selectOption('attnlink');
  await page.getByRole('button', { name: 'Ask (attnlink:16)' }).click();
  await expect(page.getByTestId('answers-latest').getByTestId('answer-card')).toHaveCount(7);
  await expect(page.getByTestId('answers-latest').getByTestId('answer-card').nth(6)).toContainText('done');
  const ticks = page.getByTestId('ttft-chart').locator('.recharts-xAxis-tick-labels .recharts-cartesian-axis-tick-value');
  await expect(ticks).toHaveText(['prompt', 'full', 'naive', 'cacheblend:0.15', 'legolink:16', 'legolink0', 'attnlink:16'].map((a) => new RegExp(`^${a}$`)));
  await page.locator('#attention').screenshot({ path: 'test-results/screens/newcomer-attention.png' });
  await page.locator('#answers').screenshot({ path: 'test-results/screens/newcomer-answers.png' });
  expectChartPng(await exportPng(page, 'TTFT breakdown', 'ttft-chart'));

  // A small sweep, and an evaluation file: their PNGs are their charts too.
  await page.getByLabel('Sweep chunk tokens').fill('16');
  await page.getByLabel('Sweep context lengths').fill('32, 64');
  await page.getByRole('button', { name: 'Run sweep' }).click();
  await expect(page.getByTestId('sweep-chart').locator('svg.recharts-surface .recharts-line')).toHaveCount(3);
  expectChartPng(await exportPng(page, 'TTFT against context length', 'sweep-chart'));
  const results = { kind: 'eval', results: [
    { algorithm: 'full', accuracy: 0.8, ttft_ms_mean: 90 }, { algorithm: 'naive', accuracy: 0.3, ttft_ms_mean: 10 },
    { algorithm: 'legolink:16', accuracy: 0.75, ttft_ms_mean: 20 }, { algorithm: 'cacheblend:0.15', accuracy: 0.74, ttft_ms_mean: 21 },
  ] };
  await page.getByLabel('Evaluation results file').setInputFiles({ name: 'eval.json', mimeType: 'application/json', buffer: Buffer.from(JSON.stringify(results)) });
  expectChartPng(await exportPng(page, 'Accuracy against TTFT', 'pareto-chart'));
  // Two close points (20 ms, 0.75 and 21 ms, 0.74): every algorithm is named, and no two texts overlap.
  await expect(page.getByTestId('pareto-chart')).toContainText('cacheblend:0.15');
  const overlaps = await page.getByTestId('pareto-chart').evaluate((el) => {
    const boxes = [...el.querySelectorAll('svg text, .recharts-legend-item-text')].map((t) => [t.textContent, t.getBoundingClientRect()] as const).filter(([, r]) => r.width > 0);
    const out: string[] = [];
    boxes.forEach(([a, r], i) => boxes.slice(i + 1).forEach(([b, q]) => {
      if (r.left < q.right - 1 && q.left < r.right - 1 && r.top < q.bottom - 1 && q.top < r.bottom - 1) out.push(`${a} / ${b}`);
    }));
    return out;
  });
  expect(overlaps).toEqual([]);
  await page.locator('#charts').screenshot({ path: 'test-results/screens/newcomer-charts.png' });

  // Another question: the breakdown and the answers say their numbers are from before.
  await page.getByLabel('Question', { exact: true }).fill('\nOne day, Ben');
  await expect(page.getByTestId('ttft-chart').locator('.recharts-bar-rectangle')).toHaveCount(0);
  await expect(page.getByTestId('ttft-empty')).toContainText('The 8 answers so far were to another model, question or chunk order.');
  await expect(page.getByTestId('answers-stale')).toContainText('These answers are from before');
  for (const [width, height] of [[1280, 800], [1920, 1080]]) {
    await page.setViewportSize({ width, height });
    await page.screenshot({ path: `test-results/screens/studio-answered-${width}x${height}.png`, fullPage: true });
  }
});

test('switching models replaces the old model\'s sample question and says what happened to the composer; the framing box shows all its lines', async ({ page }) => {
  await page.goto('/?model=qa-demo');
  await ready(page, 'qa-demo');
  await page.getByRole('button', { name: 'Add sample documents for qa-demo' }).click();
  await expect(page.getByTestId('composer-item')).toHaveCount(5);
  await expect(page.getByLabel('Question', { exact: true })).toHaveValue('Who is the mayor of the city where Brefau Lu lives?');
  // "Question: {question}\nAnswer:" is two lines: neither is clipped.
  const framing = page.getByLabel('Question framing');
  await expect(framing).toHaveValue('Question: {question}\nAnswer:');
  expect(await framing.evaluate((t: HTMLTextAreaElement) => t.scrollHeight - t.clientHeight)).toBeLessThanOrEqual(0);

  await page.getByLabel('Bundled model').selectOption({ label: (await page.getByLabel('Bundled model').locator('option', { hasText: 'stories260K' }).textContent())! });
  await page.getByRole('button', { name: 'Load bundled' }).click();
  await ready(page);
  await expect(page.getByLabel('Question', { exact: true })).toHaveValue('\nOne day, Lily and Max');
  const note = page.getByTestId('composer-note');
  await expect(note).toContainText('The question was qa-demo\'s example; it is now stories260K\'s.');
  await expect(note).toContainText('The documents were cut again with stories260K\'s tokenizer: 5 of 5 chunks in the composer kept (their text is unchanged).');
  await expect(page.getByTestId('composer-item')).toHaveCount(5);
  await note.getByRole('button', { name: 'Dismiss this note' }).click();
  await expect(note).toHaveCount(0);
});

test('a cancelled compile says so; chunks and the library count tokens alike (the BOS is said)', async ({ page }) => {
  await page.goto('/?model=stories260K');
  await ready(page);
  await pasteDocument(page, 'many', birds(80), 6);
  const doc = page.getByTestId('document');
  await expect(doc.getByTestId('chunk')).not.toHaveCount(1);
  await expect.poll(async () => Number(/(\d+) chunks/.exec((await doc.locator('.meta').textContent()) ?? '')?.[1] ?? 0)).toBeGreaterThan(60);
  // Cancel is pressed the moment the first chunk is reported (compiling is quick with this tiny model).
  await page.evaluate(() => {
    const cancelSoon = new MutationObserver(() => {
      if (!/Compiling [1-9]/.test(document.querySelector('[data-testid="compile-progress"]')?.textContent ?? '')) return;
      cancelSoon.disconnect();
      [...document.querySelectorAll('button')].find((b) => b.textContent === 'Cancel compiling')!.click();
    });
    cancelSoon.observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  await page.getByRole('button', { name: 'Compile all chunks' }).click();
  const progress = page.getByTestId('compile-progress');
  await expect(progress).toContainText(/^Cancelled: compiled \d+ of \d+ chunks .*; the others are not compiled\.$/);
  // The first chunk: its token count beside the BOS, and the library's count with it.
  const first = doc.getByTestId('chunk').first();
  await expect(first.locator('.badge')).toHaveText('compiled');
  const n = Number(/(\d+) tokens \+ BOS/.exec((await first.textContent())!)![1]);
  const row = page.getByTestId('cache-entry').filter({ hasText: 'many · 1' });
  await expect(row.locator('td').nth(3)).toHaveText(String(n + 1));
  await expect(page.locator('table.library th').nth(3)).toHaveText('Tokens (with BOS)');
});

test('the first screen says what the page does and offers two starts; the header holds still; favicon; screenshots', async ({ page, request }) => {
  // Every height the header takes from the first paint on (the adapter and model lines fill in later).
  await page.addInitScript(() => {
    const w = window as unknown as { headerHeights: number[] };
    w.headerHeights = [];
    new MutationObserver(() => {
      const h = document.querySelector('header.top')?.getBoundingClientRect().height;
      if (h && w.headerHeights.at(-1) !== h) w.headerHeights.push(h);
    }).observe(document, { subtree: true, childList: true, characterData: true });
  });
  for (const [width, height] of [[1280, 800], [1920, 1080]]) {
    await page.setViewportSize({ width, height });
    await page.goto('/?model=stories260K');
    await ready(page);
    await expect(page.getByTestId('adapter')).toContainText('Adapter:');
    expect(await page.evaluate(() => (window as unknown as { headerHeights: number[] }).headerHeights)).toHaveLength(1);
    // One sentence, two starts, all on the first screen.
    await expect(page.getByTestId('welcome').locator('.lead')).toBeInViewport({ ratio: 1 });
    await expect(page.getByTestId('welcome').locator('.lead')).toContainText(/^Ask a small language model about your documents, here in the browser on your GPU/);
    const askStart = page.getByRole('button', { name: /^Ask about your documents \(with [\w.-]+\)$/ });
    const demoStart = page.getByRole('button', { name: 'See attention sinks (guided demo)' });
    for (const b of [askStart, demoStart]) await expect(b).toBeInViewport({ ratio: 1 });
    // The Bundled model list stays inside its panel.
    const picker = (await page.locator('section.picker').boundingBox())!;
    const select = (await page.getByLabel('Bundled model').boundingBox())!;
    expect(select.x + select.width).toBeLessThanOrEqual(picker.x + picker.width);
    // Empty charts say what to do.
    await expect(page.getByTestId('ttft-empty')).toContainText('type a question and press Ask');
    await expect(page.getByTestId('sweep-empty')).toContainText('Add a document above, then press Run sweep');
    await expect(page.getByTestId('pareto-empty')).toContainText('npm run eval');
    await page.screenshot({ path: `test-results/screens/first-screen-${width}x${height}.png` });
    await page.screenshot({ path: `test-results/screens/full-page-${width}x${height}.png`, fullPage: true });
  }
  // The demo start goes to the demo, its first step in focus.
  await page.getByRole('button', { name: 'See attention sinks (guided demo)' }).click();
  await expect(page.getByRole('button', { name: 'Run step 1' })).toBeFocused();
  await expect(page.getByRole('button', { name: 'Run step 1' })).toBeInViewport();
  // The page names an icon, and it is served.
  const icon = await page.locator('link[rel=icon]').getAttribute('href');
  const res = await request.get(new URL(icon!, page.url()).href);
  expect(res.status()).toBe(200);
  expect(res.headers()['content-type']).toContain('image/svg+xml');
});

test('a chunk list is one tab stop: arrow keys move between chunks and into a chunk\'s buttons', async ({ page }) => {
  await page.goto('/?model=stories260K');
  await ready(page);
  await pasteDocument(page, 'many', birds(20), 6);
  await expect.poll(() => page.getByTestId('chunk').count()).toBeGreaterThan(20);
  const focused = () => page.evaluate(() => {
    const a = document.activeElement as HTMLElement;
    return (a.getAttribute('aria-label') ?? a.textContent ?? '').trim();
  });
  await page.getByRole('button', { name: 'Add all to composer' }).focus();
  await page.keyboard.press('Tab');
  expect(await focused()).toMatch(/^many · 1: \d+ tokens \+ BOS, not compiled\./);
  // The list's 60 chunks are one stop; its "Show more" (50 are drawn first) is the next.
  await page.keyboard.press('Tab');
  expect(await focused()).toBe('Show 10 more');
  await page.keyboard.press('Tab');
  expect(await focused()).toBe('Compile all chunks');
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('Shift+Tab');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  expect(await focused()).toMatch(/^many · 3:/);
  await page.keyboard.press('ArrowRight');
  expect(await focused()).toBe('Move boundary 2 a word left');
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('ArrowLeft');
  expect(await focused()).toBe('Add many · 3 to the composer');
  await page.keyboard.press('Enter');
  await expect(page.getByTestId('composer-item')).toHaveText([/many · 3/]);
  // Back to the list by Shift+Tab: the chunk last used holds the tab stop.
  await page.keyboard.press('Escape');
  await page.keyboard.press('Tab');
  await page.keyboard.press('Shift+Tab');
  expect(await focused()).toMatch(/^many · 3:/);
});
