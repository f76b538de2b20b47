/**
 * The runner's browser backend: the evaluation through the app's real
 * inference worker in headless Chromium (WebGPU there, SwiftShader where
 * there is no GPU). A Vite dev server for the repo serves the page
 * src/eval/browser-page.html (no studio UI), which starts the worker and
 * exposes load / prepare / preload / answer / cancel / release on
 * `window.legokvEval`; this side calls them with `page.evaluate`.
 *
 * The model is fetched over HTTP from that server: from /public when it lives
 * there (stories260K, qa-demo), otherwise through a middleware that serves
 * exactly the model's files and nothing else. The page runs each case
 * through case-api.ts on the worker's ContextCache (the studio's transport),
 * the very code the Node backend runs on its own ContextCache: the same
 * tokens, the same compile variants (Prompt Cache's modules at the case's
 * schema positions), the same link and decode.
 */
import { createReadStream, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, sep } from 'node:path';
import { createServer, type Plugin, type ViteDevServer } from 'vite';
import { chromium, type BrowserContext, type Page } from '@playwright/test';
import { CHROMIUM_ARGS, chromiumPath, gpuEnv } from '../../scripts/gpu-env.mjs';
import { detectFormat } from '../engine';
import type { BundledModelRef } from '../worker/protocol';
import type { EvalPageApi } from './browser-page';
import type { EvalCase } from './dataset';
import type { Answer, EvalBackend, PreparedCase, VariantName } from './backend';
import { questionText } from './prompt';
import { REPO_ROOT, resolveModelPath } from './tokenizer';
import { modelFilePaths } from '../node/files';

const PAGE = '/src/eval/browser-page.html';
const MODEL_URL = '/@legokv-eval-model/';

export interface BrowserBackendOptions {
  weightDtype?: 'f32' | 'f16';
  /** Forwards the page's and the worker's console errors (default: stderr). */
  log?: (line: string) => void;
}

/** The files a model path stands for, by name, as the Node backend reads them (src/node/files.ts). */
export function modelFiles(path: string): Map<string, string> {
  if (!existsSync(path)) throw new Error(`No model at ${path}`);
  if (!statSync(path).isDirectory()) return modelFilePaths(path);
  // A folder: only the files its format loads (the page fetches every file listed).
  const names = readdirSync(path).filter((f) => statSync(join(path, f)).isFile());
  const format = detectFormat(names);
  const keep = format === 'hf' ? /\.(json|safetensors)$/ : format === 'gguf' ? /\.gguf$/ : /\.bin$/;
  return new Map(names.filter((f) => keep.test(f)).map((f) => [f, join(path, f)]));
}

/** The model as a URL folder on the server: its /public folder, or the model middleware. */
function modelRef(id: string, files: Map<string, string>, origin: string): BundledModelRef {
  const pub = join(REPO_ROOT, 'public');
  const dirs = new Set([...files.values()].map(dirname));
  const rel = dirs.size === 1 ? relative(pub, [...dirs][0]) : '..';
  const inPublic = rel !== '..' && !rel.startsWith(`..${sep}`) && !rel.startsWith(sep);
  const base = inPublic ? `${origin}/${rel.split(sep).map(encodeURIComponent).join('/')}/` : `${origin}${MODEL_URL}`;
  return { kind: 'url', id, base, files: [...files.keys()] };
}

/** Serves the chosen model's files (and only those) under MODEL_URL. */
function modelPlugin(files: Map<string, string>): Plugin {
  return {
    name: 'legokv-eval-model',
    configureServer(server) {
      server.middlewares.use(MODEL_URL, (req, res) => {
        const path = files.get(decodeURIComponent((req.url ?? '').split('?')[0].replace(/^\//, '')));
        if (!path) {
          res.statusCode = 404;
          res.end('not a file of the model under evaluation');
          return;
        }
        res.setHeader('content-type', 'application/octet-stream');
        res.setHeader('content-length', String(statSync(path).size));
        createReadStream(path).pipe(res);
      });
    },
  };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createNetServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** One call of the page's API (arguments and result are structured-cloned). */
function pageCall<K extends keyof EvalPageApi>(page: Page, name: K, ...args: Parameters<EvalPageApi[K]>): Promise<Awaited<ReturnType<EvalPageApi[K]>>> {
  return page.evaluate(
    ({ name, args }) => (window.legokvEval as unknown as Record<string, (...a: unknown[]) => unknown>)[name](...args),
    { name, args: args as unknown[] },
  ) as Promise<Awaited<ReturnType<EvalPageApi[K]>>>;
}

export class BrowserBackend implements EvalBackend {
  readonly name = 'browser';
  /** Each prepared case's handle in the page. */
  private handles = new WeakMap<PreparedCase, number>();

  private constructor(
    private server: ViteDevServer,
    private context: BrowserContext,
    private profile: string,
    private page: Page,
    readonly adapter: string,
    readonly model: string,
    readonly hasChatTemplate: boolean,
    readonly kvDtype: 'f32' | 'f16',
  ) {}

  static async open(model: string, o: BrowserBackendOptions = {}): Promise<BrowserBackend> {
    const path = resolveModelPath(model);
    const files = modelFiles(path);
    const log = o.log ?? ((l) => process.stderr.write(`${l}\n`));
    const port = await freePort();
    const origin = `http://127.0.0.1:${port}`;
    let server: ViteDevServer | undefined;
    let context: BrowserContext | undefined;
    // A profile on disk (removed on close): the KV store lives in OPFS, whose quota is smaller in an in-memory one.
    const profile = mkdtempSync(join(tmpdir(), 'legokv-eval-chromium-'));
    try {
      server = await createServer({
        root: REPO_ROOT, configFile: join(REPO_ROOT, 'vite.config.ts'), logLevel: 'warn', clearScreen: false,
        server: { host: '127.0.0.1', port, strictPort: true, watch: null, hmr: false }, plugins: [modelPlugin(files)],
      });
      await server.listen();
      context = await chromium.launchPersistentContext(profile, {
        executablePath: chromiumPath(), args: CHROMIUM_ARGS, env: gpuEnv(), headless: true,
        // Ctrl-C is the runner's: it cancels the answer in the worker and keeps what was measured (run.ts).
        handleSIGINT: false,
      });
      const page = context.pages()[0] ?? (await context.newPage());
      page.on('console', (m) => void ((m.type() === 'error' || m.type() === 'warning') && log(`[browser] ${m.text()}`)));
      page.on('pageerror', (e) => log(`[browser] ${e.message}`));
      await page.goto(`${origin}${PAGE}`);
      await page.waitForFunction(() => !!window.legokvEval, undefined, { timeout: 120_000 });
      const adapter = await pageCall(page, 'init');
      // Unless asked, the worker picks the precision by the engine's rule, as the Node backend does: the same numbers.
      const info = await pageCall(page, 'load', modelRef(basename(path), files, origin), o.weightDtype);
      return new BrowserBackend(server, context, profile, page, adapter, basename(path), info.hasChatTemplate, info.kvDtype);
    } catch (e) {
      await context?.close().catch(() => {});
      await server?.close().catch(() => {});
      rmSync(profile, { recursive: true, force: true });
      throw e;
    }
  }

  private call<K extends keyof EvalPageApi>(name: K, ...args: Parameters<EvalPageApi[K]>) {
    return pageCall(this.page, name, ...args);
  }

  async prepare(c: EvalCase, variants: ReadonlySet<VariantName>): Promise<PreparedCase> {
    const r = await this.call('prepare', c.chunks, questionText(c), [...variants]);
    const p: PreparedCase = { case: c, ids: r.ids, compileMs: r.compileMs };
    this.handles.set(p, r.handle);
    return p;
  }

  private handle(p: PreparedCase): number {
    const h = this.handles.get(p);
    if (h === undefined) throw new Error(`Case ${p.case.id} was not prepared by this backend`);
    return h;
  }

  preload(p: PreparedCase): Promise<void> {
    return this.call('preload', this.handle(p));
  }

  async answer(p: PreparedCase, algorithm: string, maxNewTokens: number, signal?: AbortSignal): Promise<Answer> {
    const h = this.handle(p);
    const onAbort = () => void this.call('cancel').catch(() => {});
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return await this.call('answer', h, algorithm, maxNewTokens);
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  async release(p: PreparedCase): Promise<void> {
    await this.call('release', this.handle(p));
    this.handles.delete(p);
  }

  async close(): Promise<void> {
    try {
      await this.context.close();
    } finally {
      await this.server.close();
      rmSync(this.profile, { recursive: true, force: true });
    }
  }
}
