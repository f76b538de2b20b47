/**
 * Model sources in real headless Chromium: a Hugging Face Hub download from a
 * local server in the Hub's URL layout (progress, OPFS cache, offline reload,
 * delete), a truncated shard (clear error, nothing cached), and models from
 * disk through the file inputs and a drop.
 */
import { test, expect, type Page } from '@playwright/test';
import { createServer, type Server } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const FIXTURE = join(root, 'tests/fixtures/hf/llama3-smollm');
const STORIES = join(root, 'public/models/stories260K');
const SHARD = 'model-00001-of-00002.safetensors';
/** Files a Hub repository of the fixture would hold. */
const HUB_FILES = new Set([
  'config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors.index.json',
  SHARD, 'model-00002-of-00002.safetensors',
]);

interface Hub {
  url: string;
  requests: string[];
  stop(): Promise<void>;
}

/**
 * A tiny Hub on 127.0.0.1: `/test/<repo>/resolve/main/<file>` with content-length and CORS, 404 for anything
 * else. Repos: `llama3-smollm` (the fixture), `truncated` (its first shard cut in half, announced as such),
 * `slow` (the fixture, slowly), `huge` (only a config.json too big for any adapter); and one GGUF file at `/files/tiny-llama.gguf`.
 * Weights go out in 64 KiB pieces a few ms apart, so the progress bar can be seen.
 */
async function startHub(): Promise<Hub> {
  const requests: string[] = [];
  const server: Server = createServer(async (req, res) => {
    requests.push(`${req.method} ${req.url}`);
    res.setHeader('Access-Control-Allow-Origin', '*');
    if (req.url === '/files/tiny-llama.gguf') {
      const body = readFileSync(join(root, 'tests/fixtures/gguf/tiny-llama.gguf'));
      return void res.writeHead(200, { 'content-length': body.length }).end(req.method === 'HEAD' ? undefined : body);
    }
    const m = /^\/test\/([\w.-]+)\/resolve\/main\/([\w.-]+)$/.exec(req.url ?? '');
    const path = m ? join(FIXTURE, m[2]) : '';
    if (m?.[1] === 'huge' && m[2] === 'config.json') {
      // The fixture's config with a 2G-token vocabulary: its embedding could be split over buffers, but one token's
      // logits (7.5 GiB of f32) are one buffer, which no adapter here binds.
      const config = { ...JSON.parse(readFileSync(join(FIXTURE, 'config.json'), 'utf8')), vocab_size: 2_000_000_000 };
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(config));
    }
    if (!m || !['llama3-smollm', 'truncated', 'slow'].includes(m[1]) || !HUB_FILES.has(m[2]) || !existsSync(path)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('Entry not found');
      return;
    }
    let body = readFileSync(path);
    if (m[1] === 'truncated' && m[2] === SHARD) body = body.subarray(0, body.length >> 1);
    res.writeHead(200, { 'content-length': body.length, 'content-type': m[2].endsWith('.json') ? 'application/json' : 'application/octet-stream' });
    if (req.method === 'HEAD') return void res.end();
    for (let o = 0; o < body.length; o += 65536) {
      if (!res.write(body.subarray(o, o + 65536))) await new Promise((r) => res.once('drain', r));
      if (m[2].endsWith('.safetensors')) await new Promise((r) => setTimeout(r, m[1] === 'slow' ? 200 : 15));
      if (res.destroyed) return;
    }
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    stop: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

async function openApp(page: Page, hub?: string) {
  await page.goto(hub ? `/?model=stories260K&hub=${encodeURIComponent(hub)}` : '/?model=stories260K');
  await expect(page.getByTestId('model-ready')).toContainText('stories260K (bundled)');
}

async function loadFromHub(page: Page, id: string) {
  await page.getByLabel('Hub model id or URL').fill(id);
  await page.getByRole('button', { name: 'Load from Hub' }).click();
}

test('Hub download with progress, generation, then offline from the OPFS cache, then delete', async ({ page }) => {
  const hub = await startHub();
  try {
    await openApp(page, hub.url);
    await expect(page.getByTestId('hub-endpoint')).toHaveText(hub.url);
    await loadFromHub(page, 'test/llama3-smollm');
    await expect(page.getByTestId('progress')).toContainText(/Downloading .*MB of \d/);
    await expect(page.getByTestId('model-ready')).toContainText('test/llama3-smollm (Hugging Face Hub): llama, 2 layers');
    await expect(page.getByRole('alert')).toHaveCount(0);
    const row = page.getByTestId('cached-model').filter({ hasText: 'test/llama3-smollm' });
    await expect(row).toHaveCount(1);
    await expect(row.getByTestId('cached-size')).toHaveText(/^5\.\d MiB$/);

    // A random tiny model writes garbage, but it must run to the end.
    await page.getByLabel('Steps').fill('40');
    await page.getByRole('button', { name: 'Generate' }).click();
    await expect(page.getByTestId('stats')).toContainText('prompt tokens');
    await page.screenshot({ path: 'test-results/screens/models-hub.png', fullPage: true });
  } finally {
    await hub.stop();
  }

  // Offline: the Hub server is gone, the cached copy must load.
  const seen = hub.requests.length;
  await page.reload();
  await expect(page.getByTestId('model-ready')).toContainText('stories260K (bundled)');
  await expect(page.getByTestId('cached-model')).toHaveCount(1);
  await loadFromHub(page, 'test/llama3-smollm');
  await expect(page.getByTestId('model-ready')).toContainText('test/llama3-smollm (Hugging Face Hub, cached copy)');
  expect(hub.requests.length).toBe(seen);

  await page.getByRole('button', { name: 'Delete test/llama3-smollm' }).click();
  await expect(page.getByTestId('cached-model')).toHaveCount(0);
  await expect(page.getByTestId('cached-models')).toContainText('No models are cached');
});

test('a truncated shard, a missing repo or a model too big for the adapter: a clear error and nothing cached', async ({ page }) => {
  const hub = await startHub();
  try {
    await openApp(page, hub.url);
    await loadFromHub(page, 'test/truncated');
    const alert = page.getByRole('alert');
    await expect(alert).toContainText(`Could not load test/truncated: ${SHARD}`);
    await expect(alert).toContainText('truncated');
    await expect(alert).toContainText('The cached copy was deleted.');
    await expect(page.getByTestId('cached-model')).toHaveCount(0);
    // The model loaded before stays usable.
    await expect(page.getByTestId('model-ready')).toContainText('stories260K (bundled)');

    await loadFromHub(page, 'test/no-such-model');
    await expect(alert).toContainText('test/no-such-model has no config.json at revision "main" (HTTP 404)');
    await expect(page.getByTestId('cached-model')).toHaveCount(0);

    // A model too big for the adapter is refused from its config.json, before any weights are downloaded.
    await loadFromHub(page, 'test/huge');
    await expect(alert).toContainText('test/huge will not fit on this adapter: The logits of test/huge need 7629.4 MiB per token in one buffer');
    await expect(alert).toContainText('Nothing was uploaded. stories260K stays loaded.');
    expect(hub.requests.filter((r) => r.includes('/test/huge/') && !r.endsWith('config.json'))).toEqual([]);
    await expect(page.getByTestId('cached-model')).toHaveCount(0);
    await expect(page.getByTestId('model-ready')).toContainText('stories260K (bundled)');
  } finally {
    await hub.stop();
  }
});

test('a .gguf URL downloads and generates; a slow download can be cancelled, leaving nothing cached', async ({ page }) => {
  const hub = await startHub();
  try {
    await openApp(page, hub.url);
    await loadFromHub(page, `${hub.url}/files/tiny-llama.gguf`);
    await expect(page.getByTestId('model-ready')).toContainText('/files/tiny-llama.gguf (Hugging Face Hub): llama');
    await page.getByLabel('Steps').fill('20');
    await page.getByRole('button', { name: 'Generate' }).click();
    await expect(page.getByTestId('stats')).toContainText('prompt tokens');
    await expect(page.getByTestId('cached-model')).toHaveCount(1);

    await loadFromHub(page, 'test/slow');
    await expect(page.getByTestId('progress')).toContainText(`Downloading ${SHARD}`);
    await page.getByTestId('progress').getByRole('button', { name: 'Cancel' }).click();
    await expect(page.getByRole('alert')).toHaveText('Loading test/slow was cancelled.');
    await expect(page.getByTestId('progress')).toHaveCount(0);
    await expect(page.getByTestId('cached-model')).toHaveCount(1); // only the GGUF
    await expect(page.getByTestId('model-ready')).toContainText('tiny-llama.gguf');
  } finally {
    await hub.stop();
  }
});

test('models from disk: a picked folder, picked files kept in the cache, and a drop', async ({ page }) => {
  await openApp(page);
  await page.getByLabel('Open folder…').setInputFiles(STORIES);
  await expect(page.getByTestId('model-ready')).toContainText('stories260K (local files): llama');
  await page.getByLabel('Steps').fill('30');
  await page.getByRole('button', { name: 'Generate' }).click();
  await expect(page.getByTestId('stats')).toContainText('prompt tokens');

  await page.getByLabel('Keep a copy in this browser').check();
  await page.getByLabel('Open file…').setInputFiles([join(STORIES, 'stories260K.bin'), join(STORIES, 'tok512.bin')]);
  await expect(page.getByTestId('model-ready')).toContainText('stories260K (local files, cached): llama');
  const row = page.getByTestId('cached-model').filter({ hasText: 'stories260K' });
  await expect(row).toContainText('local');
  await row.getByRole('button', { name: 'Load stories260K' }).click();
  await expect(page.getByTestId('model-ready')).toContainText('stories260K (browser cache): llama');

  // A drop of plain files (a synthetic DataTransfer has no directory entries: the File fallback).
  await page.getByLabel('Keep a copy in this browser').uncheck();
  await page.evaluate(async () => {
    const dt = new DataTransfer();
    for (const n of ['stories260K.bin', 'tok512.bin']) {
      dt.items.add(new File([await (await fetch(`models/stories260K/${n}`)).blob()], n));
    }
    document.querySelector('[data-testid=dropzone]')!.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
  });
  await expect(page.getByTestId('model-ready')).toContainText('stories260K (local files): llama');

  // Files that are no model: a clear error.
  await page.getByLabel('Open file…').setInputFiles(join(STORIES, 'LICENSE'));
  await expect(page.getByRole('alert')).toContainText('No model recognised among: LICENSE');
});
