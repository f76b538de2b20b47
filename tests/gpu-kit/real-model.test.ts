/**
 * Gathering a real GGUF's parts on the GPU machine (src/bench/real-model.ts): the parts arrive over several
 * device calls, so a missing, corrupt or foreign part must be named clearly, and nothing half-joined may pass for
 * the model. (The whole path, from `npm run gpu:model` to the kit's check on this adapter, is rehearsed in
 * kit.test.ts.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gatherModel, MANIFEST, sha256, type RealManifest } from '../../src/bench/real-model';

/** A fake model in three folders as gpu:model lays them out, the reference in the last. */
function fakeParts(root: string, built = '2026-11-27T00:00:00.000Z') {
  const bytes = new Uint8Array(3000).map((_, i) => (i * 37 + 11) & 255);
  const logits = new Float32Array([0.5, -1, 2, 3.25]);
  const cuts = [[0, 1200], [1200, 2400], [2400, 3000]];
  const parts = cuts.map(([a, b], i) => ({ folder: String(i + 1), name: `m.gguf.part${i + 1}`, bytes: b - a, sha256: sha256(bytes.subarray(a, b)) }));
  const ref = new Uint8Array(logits.buffer);
  const manifest: RealManifest = {
    kind: 'legokv-gpu-model', model: 'fake', file: 'm.gguf', bytes: bytes.length, sha256: sha256(bytes), parts, load: {},
    reference: { folder: '3', name: 'reference.f32', bytes: ref.length, sha256: sha256(ref), llama: 'llama.cpp', adapter: 'here', profile: 'cpu', commit: 'x', vocab: 2, prompts: [] },
    built,
  };
  cuts.forEach(([a, b], i) => {
    const d = join(root, String(i + 1));
    mkdirSync(d, { recursive: true });
    writeFileSync(join(d, parts[i].name), bytes.subarray(a, b));
    writeFileSync(join(d, MANIFEST), JSON.stringify(manifest));
  });
  writeFileSync(join(root, '3', 'reference.f32'), ref);
  return { bytes, logits };
}

/** What the device calls do: each copies its folder into one gathering folder. */
function gather(root: string, folders: string[]) {
  const into = join(root, 'gathered');
  mkdirSync(into, { recursive: true });
  for (const f of folders) cpSync(join(root, f), into, { recursive: true });
  return into;
}

function withTmp(fn: (dir: string) => void) {
  const dir = mkdtempSync(join(tmpdir(), 'legokv-real-'));
  try {
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('the parts gathered over several calls are joined into the model, byte for byte, with the reference logits', () => withTmp((dir) => {
  const { bytes, logits } = fakeParts(dir);
  // The last call's folder may also be read where it lies, beside the gathered ones.
  const into = gather(dir, ['1', '2']);
  const g = gatherModel([into, join(dir, '3')]);
  assert.equal(g.path, join(into, 'm.gguf'));
  assert.deepEqual(new Uint8Array(readFileSync(g.path)), bytes);
  assert.deepEqual(g.reference, logits);
  assert.ok(!existsSync(`${g.path}.tmp`));
}));

test('a missing part names the folder to carry, and nothing is left that could pass for the model', () => withTmp((dir) => {
  fakeParts(dir);
  const into = gather(dir, ['1', '3']);
  assert.throws(() => gatherModel([into]), /part 2 of 3 \(m\.gguf\.part2\) is missing from .*: carry the folder 2 of npm run gpu:model's output first/);
  assert.ok(!existsSync(join(into, 'm.gguf')) && !existsSync(join(into, 'm.gguf.tmp')), 'no joined model, not even in part');
}));

test('a corrupt or truncated part, or reference, is refused with its sizes and digests', () => withTmp((dir) => {
  fakeParts(dir);
  const into = gather(dir, ['1', '2', '3']);
  const p1 = join(into, 'm.gguf.part1');
  const b = readFileSync(p1);
  b[100] ^= 1;
  writeFileSync(p1, b);
  assert.throws(() => gatherModel([into]), /part 1 of 3 \(m\.gguf\.part1\) is corrupt or truncated: 1200 bytes, sha256 \w+…, expected 1200 and \w+…/);
  assert.ok(!existsSync(join(into, 'm.gguf')) && !existsSync(join(into, 'm.gguf.tmp')), 'no joined model, not even in part');
  b[100] ^= 1;
  writeFileSync(p1, b);
  writeFileSync(join(into, 'reference.f32'), new Uint8Array(8));
  assert.throws(() => gatherModel([into]), /the reference logits \(reference\.f32\) is corrupt or truncated: 8 bytes/);
}));

test('parts of two different builds are not mixed, and a folder without a manifest says what to do', () => withTmp((dir) => {
  fakeParts(join(dir, 'a'));
  fakeParts(join(dir, 'b'), '2026-11-28T00:00:00.000Z');
  assert.throws(() => gatherModel([join(dir, 'a', '1'), join(dir, 'b', '2')]), /holds parts of another build \(m\.gguf, built 2026-11-28/);
  mkdirSync(join(dir, 'empty'));
  assert.throws(() => gatherModel([join(dir, 'empty')]), /no model\.json in .*build the parts with npm run gpu:model/);
  writeFileSync(join(dir, 'empty', MANIFEST), '{"kind":"other"}');
  assert.throws(() => gatherModel([join(dir, 'empty')]), /is not a manifest written by npm run gpu:model/);
}));

test('gpu:collect folds the real model\'s later call into the kit run\'s file, and names a folder without results', () => withTmp((dir) => {
  const put = (d: string, f: string, o: unknown) => {
    mkdirSync(join(dir, d), { recursive: true });
    writeFileSync(join(dir, d, f), JSON.stringify(o));
  };
  put('kit', 'gpu-check.json', { adapter: { description: 'GPU' }, parity: { pass: 3, tail: 'log' }, copy: { gbytes_per_s: 800 }, link: [1] });
  put('kit', 'torch.json', { device: 'H100' });
  put('real', 'gpu-check.json', { adapter: { description: 'GPU' }, copy: { gbytes_per_s: 790 }, real: { model: 'm', check: { pass: true } } });
  const out = join(dir, 'gpu.json');
  const collect = (dirs: string) => spawnSync(process.execPath, ['scripts/gpu/collect.mjs', dirs, out, 'the calls'], { cwd: join(import.meta.dirname, '../..'), encoding: 'utf8' });
  const ok = collect(`${join(dir, 'kit')},${join(dir, 'real')}`);
  assert.equal(ok.status, 0, ok.stderr);
  const r = JSON.parse(readFileSync(out, 'utf8'));
  // The kit run's own figures stay (its copy rate too); the later call adds what the first did not measure.
  assert.deepEqual(r, { command: 'the calls', kit: { adapter: { description: 'GPU' }, parity: { pass: 3 }, copy: { gbytes_per_s: 800 }, link: [1], real: { model: 'm', check: { pass: true } } }, torch: { device: 'H100' } });
  const bad = collect(`${join(dir, 'kit')},${join(dir, 'nothing')}`);
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /nothing holds no gpu-check\.json/);
}));

test('npm run gpu:model will not clear a folder that holds anything but an earlier build of its own', () => withTmp((dir) => {
  writeFileSync(join(dir, 'keep.txt'), 'mine');
  const r = spawnSync(process.execPath, ['scripts/gpu-env.mjs', 'src/bench/gpu-model.ts', '--out', dir], { cwd: join(import.meta.dirname, '../..'), encoding: 'utf8' });
  assert.equal(r.status, 1, r.stdout + r.stderr);
  assert.match(r.stderr, /holds other files than an earlier gpu:model build; give --out an empty or new folder/);
  assert.equal(readFileSync(join(dir, 'keep.txt'), 'utf8'), 'mine');
}));
