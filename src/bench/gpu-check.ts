/**
 * The GPU kit's measuring program (see scripts/gpu/README.md): on whatever
 * adapter Dawn finds, it runs, in order and within a time budget,
 *   1. parity: the kernel and model parity tests the kit carries (node --test);
 *   2. copy: the adapter's buffer-copy bandwidth (bytes read + written), and the host's upload bandwidth
 *      through writeBuffer in the blocks a link uploads (upload.ts); and what a launch costs the GPU and the
 *      host apart from its work (dispatch.ts);
 *   3. matmul: each matmul kernel variant alone, on Llama-3.2-1B's products (--matmul-model)
 *      (prefill's and decode's), so the per-adapter choice can be checked;
 *      f16: where the adapter offers shader-f16 (on NVIDIA with a Dawn toggle; f16-stage.ts), the f16 path's
 *      parity tests and those products' tiled kernels with f16 math and without;
 *   4. attention: the attention kernels alone (attention.wgsl in each launch
 *      shape: rows per invocation, key slices; attention_tiled.wgsl beside it,
 *      by key slices and tile size; attention_decode.wgsl where rows are few,
 *      by key slices), at decode, link-recompute and prefill sizes;
 *   5. quant: one real-shape model (--quant-model, Llama-3.2-1B) with f16 weights
 *      and with packed quantized ones (--quant-types, Q4_K, Q4_0 and Q8_0): prefill
 *      (--quant-lengths) and decode, with weight bytes and the decode roofline;
 *   6. engine: prefill at several lengths and decode, for each real-shape
 *      model (shapes.json, random weights), with the decode roofline that its
 *      weight bytes and the measured copy bandwidth allow;
 *      profile: with it (5 and 6), one decode step's GPU time kernel by kernel (profile.ts), and decode
 *      with the fused launches and without, and with each single-row attention kernel, side by side (fuse.ts);
 *   7. link: TTFT of linking algorithms at long contexts in 512-token chunks; with profile, full and
 *      legolink:16 kernel by kernel (profile.ts).
 * With --real-model DIR (after copy, before the rest): a real GGUF that earlier device calls gathered in DIR
 * (npm run gpu:model): joined, verified, checked against llama.cpp's tokens and this machine's logits, and timed
 * (real-model.ts).
 * Everything goes to one JSON file, rewritten after every step, so a run cut
 * short still leaves what it measured. Every figure carries the adapter.
 *
 *   node gpu-check.mjs --out DIR [--stages parity,copy,quant,engine,profile,link] [--models a,b]
 *     [--quant-model llama-3.2-1b] [--quant-types f16,q4_k,q4_0,q8_0] [--quant-lengths 512,2048]
 *     [--lengths 512,2048,8192] [--contexts 8192,32768] [--link-models smollm2-135m]
 *     [--budget-s 300] [--tests a.test.mjs,...] [--real-model DIR[,DIR...]] [--real-lengths 512,2048] [--real-contexts 8000]
 */
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createNodeGpu, loadKernelSources, type NodeGpu } from '../node/gpu';
import { Engine } from '../engine';
import { SHAPE_NAMES, shapeConfig, syntheticWeights } from './shapes';
import { isQuant, takesWideLoadsAny, type QuantType } from '../engine';
import { appDecodeTokS, benchPrefillDecode, prefillFlops, withRoofline } from './prefill';
import { asF32, asHalves, benchParts, benchTtft, compileBenchChunks, putOnGpuTier, ttftRatios } from './ttft';
import { timeMatmuls } from './matmul';
import { linkedRows, timeAttention, type AttentionCase } from './attention';
import { copyStage, type CopyReport } from './copy-stage';
import { formatLinkProfile, formatProfile, profileDecode, profileLink } from './profile';
import { decodeAfterLink, decodeAttentionWays, decodeBothWays, decodeGemvWays, decodeSwitchWays, formatFuse, tuneAsTheApp, tunePrefillAsTheApp, tuneUploadAsTheApp } from './fuse';
import { realStage } from './real-model';
import { closestCall, runTests } from './run-tests';
import { F16_TESTS, f16Stage } from './f16-stage';

const { values: a } = parseArgs({
  options: {
    out: { type: 'string', default: '.' },
    stages: { type: 'string', default: 'parity,copy,quant,matmul,f16,attention,engine,profile,link' },
    'quant-model': { type: 'string', default: 'llama-3.2-1b' },
    'quant-types': { type: 'string', default: 'f16,q4_k,q4_0,q8_0' },
    'quant-lengths': { type: 'string', default: '512,2048' },
    models: { type: 'string', default: SHAPE_NAMES.filter((n) => n !== 'tiny-llama').join(',') },
    lengths: { type: 'string', default: '512,2048,8192' },
    contexts: { type: 'string', default: '8192,32768' },
    'link-models': { type: 'string', default: 'smollm2-135m' },
    'chunk-tokens': { type: 'string', default: '512' },
    algorithms: { type: 'string', default: 'full,cacheblend:0.15,legolink:16,naive' },
    'budget-s': { type: 'string', default: '300' },
    tests: { type: 'string' },
    'decode-steps': { type: 'string', default: '32' },
    'matmul-model': { type: 'string', default: 'llama-3.2-1b' },
    'profile-models': { type: 'string' },
    // Also link in host memory with Engine.submitEachLayer flipped, to see what the per-layer submission does to uploads.
    'link-other-way': { type: 'boolean', default: false },
    // A real GGUF's parts (npm run gpu:model), gathered in these folders (comma-separated) by earlier calls.
    'real-model': { type: 'string' },
    'real-lengths': { type: 'string', default: '512,2048' },
    'real-contexts': { type: 'string', default: '8000' },
  },
});
const t0 = performance.now();
const budgetS = Number(a['budget-s']);
const elapsedS = () => (performance.now() - t0) / 1000;
/** Where the shares start: once the parity tests are done, the stages after them share what is left. */
let sharedFrom = 0;
/**
 * Seconds left before `frac` of the shared budget is spent: each stage has its own share, so a slow one cannot
 * starve the next (a slow parity stage once left the quant and engine stages none: gpu-h100-11.json).
 */
const left = (frac = 1) => sharedFrom + (budgetS - sharedFrom) * frac - elapsedS();
/** Where each stage must end, as a share of the budget after parity: the quantized weights up to 35%, the real-shape prefills up to 60%, the links up to 95%. */
const QUANT_END = 0.35, ENGINE_END = 0.6, LINK_END = 0.95;
const stages = new Set(a.stages!.split(','));
mkdirSync(a.out!, { recursive: true });
const file = join(a.out!, 'gpu-check.json');
const report: Record<string, unknown> = { started: new Date().toISOString(), node: process.version, budget_s: budgetS };
const save = () => writeFileSync(file, JSON.stringify({ ...report, elapsed_s: (performance.now() - t0) / 1000 }, null, 1));
const log = (line: string) => console.log(`[${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${line}`);

/** Stage 1: the carried test files, one process, one file at a time (each makes its own device); the f16 stage's apart. */
function parity() {
  const dir = join(import.meta.dirname, '../../tests');
  const files = a.tests ? a.tests.split(',').map((f) => join(dir, f)) : findTests(dir).filter((f) => !F16_TESTS.some((t) => f.endsWith(t)));
  const r = runTests(dir, files, { timeoutS: Math.max(30, left() - 60), bounds: true });
  report.parity = r;
  log(`parity: ${JSON.stringify({ pass: r.pass, fail: r.fail })}${closestCall(r)}`);
}

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.isDirectory()) out.push(...findTests(join(dir, e.name)));
    else if (e.name.endsWith('.test.mjs')) out.push(join(dir, e.name));
  }
  return out.sort();
}

function adapterInfo(gpu: NodeGpu) {
  const L = gpu.device.limits;
  return {
    ...gpu.adapter, profile: gpu.profile, features: [...gpu.device.features].sort(), adapter_features: gpu.adapterFeatures,
    limits: { maxStorageBufferBindingSize: L.maxStorageBufferBindingSize, maxBufferSize: L.maxBufferSize, maxComputeWorkgroupStorageSize: L.maxComputeWorkgroupStorageSize, maxComputeInvocationsPerWorkgroup: L.maxComputeInvocationsPerWorkgroup },
  };
}

/**
 * A real-shape model with random weights: f16, or matrices packed as `quant` (quant.ts); with `tune`, its decode
 * tuned as the app's load tunes it (stages that time no decode skip it); its uploads and prefill attention always are.
 */
async function withModel<T>(gpu: NodeGpu, shape: string, fn: (e: Engine) => Promise<T>, quant?: QuantType, tune = true): Promise<T> {
  const c = shapeConfig(shape);
  const e = Engine.create(gpu, loadKernelSources());
  try {
    const tb = performance.now();
    const w = syntheticWeights(c, 1, quant);
    // Quantized shapes measure the packed path, on every adapter.
    await e.load(c, w, { weightDtype: 'f16', dequantize: quant ? false : undefined });
    w.clear();
    const kinds = Object.entries(e.model!.matrixBytes).map(([k, v]) => `${k} ${(v! / 2 ** 20).toFixed(0)} MiB`).join(', ');
    log(`${shape}: built and uploaded in ${((performance.now() - tb) / 1000).toFixed(1)} s (${(e.model!.bytes / 2 ** 30).toFixed(2)} GiB of weights: ${kinds})`);
    const say = (l: string) => log(`[${gpu.adapter.description}] ${shape}${quant ? ` ${quant}` : ''} ${l}`);
    const tuned = tune ? await tuneAsTheApp(e, say) : null;
    if (tuned) ((report.tune ??= []) as unknown[]).push({ adapter: gpu.adapter.description, model: shape, quant: quant ?? null, ...tuned });
    const up = await tuneUploadAsTheApp(e, say);
    if (up) ((report.upload_tune ??= []) as unknown[]).push({ adapter: gpu.adapter.description, model: shape, ...up });
    const pre = await tunePrefillAsTheApp(e, say);
    if (pre) ((report.prefill_tune ??= []) as unknown[]).push({ adapter: gpu.adapter.description, model: shape, quant: quant ?? null, ...pre });
    return await fn(e);
  } finally {
    e.destroy();
  }
}

async function main() {
  if (stages.has('parity')) {
    parity();
    save();
    sharedFrom = Math.min(elapsedS(), budgetS);
  }
  const gpu = await createNodeGpu();
  const adapter = gpu.adapter.description;
  report.adapter = adapterInfo(gpu);
  log(`adapter: ${adapter} (vendor ${gpu.adapter.vendor || '?'}, ${gpu.profile} profile)`);
  save();
  let copyGBps = 0;
  if (stages.has('copy')) {
    const copy = await copyStage(gpu, log);
    report.copy = copy;
    copyGBps = copy.gbytes_per_s;
    save();
  }
  if (a['real-model']) {
    const numbers = (list: string) => list.split(',').map(Number);
    report.real = await realStage(gpu, {
      dirs: a['real-model'].split(','), copyGBps, lengths: numbers(a['real-lengths']!), contexts: numbers(a['real-contexts']!),
      algorithms: ['full', 'legolink:16', 'naive'], chunkTokens: Number(a['chunk-tokens']), decodeSteps: Number(a['decode-steps']), budgetS: left(), log,
    }).catch((err) => ({ adapter, error: String(err?.stack ?? err) }));
    save();
  }
  if (stages.has('quant')) await quantStage(gpu, adapter, copyGBps);
  if (stages.has('matmul')) {
    const e = Engine.create(gpu, loadKernelSources());
    const rows: Record<string, unknown>[] = [];
    report.matmul = rows;
    const c = shapeConfig(a['matmul-model']!);
    const qkv = (c.nHeads + 2 * c.nKvHeads) * c.headDim;
    // [T, K, N]: the fused q/k/v, output, gate/up and down projections at a 2048-token prefill, q/k/v at 512,
    // and at decode with the LM head.
    const qDim = c.nHeads * c.headDim;
    const shapes: [number, number, number][] = [[2048, c.hidden, qkv], [2048, qDim, c.hidden], [2048, c.hidden, 2 * c.intermediate],
      [2048, c.intermediate, c.hidden], [512, c.hidden, qkv],
      [1, c.hidden, qkv], [1, c.hidden, 2 * c.intermediate], [1, c.intermediate, c.hidden], [1, c.hidden, c.vocabSize]];
    try {
      for (const [T, K, N] of shapes) {
        for (const m of await timeMatmuls(e, T, K, N, 'f16')) {
          const chosen = e.ops.pickMatmul(T, N, K) === m.variant && (m.half === undefined || m.half === e.ops.halfByDefault()) && (m.wide === undefined || m.wide === (e.ops.gemvWide === true));
          rows.push({ adapter, ...m, chosen });
          log(`[${adapter}] matmul ${m.variant}${m.half ? ' (f16 math)' : ''}${m.wide ? ' (16-byte loads)' : ''}${chosen ? ' (chosen)' : ''} [${T}x${K}]·[${K}x${N}] f16: ${m.ms.toFixed(3)} ms, ${m.gflops.toFixed(0)} GFLOP/s, ${m.weightGBps.toFixed(0)} GB/s of weights`);
        }
        save();
      }
    } catch (err) {
      rows.push({ adapter, error: String((err as Error)?.stack ?? err) });
    } finally {
      e.destroy();
    }
  }
  if (stages.has('f16')) {
    // The tests, 16 timings and a 1B model built and prefilled 8 times: at most 45 s, and a quarter of what is left.
    report.f16 = await f16Stage({ testsDir: join(import.meta.dirname, '../../tests'), model: a['matmul-model']!, timeoutS: Math.min(45, Math.max(10, left() / 4)), log })
      .catch((err) => ({ error: String(err?.stack ?? err) }));
    save();
  }
  if (stages.has('attention')) {
    const e = Engine.create(gpu, loadKernelSources());
    const rows: Record<string, unknown>[] = [];
    report.attention = rows;
    const m = shapeConfig(a['matmul-model']!), sm = shapeConfig(a['link-models']!.split(',')[0]);
    const head = (c: typeof m, T: number, n: number, rows?: 'linked', chunk?: number): AttentionCase => ({ T, n, H: c.nHeads, NKV: c.nKvHeads, HD: c.headDim, rows, chunk });
    // Decode and a LegoLink recompute at 32K (all keys visible, then the link's own rows and bounds), a prefill
    // block, and the 1B model's 2048-token prefill (all keys visible).
    // The smoke run's linked case: 3 chunks of its --chunk-tokens and a question, 40 rows, enough for both the tiled
    // kernel (32 rows or more) and attention_decode's (64 or fewer); SwiftShader took 126 s over the decode kernels'
    // slices at 4 chunks of 512 and 99 s at 3 (2026-12-02); the smoke's 3 chunks of 128 hold a quarter of the keys.
    const smokeChunk = Number(a['chunk-tokens']), smokeN = 3 * smokeChunk + 8;
    const cases = a['matmul-model'] === 'tiny-llama' ? [head(m, 1, 256), head(m, 64, 256), head(m, linkedRows(smokeN, smokeChunk).length, smokeN, 'linked', smokeChunk)]
      : [head(m, 1, 512), head(sm, 1, 32768), head(sm, 1016, 32768), head(sm, 1016, 32776, 'linked'), head(sm, 4096, 8192), head(m, 2048, 2048)];
    try {
      for (const c of cases) {
        for (const t of await timeAttention(e, c)) {
          rows.push({ adapter, ...t });
          const shape = t.variant === 'tiled' ? `tiled, ${t.keysPerTile} keys a tile${t.tiledLanes ? `, ${t.tiledLanes} lane(s) a row group${t.tiledRows === 1 ? ' splitting a row' : ''}` : ''}` : t.variant === 'keys' ? `keys, a workgroup a row, ${t.keysPerThread ?? 1} key(s) a thread a round` : t.variant === 'lanes' ? 'lanes, a workgroup a row, each thread its own keys' : t.variant === 'grouped' ? 'grouped, a workgroup a kv head\'s q heads, each thread its own keys' : t.variant === 'grouped-keys' ? `grouped-keys, a workgroup a kv head's q heads, ${t.keysPerThread ?? 1} key(s) a thread a round` : `rows, ${t.rowsPerThread} row(s) a thread`;
          log(`[${adapter}] attention T=${c.T}${c.rows === 'linked' ? ' (legolink:16\'s rows)' : ''} n=${c.n} H=${c.H} HD=${c.HD}, ${shape}, ${t.splits} slices${t.chosen ? ' (chosen)' : ''}: ${t.ms.toFixed(3)} ms, ${t.gflops.toFixed(0)} GFLOP/s`);
        }
        save();
      }
    } catch (err) {
      rows.push({ adapter, error: String((err as Error)?.stack ?? err) });
    } finally {
      e.destroy();
    }
  }
  const lengths = a.lengths!.split(',').map(Number);
  if (stages.has('engine')) {
    const rows: Record<string, unknown>[] = [];
    report.engine = rows;
    for (const shape of a.models!.split(',')) {
      if (left(ENGINE_END) < 20) {
        rows.push({ adapter, model: shape, skipped: `out of time (${left(ENGINE_END).toFixed(0)} s left of the engine stage)` });
        continue;
      }
      await withModel(gpu, shape, async (e) => {
        const weightBytes = e.model!.bytes;
        const r = await benchPrefillDecode(e, {
          lengths, budgetS: Math.max(5, left(ENGINE_END) / 3), decodeSteps: Number(a['decode-steps']),
          log: (l) => log(`[${adapter}] ${shape} ${l}`),
        });
        // Memory traffic per decode step is at least the weights, read once; the copy rate counts every byte moved.
        const rooflineTokS = copyGBps ? (copyGBps * 1e9) / weightBytes : undefined;
        for (const row of r) rows.push({ adapter, model: shape, weight_dtype: e.model!.dtype, weight_bytes: weightBytes, params: e.model!.plan.params, ...withRoofline(row, rooflineTokS) });
        const d = r[0] && appDecodeTokS(r[0]);
        if (rooflineTokS && d) log(`[${adapter}] ${shape} decode ${d.toFixed(1)} tok/s as the app decodes = ${((d / rooflineTokS) * 100).toFixed(1)}% of the ${rooflineTokS.toFixed(0)} tok/s its ${(weightBytes / 2 ** 20).toFixed(0)} MiB of weights allow at the copy bandwidth`);
        await profileInto(rows, e, lengths[0], { adapter, model: shape, weight_dtype: e.model!.dtype }, `[${adapter}] ${shape}`);
      }).catch((err) => rows.push({ adapter, model: shape, error: String(err?.stack ?? err) }));
      save();
    }
  }
  if (stages.has('link')) {
    const rows: Record<string, unknown>[] = [];
    report.link = rows;
    const chunkTokens = Number(a['chunk-tokens']);
    for (const shape of a['link-models']!.split(',')) {
      await withModel(gpu, shape, async (e) => {
        let fullMsAt: [number, number] | null = null;
        for (const context of a.contexts!.split(',').map(Number)) {
          // The full recompute dominates: estimate it from the last context (quadratic in attention, linear in matmul).
          if (fullMsAt) {
            const c = e.config, f0 = prefillFlops(c, fullMsAt[0]), f1 = prefillFlops(c, context);
            const est = (fullMsAt[1] / 1000) * ((f1.matmul + f1.attention) / (f0.matmul + f0.attention)) * (stages.has('profile') ? 4 : 3) + (context / fullMsAt[0]) * 5;
            if (est > left(LINK_END)) {
              rows.push({ adapter, model: shape, context, skipped: `about ${est.toFixed(0)} s needed, ${left(LINK_END).toFixed(0)} s left` });
              log(`[${adapter}] ${shape} link ${context}: skipped (about ${est.toFixed(0)} s needed, ${left(LINK_END).toFixed(0)} left)`);
              continue;
            }
          }
          const chunks = Math.max(1, Math.round(context / chunkTokens));
          const tc = performance.now();
          // The host tier uploads f32 rows, the host-f16 tier halves, whatever the engine keeps; the GPU tier holds
          // the rows as compiled, as the app's does: halves where the engine keeps f16 keys and values (e.kvDtype).
          const resident = await compileBenchChunks(e, context, chunks);
          const compileMs = performance.now() - tc;
          const compiled = asF32(resident);
          const algorithms = a.algorithms!.split(',');
          const r = await benchTtft(e, compiled, { algorithms, log: (l) => log(`[${adapter}] ${shape} ${context} ${l}`) });
          const ratios = ttftRatios(r);
          rows.push({ adapter, model: shape, context, chunks, chunk_tokens: chunkTokens, tier: 'host', kv_dtype: e.kvDtype, submit_each_layer: e.submitEachLayer, compile_ms: compileMs, results: r, ratios });
          log(`[${adapter}] ${shape} ${context}: ${Object.entries(ratios).map(([k, v]) => `TTFT(${k.replace('/', ')/TTFT(')}) = ${v.toFixed(1)}`).join(', ')}`);
          const full = r.find((x) => x.algorithm === 'full');
          if (full) fullMsAt = [context, full.totalMs];
          save();
          if (a['link-other-way']) {
            const chosen = e.submitEachLayer;
            e.submitEachLayer = !chosen;
            try {
              const o = await benchTtft(e, compiled, { algorithms: algorithms.filter((x) => x !== 'full'), log: (l) => log(`[${adapter}] ${shape} ${context} (submit each layer ${!chosen}) ${l}`) });
              rows.push({ adapter, model: shape, context, chunks, chunk_tokens: chunkTokens, tier: 'host', submit_each_layer: !chosen, results: o });
            } finally {
              e.submitEachLayer = chosen;
            }
            save();
          }
          // The same chunks kept as halves on the host (KVStore's f16 blobs): half the bytes uploaded, widened on the GPU.
          const h = await benchTtft(e, asHalves(resident), { algorithms: algorithms.filter((x) => x !== 'full'), log: (l) => log(`[${adapter}] ${shape} ${context} host f16 ${l}`) });
          rows.push({ adapter, model: shape, context, chunks, chunk_tokens: chunkTokens, tier: 'host-f16', results: h, ratios: ttftRatios(full ? [full, ...h] : h) });
          save();
          // The same chunks resident on the GPU (KVStore's GPU tier): linking copies rows instead of uploading them.
          // Full recompute reads no cached row, so its host-tier time stands for both.
          // Put there as the app puts compiled chunks (ContextCache: the engine's upload, the way tuneUpload kept).
          const { tier, onTier, put } = await putOnGpuTier(e, resident);
          try {
            log(`[${adapter}] ${shape} ${context} GPU tier: ${resident.length} chunks put in ${put.ms.toFixed(0)} ms (${(put.bytes / 2 ** 20).toFixed(0)} MiB, ${(put.bytes / put.ms / 1e6).toFixed(1)} GB/s, ${put.way})`);
            const g = await benchTtft(e, onTier, { algorithms: algorithms.filter((x) => x !== 'full'), log: (l) => log(`[${adapter}] ${shape} ${context} GPU tier ${l}`) });
            const gr = ttftRatios(full ? [full, ...g] : g);
            // With the profile stage: where full's and legolink's GPU time goes, kernel by kernel (legolink from the tier).
            const profiles = stages.has('profile') && algorithms.includes('legolink:16')
              ? [await profileLink(e, benchParts(compiled), 'full'), await profileLink(e, benchParts(onTier), 'legolink:16')].filter((p) => p)
              : [];
            // Then the answer: decode on legolink:16's cache, each single-row attention kernel (the app's decode).
            const after = algorithms.includes('legolink:16') ? await decodeAfterLink(e, benchParts(onTier), 'legolink:16', e.gpu.profile === 'cpu' ? 1 : Number(a['decode-steps'])) : null;
            rows.push({ adapter, model: shape, context, chunks, chunk_tokens: chunkTokens, tier: 'gpu', gpu_rows: e.kvDtype, put, results: g, ratios: gr, ...(profiles.length ? { profiles } : {}), ...(after ? { decode_after_link: after } : {}) });
            log(`[${adapter}] ${shape} ${context} GPU tier: ${Object.entries(gr).map(([k, v]) => `TTFT(${k.replace('/', ')/TTFT(')}) = ${v.toFixed(1)}`).join(', ')}`);
            for (const p of profiles) log(`[${adapter}] ${shape} ${context} ${formatLinkProfile(p!)}`);
            if (after) log(`[${adapter}] ${shape} decode after legolink:16 (${after.context} rows): ${formatFuse(after.ways)}`);
          } finally {
            tier.clear();
          }
          save();
        }
      }, undefined, false).catch((err) => rows.push({ adapter, model: shape, error: String(err?.stack ?? err) }));
      save();
    }
  }
  report.finished = new Date().toISOString();
  save();
  gpu.release();
  // A failed parity test or a stage that threw makes the run fail (the rehearsal in CI relies on it).
  const p = report.parity as { status: number | null; pass: number } | undefined;
  const errors = ['quant', 'matmul', 'attention', 'engine', 'link'].flatMap((k) => ((report[k] as { error?: string }[] | undefined) ?? []).filter((r) => r.error));
  const f16 = report.f16 as { error?: string; parity?: { status: number | null } } | undefined;
  if (f16?.error || (f16?.parity && f16.parity.status !== 0)) errors.push({ error: f16.error ?? 'the f16 tests failed' });
  const real = report.real as { error?: string; check?: { pass: boolean } } | undefined;
  const dispatch = (report.copy as CopyReport | undefined)?.dispatch;
  if ((p && (p.status !== 0 || !(p.pass > 0))) || errors.length || (dispatch && 'error' in dispatch) || (real && (real.error || !real.check?.pass))) process.exitCode = 1;
}

/**
 * Stage 5: the same real-shape model with f16 weights and with each packed quantized type, prefill and decode
 * side by side, with the bytes of its weights and the decode roofline they allow at the measured copy bandwidth.
 */
async function quantStage(gpu: NodeGpu, adapter: string, copyGBps: number) {
  const rows: Record<string, unknown>[] = [];
  report.quant = rows;
  const shape = a['quant-model']!;
  const lengths = a['quant-lengths']!.split(',').map(Number);
  const types = a['quant-types']!.split(',');
  for (const [i, type] of types.entries()) {
    if (type !== 'f16' && !isQuant(type)) {
      rows.push({ adapter, model: shape, weights: type, error: `unknown weight type ${type} (f16, or one of q4_0, q4_1, q5_0, q8_0, q4_k, q6_k)` });
      continue;
    }
    if (left(QUANT_END) < 10) {
      rows.push({ adapter, model: shape, weights: type, skipped: `out of time (${left(QUANT_END).toFixed(0)} s left of the quant stage)` });
      continue;
    }
    await withModel(gpu, shape, async (e) => {
      const weightBytes = e.model!.bytes;
      const r = await benchPrefillDecode(e, {
        lengths, budgetS: Math.max(5, left(QUANT_END) / (types.length - i) / 2), decodeSteps: Number(a['decode-steps']),
        log: (l) => log(`[${adapter}] ${shape} ${type} ${l}`),
      });
      const rooflineTokS = copyGBps ? (copyGBps * 1e9) / weightBytes : undefined;
      for (const row of r) rows.push({ adapter, model: shape, weights: type, weight_bytes: weightBytes, matrix_bytes: e.model!.matrixBytes, ...withRoofline(row, rooflineTokS) });
      const d = r[0] && appDecodeTokS(r[0]);
      log(`[${adapter}] ${shape} ${type}: ${(weightBytes / 2 ** 20).toFixed(0)} MiB of weights; ` +
        r.map((x) => `prefill ${x.tokens} ${x.tokens_per_s.toFixed(0)} tok/s`).join(', ') +
        (d ? `; decode ${d.toFixed(1)} tok/s` + (rooflineTokS ? ` = ${((d / rooflineTokS) * 100).toFixed(1)}% of the ${rooflineTokS.toFixed(0)} tok/s roofline (${copyGBps.toFixed(0)} GB/s copy)` : '') : ''));
      await profileInto(rows, e, lengths[0], { adapter, model: shape, weights: type }, `[${adapter}] ${shape} ${type}`);
    }, type === 'f16' ? undefined : type).catch((err) => rows.push({ adapter, model: shape, weights: type, error: String(err?.stack ?? err) }));
    save();
  }
}

/** With the profile stage (and the model among --profile-models, if given), one decode step kernel by kernel. */
async function profileInto(rows: Record<string, unknown>[], e: Engine, context: number, row: { model: string } & Record<string, unknown>, tag: string) {
  if (!stages.has('profile') || (a['profile-models'] && !a['profile-models'].split(',').includes(row.model))) return;
  // CPU adapters time the fused way (far slower there) briefly, after a short prefill.
  const cpu = e.gpu.profile === 'cpu';
  const ctx = cpu ? Math.min(context, 64) : context, steps = Number(a['decode-steps']);
  const fuse = await decodeBothWays(e, ctx, steps, cpu ? 1 : undefined);
  log(`${tag} ${formatFuse(fuse)}`);
  const attention = await decodeAttentionWays(e, ctx, cpu ? 1 : steps);
  log(`${tag} ${formatFuse(attention)}`);
  const gemv = await decodeGemvWays(e, ctx, cpu ? 1 : steps);
  if (gemv.length) log(`${tag} ${formatFuse(gemv)}`);
  // The fused choices' rows: the key slices' fold, the prologues' x staged, and where decode reads f16 weights (not
  // the packed quantized profiles) their wide loads.
  const combine = [];
  for (const choice of ['foldCombine', 'stageX', ...(takesWideLoadsAny(e.model) ? ['gemvWide' as const] : [])] as const) combine.push(...await decodeSwitchWays(e, ctx, cpu ? 1 : steps, choice));
  log(`${tag} ${formatFuse(combine)}`);
  const p = await profileDecode(e, context);
  rows.push({ ...row, profile: p ?? 'no timestamp queries', fuse, attention, gemv, combine });
  if (!p) return;
  for (const l of formatProfile(p)) log(`${tag} ${l}`);
}

main().catch((err) => {
  report.error = String(err?.stack ?? err);
  save();
  console.error(err);
  process.exit(1);
});
