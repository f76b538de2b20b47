/**
 * npm run bench:peers [-- --models gemma-3-270m,smollm2-135m-instruct] [--adapters swiftshader,llvmpipe]
 *                        [--prompt-tokens 128] [--decode-tokens 24] [--threads 1] [--out docs/results/peers.json]
 *
 * LegoKV against wllama (llama.cpp in WebAssembly, @wllama/wllama, served
 * from node_modules) on the same GGUF file and the same prompt, side by side
 * in one headless Chromium per adapter: prefill and decode tokens/s of
 * LegoKV's own engine, of wllama's WASM CPU path (n_gpu_layers 0) and of its
 * WebGPU backend (ggml-webgpu) where that gets a device. LegoKV's tokenizer
 * cuts the prompt to --prompt-tokens ids; wllama gets the same text back and
 * must count as many. Greedy, no prompt cache, after a short warm-up of each.
 * Not a test, and not part of `npm test`: a run takes minutes on a CPU adapter.
 * Writes docs/results/peers.json, which `npm run results` turns into a section
 * of docs/RESULTS.md. PEERS_DEBUG=debug keeps every line of wllama's log. */
import { createReadStream, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { execSync } from 'node:child_process';
import { parseCommand } from '../cli/options';
import { createRequire } from 'node:module';
import { createServer, type Plugin } from 'vite';
import { chromium, type Page } from '@playwright/test';
import { CHROMIUM_ARGS, chromiumPath, gpuEnv } from '../../scripts/gpu-env.mjs';
import { REPO_ROOT, KNOWN_MODELS } from '../eval/tokenizer';
import type { PeerFigures, PeersPageApi } from './peers-page';

const PREFIX = '/@legokv-peers/';
const PAGE = '/src/bench/peers-page.html';

/** Where each adapter comes from: Chromium's flags and the feature level LegoKV asks for. */
export const ADAPTERS: Record<string, { args: string[]; featureLevel?: 'compatibility' }> = {
  swiftshader: { args: [] },
  llvmpipe: { args: ['--use-webgpu-adapter=opengles', '--use-angle=gl-egl'], featureLevel: 'compatibility' },
};

/** ~150 tokens of plain English on every tokenizer; the first --prompt-tokens ids are used. */
export const PROMPT_TEXT =
  'The lighthouse keeper rose before dawn, as he had every morning for thirty years. He climbed the spiral stairs, ' +
  'counted the steps out of habit, and wiped the salt from the great lens with a soft cloth. Far below, the fishing ' +
  'boats were already leaving the harbour, their lamps swaying like fireflies over the grey water. His daughter had ' +
  'written from the city to say that the council wanted to replace the light with an automatic beacon, powered by the ' +
  'sun and checked once a month by an engineer from the mainland. He read the letter twice, folded it into his coat, ' +
  'and looked out at the horizon, where a thin line of gold was spreading beneath the clouds. The gulls were calling, ' +
  'the wind smelled of rain, and somewhere beyond the rocks a bell buoy rang softly. He thought about the storms he had ' +
  'seen, the ships he had guided home, and the long winter nights when the light was the only company he had.';

export type EngineName = 'legokv' | 'wllama-wasm' | 'wllama-webgpu';
export interface PeerRow extends Partial<Omit<PeerFigures, 'log'>> {
  model: string;
  /** Which Chromium flags (ADAPTERS) the row ran under. */
  adapter_config: string;
  engine: EngineName;
  /** wllama's WASM threads (1: no pthreads, no cross-origin isolation needed). */
  threads?: number;
  error?: string;
  /** Why a wllama WebGPU row has no figures. */
  skipped?: string;
  /** wllama rows: LegoKV's figure over this one, same model and adapter flags, same run. */
  ratio_prefill?: number;
  ratio_decode?: number;
  /** wllama rows: its greedy text equals LegoKV's; if not, the first of LegoKV's tokens it does not share, and that token's top-two logit gap in LegoKV. */
  same_text?: boolean;
  parted_at?: { token: number; legokv_top2_gap: number };
  /** wllama's log lines about threads, WebGPU and weight buffers. */
  log?: string[];
}
export interface PeersResults {
  command: string;
  date: string;
  wllama_version: string;
  llama_cpp: string;
  chromium: string;
  commit: string | null;
  prompt_tokens: number;
  decode_tokens: number;
  host: { cpus: number; cpu_model: string; loadavg_start: number[]; loadavg_end: number[]; uptime_start: string; uptime_end: string };
  /** What requestAdapter() gives under each adapter's flags, in the page and in a worker, at the core and compatibility levels. */
  adapters: Record<string, Record<'core' | 'compatibility' | 'worker_core' | 'worker_compatibility', string>>;
  rows: PeerRow[];
}

function servePlugin(models: Map<string, string>): Plugin {
  const wasm = join(REPO_ROOT, 'node_modules/@wllama/wllama/esm/wasm/wllama.wasm');
  return {
    name: 'legokv-peers',
    configureServer(server) {
      server.middlewares.use(PREFIX, (req, res) => {
        const name = decodeURIComponent((req.url ?? '').split('?')[0].replace(/^\//, ''));
        const path = name === 'wllama.wasm' ? wasm : models.get(name.replace(/^models\//, ''));
        if (!path || !existsSync(path)) {
          res.statusCode = 404;
          res.end('not served');
          return;
        }
        res.setHeader('content-type', path.endsWith('.wasm') ? 'application/wasm' : 'application/octet-stream');
        res.setHeader('content-length', String(statSync(path).size));
        createReadStream(path).pipe(res);
      });
    },
  };
}

function call<K extends keyof PeersPageApi>(page: Page, name: K, ...args: Parameters<PeersPageApi[K]>) {
  return page.evaluate(
    ({ name, args }) => (window.legokvPeers as unknown as Record<string, (...a: unknown[]) => unknown>)[name](...args),
    { name, args: args as unknown[] },
  ) as Promise<Awaited<ReturnType<PeersPageApi[K]>>>;
}

const uptime = () => {
  try {
    return execSync('uptime', { encoding: 'utf8' }).trim();
  } catch {
    return loadavg().map((x) => x.toFixed(2)).join(', ');
  }
};
const gitCommit = () => {
  try {
    return execSync('git rev-parse --short=12 HEAD', { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
  } catch {
    return null;
  }
};
const f1 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(1));
const f2 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(2));

const figures = (r: PeerRow) =>
  r.error ?? r.skipped ?? `prefill ${f1(r.prefill_tokens_per_s)} tok/s (${r.prompt_tokens} tokens), decode ${f1(r.decode_tokens_per_s)} tok/s (${r.decode_steps} steps)` +
    (r.ratio_prefill ? `; LegoKV/wllama: prefill ${f2(r.ratio_prefill)}×, decode ${f2(r.ratio_decode)}×` : '') +
    (r.same_text === undefined ? '' : r.same_text ? '; same text as LegoKV' : '; text differs from LegoKV\'s');

/** The first (1-based) of LegoKV's generated tokens whose text leaves the other engine's text. */
function partedAt(lego: PeerRow, text: string): PeerRow['parted_at'] {
  let prefix = '';
  for (const [i, piece] of (lego.pieces ?? []).entries()) {
    prefix += piece;
    if (!text.startsWith(prefix)) return { token: i + 1, legokv_top2_gap: lego.top2_gaps?.[i] ?? NaN };
  }
  return undefined;
}

/** Every engine on one model in one page: LegoKV first (its tokenizer gives the prompt), then wllama. */
async function runModel(page: Page, cfg: string, model: string, path: string, o: { promptTokens: number; decodeTokens: number; threads: number; engines: Set<EngineName> }): Promise<PeerRow[]> {
  const spec = ADAPTERS[cfg];
  const url = `${PREFIX}models/${basename(path)}`;
  const base = { model, adapter_config: cfg };
  const say = (r: PeerRow) => console.log(`[${cfg}] ${model} ${r.engine}${r.adapter ? ` on ${r.adapter}` : ''}: ${figures(r)}`);
  let lego: PeerRow, prompt: string;
  try {
    const { ids, prompt: text, ...fig } = await call(page, 'legokv', { url, name: basename(path), text: PROMPT_TEXT, ...o, featureLevel: spec.featureLevel });
    lego = { ...base, engine: 'legokv', ...fig };
    prompt = text;
  } catch (e) {
    lego = { ...base, engine: 'legokv', error: (e as Error).message };
    say(lego);
    return [lego];
  }
  say(lego);
  const rows = [lego];
  for (const engine of ['wllama-wasm', 'wllama-webgpu'] as const) {
    if (!o.engines.has(engine)) continue;
    const webgpu = engine === 'wllama-webgpu';
    let row: PeerRow;
    try {
      row = { ...base, engine, threads: o.threads, ...(await call(page, 'wllama', { url, text: prompt, decodeTokens: o.decodeTokens, threads: o.threads, webgpu, forceCompatibility: webgpu && !!spec.featureLevel })) };
      if (row.prompt_tokens !== undefined && row.prompt_tokens !== lego.prompt_tokens) row.error = `llama.cpp tokenized the prompt to ${row.prompt_tokens} tokens, LegoKV to ${lego.prompt_tokens}`;
    } catch (e) {
      row = { ...base, engine, threads: o.threads, error: (e as Error).message };
    }
    if (row.prefill_tokens_per_s && !row.error) {
      row.ratio_prefill = lego.prefill_tokens_per_s! / row.prefill_tokens_per_s;
      row.ratio_decode = lego.decode_tokens_per_s! / row.decode_tokens_per_s!;
      row.same_text = row.text === lego.text;
      if (!row.same_text) row.parted_at = partedAt(lego, row.text ?? '');
    }
    rows.push(row);
    say(row);
  }
  return rows;
}

async function main() {
  const ENGINES: EngineName[] = ['legokv', 'wllama-wasm', 'wllama-webgpu'];
  const a = parseCommand({
    command: 'npm run bench:peers',
    summary: 'LegoKV against wllama (llama.cpp in WebAssembly and on WebGPU) in headless Chromium: prefill and decode of the same GGUF files and token ids, per adapter.',
    options: {
      models: { type: 'list', default: ['gemma-3-270m', 'smollm2-135m-instruct'], help: 'known model names' },
      adapters: { type: 'list', default: ['swiftshader', 'llvmpipe'], arg: Object.keys(ADAPTERS).join(','), help: 'Chromium adapters' },
      'prompt-tokens': { type: 'integer', default: 128, min: 1, help: 'prompt length' },
      'decode-tokens': { type: 'integer', default: 24, min: 1, help: 'tokens decoded' },
      threads: { type: 'integer', default: 1, min: 1, help: 'wllama\'s WASM threads' },
      engines: { type: 'list', default: ENGINES, arg: ENGINES.join(','), help: 'which engines' },
      out: { type: 'string', default: join(REPO_ROOT, 'docs/results/peers.json'), arg: 'file.json', help: 'where to write the results' },
    },
  });
  const wrong = [...a.adapters.filter((x) => !ADAPTERS[x]), ...a.engines.filter((x) => !ENGINES.includes(x as EngineName))];
  if (wrong.length) {
    console.error(`npm run bench:peers: unknown ${wrong.join(', ')} (adapters: ${Object.keys(ADAPTERS).join(', ')}; engines: ${ENGINES.join(', ')})`);
    process.exit(2);
  }
  const promptTokens = a['prompt-tokens'], decodeTokens = a['decode-tokens'], threads = a.threads;
  const engines = new Set(a.engines as EngineName[]);
  const models = new Map<string, string>();
  for (const m of a.models) {
    const path = KNOWN_MODELS[m];
    if (!path || !existsSync(path)) console.log(`${m}: not present, skipped (npm run fetch:models fetches it)`);
    else models.set(m, path);
  }
  const files = new Map([...models.values()].map((p) => [basename(p), p]));
  const wllamaVersion = (createRequire(import.meta.url)('@wllama/wllama/package.json') as { version: string }).version;
  const llamaCpp = /LIBLLAMA_VERSION = "([^"]+)"/.exec(readFileSync(join(REPO_ROOT, 'node_modules/@wllama/wllama/esm/index.js'), 'utf8'))?.[1] ?? '?';
  const started = { load: loadavg(), uptime: uptime() };
  console.log(`host: ${started.uptime}`);

  const server = await createServer({
    root: REPO_ROOT, configFile: join(REPO_ROOT, 'vite.config.ts'), logLevel: 'warn', clearScreen: false,
    // Cross-origin isolation lets wllama use WASM threads when --threads > 1 (it needs SharedArrayBuffer).
    server: { host: '127.0.0.1', port: 0, watch: null, hmr: false, headers: { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } },
    optimizeDeps: { include: ['@wllama/wllama'] }, plugins: [servePlugin(files)],
  });
  await server.listen();
  const origin = server.resolvedUrls!.local[0].replace(/\/$/, '');
  const rows: PeerRow[] = [];
  const adapters: PeersResults['adapters'] = {};
  let chromiumVersion = '';
  try {
    for (const cfg of a.adapters) {
      const spec = ADAPTERS[cfg];
      if (!spec) throw new Error(`Unknown adapter ${cfg}: one of ${Object.keys(ADAPTERS).join(', ')}`);
      const profile = mkdtempSync(join(tmpdir(), 'legokv-peers-chromium-'));
      const context = await chromium.launchPersistentContext(profile, {
        executablePath: chromiumPath(), args: [...CHROMIUM_ARGS, '--enable-webgpu-developer-features', ...spec.args], env: gpuEnv(), headless: true,
      });
      chromiumVersion = context.browser()?.version() ?? chromiumVersion;
      try {
        const page = context.pages()[0] ?? (await context.newPage());
        page.on('pageerror', (e) => console.error(`[browser] ${e.message}`));
        if (process.env.PEERS_DEBUG) {
          page.on('console', (m) => console.error(`[console] ${m.text().slice(0, 300)}`));
          page.on('worker', (w) => w.on('console', (m) => console.error(`[worker console] ${m.text().slice(0, 300)}`)));
        }
        await page.goto(`${origin}${PAGE}?${process.env.PEERS_DEBUG ?? ''}`);
        await page.waitForFunction(() => !!window.legokvPeers, undefined, { timeout: 120_000 });
        adapters[cfg] = {
          core: await call(page, 'adapter'), compatibility: await call(page, 'adapter', 'compatibility'),
          worker_core: await call(page, 'workerAdapter'), worker_compatibility: await call(page, 'workerAdapter', 'compatibility'),
        };
        console.log(`[${cfg}] requestAdapter(): ${adapters[cfg].core}; at the compatibility level: ${adapters[cfg].compatibility}`);
        console.log(`[${cfg}] in a worker: ${adapters[cfg].worker_core}; at the compatibility level: ${adapters[cfg].worker_compatibility}`);
        for (const [model, path] of models) rows.push(...(await runModel(page, cfg, model, path, { promptTokens, decodeTokens, threads, engines })));
      } finally {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
      }
    }
  } finally {
    await server.close();
  }
  const ended = { load: loadavg(), uptime: uptime() };
  console.log(`host: ${ended.uptime}`);
  const out: PeersResults = {
    command: `npm run bench:peers -- ${process.argv.slice(2).join(' ')}`.trim().replace(/ --$/, ''),
    date: new Date().toISOString(), wllama_version: wllamaVersion, llama_cpp: llamaCpp, chromium: chromiumVersion, commit: gitCommit(), prompt_tokens: promptTokens, decode_tokens: decodeTokens,
    host: { cpus: cpus().length, cpu_model: cpus()[0]?.model ?? '', loadavg_start: started.load, loadavg_end: ended.load, uptime_start: started.uptime, uptime_end: ended.uptime },
    adapters, rows,
  };
  writeFileSync(a.out, `${JSON.stringify(out, null, 1)}\n`);
  console.log(`wrote ${a.out}`);
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
