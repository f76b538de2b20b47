/**
 * npm run bench:engine [-- --json out.json] [--lengths 128,512,2048] [--models a,b] [--no-llamacpp]
 *
 * Prefill throughput (tokens/s and achieved GFLOP/s, attention included) for
 * each known model at several lengths, decode tokens/s and GFLOP/s, and, in
 * the same run on the same adapter: the best GFLOP/s of a standalone matmul of
 * prefill's shape over our matmul variants, the GFLOP/s of decode's
 * matrix-vector products timed alone (so decode's share of it says what the
 * rest of a step costs), and for GGUF files llama.cpp on the CPU on the same
 * file and token ids. Every figure carries the adapter's (or engine's) name.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { parseCommand } from '../cli/options';
import { openModel } from '../node/session';
import { nodeBackend } from '../node/gpu';
import { bestMatmul, decodeMatmulReference, decodeMatmulStreamed } from './matmul';
import { benchPrefillDecode, benchTokens } from './prefill';
import { benchLlamaCpp } from './llamacpp';
import { KNOWN_MODELS } from '../eval/tokenizer';
import { commandLine, runHost } from '../eval/env';
import { loadavg } from 'node:os';

const a = parseCommand({
  command: 'npm run bench:engine',
  summary: 'Prefill and decode throughput of each known model on this adapter, beside the best standalone matmul, decode\'s matrix-vector products alone and, for GGUF files, llama.cpp on the CPU.',
  options: {
    json: { type: 'string', arg: 'out.json', help: 'also write the figures as JSON' },
    lengths: { type: 'numbers', min: 1, help: 'prompt lengths, all measured (default: 128,512,2048 within --budget)' },
    models: { type: 'list', default: Object.keys(KNOWN_MODELS), help: 'known model names' },
    budget: { type: 'number', default: 120, min: 0, help: 'seconds per model for the default lengths' },
    'decode-steps': { type: 'integer', default: 16, min: 1, help: 'decode steps timed' },
    'no-llamacpp': { type: 'boolean', help: 'skip llama.cpp' },
  },
});
const wanted = a.models;
const lengths = a.lengths ?? [128, 512, 2048];

const results: Record<string, unknown>[] = [];
const started = { date: new Date().toISOString(), ...runHost() };
for (const name of wanted) {
  const path = KNOWN_MODELS[name];
  if (!path || !existsSync(path)) {
    console.log(`${name}: not present, skipped (npm start, npm test or npm run fetch:models fetch it)`);
    continue;
  }
  const s = await openModel(path);
  const adapter = s.gpu.adapter.description;
  const c = s.model.config;
  const N = c.nHeads * c.headDim + 2 * c.nKvHeads * c.headDim;
  const mm = await bestMatmul(s.engine, 2048, c.hidden, N, s.engine.model!.dtype);
  console.log(`[${adapter}] ${name}: best standalone matmul [2048x${c.hidden}]·[${c.hidden}x${N}] = ${mm.gflops.toFixed(2)} GFLOP/s (${mm.variant})`);
  const decodeSteps = a['decode-steps'];
  const rows = await benchPrefillDecode(s.engine, {
    lengths, budgetS: a.budget, forced: !!a.lengths, decodeSteps,
    log: (line) => console.log(`[${adapter}] ${name} ${line}`),
  });
  const gemv = await decodeMatmulReference(s.engine);
  const streamed = await decodeMatmulStreamed(s.engine);
  for (const r of rows) {
    const decode = r.decode_gflops
      ? {
          decode_matmul_alone_gflops: gemv.gflops, decode_matmul_variant: gemv.variant, decode_ratio_to_matmul: r.decode_gflops / gemv.gflops,
          decode_matmul_streamed_gflops: streamed.gflops, decode_ratio_to_streamed: r.decode_gflops / streamed.gflops,
        }
      : {};
    results.push({ adapter, model: name, ...r, matmul_best_gflops: mm.gflops, ratio_to_matmul: r.gflops / mm.gflops, ...decode });
    console.log(`[${adapter}] ${name} prefill ${r.tokens}: ${((r.gflops / mm.gflops) * 100).toFixed(0)}% of the standalone matmul`);
    if (r.decode_gflops) {
      console.log(`[${adapter}] ${name} decode: ${r.decode_gflops.toFixed(2)} GFLOP/s = ${((r.decode_gflops / gemv.gflops) * 100).toFixed(0)}% of its matrix-vector products timed alone (${gemv.gflops.toFixed(2)} GFLOP/s, ${gemv.variant}, ${gemv.ms.toFixed(1)} ms a token)`);
      console.log(`[${adapter}] ${name} decode: ${((r.decode_gflops / streamed.gflops) * 100).toFixed(0)}% of the same products run in a token's order, each layer on weights of its own (${streamed.gflops.toFixed(2)} GFLOP/s, ${streamed.ms.toFixed(1)} ms a token)`);
    }
  }
  const first = rows[0];
  // LegoKV's device goes first: left open, its polling and its threads would share the CPU with the peer's run.
  s.close();
  if (path.endsWith('.gguf') && first && !a['no-llamacpp']) {
    // The same token ids, prompt length and decode steps as our first row: llama.cpp's CPU build, and on lavapipe
    // its Vulkan build too, which runs on the very adapter LegoKV ran on (ggml's GPU kernels beside ours).
    const ways = [{ vulkan: false, what: 'llama.cpp', against: 'llama.cpp\'s on this CPU' }];
    if (nodeBackend() === 'lavapipe') ways.push({ vulkan: true, what: 'llama.cpp\'s Vulkan build', against: 'llama.cpp\'s Vulkan build on the same adapter' });
    for (const w of ways) {
      const peer = await benchLlamaCpp(path, benchTokens(first.tokens, c.vocabSize), decodeSteps, { vulkan: w.vulkan });
      if (peer instanceof Error) {
        console.log(`${name}: ${w.what} not measured (${peer.message})`);
        continue;
      }
      results.push({ adapter: peer.engine, model: name, tokens: peer.prefill_tokens, tokens_per_s: peer.prefill_tokens_per_s, decode_tokens_per_s: peer.decode_tokens_per_s });
      console.log(`[${peer.engine}] ${name} prefill ${peer.prefill_tokens}: ${peer.prefill_tokens_per_s.toFixed(1)} tok/s; decode ${peer.decode_tokens_per_s.toFixed(1)} tok/s`);
      console.log(`[${adapter}] ${name}: prefill ${(first.tokens_per_s / peer.prefill_tokens_per_s).toFixed(3)}x and decode ${(first.decode_tokens_per_s! / peer.decode_tokens_per_s).toFixed(3)}x ${w.against}`);
    }
  }
}
if (a.json) {
  const command = commandLine('bench:engine');
  writeFileSync(a.json, JSON.stringify({ kind: 'engine', command, ...started, loadavg_end: loadavg()[0], results }, null, 1));
}
