/**
 * A real GGUF on the lent GPU machine: the GPU kit's `real` stage.
 *
 * The kit's model shapes carry random weights, which time the engine but prove
 * nothing about a real model's answers. A real file is too big for one device
 * call (SmolLM2-135M-Instruct Q4_1 is 94 MiB; a call carries 64 MiB with the
 * checkout), so `npm run gpu:model` (gpu-model.ts) cuts it into parts, one
 * folder a call, each with the manifest below, and adds what to compare with:
 * llama.cpp's greedy continuation of a few prompts and this machine's logits
 * along it. On the GPU machine the parts gather in one folder over consecutive
 * calls; the last runs `gpu-check --real-model DIR`, which joins and verifies
 * them (`gatherModel`), checks the model against both references
 * (`checkReal`) and times it (`realStage`).
 */
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { basename, join } from 'node:path';
import { Engine, loadModelFiles, type LoadOptions } from '../engine';
import { argmax } from '../generate/sampling';
import { loadKernelSources, type NodeGpu } from '../node/gpu';
import { nodeModelFiles } from '../node/files';
import { logitRangeError, top2Gap } from './logits';
import { benchPrefillDecode, withRoofline } from './prefill';
import { benchTtft, compileBenchChunks, putOnGpuTier, ttftRatios } from './ttft';
import { tuneAsTheApp, tunePrefillAsTheApp, tuneUploadAsTheApp } from './fuse';

export const MANIFEST = 'model.json';

/**
 * Largest |Δ log-softmax| / range allowed between the GPU's logits and this machine's along the same tokens. Both
 * run the same engine on the same packed weights; the kernels' summation order differs (the GPU profile's tiled
 * matmuls, gemv_sg, fused launches, attention_tiled and attention_decode against the CPU profile's), and where the
 * adapter has `shader-f16` the tiled products take f16 slices (HALF). Measured with SmolLM2-135M-Instruct Q4_1,
 * two prompts and 10 steps each, the GPU profile on lavapipe against the CPU profile's reference on SwiftShader:
 * f32 math 1.75e-6, HALF 1.73e-3 (tests/engine/half-model.test.ts measures HALF alike). About 10× each.
 */
export const REAL_TOLERANCE = { f32: 2e-5, half: 1.5e-2 };

export interface PartFile {
  /** The folder (under the builder's output) that carries it, one device call each. */
  folder: string;
  name: string;
  bytes: number;
  sha256: string;
}

export interface RealPrompt {
  text: string;
  /** Token ids fed to both engines (BOS included where the GGUF asks for it). */
  input: number[];
  /** llama.cpp's greedy continuation: the outside reference. */
  tokens: number[];
}

export interface RealManifest {
  kind: 'legokv-gpu-model';
  model: string;
  file: string;
  bytes: number;
  sha256: string;
  parts: PartFile[];
  /** How both machines load it. */
  load: LoadOptions;
  reference: PartFile & {
    /** Who made the tokens, and on which adapter (and kernel profile) this machine's logits were taken. */
    llama: string;
    adapter: string;
    profile: string;
    commit: string;
    vocab: number;
    /** For each prompt, tokens.length logit vectors (f32): before each generated token, fed llama.cpp's tokens. */
    prompts: RealPrompt[];
  };
  built: string;
}

export const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** Bytes of a checkout's tracked files: what travels with every device call beside the carried folders. */
export function checkoutBytes(root: string): number {
  const files = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' }).split('\0').filter(Boolean);
  return files.reduce((s, f) => s + (existsSync(join(root, f)) ? statSync(join(root, f)).size : 0), 0);
}

/** Finds the manifest and every part in `dirs`, joins them into the first, checks every digest; throws with what is missing or wrong. */
export function gatherModel(dirs: string[]): { path: string; manifest: RealManifest; reference: Float32Array; ms: number } {
  const t0 = performance.now();
  const find = (name: string) => dirs.map((d) => join(d, name)).find((p) => existsSync(p));
  const m = find(MANIFEST);
  if (!m) throw new Error(`real model: no ${MANIFEST} in ${dirs.join(', ')} (build the parts with npm run gpu:model and carry each folder)`);
  const manifest = JSON.parse(readFileSync(m, 'utf8')) as RealManifest;
  if (manifest.kind !== 'legokv-gpu-model') throw new Error(`real model: ${m} is not a manifest written by npm run gpu:model`);
  for (const d of dirs.filter((d) => existsSync(join(d, MANIFEST)))) {
    const other = JSON.parse(readFileSync(join(d, MANIFEST), 'utf8')) as RealManifest;
    if (other.sha256 !== manifest.sha256 || other.built !== manifest.built) throw new Error(`real model: ${d} holds parts of another build (${other.file}, built ${other.built}) than ${m} (${manifest.file}, built ${manifest.built})`);
  }
  const read = (p: PartFile, what: string) => {
    const at = find(p.name);
    if (!at) throw new Error(`real model: ${what} (${p.name}) is missing from ${dirs.join(', ')}: carry the folder ${p.folder} of npm run gpu:model's output first`);
    const b = readFileSync(at);
    if (b.length !== p.bytes || sha256(b) !== p.sha256) throw new Error(`real model: ${what} (${p.name}) is corrupt or truncated: ${b.length} bytes, sha256 ${sha256(b).slice(0, 12)}…, expected ${p.bytes} and ${p.sha256.slice(0, 12)}…`);
    return b;
  };
  const path = join(dirs[0], manifest.file);
  const h = createHash('sha256');
  // Joined under a temporary name, renamed only once whole and verified: a failed join leaves nothing behind.
  const fd = openSync(`${path}.tmp`, 'w');
  try {
    try {
      manifest.parts.forEach((p, i) => {
        const b = read(p, `part ${i + 1} of ${manifest.parts.length}`);
        h.update(b);
        writeSync(fd, b);
      });
    } finally {
      closeSync(fd);
    }
    if (h.digest('hex') !== manifest.sha256) throw new Error(`real model: the joined ${manifest.file} does not match its sha256 (parts of different builds?)`);
  } catch (e) {
    rmSync(`${path}.tmp`, { force: true });
    throw e;
  }
  renameSync(`${path}.tmp`, path);
  const r = read(manifest.reference, 'the reference logits');
  const reference = new Float32Array(r.buffer.slice(r.byteOffset, r.byteOffset + r.byteLength));
  return { path, manifest, reference, ms: performance.now() - t0 };
}

export interface RealPromptCheck {
  text: string;
  input_tokens: number;
  /** llama.cpp's tokens, and the argmax of ours at each step (fed llama.cpp's tokens, so one slip does not hide the rest). */
  tokens: number[];
  ours_tokens: number[];
  greedy_equal: boolean;
  /** Largest |Δ log-softmax| / range against the reference machine's logits, over every step. */
  max_err: number;
  /** Our smallest top-2 logit gap along the way (a tie there would excuse a different token). */
  min_gap: number;
}

/**
 * Feeds `input`, then `tokens` one at a time (teacher-forced), on a cache of its own; `step` gets the logits before
 * each of `tokens`. How both machines walk a prompt: gpu:model taking the reference, checkReal comparing with it.
 */
export async function alongTokens(e: Engine, input: number[], tokens: number[], step: (logits: Float32Array, j: number) => void): Promise<void> {
  const cache = e.newCache(input.length + tokens.length + 4);
  try {
    let x = (await e.prefill(cache, input)).logits;
    for (let j = 0; j < tokens.length; j++) {
      step(x, j);
      if (j + 1 < tokens.length) x = await e.decode(cache, tokens[j]);
    }
  } finally {
    cache.destroy();
  }
}

/** The model, fed each prompt and llama.cpp's continuation of it, against llama.cpp's tokens and the reference machine's logits. */
export async function checkReal(e: Engine, ref: RealManifest['reference'], logits: Float32Array): Promise<RealPromptCheck[]> {
  const V = ref.vocab;
  if (e.config.vocabSize !== V) throw new Error(`real model: vocabulary of ${e.config.vocabSize}, the reference has ${V}`);
  let at = 0;
  const out: RealPromptCheck[] = [];
  for (const p of ref.prompts) {
    const ours: number[] = [];
    let maxErr = 0, minGap = Infinity;
    await alongTokens(e, p.input, p.tokens, (x) => {
      ours.push(argmax(x));
      maxErr = Math.max(maxErr, logitRangeError(x, logits.subarray(at, at + V)).err);
      minGap = Math.min(minGap, top2Gap(x));
      at += V;
    });
    out.push({ text: p.text, input_tokens: p.input.length, tokens: p.tokens, ours_tokens: ours, greedy_equal: ours.every((t, i) => t === p.tokens[i]), max_err: maxErr, min_gap: minGap });
  }
  if (at !== logits.length) throw new Error(`real model: the reference holds ${logits.length / V} logit vectors, the prompts ${at / V}`);
  return out;
}

export interface RealStageOptions {
  dirs: string[];
  copyGBps: number;
  lengths: number[];
  contexts: number[];
  algorithms: string[];
  chunkTokens: number;
  decodeSteps: number;
  budgetS: number;
  log: (line: string) => void;
}

/** Gathers, loads, checks and times the real model; every figure beside the adapter. Throws only before the model loads. */
export async function realStage(gpu: NodeGpu, o: RealStageOptions): Promise<Record<string, unknown>> {
  const adapter = gpu.adapter.description;
  const g = gatherModel(o.dirs);
  const { manifest } = g;
  o.log(`real model: ${manifest.file} joined from ${manifest.parts.length} parts and verified in ${(g.ms / 1000).toFixed(1)} s`);
  const t0 = performance.now();
  const files = await loadModelFiles(nodeModelFiles(g.path), basename(g.path));
  let e = Engine.create(gpu, loadKernelSources());
  const report: Record<string, unknown> = {
    adapter, model: manifest.model, file: manifest.file, bytes: manifest.bytes, sha256: manifest.sha256, parts: manifest.parts.length,
    gather_ms: g.ms, reference: { llama: manifest.reference.llama, adapter: manifest.reference.adapter, profile: manifest.reference.profile, commit: manifest.reference.commit },
  };
  try {
    await e.load(files.config, files.weights, manifest.load);
    report.load_ms = performance.now() - t0;
    report.check_weight_bytes = e.model!.bytes;
    report.profile = gpu.profile;
    const half = e.ops.halfByDefault();
    const tolerance = half ? REAL_TOLERANCE.half : REAL_TOLERANCE.f32;
    Object.assign(report, { half, tolerance });
    // What the model said, as text: the prompt's continuation, greedy on this adapter.
    const checks = (await checkReal(e, manifest.reference, g.reference)).map((c) => ({ ...c, answer: files.tokenizer.decode(c.ours_tokens) }));
    const maxErr = Math.max(...checks.map((c) => c.max_err));
    report.check = { prompts: checks, max_err: maxErr, greedy_equal: checks.every((c) => c.greedy_equal), pass: maxErr <= tolerance && checks.every((c) => c.greedy_equal) };
    for (const c of checks) {
      o.log(`[${adapter}] real ${manifest.model}: ${JSON.stringify(c.text.slice(-40))} -> ${JSON.stringify(c.answer)}; llama.cpp's tokens ${c.greedy_equal ? 'equal' : 'DIFFER'}; max error ${c.max_err.toExponential(2)} of the logit range against ${manifest.reference.adapter} (tolerance ${tolerance}${half ? ', f16 slices' : ''})`);
    }
    // Timed as the app runs it: its own weight and KV dtypes (f16 keys and values above 50M weights), not the f32
    // the check loads to compare exactly.
    e.destroy();
    e = Engine.create(gpu, loadKernelSources());
    await e.load(files.config, files.weights, {});
    report.decode_tuning = await tuneAsTheApp(e, (l) => o.log(`[${adapter}] real ${manifest.model} ${l}`));
    report.upload_tuning = await tuneUploadAsTheApp(e, (l) => o.log(`[${adapter}] real ${manifest.model} ${l}`));
    report.prefill_tuning = await tunePrefillAsTheApp(e, (l) => o.log(`[${adapter}] real ${manifest.model} ${l}`));
    Object.assign(report, { weight_bytes: e.model!.bytes, matrix_bytes: e.model!.matrixBytes, weight_dtype: e.model!.dtype, kv_dtype: e.kvDtype });
    const rows = await benchPrefillDecode(e, { lengths: o.lengths, budgetS: Math.max(5, o.budgetS / 4), decodeSteps: o.decodeSteps, log: (l) => o.log(`[${adapter}] real ${manifest.model} ${l}`) });
    const roofline = o.copyGBps ? (o.copyGBps * 1e9) / e.model!.bytes : undefined;
    report.throughput = rows.map((r) => withRoofline(r, roofline));
    const links: Record<string, unknown>[] = [];
    report.link = links;
    for (const context of o.contexts) {
      const chunks = Math.max(1, Math.round(context / o.chunkTokens));
      const compiled = await compileBenchChunks(e, context, chunks);
      const r = await benchTtft(e, compiled, { algorithms: o.algorithms, log: (l) => o.log(`[${adapter}] real ${manifest.model} ${context} ${l}`) });
      links.push({ context, chunks, chunk_tokens: o.chunkTokens, kv_dtype: e.kvDtype, tier: 'host', results: r, ratios: ttftRatios(r) });
      // Then from the GPU tier, where the app keeps the chunks it compiles (put through the engine's upload, timed);
      // full recompute reads no cached row, so its host time stands.
      const { tier, onTier, put } = await putOnGpuTier(e, compiled);
      try {
        const g = await benchTtft(e, onTier, { algorithms: o.algorithms.filter((x) => x !== 'full'), log: (l) => o.log(`[${adapter}] real ${manifest.model} ${context} GPU tier ${l}`) });
        const full = r.find((x) => x.algorithm === 'full');
        links.push({ context, chunks, chunk_tokens: o.chunkTokens, kv_dtype: e.kvDtype, tier: 'gpu', put, results: g, ratios: ttftRatios(full ? [full, ...g] : g) });
      } finally {
        tier.clear();
      }
    }
  } catch (err) {
    report.error = String((err as Error)?.stack ?? err);
  } finally {
    e.destroy();
  }
  return report;
}
