/**
 * The first page in real headless Chromium on WebGPU (SwiftShader): the
 * bundled stories260K loads in the worker and a greedy completion typed into
 * the page equals llama2.c's own output, also with decode fused as on a GPU
 * (the subgroup GEMV compiled by Chromium itself).
 */
import { test, expect, chromium, type Page } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromiumPath } from '../scripts/gpu-env.mjs';
import { setKernels } from './helpers';

const fixture = JSON.parse(readFileSync(join(import.meta.dirname, '../tests/fixtures/llama2c/stories260K-greedy.json'), 'utf8'));
type Case = { prompt: string; steps: number; stdout: string };

/** Generates llama2.c's case `prompt` (of `steps` steps) in the page and checks the text shown is run.c's own. */
async function generatesAsLlama2c(page: Page, prompt: string, steps?: number) {
  const c: Case = fixture.cases.find((x: Case) => x.prompt === prompt && (steps === undefined || x.steps === steps));
  await page.getByLabel('Prompt').fill(c.prompt);
  await page.getByLabel('Steps').fill(String(c.steps));
  await page.getByRole('button', { name: 'Generate' }).click();
  await expect(page.getByTestId('stats')).toBeVisible();
  // The page shows prompt + completion as text; run.c prints the same plus a final newline.
  const expected = Buffer.from(c.stdout, 'latin1').toString('utf8').slice(c.prompt.length).replace(/\n$/, '');
  expect(await page.getByTestId('output').textContent()).toBe(expected);
}

test('bundled model streams a greedy completion equal to llama2.c', async ({ page }) => {
  await page.goto('/?model=stories260K');
  await expect(page.getByTestId('adapter')).toContainText('Adapter:');
  await expect(page.getByTestId('adapter')).toContainText(/largest buffer [\d,]+ MiB · largest binding [\d,]+ MiB/);
  await expect(page.getByTestId('model-ready')).toBeVisible();
  await generatesAsLlama2c(page, 'Lily and Tom went to the', 200);
  await page.screenshot({ path: 'test-results/screens/generate.png', fullPage: true });
});

// Decode as a GPU runs it (RMSNorm and GLU folded into the GEMVs), in Chromium's own WGSL compiler: with the
// adapter's subgroups the GEMVs are gemv_sg, whose subgroup operations only a browser test compiles the way users' do.
test('fused decode with the subgroup GEMV (what GPUs run) streams the same greedy completion as llama2.c', async ({ page }) => {
  await page.goto('/?debug&model=stories260K');
  await expect(page.getByTestId('model-ready')).toBeVisible();
  await expect(page.getByTestId('adapter')).toContainText('subgroups yes');
  const kernels = await setKernels(page, null, true);
  expect(kernels.fused).toBe(true);
  expect(kernels.gemv).toBe('gemv_sg');
  expect(kernels.subgroupMin).toBeGreaterThanOrEqual(4);
  await generatesAsLlama2c(page, 'The little dog');
});

test('without WebGPU the page says so and how to enable it', async () => {
  const browser = await chromium.launch({
    executablePath: chromiumPath(),
    args: ['--disable-features=WebGPU', '--disable-webgpu'],
  });
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${process.env.LEGOKV_E2E_PORT ?? 5199}/`);
  await expect(page.getByTestId('no-webgpu')).toContainText('enable-unsafe-webgpu');
  await page.screenshot({ path: 'test-results/screens/no-webgpu.png' });
  await browser.close();
});

test('a lost GPU device is reported and the next request recovers without a reload', async ({ page }) => {
  await page.goto('/?debug&model=stories260K');
  await expect(page.getByTestId('model-ready')).toBeVisible();
  await page.evaluate(() => (globalThis as unknown as { legokv: { simulateDeviceLoss(): Promise<void> } }).legokv.simulateDeviceLoss());
  await expect(page.getByRole('alert').filter({ hasText: 'GPU device was lost' })).toBeVisible();
  await generatesAsLlama2c(page, 'The little dog');
});
