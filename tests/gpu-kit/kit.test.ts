/**
 * The GPU kit's rehearsal (scripts/gpu/README.md): build the kit into a
 * temporary folder, then run its one command, scripts/gpu-check.sh, in its
 * smoke subset on this machine's adapter (SwiftShader in CI), exactly as the
 * GPU machine runs it: unpacked Node and Dawn, bundled JS, no tsx and no
 * node_modules. A kit that would break on the GPU's clock breaks here first.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');

test('npm run gpu:kit builds a kit under 60 MiB whose smoke run passes on this adapter', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'legokv-kit-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const kit = join(dir, 'kit');
  // No Debian downloads in CI, and the fastest xz level: the format is the same, only the ratio differs.
  const build = spawnSync(process.execPath, ['scripts/gpu/build-kit.mjs', '--out', kit, '--no-gl', '--xz-level', '0'], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(build.status, 0, build.stderr + build.stdout);
  const manifest = JSON.parse(readFileSync(join(kit, 'MANIFEST.json'), 'utf8'));
  assert.ok(manifest.total_bytes < 60 * 2 ** 20, `kit is ${manifest.total_bytes} bytes`);
  for (const f of ['node.xz', 'webgpu/dawn.node.xz', 'src/bench/gpu-check.mjs', 'tests/engine/kernels.test.mjs', 'torch_bench.py']) {
    assert.ok(manifest.files.some((x: { path: string }) => x.path === f), `the kit holds ${f}`);
  }

  const out = join(dir, 'out');
  // The environment of a machine without tsx on the module path: only what the kit carries may be used.
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: "" };
  delete env.VK_ICD_FILENAMES;
  const run = spawnSync('bash', ['scripts/gpu-check.sh', '--kit', kit, '--out', out, '--smoke', '--no-torch', '--budget-s', '600'], { cwd: ROOT, encoding: 'utf8', env });
  assert.equal(run.status, 0, run.stdout.slice(-3000) + run.stderr.slice(-3000));
  const r = JSON.parse(readFileSync(join(out, 'gpu-check.json'), 'utf8'));
  assert.ok(r.parity.pass >= 30 && r.parity.fail === 0, `parity ${r.parity.pass} passed, ${r.parity.fail} failed`);
  assert.match(r.adapter.description, /\S/);
  // Upload bandwidth in the blocks a link writes, beside the copy rate.
  const upload = r.copy.upload as { block: number; gbytes_per_s: number }[];
  assert.deepEqual(upload.map((u) => u.block), [512 * 192 * 4, 4 << 20]);
  assert.ok(r.copy.gbytes_per_s > 0 && upload.every((u) => u.gbytes_per_s > 0), JSON.stringify(r.copy));
  const engine = r.engine as { model: string; adapter: string; tokens_per_s: number; decode_tokens_per_s?: number }[];
  for (const m of ['tiny-llama', 'smollm2-135m']) {
    const row = engine.find((x) => x.model === m);
    assert.ok(row && row.tokens_per_s > 0 && row.decode_tokens_per_s! > 0, `${m}: ${JSON.stringify(row)}`);
    assert.equal(row.adapter, r.adapter.description, 'every figure carries the adapter');
  }
  // Packed quantized weights beside f16: fewer bytes, and throughput measured for each.
  type Profile = { step_gpu_ms: number; kernels: { kernel: string; dispatches: number; us: number }[] };
  type Fuse = { fused: boolean; attention: string; gemv?: string; chosen: boolean; decode_tokens_per_s: number; dispatches_per_step: number }[];
  const all = r.quant as { weights: string; adapter: string; weight_bytes: number; tokens_per_s: number; decode_tokens_per_s?: number; profile?: Profile; fuse?: Fuse; attention?: Fuse; gemv?: Fuse }[];
  const quant = all.filter((x) => !x.profile);
  // Each type's decode step, kernel by kernel (the smoke run profiles tiny-llama): the matrix products are there.
  const profiles = all.filter((x) => x.profile);
  assert.deepEqual(profiles.map((x) => x.weights), ['f16', 'q4_0', 'q8_0']);
  for (const p of profiles) {
    const mm = p.profile!.kernels.filter((k) => k.kernel.startsWith('matmul') || k.kernel === 'gemv');
    assert.ok(p.profile!.step_gpu_ms > 0 && mm.length && mm.every((k) => k.dispatches > 0 && k.us > 0), JSON.stringify(p.profile));
    // Decode timed both ways beside it: the fused launches save 3 a layer and 1 (tiny-llama has 2 layers).
    const [fused, unfused] = [true, false].map((f) => p.fuse!.find((x) => x.fused === f)!);
    assert.ok(fused.decode_tokens_per_s > 0 && unfused.decode_tokens_per_s > 0, JSON.stringify(p.fuse));
    assert.equal(unfused.dispatches_per_step - fused.dispatches_per_step, 7, JSON.stringify(p.fuse));
    // And with each single-row attention kernel: this CPU adapter's own (rows), then attention_decode.
    assert.deepEqual(p.attention!.map((w) => [w.attention, w.chosen]), [['rows', true], ['keys', false]], JSON.stringify(p.attention));
    assert.ok(p.attention!.every((w) => w.decode_tokens_per_s > 0 && w.dispatches_per_step === p.attention![0].dispatches_per_step), JSON.stringify(p.attention));
    // And with each GEMV kernel, SwiftShader having subgroups: gemv_sg (the default there), then gemv.
    assert.deepEqual(p.gemv!.map((w) => [w.gemv, w.chosen]), [['gemv_sg', true], ['gemv', false]], JSON.stringify(p.gemv));
    assert.ok(p.gemv!.every((w) => w.decode_tokens_per_s > 0), JSON.stringify(p.gemv));
  }
  assert.deepEqual(quant.map((x) => x.weights), ['f16', 'q4_0', 'q8_0'], JSON.stringify(quant).slice(0, 2000));
  for (const row of quant) {
    assert.ok(row.tokens_per_s > 0 && row.decode_tokens_per_s! > 0 && row.adapter === r.adapter.description, JSON.stringify(row));
  }
  assert.ok(quant[1].weight_bytes < quant[2].weight_bytes && quant[2].weight_bytes < quant[0].weight_bytes, 'q4_0 < q8_0 < f16 bytes');
  const link = r.link[0] as { results: { algorithm: string; recomputed: number; tokens: number }[]; ratios: Record<string, number> };
  assert.deepEqual(link.results.map((x) => x.algorithm), ['full', 'cacheblend:0.15', 'legolink:16', 'naive']);
  assert.equal(link.results[0].recomputed, link.results[0].tokens, 'full recomputes every row');
  assert.ok(link.ratios['full/legolink:16'] > 0);
  // The same chunks linked from rows kept as halves (KVStore's f16 blobs) beside them.
  const halves = (r.link as { tier: string; results: { algorithm: string; recomputed: number }[] }[]).find((x) => x.tier === 'host-f16');
  assert.deepEqual(halves?.results.map((x) => [x.algorithm, x.recomputed]), link.results.slice(1).map((x) => [x.algorithm, x.recomputed]));
  assert.match(readFileSync(join(out, 'gpu-check.log'), 'utf8'), /parity: \{"pass":\d+,"fail":0\}/);
});

test('gpu-check.sh refuses a folder that holds no kit, and an unknown option, with one clear line', () => {
  const none = spawnSync('bash', ['scripts/gpu-check.sh', '--kit', tmpdir(), '--out', join(tmpdir(), 'legokv-none')], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(none.status, 2);
  assert.match(none.stderr, /no kit at .* \(build it with npm run gpu:kit\)/);
  const bad = spawnSync('bash', ['scripts/gpu-check.sh', '--fast'], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /unknown option --fast/);
});
