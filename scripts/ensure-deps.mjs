// Installs the npm packages when node_modules is missing or incomplete.
//
// `npm ci` is tried first: it installs exactly the lockfile. Some registries
// (mirrors that carry only Linux builds, as on our CI machines) serve no
// packages for other platforms, so the lockfile cannot list rollup's and
// esbuild's optional per-platform binaries for them, and recent npm versions'
// `npm ci` then refuses the lockfile as "out of sync". Only in that case does
// this fall back to `npm install`, which still follows the lockfile's versions.
//
// node-llama-cpp (the llama.cpp reference of tests/engine/llamacpp-parity.test.ts)
// ships prebuilt llama.cpp binaries as optional packages; its postinstall would
// otherwise try to download and build llama.cpp from GitHub where none fits.
// NODE_LLAMA_CPP_SKIP_DOWNLOAD=true here, and `config.nodeLlamaCppPostinstall:
// "skip"` in package.json for a plain `npm ci` / `npm install`, turn that off.
//
// onnxruntime-node (a dependency of @huggingface/transformers) would download
// its CUDA providers from GitHub in its postinstall on Linux x64; we use its
// CPU build only. Its own environment variables skip that. (Set in .npmrc
// they made npm warn "Unknown project config" on every command: npm accepts
// only its own keys there.) For a plain install, set them yourself:
// `ONNXRUNTIME_NODE_INSTALL=skip ONNXRUNTIME_NODE_INSTALL_CUDA=skip npm ci`.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

export function ensureNodeModules(root, tag, required = ['vite', 'webgpu', '@playwright/test', 'node-llama-cpp']) {
  const ok = existsSync(join(root, 'node_modules/.package-lock.json'))
    && required.every((p) => existsSync(join(root, 'node_modules', p, 'package.json')));
  if (ok) return;
  console.log(`[${tag}] installing npm packages (npm ci)`);
  const flags = ['--no-audit', '--no-fund'];
  const env = { ...process.env, NODE_LLAMA_CPP_SKIP_DOWNLOAD: 'true', ONNXRUNTIME_NODE_INSTALL: 'skip', ONNXRUNTIME_NODE_INSTALL_CUDA: 'skip' };
  const ci = spawnSync('npm', ['ci', ...flags], { cwd: root, env, stdio: ['ignore', 'inherit', 'pipe'], encoding: 'utf8' });
  if (ci.status === 0) return;
  const err = ci.stderr ?? '';
  if (!/can only install packages when your package\.json and package-lock\.json/.test(err)) {
    process.stderr.write(err);
    process.exit(ci.status ?? 1);
  }
  console.log(`[${tag}] npm ci rejected the lockfile (other platforms' optional packages are not on this registry); running npm install`);
  const inst = spawnSync('npm', ['install', ...flags], { cwd: root, env, stdio: 'inherit' });
  if (inst.status !== 0) process.exit(inst.status ?? 1);
}
