/**
 * Hub downloads into the model cache, in Node: a local server in the Hub's
 * URL layout and an in-memory OPFS. Checks the id/URL parsing, the cached
 * files (loaded with the real loaders), and that cut, cancelled, gated or
 * unfinished downloads never count as cached.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DEFAULT_HUB, downloadToCache, hubModelFiles, parseHubInput, type HubTarget } from '../../src/worker/hub';
import { CacheWriter, cacheKey, deleteCachedModel, listCachedModels, openCachedModel } from '../../src/worker/opfs-cache';
import { loadModelFiles } from '../../src/engine/formats/load';
import { FakeDir } from '../helpers/fake-opfs';

const FIXTURE = fileURLToPath(new URL('../fixtures/hf/llama3-smollm/', import.meta.url));
const SHARD = 'model-00001-of-00002.safetensors';
let server: Server;
let hub = '';
const requests: string[] = [];

before(async () => {
  server = createServer(async (req, res) => {
    requests.push(`${req.method} ${req.url}`);
    if (req.url === '/files/tiny-llama.gguf') {
      const body = readFileSync(new URL('../fixtures/gguf/tiny-llama.gguf', import.meta.url));
      return void res.writeHead(200, { 'content-length': body.length }).end(req.method === 'HEAD' ? undefined : body);
    }
    const m = /^\/test\/([\w-]+)\/resolve\/main\/([\w.-]+)$/.exec(req.url ?? '');
    const path = m ? FIXTURE + m[2] : '';
    if (m?.[1] === 'gated') return void res.writeHead(401).end('unauthorized');
    if (!m || !['llama3-smollm', 'cut', 'slow'].includes(m[1]) || !existsSync(path) || m[2].endsWith('.f32')) return void res.writeHead(404).end('Entry not found');
    const body = readFileSync(path);
    res.writeHead(200, { 'content-length': body.length });
    if (req.method === 'HEAD') return void res.end();
    if (m[2] === SHARD && m[1] === 'cut') {
      // Half the announced bytes, then the connection drops.
      res.write(body.subarray(0, body.length >> 1), () => res.destroy());
      return;
    }
    for (let o = 0; o < body.length; o += 65536) {
      if (!res.write(body.subarray(o, o + 65536))) await new Promise((r) => res.once('drain', r));
      if (m[1] === 'slow') await new Promise((r) => setTimeout(r, 20));
      if (res.destroyed) return;
    }
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  hub = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});

const deps = (root: FakeDir, signal = new AbortController().signal, onProgress = (_l: number, _t: number, _f: string) => {}) => ({ root, signal, onProgress });
const repo = (name: string) => parseHubInput(`test/${name}`, undefined, hub);

test('model ids and URLs map to the Hub layout and a cache folder', () => {
  const a = parseHubInput('HuggingFaceTB/SmolLM2-135M-Instruct');
  assert.equal(a.base, `${DEFAULT_HUB}/HuggingFaceTB/SmolLM2-135M-Instruct/resolve/main/`);
  assert.equal(a.key, 'HuggingFaceTB--SmolLM2-135M-Instruct@main');
  assert.equal(a.file, undefined);
  const b = parseHubInput('https://huggingface.co/Qwen/Qwen2.5-0.5B/tree/v1.0', 'ignored');
  assert.deepEqual([b.id, b.revision, b.base], ['Qwen/Qwen2.5-0.5B', 'v1.0', 'https://huggingface.co/Qwen/Qwen2.5-0.5B/resolve/v1.0/']);
  const c = parseHubInput(' org/m ', 'refs/pr/1', 'http://127.0.0.1:9/');
  assert.equal(c.base, 'http://127.0.0.1:9/org/m/resolve/refs%2Fpr%2F1/');
  assert.equal(c.key, 'org--m@refs--pr--1');
  const g = parseHubInput('https://huggingface.co/unsloth/gemma-3-270m-GGUF/blob/main/sub/gemma 3.Q4_K_M.gguf');
  assert.deepEqual([g.id, g.revision, g.file], ['unsloth/gemma-3-270m-GGUF/sub/gemma 3.Q4_K_M.gguf', 'main', 'gemma 3.Q4_K_M.gguf']);
  assert.equal(g.base, 'https://huggingface.co/unsloth/gemma-3-270m-GGUF/resolve/main/sub/');
  const u = parseHubInput('https://example.org/models/tiny.gguf?download=1');
  assert.deepEqual([u.id, u.base, u.file, u.key], ['example.org/models/tiny.gguf', 'https://example.org/models/', 'tiny.gguf', 'example.org--models--tiny.gguf@url']);
  for (const bad of ['', 'a/b/c', '../x', 'org/..', 'https://example.org/page', 'has space/x']) {
    assert.throws(() => parseHubInput(bad), { name: 'HubError' }, bad);
  }
  assert.equal(cacheKey('a/b:c', 'main'), 'a--b_c@main');
});

test('a sharded repository downloads with byte progress, then loads from the cache without the network', async () => {
  const root = new FakeDir();
  const seen: [number, number, string][] = [];
  const t = repo('llama3-smollm');
  const first = await hubModelFiles(t, deps(root, undefined, (l, tot, f) => seen.push([l, tot, f])));
  assert.equal(first.fromCache, false);
  assert.deepEqual(first.files.names().sort(), [
    'config.json', 'generation_config.json', SHARD, 'model-00002-of-00002.safetensors', 'model.safetensors.index.json',
    'tokenizer.json', 'tokenizer_config.json',
  ]);
  const last = seen[seen.length - 1];
  assert.equal(last[0], last[1], 'progress ends at the total');
  assert.ok(seen.every(([l, tot], i) => l <= tot && (i === 0 || l >= seen[i - 1][0])), 'monotonic, never past the total');
  assert.ok(seen.some(([, , f]) => f === SHARD));

  const n = requests.length;
  const again = await hubModelFiles(t, deps(root));
  assert.equal(again.fromCache, true);
  assert.equal(requests.length, n, 'no request for a cached model');
  const m = await loadModelFiles(again.files, t.id);
  assert.equal(m.format, 'hf');
  assert.equal(m.config.nLayers, 2);
  assert.ok(m.tokenizer.applyChatTemplate);

  const [entry] = await listCachedModels(root);
  assert.equal(entry.id, 'test/llama3-smollm');
  assert.equal(entry.complete, true);
  assert.equal(entry.files, 7);
  assert.ok(entry.bytes > 5_000_000 && entry.date.length > 0);
  assert.equal(await deleteCachedModel(root, entry.key), true);
  assert.deepEqual(await listCachedModels(root), []);
});

test('the URL of one .gguf file downloads into its own cache folder and loads', async () => {
  const root = new FakeDir();
  const t = parseHubInput(`${hub}/files/tiny-llama.gguf`, undefined, hub);
  assert.equal(t.file, 'tiny-llama.gguf');
  const { files, fromCache } = await hubModelFiles(t, deps(root));
  assert.equal(fromCache, false);
  assert.deepEqual(files.names(), ['tiny-llama.gguf']);
  const m = await loadModelFiles(files, t.id);
  assert.equal(m.format, 'gguf');
  assert.equal((await listCachedModels(root))[0].id, `${new URL(hub).host}/files/tiny-llama.gguf`);
});

async function assertNothingCached(root: FakeDir, t: HubTarget) {
  assert.equal(await openCachedModel(root, t.key), null);
  assert.deepEqual(await listCachedModels(root), []);
}

test('a connection cut mid-shard fails and leaves nothing cached', async () => {
  const root = new FakeDir();
  const t = repo('cut');
  await assert.rejects(downloadToCache(t, deps(root)), { name: 'HubError', message: new RegExp(`The download of ${SHARD} failed`) });
  await assertNothingCached(root, t);
});

test('cancel stops the download and leaves nothing cached', async () => {
  const root = new FakeDir();
  const t = repo('slow');
  const ac = new AbortController();
  const p = downloadToCache(t, deps(root, ac.signal, (_l, _t, f) => f === SHARD && ac.abort()));
  await assert.rejects(p, { name: 'AbortError' });
  await assertNothingCached(root, t);
});

test('missing and gated repositories give clear errors', async () => {
  const root = new FakeDir();
  await assert.rejects(downloadToCache(repo('nothing-here'), deps(root)), {
    name: 'HubError', message: /test\/nothing-here has no config\.json at revision "main" \(HTTP 404\)/,
  });
  await assert.rejects(downloadToCache(repo('gated'), deps(root)), { name: 'HubError', message: /gated or private/ });
  await assert.rejects(downloadToCache(parseHubInput('test/x', undefined, 'http://127.0.0.1:1'), deps(root)), {
    name: 'HubError', message: /needs a network connection/,
  });
  assert.deepEqual(await listCachedModels(root), []);
});

test('not enough storage is reported before the weights download', async () => {
  const root = new FakeDir();
  const t = repo('llama3-smollm');
  await assert.rejects(downloadToCache(t, { ...deps(root), freeBytes: async () => 1000 }), { name: 'HubError', message: /Not enough browser storage/ });
  await assertNothingCached(root, t);
});

test('config.json is checked before the weights download: a refusal downloads no weights and caches nothing', async () => {
  const root = new FakeDir();
  const t = repo('llama3-smollm');
  const seen: unknown[] = [];
  const from = requests.length;
  const checkConfig = (c: unknown) => {
    seen.push(c);
    throw Object.assign(new Error('will not fit'), { name: 'ModelWontFitError' });
  };
  await assert.rejects(downloadToCache(t, { ...deps(root), checkConfig }), { name: 'ModelWontFitError' });
  assert.equal((seen[0] as { hidden_size: number }).hidden_size, 32, 'the parsed config.json');
  assert.deepEqual(requests.slice(from).filter((r) => r.includes('.safetensors')), []);
  await assertNothingCached(root, t);
});

test('a folder without its manifest (an interrupted download) is listed as incomplete, never opened', async () => {
  const root = new FakeDir();
  const w = await CacheWriter.begin(root, 'x@main');
  await w.write('config.json', new Blob(['{}']).stream(), () => {});
  assert.equal(await openCachedModel(root, 'x@main'), null);
  const [e] = await listCachedModels(root);
  assert.deepEqual([e.key, e.complete, e.files, e.bytes], ['x@main', false, 1, 2]);
  await w.commit({ id: 'x', revision: 'main', origin: 'test' });
  assert.ok(await openCachedModel(root, 'x@main'));
  // A file that changed size after the commit makes the folder incomplete again.
  (root.at('models/x@main') as FakeDir).entries.set('config.json', new Uint8Array(1));
  assert.equal(await openCachedModel(root, 'x@main'), null);
});
