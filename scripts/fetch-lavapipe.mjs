#!/usr/bin/env node
/**
 * Fetches Mesa's lavapipe (a Vulkan driver on the CPU) into .cache/lavapipe/
 * (git-ignored), for LEGOKV_NODE_BACKEND=lavapipe: the one adapter in reach
 * that offers WebGPU's `shader-f16` (Dawn rejects Debian 12's own lavapipe,
 * 22.3, for a missing Vulkan feature; Mesa 25 from bookworm-backports has it).
 * The kernels' f16 fast path (matmul_tiled's HALF) is tested on it.
 *
 *   node scripts/fetch-lavapipe.mjs
 *
 * Downloads one pinned .deb from deb.debian.org, checks its size and sha256,
 * unpacks it with dpkg-deb (nothing is installed; it needs Debian's libllvm15,
 * which Mesa's EGL packages bring), and writes an ICD manifest whose library
 * path is relative to the manifest, so that nothing names this machine's paths.
 * Idempotent: an unpacked driver whose stamp names this .deb is kept. Exits
 * non-zero, with the reason, when it cannot (no network, checksum mismatch,
 * no dpkg-deb); the tests that need lavapipe then skip and say why.
 */
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { LAVAPIPE_ICD } from './gpu-env.mjs';

const LAVAPIPE_DIR = path.dirname(LAVAPIPE_ICD);
const LIB = 'root/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so';
const DEB = {
  url: 'http://deb.debian.org/debian/pool/main/m/mesa/mesa-vulkan-drivers_25.0.7-2~bpo12+1_amd64.deb',
  size: 11366132,
  sha256: '3899f1800424c60a05df5d6913076a526ca8fdbabec43672cd397563d1ca3263',
};
const STAMP = path.join(LAVAPIPE_DIR, 'unpacked.json');
const log = (m) => console.log(`[fetch-lavapipe] ${m}`);

/** Whether the pinned driver is unpacked and its manifest written. */
function haveLavapipe() {
  try {
    return JSON.parse(fs.readFileSync(STAMP, 'utf8')).sha256 === DEB.sha256 && fs.existsSync(LAVAPIPE_ICD) && fs.existsSync(path.join(LAVAPIPE_DIR, LIB));
  } catch {
    return false;
  }
}

async function main() {
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error(`lavapipe is fetched for linux x64 only, not ${process.platform} ${process.arch}`);
  if (haveLavapipe()) return log('present');
  fs.mkdirSync(LAVAPIPE_DIR, { recursive: true });
  const deb = path.join(LAVAPIPE_DIR, path.basename(DEB.url));
  if (!fs.existsSync(deb) || fs.statSync(deb).size !== DEB.size) {
    log(`downloading ${DEB.url} (${(DEB.size / 2 ** 20).toFixed(1)} MiB)`);
    const res = await fetch(DEB.url);
    if (!res.ok) throw new Error(`${DEB.url}: HTTP ${res.status} (backports may have moved past this version: update DEB in this script)`);
    const part = `${deb}.part`;
    fs.writeFileSync(part, Buffer.from(await res.arrayBuffer()));
    fs.renameSync(part, deb);
  }
  const bytes = fs.readFileSync(deb);
  const sum = createHash('sha256').update(bytes).digest('hex');
  if (bytes.length !== DEB.size || sum !== DEB.sha256) {
    fs.rmSync(deb);
    throw new Error(`${path.basename(deb)}: ${bytes.length} bytes, sha256 ${sum}; expected ${DEB.size} bytes, ${DEB.sha256}. Deleted.`);
  }
  const dest = path.join(LAVAPIPE_DIR, 'root');
  fs.rmSync(dest, { recursive: true, force: true });
  const x = spawnSync('dpkg-deb', ['-x', deb, dest], { encoding: 'utf8' });
  if (x.status !== 0) throw new Error(`dpkg-deb -x failed: ${x.error?.message ?? x.stderr}`);
  fs.writeFileSync(LAVAPIPE_ICD, JSON.stringify({ file_format_version: '1.0.0', ICD: { library_path: `./${LIB}`, api_version: '1.4.305' } }, null, 2) + '\n');
  fs.writeFileSync(STAMP, JSON.stringify({ deb: path.basename(deb), sha256: DEB.sha256 }) + '\n');
  fs.rmSync(deb);
  log(`unpacked into ${path.relative(process.cwd(), LAVAPIPE_DIR) || '.'}`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((e) => {
    console.error(`[fetch-lavapipe] ${e.message}`);
    process.exit(1);
  });
}
