import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { defineConfig, type Plugin } from 'vite';
import react from '@vitejs/plugin-react';

const root = import.meta.dirname;
const localModels = join(root, '.cache/models');

/**
 * Offers models fetched by `npm start` into .cache/models (git-ignored) next
 * to the bundled ones: /models/index.json gains an entry for every model of
 * scripts/models.json whose file is present (with what it answers, `use`, and how questions are put to it,
 * `prompt`, where models.json gives them), and /local-models/<file> serves them.
 */
function localModelsPlugin(): Plugin {
  const fetchable = JSON.parse(readFileSync(join(root, 'scripts/models.json'), 'utf8')) as Record<
    string, { id: string; label: string; licence: string; use?: string; ownDocuments?: boolean; prompt?: unknown }
  >;
  return {
    name: 'legokv-local-models',
    // The dev server (`npm run dev`) and the preview of the production build (`npm start`, the e2e tests) alike.
    configureServer(server) {
      server.middlewares.use(serveLocalModels);
    },
    configurePreviewServer(server) {
      server.middlewares.use(serveLocalModels);
    },
  };

  function serveLocalModels(req: IncomingMessage, res: ServerResponse, next: () => void) {
    const url = (req.url ?? '').split('?')[0];
    if (url === '/models/index.json') {
      const index = JSON.parse(readFileSync(join(root, 'public/models/index.json'), 'utf8'));
      for (const [file, m] of Object.entries(fetchable)) {
        if (existsSync(join(localModels, file))) {
          const { id, label, licence, use, ownDocuments, prompt } = m;
          index.models.push({ id, label, use, ownDocuments, base: 'local-models/', files: [file], licence, prompt });
        }
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(index));
      return;
    }
    const m = /^\/local-models\/([\w.-]+)$/.exec(url);
    if (m && existsSync(join(localModels, m[1])) && !m[1].endsWith('.json')) {
      const path = join(localModels, m[1]);
      res.setHeader('content-type', 'application/octet-stream');
      res.setHeader('content-length', String(statSync(path).size));
      createReadStream(path).pipe(res);
      return;
    }
    next();
  }
}

/**
 * `--mode e2e` builds the app together with the test pages under e2e/pages into dist-e2e, so that the Playwright
 * tests run against the production build (what `npm start` serves) without shipping test pages to users.
 */
export default defineConfig(({ mode }) => ({
  plugins: [react(), localModelsPlugin()],
  worker: { format: 'es' },
  // Imported only from the worker, which the dependency scan does not reach: pre-bundle it at start so a first
  // load of a Hugging Face model does not make Vite re-optimize and reload the page.
  optimizeDeps: { include: ['@huggingface/transformers'] },
  server: { host: '127.0.0.1', port: 5173, strictPort: false },
  preview: { host: '127.0.0.1', port: 4173 },
  build: {
    target: 'es2022',
    chunkSizeWarningLimit: 4096,
    ...(mode === 'e2e' && {
      outDir: 'dist-e2e',
      rollupOptions: { input: { app: join(root, 'index.html'), kvstore: join(root, 'e2e/pages/kvstore.html') } },
    }),
  },
}));
