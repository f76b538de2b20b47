/**
 * npm run eval -- --model <m> --data <file.jsonl>
 *     [--algorithms prompt,full,naive,cacheblend:0.15,legolink:16,legolink0,attnlink:16,promptcache]
 *     [--max-new-tokens 32] [--out results.json] [--backend node|browser] [--limit N]
 *     [--dtype f32|f16] [--kv-dtype f32|f16] [--no-warmup] [--resume]
 *
 * EPIC's synchronous workload on a dataset (format: src/eval/dataset.ts):
 * every case's chunks are compiled before its requests are timed; each
 * algorithm answers greedily; prints a table per algorithm (TTFT mean and
 * median with the breakdown, accuracy, recomputed-token fraction, n) with
 * the adapter's name, and writes the results JSON after every answer.
 * Ctrl-C stops after the current step and keeps what was measured;
 * `--resume` continues the run saved in `--out` (its finished cases are kept,
 * after checking that the model's bytes, data, algorithms, backend and
 * adapter are the same).
 * `--model` takes a path or a known name (stories260K, qa-demo, gemma-3-270m, smollm2-135m-instruct).
 * Backends: `node` (default) runs the ContextCache API on Node's `webgpu`
 * package; `browser` runs the app's own inference worker in headless
 * Chromium, through a Vite dev server (src/eval/browser-backend.ts; no
 * --kv-dtype or --tokenizer there).
 */
import { existsSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { readDataset } from './dataset';
import type { EvalBackend } from './backend';
import { NodeBackend } from './node-backend';
import { runEval, ResumeMismatchError, type EvalResults } from './runner';
import { commandLine, modelDigest } from './env';
import { modelOption, resolveModelPath } from './tokenizer';
import { ProgressBar, resultsTable } from './format';
import { ALL_ALGORITHMS } from '../kvlink/catalogue';
import { existing, parseCommand } from '../cli/options';

export const EVAL_COMMAND = {
  command: 'npm run eval',
  summary: 'EPIC\'s synchronous workload: compiles every case\'s chunks, answers each case greedily with every algorithm, prints TTFT, accuracy and recomputed share per algorithm, and writes the results JSON after every answer.',
  options: {
    model: modelOption('stories260K'),
    data: { type: 'string', required: true, arg: 'file.jsonl', check: existing, help: 'the cases (format: src/eval/dataset.ts)' },
    algorithms: { type: 'algorithms', default: ALL_ALGORITHMS, help: 'the linking algorithms to run, comma-separated' },
    'max-new-tokens': { type: 'integer', default: 32, min: 1, help: 'answer length in tokens' },
    out: { type: 'string', arg: 'results.json', help: 'where to write the results' },
    backend: { type: 'string', default: 'node', choices: ['node', 'browser'], help: 'node: the ContextCache API on Node\'s webgpu; browser: the app\'s worker in headless Chromium' },
    limit: { type: 'integer', min: 1, help: 'run the first N cases only' },
    dtype: { type: 'string', choices: ['f32', 'f16'], help: 'weight storage (default: f32 for small models, f16 above 50M weights)' },
    'kv-dtype': { type: 'string', choices: ['f32', 'f16'], help: 'KV cache storage (node backend; default as the app: f32 for small models, f16 above 50M weights)' },
    tokenizer: { type: 'string', arg: 'file', check: existing, help: 'a tokenizer file for a llama2.c model (node backend)' },
    'no-warmup': { type: 'boolean', help: 'skip the untimed warm-up answer' },
    resume: { type: 'boolean', help: 'continue the stopped run saved in --out' },
  },
} as const;

async function main() {
  const a = parseCommand(EVAL_COMMAND);
  if (a.backend === 'browser' && (a['kv-dtype'] || a.tokenizer)) {
    console.error('--kv-dtype and --tokenizer are options of the node backend only');
    process.exit(2);
  }
  if (a.resume && !a.out) {
    console.error('--resume continues the results file named by --out');
    process.exit(2);
  }
  let resume: EvalResults | undefined;
  if (a.resume && existsSync(a.out!)) {
    try {
      resume = JSON.parse(readFileSync(a.out!, 'utf8')) as EvalResults;
    } catch (e) {
      console.error(`--resume: ${a.out} is not a results file (${e instanceof Error ? e.message : e})`);
      process.exit(2);
    }
  } else if (a.resume) console.error(`--resume: ${a.out} does not exist yet; starting from the first case`);
  const modelPath = resolveModelPath(a.model!);
  const modelSha256 = existsSync(modelPath) ? modelDigest(modelPath) : undefined;
  let cases = readDataset(a.data);
  if (a.limit) cases = cases.slice(0, a.limit);
  const algorithms = a.algorithms;
  const ac = new AbortController();
  let firstSignal = 0;
  process.on('SIGINT', () => {
    // A Ctrl-C reaches npm, the launcher and this process together, so one press can arrive twice.
    const now = Date.now();
    if (!firstSignal) {
      firstSignal = now;
      ac.abort();
      process.stderr.write('\nStopping after the current step (Ctrl-C again in a few seconds to quit at once)…\n');
    } else if (now - firstSignal > 2000) {
      process.exit(130);
    }
  });
  const weightDtype = a.dtype as 'f32' | 'f16' | undefined;
  const backend: EvalBackend = a.backend === 'browser'
    ? await (await import('./browser-backend')).BrowserBackend.open(a.model!, { weightDtype })
    : await NodeBackend.open(a.model!, { weightDtype, kvDtype: a['kv-dtype'] as 'f32' | 'f16' | undefined, tokenizer: a.tokenizer });
  console.error(`[${backend.adapter}] ${backend.model}: ${cases.length} cases from ${a.data}, algorithms ${algorithms.join(', ')}${backend.hasChatTemplate ? ', chat template' : ''}`);
  const bar = new ProgressBar();
  try {
    const res = await runEval({
      backend, cases, data: a.data, algorithms, command: commandLine('eval'), maxNewTokens: a['max-new-tokens'], out: a.out, warmup: !a['no-warmup'], signal: ac.signal,
      modelSha256, resume,
      onBusyHost: (id, cores) => bar.note(`warning: other programs kept ${cores.toFixed(2)} of ${cpus().length} CPUs busy while ${id} was timed; on a CPU adapter its TTFTs are inflated (other_cpu in the results)`),
      onProgress: (p) => bar.update(p.done, p.total, `case ${p.caseIndex + 1}/${p.cases} ${p.caseId} ${p.phase}${p.algorithm ? ` ${p.algorithm}` : ''}`),
    });
    bar.update(res.cases.length, cases.length * res.algorithms.length, ac.signal.aborted ? 'stopped' : 'done');
    bar.done();
    console.log(`[${res.adapter}] ${res.model} on ${res.data} (${res.backend} backend, greedy, max ${res.max_new_tokens} new tokens)${ac.signal.aborted ? ' — stopped early' : ''}`);
    console.log(resultsTable(res.results));
    for (const e of res.errors) console.log(`failed: ${e.id} ${e.algorithm}: ${e.message}`);
    if (a.out) console.log(`results: ${a.out}`);
    process.exitCode = ac.signal.aborted ? 130 : res.errors.length ? 1 : 0;
  } finally {
    await backend.close();
  }
}

main().catch((e) => {
  if (e instanceof ResumeMismatchError) {
    console.error(`${e.message} (run without --resume, or with another --out, to start over)`);
    process.exit(2);
  }
  console.error(e instanceof Error ? (e.stack ?? e.message) : e);
  process.exit(1);
});
