/**
 * A 4 MB text document (one paragraph repeated, so that after the first
 * chunks nearly every compile is an instant cache hit: the flood that froze
 * the tab) is dropped, shown, compiled in part, cancelled and asked over,
 * while a page.evaluate round trip is timed throughout: the main thread is
 * never blocked for long, and Cancel works at that size.
 */
import { test, expect, type Page } from '@playwright/test';

/** Times page.evaluate round trips until `stop()` is called; returns the longest, in ms. */
function watchMainThread(page: Page) {
  let running = true;
  let worst = 0;
  const done = (async () => {
    while (running) {
      const t = performance.now();
      await page.evaluate(() => 0);
      const d = performance.now() - t;
      worst = Math.max(worst, d);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  return async () => {
    running = false;
    await done;
    return worst;
  };
}

const PARAGRAPH = 'Lily had a red kite. She ran to the hill to fly it every day, and her friend Ben came along with his dog Max.\n\n';

test('a 4 MB document is added, compiled in part, cancelled and asked over without blocking the page', async ({ page }) => {
  test.setTimeout(240_000);
  await page.goto('/?model=stories260K');
  await expect(page.getByTestId('model-ready')).toContainText('stories260K');
  // The page's own long tasks, to say where the time went when the bound below fails.
  await page.evaluate(() => {
    const w = window as unknown as { longTasks: number[][] };
    w.longTasks = [];
    new PerformanceObserver((l) => l.getEntries().forEach((e) => w.longTasks.push([e.startTime, e.duration]))).observe({ type: 'longtask' });
  });
  const stop = watchMainThread(page);
  const dt = await page.evaluateHandle((text) => {
    const d = new DataTransfer();
    d.items.add(new File([text.repeat(Math.ceil(4e6 / text.length))], 'kites.txt', { type: 'text/plain' }));
    return d;
  }, PARAGRAPH);
  await page.getByTestId('doc-dropzone').dispatchEvent('drop', { dataTransfer: dt });
  const doc = page.getByTestId('document');
  await expect(doc).toContainText(/kites\.txt/, { timeout: 120_000 });
  await expect(doc.locator('.meta')).toContainText(/[\d,]+ chunks/, { timeout: 120_000 });
  // The first 50 chunks are drawn, and more on request.
  const total = Number(/([\d,]+) chunks/.exec((await doc.locator('.meta').textContent())!)![1].replace(/,/g, ''));
  expect(total).toBeGreaterThan(30_000);
  await expect(doc.getByTestId('chunk')).toHaveCount(50);
  await expect(doc).toContainText(`Showing the first 50 of ${total.toLocaleString('en-US')} chunks.`);
  await doc.getByRole('button', { name: 'Show 100 more' }).click();
  await expect(doc.getByTestId('chunk')).toHaveCount(150);
  await expect(doc.getByTestId('chunk').nth(149)).toContainText('#150');
  // Cancel is pressed once a thousand chunks are done (cache hits come by the thousand a second, so a click from
  // here could come after the last).
  await page.evaluate(() => {
    const cancelSoon = new MutationObserver(() => {
      if (!/Compiling [\d,]{5,} of/.test(document.querySelector('[data-testid="compile-progress"]')?.textContent ?? '')) return;
      cancelSoon.disconnect();
      [...document.querySelectorAll('button')].find((b) => b.textContent === 'Cancel compiling')!.click();
    });
    cancelSoon.observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  await page.getByRole('button', { name: 'Compile all chunks' }).click();
  await expect(page.getByTestId('compile-progress')).toContainText(/^Cancelled: compiled [\d,]{5,} of [\d,]{5,} chunks/, { timeout: 120_000 });
  console.log(await page.getByTestId('compile-progress').textContent());
  await doc.getByRole('button', { name: 'Add kites.txt · 1 to the composer' }).click();
  await page.getByLabel('Question', { exact: true }).fill('\nOne day, Lily');
  await page.getByLabel('Answer tokens').fill('4');
  await page.getByRole('button', { name: /^Ask \(/ }).click();
  await expect(page.getByTestId('answer-card').first()).toContainText('done');
  const worst = await stop();
  console.log(`longest main-thread round trip: ${worst.toFixed(0)} ms`);
  const longTasks = await page.evaluate(() => (window as unknown as { longTasks: number[][] }).longTasks);
  console.log(`long tasks (start, duration ms): ${longTasks.map(([t, d]) => `${t.toFixed(0)}+${d.toFixed(0)}`).join(', ') || 'none'}`);
  // Before: the page froze for minutes (the round trip never came back). Measured on the production build on a
  // 2-core host: 35-56 ms quiet, 120-330 ms beside a benchmark. A wall-clock bound tells a freeze from a busy host
  // only with a wide margin: 2 s is 6x the loaded figure and far below the freeze. The figures above print every run.
  expect(worst).toBeLessThan(2000);
});
