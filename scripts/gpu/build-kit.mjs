#!/usr/bin/env node
/**
 * `npm run gpu:kit`: builds the GPU kit, a self-contained bundle that runs
 * LegoKV's engine, parity tests and benchmarks on a machine with a GPU but no
 * Node.js, npm or network (see scripts/gpu/README.md). Into .cache/gpu-kit/
 * (git-ignored) by default:
 *
 *   node.xz                 this machine's Node runtime, xz-compressed
 *   webgpu/                 the `webgpu` package's index.js + dawn.node.xz (Dawn, linux-x64)
 *   src/bench/gpu-check.mjs the measuring program, bundled with esbuild (plain JS, no tsx)
 *   src/cli/generate.mjs    the generate CLI (the llama2.c parity test runs it)
 *   tests/**.test.mjs       the parity tests that matter on a real adapter, bundled
 *   kernels/                the WGSL sources
 *   public, tests/fixtures  relative links into the checkout (stories260K, qa-demo, fixtures),
 *                           so a device call does not carry them twice
 *   gl/*.deb                Debian's Vulkan loader and EGL (unpacked on the GPU machine first)
 *   torch_bench.py, shapes.json  the PyTorch reference and the model shapes
 *   MANIFEST.json           what is in it, sizes, and the commit it was built from
 *
 *   node scripts/gpu/build-kit.mjs [--out DIR] [--no-gl] [--xz-level 0-9]
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const ROOT = resolve(import.meta.dirname, '../..');
const { values: a } = parseArgs({
  options: {
    out: { type: 'string', default: join(ROOT, '.cache/gpu-kit') },
    'no-gl': { type: 'boolean', default: false },
    'xz-level': { type: 'string', default: '6' },
    help: { type: 'boolean', default: false },
  },
});
if (a.help) {
  console.log('usage: npm run gpu:kit [-- --out DIR] [--no-gl] [--xz-level 0-9]');
  process.exit(0);
}
const OUT = resolve(a.out);
const LIMIT = 60 * 2 ** 20;
/** Test files that matter on a real adapter: every kernel's parity, whole models against outside references, KVLink's invariants. */
export const KIT_TESTS = ['engine/kernels.test.ts', 'engine/attention-kernels.test.ts', 'engine/attention-step.test.ts', 'engine/argmax.test.ts', 'engine/quant-kernels.test.ts', 'engine/fused-kernels.test.ts', 'engine/combine-fold.test.ts', 'engine/fused-model.test.ts', 'engine/quant-model.test.ts', 'engine/llama2c.test.ts', 'engine/hf-models.test.ts', 'engine/engine-api.test.ts', 'kvlink/kvlink.test.ts', 'engine/kv-gather.test.ts', 'kvstore/gpu-tier.test.ts', 'generate/decode-ahead.test.ts', 'engine/step-replay.test.ts', 'engine/dispatcher.test.ts', 'engine/attention-grouped.test.ts', 'engine/attention-grouped-keys.test.ts', 'engine/tune-attention.test.ts', 'engine/gemv-wide.test.ts', 'engine/half-kernels.test.ts'];
/** Debian packages of the Vulkan loader and EGL (the device tool's recipe). */
const GL_DEBS = ['libvulkan1', 'libegl1', 'libglvnd0', 'libopengl0', 'libgl1', 'libglx0', 'libgles2'];

const log = (s) => console.log(`[gpu:kit] ${s}`);
const mib = (b) => `${(b / 2 ** 20).toFixed(1)} MiB`;

mkdirSync(OUT, { recursive: true });
// Bundles and links are rebuilt every time; the slow parts (node.xz, dawn.node.xz, gl/) are kept when current.
for (const d of ['src', 'tests', 'kernels', 'public']) rmSync(join(OUT, d), { recursive: true, force: true });

/** xz-compresses `src` to `dst` unless a stamp says dst was made from this very file. */
function xz(src, dst) {
  const st = statSync(src);
  const stamp = `${dst}.source.json`;
  const want = JSON.stringify({ src, size: st.size, mtimeMs: st.mtimeMs, level: a['xz-level'] });
  if (existsSync(dst) && existsSync(stamp) && readFileSync(stamp, 'utf8') === want) return;
  log(`compressing ${relative(ROOT, src) || src} (${mib(st.size)}) with xz -${a['xz-level']}`);
  mkdirSync(dirname(dst), { recursive: true });
  execFileSync('sh', ['-c', `xz -T2 -${a['xz-level']} -c "$0" > "$1.tmp" && mv "$1.tmp" "$1"`, src, dst]);
  writeFileSync(stamp, want);
}

// 1. Node and Dawn.
xz(process.execPath, join(OUT, 'node.xz'));
const webgpu = join(ROOT, 'node_modules/webgpu');
mkdirSync(join(OUT, 'webgpu'), { recursive: true });
for (const f of ['index.js', 'package.json', 'LICENSE.md']) copyFileSync(join(webgpu, f), join(OUT, 'webgpu', f));
xz(join(webgpu, 'dist/linux-x64/dawn.node'), join(OUT, 'webgpu/dawn.node.xz'));

// 2. The engine, the measuring program, the CLI and the tests, as plain JS.
const esbuild = join(ROOT, 'node_modules/.bin/esbuild');
const entries = [['src/bench/gpu-check.ts', 'src/bench/gpu-check.mjs'], ['src/cli/generate.ts', 'src/cli/generate.mjs'],
  ...KIT_TESTS.map((t) => [`tests/${t}`, `tests/${t.replace(/\.ts$/, '.mjs')}`])];
for (const [src, dst] of entries) {
  const r = spawnSync(esbuild, [join(ROOT, src), '--bundle', '--platform=node', '--format=esm', '--target=node20', '--log-level=warning',
    `--outfile=${join(OUT, dst)}`, '--external:webgpu', '--external:@huggingface/transformers',
    // Bundled CommonJS dependencies call require(); give ESM output one.
    '--banner:js=import { createRequire as __kitRequire } from "node:module"; const require = __kitRequire(import.meta.url);'], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`esbuild failed on ${src}`);
}
mkdirSync(join(OUT, 'kernels'));
for (const f of readdirSync(join(ROOT, 'kernels'))) copyFileSync(join(ROOT, 'kernels', f), join(OUT, 'kernels', f));
copyFileSync(join(ROOT, 'scripts/gpu/torch_bench.py'), join(OUT, 'torch_bench.py'));
copyFileSync(join(ROOT, 'src/bench/shapes.json'), join(OUT, 'shapes.json'));

// 3. Models and fixtures: relative links into the checkout (they travel with it).
symlinkSync(relative(OUT, join(ROOT, 'public')), join(OUT, 'public'));
symlinkSync(relative(join(OUT, 'tests'), join(ROOT, 'tests/fixtures')), join(OUT, 'tests/fixtures'));

// 4. The Vulkan loader and EGL from Debian (amd64), for a machine that has the NVIDIA driver but no loader.
if (!a['no-gl']) {
  const gl = join(OUT, 'gl');
  const have = existsSync(gl) ? readdirSync(gl).filter((f) => f.endsWith('.deb')) : [];
  if (!GL_DEBS.every((p) => have.some((f) => f.startsWith(`${p}_`)))) {
    mkdirSync(gl, { recursive: true });
    mkdirSync('/tmp/legokv-apt-amd64/partial', { recursive: true });
    const o = ['-oAPT::Architecture=amd64', '-oAPT::Architectures=amd64', '-oDir::State::Lists=/tmp/legokv-apt-amd64'];
    const ok = spawnSync('apt-get', [...o, 'update', '-qq'], { stdio: 'inherit' }).status === 0
      && spawnSync('apt-get', [...o, 'download', ...GL_DEBS], { cwd: gl, stdio: 'inherit' }).status === 0;
    if (!ok) log('could not download the Vulkan loader debs (apt-get); the kit will rely on the GPU machine\'s own loader');
  }
}

// 5. Manifest and size check (links are not counted: what they point to travels with the checkout anyway).
function walk(dir) {
  let out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isSymbolicLink()) continue;
    if (e.isDirectory()) out = out.concat(walk(p));
    else out.push({ path: relative(OUT, p), bytes: statSync(p).size });
  }
  return out;
}
const files = walk(OUT).filter((f) => !f.path.endsWith('.source.json') && f.path !== 'MANIFEST.json');
const total = files.reduce((s, f) => s + f.bytes, 0);
let commit = 'unknown';
try {
  commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
} catch {}
writeFileSync(join(OUT, 'MANIFEST.json'), JSON.stringify({ built: new Date().toISOString(), commit, node: process.version, total_bytes: total, tests: KIT_TESTS, files }, null, 1));
log(`kit at ${relative(process.cwd(), OUT) || OUT}: ${files.length} files, ${mib(total)} (limit ${mib(LIMIT)})`);
if (total > LIMIT) {
  console.error(`[gpu:kit] the kit is ${mib(total)}, over the ${mib(LIMIT)} a device call can carry beside the checkout`);
  process.exit(1);
}
