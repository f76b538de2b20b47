/**
 * npm run results [-- --rerun] [--dir docs/results] [--out docs/RESULTS.md]
 *
 * Regenerates docs/RESULTS.md and the charts from the JSON the benchmarks
 * and evaluation runs wrote into docs/results/ (scaling.json and
 * scaling-<model>.json, load.json, eval-*.json, sinks-*.json). Every figure in the page comes from those files. With
 * --rerun it first runs the measurements again (RERUN below, a few minutes
 * each on a 2-core CPU adapter).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, relative, dirname } from 'node:path';
import { spawnSync } from 'node:child_process';
import { parseCommand } from '../cli/options';
import type { LoadResults, ScalingPoint, ScalingResults } from './result-files';
import { aggregate, answeredByAll, BUSY_HOST_CORES, hasRecall, type EvalResults } from './runner';
import { accuracyChart, loadChart, scalingChart } from './charts';
import { REPO_ROOT } from './tokenizer';
import { GPU_RUNS_PAGE, gpuRunsPage, gpuSection, hasRunsPage, type GpuRun } from './report-gpu';
import { peersSection } from './report-peers';
import type { PeersResults } from '../bench/peers';
import type { SinkReport } from './sinks';
import { findingsSection, sinksSection } from './report-findings';
import { engineSection, type EngineRun } from './report-engine';
import { mdTable } from './markdown';

export { mdTable } from './markdown';

/** The measurements behind docs/RESULTS.md, as `npm run …` argument lists (run in order by --rerun). */
export const RERUN: { what: string; args: string[] }[] = [
  { what: 'datasets', args: ['run', 'datasets', '--', '--out', 'data', '--seed', '1', '--only', 'multidoc,samsum'] },
  { what: 'small needle set', args: ['run', 'datasets', '--', '--out', 'data', '--seed', '1', '--only', 'needle', '--needle-lengths', '1024,2048', '--needle-depths', '0,0.5,1', '--prefix', 'small-'] },
  { what: 'context-length scaling', args: ['run', 'bench:scaling', '--', '--model', 'stories260K', '--out', 'docs/results/scaling.json'] },
  { what: 'asynchronous load', args: ['run', 'bench:load', '--', '--model', 'stories260K', '--out', 'docs/results/load.json'] },
  { what: 'eval multidoc', args: ['run', 'eval', '--', '--model', 'stories260K', '--data', 'data/multidoc.jsonl', '--limit', '20', '--out', 'docs/results/eval-multidoc-stories260K.json'] },
  { what: 'eval samsum', args: ['run', 'eval', '--', '--model', 'stories260K', '--data', 'data/samsum.jsonl', '--limit', '8', '--out', 'docs/results/eval-samsum-stories260K.json'] },
  { what: 'eval needle', args: ['run', 'eval', '--', '--model', 'stories260K', '--data', 'data/small-needle.jsonl', '--out', 'docs/results/eval-needle-stories260K.json'] },
  // Gemma 3 270M (fetched by `npm start` or `npm run fetch:models`): where per-row work outweighs attention,
  // as in EPIC's models; LegoLink only (compiling 8K tokens of it took 32 min on SwiftShader on a quiet 2-core host).
  { what: 'context-length scaling, Gemma 3 270M', args: ['run', 'bench:scaling', '--', '--model', 'gemma-3-270m', '--lengths', '4096,8192', '--algorithms', 'legolink:16', '--max-point-s', '600', '--budget-s', '2400', '--out', 'docs/results/scaling-gemma-3-270m.json'] },
];

const f0 = (x: number | null | undefined) => (x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(0));
const f1 = (x: number | null | undefined) => (x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(1));
const f2 = (x: number | null | undefined) => (x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(2));
const f3 = (x: number | null | undefined) => (x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(3));
const pct = (x: number | null | undefined) => (x === null || x === undefined || !Number.isFinite(x) ? '–' : `${(x * 100).toFixed(1)}%`);


type Host = { loadavg_start?: number; loadavg_end?: number | null; cpus?: number; cpu_model?: string; commit?: string | null };
const host = (r: Host) =>
  (r.loadavg_start === undefined ? '–' : `${f1(r.loadavg_start)} → ${f1(r.loadavg_end ?? NaN)} on ${r.cpus} CPUs${r.cpu_model ? ` (${r.cpu_model})` : ''}`) + (r.commit ? ` · commit ${r.commit}` : '');

/**
 * The CPUs a (possibly resumed) evaluation ran on, oldest run first, when
 * they differ: its mean TTFTs then mix hosts, and only the per-case ratios
 * against full compare like with like.
 */
export function mixedHosts(r: EvalResults): string | null {
  const models = [...(r.resumed ?? []), r].map((x) => x.cpu_model ?? 'not recorded');
  const distinct = [...new Set(models)];
  const tally = distinct.map((m) => `${models.filter((x) => x === m).length} ${m === 'not recorded' ? 'with the CPU' : 'on'} ${m}`);
  return distinct.length > 1 ? `of its ${models.length} runs, ${tally.join(', ')}` : null;
}

/**
 * What the `other_cpu` figures of a run say of its host (the cores other
 * programs took while each unit, a case, point or rate, was timed): the most,
 * the mean, and how many units ran on a busy host; `holds` says which figures
 * stay valid all the same. Null when no unit recorded it.
 */
export function busyHostNote(figures: (number | null | undefined)[], unit: 'case' | 'point' | 'rate', holds = ''): string | null {
  const v = figures.filter((x): x is number => typeof x === 'number');
  if (!v.length) return null;
  const busy = v.filter((x) => x > BUSY_HOST_CORES).length;
  const head = `Other programs' CPU while the ${unit}s were timed (\`other_cpu\`): at most ${f2(Math.max(...v))} cores, ${f2(v.reduce((a, b) => a + b, 0) / v.length)} on average over ${v.length} ${unit}s`;
  return busy
    ? `${head}; **${busy} ${unit}${busy > 1 ? 's were' : ' was'} timed on a busy host** (over ${BUSY_HOST_CORES} of a core), so on a CPU adapter ${busy > 1 ? 'their' : 'its'} TTFTs are inflated${holds ? `, while ${holds}` : ''}.`
    : `${head}: a quiet host.`;
}

/** One `other_cpu` per case of an evaluation (every row of a case carries the same figure). */
export const perCaseOtherCpu = (r: Pick<EvalResults, 'cases'>) => [...new Map(r.cases.map((c) => [c.id, c.other_cpu])).values()];

function scalingSection(r: ScalingResults, rel: string, chart: string): string {
  const lengths = [...new Set(r.points.map((p) => p.context_tokens))].sort((a, b) => a - b);
  const algs = [...new Set([...r.points.map((p) => p.algorithm), ...r.skipped.map((p) => p.algorithm)])];
  const at = (alg: string, n: number) => r.points.find((p) => p.algorithm === alg && p.context_tokens === n);
  const lines: string[] = [];
  lines.push(`## Context-length scaling (EPIC Figure 9) · ${r.model}`, '');
  lines.push(`\`${r.command ?? 'npm run bench:scaling'}\` · adapter **${r.adapter}** · model **${r.model}** · ${r.chunk_tokens}-token chunks · ${r.date.slice(0, 10)} · host load ${host(r)}${r.complete ? '' : ' · **stopped early**'}`, '');
  lines.push('TTFT in ms (median of the runs; recomputed rows / prompt rows in brackets). Chunks are compiled before timing; `full` recomputes every row.', '');
  lines.push(mdTable(['algorithm', ...lengths.map((n) => `${n} tokens`)], algs.map((alg) => [
    alg, ...lengths.map((n) => {
      const p = at(alg, n);
      if (p) return `${f0(p.ttft_ms)} (${p.recomputed}/${p.prompt_tokens})`;
      return r.skipped.some((s) => s.algorithm === alg && s.context_tokens === n) ? 'skipped' : '–';
    }),
  ])), '');
  const busy = busyHostNote(r.points.map((p) => p.other_cpu), 'point');
  if (busy) lines.push(busy, '');
  const speedups = speedupTable(at, lengths, algs);
  if (speedups) lines.push(speedups, '');
  lines.push('Breakdown of the largest context each algorithm reached (ms):', '');
  lines.push(mdTable(['algorithm', 'context', 'lookup', 'load', 'recompute', 'first token', 'total'], algs.flatMap((alg) => {
    const p = r.points.filter((x) => x.algorithm === alg).at(-1);
    return p ? [[alg, p.context_tokens, f1(p.breakdown_ms.lookup), f1(p.breakdown_ms.load), f0(p.breakdown_ms.recompute), f1(p.breakdown_ms.first_token), f0(p.ttft_ms)]] : [];
  })), '');
  lines.push('Growth exponents, fitted by least squares on log TTFT against log context length (TTFT ≈ c·N^k):', '');
  lines.push(mdTable(['algorithm', 'k', 'R²', 'points', 'range'], r.fits.map((f) => {
    const ps = r.points.filter((p) => p.algorithm === f.algorithm);
    return [f.algorithm, f2(f.exponent), f3(f.r2), f.points, ps.length ? `${ps[0].context_tokens}–${ps.at(-1)!.context_tokens}` : '–'];
  })), '');
  if (r.skipped.length) {
    lines.push('Skipped points:', '');
    for (const s of r.skipped) lines.push(`- ${s.algorithm} at ${s.context_tokens} tokens: ${s.reason}`);
    lines.push('');
  }
  // The issue's targets, computed from the same run.
  const ttft = (alg: string, n: number) => at(alg, n)?.ttft_ms;
  const checks: [string, number | undefined, string, (x: number) => boolean][] = [];
  const l4 = ttft('legolink:16', 4096), l8 = ttft('legolink:16', 8192);
  const full4 = ttft('full', 4096), cb4 = ttft('cacheblend:0.15', 4096);
  checks.push(['TTFT(full) / TTFT(legolink:16) at 4096 tokens (8 chunks)', full4 && l4 ? full4 / l4 : undefined, '≥ 10', (x) => x >= 10]);
  checks.push(['TTFT(cacheblend:0.15) / TTFT(legolink:16) at 4096 tokens', cb4 && l4 ? cb4 / l4 : undefined, '≥ 2.5', (x) => x >= 2.5]);
  checks.push(['TTFT(legolink:16) at 8192 / at 4096 tokens', l8 && l4 ? l8 / l4 : undefined, '≤ 2.2', (x) => x <= 2.2]);
  lines.push("The issue's targets, from this run:", '');
  lines.push(mdTable(['ratio', 'measured', 'target', 'met'], checks.map(([name, v, target, ok]) => [name, v === undefined ? 'not measured' : f2(v), target, v === undefined ? '–' : ok(v) ? 'yes' : 'no'])), '');
  lines.push(`![TTFT against context length](${rel}/${chart})`, '');
  return lines.join('\n');
}

/**
 * Each algorithm's speed-up over full recompute at each length, beside the ratio of rows the two recompute: where
 * the first tracks the second, the time goes where the work is, and skipping rows pays in full. Null without full.
 */
function speedupTable(at: (alg: string, n: number) => ScalingPoint | undefined, lengths: number[], algs: string[]): string | null {
  const measured = lengths.filter((n) => at('full', n));
  const others = algs.filter((a) => a !== 'full' && measured.some((n) => at(a, n)));
  if (!measured.length || !others.length) return null;
  return ['TTFT(full) / TTFT(algorithm) at each length, and in brackets full\'s recomputed rows over the algorithm\'s (the work the algorithm skips):', '', mdTable(['algorithm', ...measured.map((n) => `${n} tokens`)], others.map((alg) => [
    alg, ...measured.map((n) => {
      const f = at('full', n)!, p = at(alg, n);
      return p ? `${f1(f.ttft_ms / p.ttft_ms)}× (${f1(f.recomputed / Math.max(1, p.recomputed))}×)` : '–';
    }),
  ]))].join('\n');
}

function loadSection(r: LoadResults, rel: string): string {
  const lines: string[] = [];
  lines.push('## Asynchronous load (EPIC Figure 8)', '');
  lines.push(`\`${r.command ?? 'npm run bench:load'}\` · adapter **${r.adapter}** · model **${r.model}** · ${r.users} users, each with its own ${r.context_tokens}-token documents in ${r.chunk_tokens}-token chunks · Poisson arrivals for ${r.duration_s} s per rate · at most ${r.max_busy_s} s of engine time per rate · ${r.max_new_tokens} new tokens per request · ${r.date.slice(0, 10)} · host load ${host(r)}${r.complete ? '' : ' · **stopped early**'}`, '');
  lines.push('One FIFO queue in front of the one engine, one request at a time to its last token. TTFT counts the time queued; throughput is served requests (and generated tokens) per second of the span from the first arrival to the last completion. Requests still queued when the engine-time limit is reached are counted as unserved.', '');
  const busy = busyHostNote(r.points.map((p) => p.other_cpu), 'rate');
  if (busy) lines.push(busy, '');
  lines.push(mdTable(['algorithm', 'rate (req/s)', 'arrived', 'served', 'TTFT mean ± sd (ms)', 'TTFT p95', 'queueing mean', 'link mean', 'req/s', 'tokens/s'], r.points.map((p) => [
    p.algorithm, p.rate, p.arrivals, p.served, `${f0(p.ttft_ms_mean)} ± ${f0(p.ttft_ms_std)}`, f0(p.ttft_ms_p95), f0(p.queue_ms_mean), f0(p.service_ttft_ms_mean), f2(p.throughput_rps), f1(p.throughput_tokens_per_s),
  ])), '');
  const algs = [...new Set(r.points.map((p) => p.algorithm))];
  if (algs.includes('legolink:16') && algs.includes('cacheblend:0.15')) {
    const rates = [...new Set(r.points.map((p) => p.rate))];
    const rows = rates.flatMap((rate) => {
      const l = r.points.find((p) => p.algorithm === 'legolink:16' && p.rate === rate);
      const c = r.points.find((p) => p.algorithm === 'cacheblend:0.15' && p.rate === rate);
      return l && c ? [[rate, f2(c.ttft_ms_mean / l.ttft_ms_mean), f2(l.throughput_rps / c.throughput_rps)]] : [];
    });
    lines.push('legolink:16 against cacheblend:0.15 at each rate:', '');
    lines.push(mdTable(['rate (req/s)', 'TTFT(cacheblend) / TTFT(legolink)', 'throughput(legolink) / throughput(cacheblend)'], rows), '');
  }
  lines.push(`![TTFT and throughput against request rate](${rel}/load.svg)`, '');
  return lines.join('\n');
}

/** How far a stopped evaluation got; with --resume the same command continues it. */
function partial(r: EvalResults): string {
  if (r.cases_planned == null) return 'stopped early';
  const done = answeredByAll(r.algorithms, r.cases).size;
  return `partial: ${done} of ${r.cases_planned} cases${r.command?.includes('--resume') ? ' (the same command continues it)' : ''}`;
}

function evalSection(runs: { r: EvalResults; file: string }[], rel: string): string {
  const lines: string[] = [];
  lines.push('## Accuracy against TTFT (EPIC Figure 6)', '');
  lines.push('`npm run eval` on the generated datasets (EPIC\'s synchronous workload: each case\'s chunks compiled before its requests are timed; greedy decoding). Accuracy is LongBench-style F1 or Rouge-L F in [0, 1]; *answer recall* (QA sets) is the share of the reference answer\'s words that the reply contains, whether or not it says more: an instruction model that replies in a whole sentence ("The best day to visit Biobe is Wednesday.") scores recall 1 but F1 0.2 for every algorithm alike, so recall says how often the answer was found; *agree w/ full* is the F1 between each algorithm\'s answer and full recompute\'s answer on the same case, which shows how faithfully linking reproduces full attention whether or not the model knows the answer. TTFT is the API\'s breakdown total (lookup + load + recompute + first-token logits).', '');
  lines.push('Two references run beside the linking algorithms. **full** is EPIC\'s Full Recompute over the linked layout: every token of the linked prompt is computed again, and each chunk keeps the BOS it was compiled with (as in EPIC Fig. 4), so it shows what linking loses against full attention over the same tokens. **prompt** is the question asked as an ordinary prompt: one BOS, then the chunks\' own tokens and the question, nothing cached and every token computed, so it shows what the model answers without LegoKV; its TTFT is all compute (no lookup or load). *agree w/ prompt* is the F1 against prompt\'s answer, as *agree w/ full* is against full\'s; runs made before `prompt` existed have no prompt row.', '');
  if (runs.some(({ r }) => /stories/i.test(r.model))) {
    lines.push('stories260K is a 260K-parameter model trained on children\'s stories with a 512-token context: it cannot answer questions about documents, so its accuracy measures little, and the agreement column is the informative one for it.', '');
  }
  for (const { r, file } of runs) {
    const name = file.replace(/^eval-/, '').replace(/\.json$/, '');
    lines.push(`### ${r.data.replace(/^.*\//, '')} · ${r.model}`, '');
    lines.push(`\`${r.command ?? `npm run eval -- --model ${r.model} --data ${r.data}`}\` · adapter **${r.adapter}** · model **${r.model}** · ${r.backend} backend · max ${r.max_new_tokens} new tokens · KV ${r.kv_dtype ?? 'f32'} · ${r.started_at.slice(0, 10)} · host load ${host(r)}${r.complete ? '' : ` · **${partial(r)}**`}`, '');
    const mixed = mixedHosts(r);
    const busy = busyHostNote(perCaseOtherCpu(r), 'case', '*× full*, measured side by side within each case, holds');
    if (busy) lines.push(busy, '');
    if (mixed) lines.push(`This file was resumed on other hosts (${mixed}): its mean and median TTFTs mix them; *× full* (the median over cases of full's TTFT over the algorithm's, both measured on the same case in the same run) compares like with like.`, '');
    const withPrompt = r.algorithms.includes('prompt');
    const withRecall = hasRecall(r);
    lines.push(mdTable(['algorithm', 'n', 'accuracy', ...(withRecall ? ['answer recall'] : []), 'agree w/ full', ...(withPrompt ? ['agree w/ prompt'] : []), 'TTFT mean (ms)', 'TTFT median', '× full', 'load', 'recompute', 'first token', 'recomputed', 'prompt tokens'], r.results.map((x) => [
      x.algorithm, x.n, f3(x.accuracy), ...(withRecall ? [f3(x.answer_recall)] : []), f3(x.agreement_with_full), ...(withPrompt ? [f3(x.agreement_with_prompt)] : []), f0(x.ttft_ms_mean), f0(x.ttft_ms_median), f2(x.speedup_vs_full_median), f1(x.breakdown_ms_mean.load),
      f0(x.breakdown_ms_mean.recompute), f1(x.breakdown_ms_mean.first_token), pct(x.recompute_fraction), f0(x.prompt_tokens_mean),
    ])), '');
    if (r.errors?.length) lines.push(`${r.errors.length} requests failed and are left out: ${[...new Set(r.errors.map((e) => e.message))].slice(0, 3).join('; ')}`, '');
    lines.push(`![accuracy against TTFT](${rel}/eval-${name}.svg)${withRecall ? ` ![answer recall against TTFT](${rel}/eval-${name}-recall.svg)` : ''} ![agreement with full recompute against TTFT](${rel}/eval-${name}-agreement.svg)`, '');
  }
  return lines.join('\n');
}

/** RESULTS.md's markdown, its charts (written into `dir`), and the pages written beside it (GPU_RUNS_PAGE). */
export function buildResults(dir: string, outPath: string): { markdown: string; charts: Record<string, string>; pages: Record<string, string> } {
  const rel = relative(dirname(outPath), dir) || '.';
  const read = <T>(f: string) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as T;
  const files = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.json')).sort((a, b) => a.localeCompare(b, 'en', { numeric: true })) : [];
  const charts: Record<string, string> = {};
  const parts: string[] = [];
  const adapters = new Set<string>(), models = new Set<string>();
  // scaling.json (the bundled default's run) first, then scaling-<model>.json runs.
  const scalings = files.filter((f) => /^scaling(-.+)?\.json$/.test(f)).sort((a, b) => a.length - b.length || a.localeCompare(b))
    .map((file) => ({ file, r: read<ScalingResults>(file) }));
  const load = files.includes('load.json') ? read<LoadResults>('load.json') : null;
  // Per-algorithm results are derived from the cases again, so a file written before a column existed has it too.
  const evals = files.filter((f) => f.startsWith('eval-')).map((file) => {
    const r = read<EvalResults>(file);
    return { file, r: { ...r, results: aggregate(r.algorithms, r.cases) } };
  });
  for (const x of [...scalings.map((e) => e.r), load, ...evals.map((e) => e.r)]) if (x) {
    adapters.add(x.adapter);
    models.add(x.model);
  }
  parts.push('# Results', '');
  parts.push('<!-- Generated by `npm run results` from docs/results/*.json; do not edit by hand. -->', '');
  parts.push(`Measured on ${[...adapters].map((a) => `**${a}**`).join(', ') || 'no adapter yet'} with ${[...models].map((m) => `**${m}**`).join(', ') || 'no model yet'}. Every figure below is read from the JSON files in \`docs/results/\`, which the commands named in each section write; \`npm run results\` rebuilds this page and its charts from them, and \`npm run results -- --rerun\` runs the measurements again first. Timings on a CPU adapter (SwiftShader, llvmpipe) on a shared machine are noisy: each section records the host's load average, and each evaluation the CPU that other programs took while its cases were timed.`, '');
  for (const { file, r } of scalings) {
    const chart = file.replace(/\.json$/, '.svg');
    charts[chart] = scalingChart(r);
    parts.push(scalingSection(r, rel, chart));
  }
  if (load) {
    charts['load.svg'] = loadChart(load);
    parts.push(loadSection(load, rel));
  }
  if (evals.length) {
    for (const { file, r } of evals) {
      const name = file.replace(/^eval-/, '').replace(/\.json$/, '');
      charts[`eval-${name}.svg`] = accuracyChart(r, 'accuracy');
      charts[`eval-${name}-agreement.svg`] = accuracyChart(r, 'agreement_with_full');
      if (hasRecall(r)) charts[`eval-${name}-recall.svg`] = accuracyChart(r, 'answer_recall');
    }
    parts.push(evalSection(evals, rel));
  }
  const sinks = files.filter((f) => /^sinks-.+\.json$/.test(f)).map((file) => ({ file, r: read<SinkReport>(file) }));
  if (evals.length) parts.push(findingsSection(evals, sinks));
  if (sinks.length) parts.push(sinksSection(sinks));
  const engines = files.filter((f) => /^engine-.+\.json$/.test(f)).map((file) => ({ file, r: read<EngineRun>(file) }));
  if (engines.length) parts.push(engineSection(engines));
  const gpus = files.filter((f) => /^gpu-.+\.json$/.test(f)).map((file) => ({ file, r: read<GpuRun>(file) }));
  const pages: Record<string, string> = {};
  if (gpus.length) {
    parts.push(gpuSection(gpus));
    if (hasRunsPage(gpus)) pages[GPU_RUNS_PAGE] = gpuRunsPage(gpus);
  }
  const peers = files.includes('peers.json') ? read<PeersResults>('peers.json') : null;
  if (peers) parts.push(peersSection(peers));
  parts.push('## Reproducing', '');
  parts.push('`npm run results -- --rerun` runs, in order:', '');
  for (const step of RERUN) parts.push(`- ${step.what}: \`npm ${step.args.join(' ')}\``);
  parts.push('');
  if (gpus.length) parts.push('- on a lent GPU machine: `npm run gpu:kit` here, then `bash scripts/gpu-check.sh --budget-s 330` there (scripts/gpu/README.md), and `npm run gpu:collect -- <its output folder> docs/results/gpu-<name>.json` here', '');
  for (const { r } of engines) parts.push(`- engine throughput (not run by --rerun, a few minutes): \`${r.command}\``, '');
  if (peers) parts.push(`- LegoKV against wllama (not run by --rerun, about 5 minutes): \`${peers.command}\``, '');
  if (!scalings.length && !load && !evals.length) parts.push(`No results in ${dir} yet: run \`npm run results -- --rerun\`.`, '');
  return { markdown: parts.join('\n').replace(/\n{3,}/g, '\n\n'), charts, pages };
}

function main() {
  const a = parseCommand({
    command: 'npm run results',
    summary: 'Builds docs/RESULTS.md and its charts from the JSON files in docs/results (with --rerun, runs the measurements first).',
    options: {
      rerun: { type: 'boolean', help: 'run the measurements that write the JSON files first' },
      dir: { type: 'string', default: join(REPO_ROOT, 'docs/results'), arg: 'folder', help: 'where the JSON files are, and the charts go' },
      out: { type: 'string', default: join(REPO_ROOT, 'docs/RESULTS.md'), arg: 'file.md', help: 'the page to write' },
    },
  });
  if (a.rerun) {
    for (const step of RERUN) {
      console.log(`[results] ${step.what}: npm ${step.args.join(' ')}`);
      const r = spawnSync('npm', step.args, { cwd: REPO_ROOT, stdio: 'inherit' });
      if (r.status !== 0) {
        console.error(`[results] ${step.what} failed (exit ${r.status}); the page is rebuilt from what is there`);
        break;
      }
    }
  }
  mkdirSync(a.dir, { recursive: true });
  const { markdown, charts, pages } = buildResults(a.dir, a.out);
  for (const [name, svg] of Object.entries(charts)) writeFileSync(join(a.dir, name), svg);
  for (const [name, md] of Object.entries(pages)) writeFileSync(join(dirname(a.out), name), md);
  writeFileSync(a.out, markdown);
  console.log(`${[a.out, ...Object.keys(pages).map((p) => join(dirname(a.out), p))].map((p) => relative(process.cwd(), p)).join(', ')} and ${Object.keys(charts).length} charts written from ${relative(process.cwd(), a.dir) || '.'}/*.json`);
}

if (import.meta.url === `file://${process.argv[1]}`) main();
