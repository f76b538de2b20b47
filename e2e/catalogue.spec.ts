/**
 * The Model section's catalogue in real headless Chromium, against a local
 * server in the Hub's URL layout. The repositories of the SmolLM2 entries
 * serve a random-weight model of the same architecture, scaled down
 * (tests/fixtures/hf/llama3-smollm: LlamaForCausalLM, 2 layers, hidden 32,
 * made by scripts/fixtures/make_hf_fixtures.py) with SmolLM2's real
 * tokenizer and chat template, under the entry's own config.json with only
 * its size keys replaced by the fixture's. One click loads it with progress,
 * into the cache, with its chat template and question framing, and it
 * answers; an entry the server does not have fails clearly, caching nothing.
 */
import { test, expect } from '@playwright/test';
import { createServer, type Server } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const FIXTURE = join(root, 'tests/fixtures/hf/llama3-smollm');
/** The keys that make the fixture small; everything else comes from the entry's real config.json. */
const SIZE_KEYS = ['hidden_size', 'intermediate_size', 'num_hidden_layers', 'num_attention_heads', 'num_key_value_heads', 'head_dim', 'vocab_size', 'tie_word_embeddings'];
const SERVED = ['HuggingFaceTB/SmolLM2-360M-Instruct', 'HuggingFaceTB/SmolLM2-1.7B-Instruct'];
/** An entry's real config.json (src/worker/catalogue/, the files the catalogue computes its sizes from). */
const entryConfig = (repo: string) =>
  JSON.parse(readFileSync(join(root, 'src/worker/catalogue', `${repo.replace('/', '--')}.config.json`), 'utf8')) as Record<string, unknown>;

async function startHub(): Promise<{ url: string; requests: string[]; stop(): Promise<void> }> {
  const requests: string[] = [];
  const fixtureConfig = JSON.parse(readFileSync(join(FIXTURE, 'config.json'), 'utf8')) as Record<string, unknown>;
  const server: Server = createServer(async (req, res) => {
    requests.push(`${req.method} ${req.url}`);
    res.setHeader('Access-Control-Allow-Origin', '*');
    const m = /^\/([\w.-]+\/[\w.-]+)\/resolve\/main\/([\w.-]+)$/.exec(req.url ?? '');
    if (!m || !SERVED.includes(m[1]) || !existsSync(join(FIXTURE, m[2])) || /\.(f32)$|reference/.test(m[2])) {
      return void res.writeHead(404, { 'content-type': 'text/plain' }).end('Entry not found');
    }
    let body = readFileSync(join(FIXTURE, m[2]));
    if (m[2] === 'config.json') {
      const scaled = { ...entryConfig(m[1]), ...Object.fromEntries(SIZE_KEYS.filter((k) => k in fixtureConfig).map((k) => [k, fixtureConfig[k]])) };
      body = Buffer.from(JSON.stringify(scaled));
    }
    res.writeHead(200, { 'content-length': body.length, 'content-type': m[2].endsWith('.json') ? 'application/json' : 'application/octet-stream' });
    if (req.method === 'HEAD') return void res.end();
    for (let o = 0; o < body.length; o += 65536) {
      if (!res.write(body.subarray(o, o + 65536))) await new Promise((r) => res.once('drain', r));
      if (m[2].endsWith('.safetensors')) await new Promise((r) => setTimeout(r, 15));
    }
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`, requests,
    stop: () => new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    }),
  };
}

test('a catalogue entry loads in one click (progress, cache, chat template, framing) and answers; a missing one fails clearly', async ({ page }) => {
  const hub = await startHub();
  try {
    await page.goto(`/?model=stories260K&hub=${encodeURIComponent(hub.url)}`);
    await expect(page.getByTestId('model-ready')).toContainText('stories260K (bundled)');
    const entries = page.getByTestId('catalogue-entry');
    await expect(entries).toHaveCount(6);
    const smol = entries.filter({ hasText: 'HuggingFaceTB/SmolLM2-360M-Instruct' });
    // From its config.json: 361,821,120 weights, f16 on the GPU, 32 layers x 2 x 5 KV heads x 64 x 2 bytes (f16) of KV a token.
    await expect(smol).toContainText('362M');
    await expect(smol.getByTestId('catalogue-memory')).toHaveText('690.2 MiB of f16 weights + 40.0 MiB of f16 KV per 1K tokens');
    await expect(smol.getByTestId('catalogue-fit')).toHaveText('fits'); // SwiftShader binds 1 GiB: nothing is split
    await expect(entries.filter({ hasText: 'unsloth/gemma-3-1b-it' })).toContainText('google/gemma-3-1b-it is gated');

    await page.getByRole('button', { name: 'Load HuggingFaceTB/SmolLM2-360M-Instruct' }).click();
    await expect(page.getByTestId('progress')).toContainText(/Downloading .*MB of \d/);
    const ready = page.getByTestId('model-ready');
    await expect(ready).toContainText('HuggingFaceTB/SmolLM2-360M-Instruct (Hugging Face Hub): llama, 2 layers');
    await expect(ready).toContainText('chat template: its own'); // the repository's tokenizer_config.json template (ChatML)
    await expect(page.getByRole('alert')).toHaveCount(0);
    await expect(page.getByTestId('cached-model').filter({ hasText: 'HuggingFaceTB/SmolLM2-360M-Instruct' })).toHaveCount(1);
    await expect(smol).toContainText('(cached)');
    await expect(page.getByLabel('Question framing')).toHaveValue('\n\nAnswer the question using the text above, in a few words.\nQuestion: {question}');
    // Random weights write garbage, but the model runs to the end.
    await page.getByLabel('Steps').fill('40');
    await page.getByRole('button', { name: 'Generate' }).click();
    await expect(page.getByTestId('stats')).toContainText('prompt tokens');

    // An entry this Hub does not have: the Hub's 404, in words; nothing cached, the loaded model stays.
    await page.getByRole('button', { name: 'Load Qwen/Qwen2.5-0.5B-Instruct' }).click();
    await expect(page.getByRole('alert')).toContainText('Qwen/Qwen2.5-0.5B-Instruct has no config.json at revision "main" (HTTP 404)');
    await expect(page.getByTestId('cached-model')).toHaveCount(1);
    await expect(ready).toContainText('HuggingFaceTB/SmolLM2-360M-Instruct');
  } finally {
    await hub.stop();
  }
});
