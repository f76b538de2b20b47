/**
 * Fits, charts and the results page: the power-law fit recovers a known
 * exponent; charts are deterministic SVG; docs/RESULTS.md is built only from
 * the JSON it is given (every figure in it traceable to the input).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { powerLawFit, median, quantile } from '../../src/eval/stats';
import { lineChart } from '../../src/eval/svg';
import { buildResults, busyHostNote, perCaseOtherCpu } from '../../src/eval/report';
import { poissonArrivals } from '../../src/eval/bench-load';
import { aggregate, type CaseResult } from '../../src/eval/runner';
import { Rng } from '../../src/eval/rng';

test('stats: power-law fit, median, quantiles', () => {
  const xs = [1024, 2048, 4096, 8192];
  const f = powerLawFit(xs, xs.map((x) => 3 * x ** 1.5));
  assert.ok(Math.abs(f.exponent - 1.5) < 1e-9 && Math.abs(f.coefficient - 3) < 1e-6 && Math.abs(f.r2 - 1) < 1e-12);
  assert.equal(median([5, 1, 3]), 3);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(quantile([0, 10], 0.95), 9.5);
});

test('Poisson arrivals: seeded, within the window, about rate × duration', () => {
  const a = poissonArrivals(new Rng(1), 2, 500, 4);
  assert.deepEqual(a, poissonArrivals(new Rng(1), 2, 500, 4));
  assert.ok(a.every((x, i) => x.t < 500 && (i === 0 || x.t > a[i - 1].t) && x.user >= 0 && x.user < 4));
  assert.ok(Math.abs(a.length - 1000) < 120, `${a.length} arrivals`);
});

test('aggregate: per-algorithm means, medians and agreement with full', () => {
  const c = (id: string, algorithm: string, score: number, ttft: number, prediction: string): CaseResult => ({
    id, algorithm, metric: 'f1', score, prediction, answers: ['x'], ttft_ms: ttft, ttft_wall_ms: ttft, breakdown_ms: { lookup: 0, load: 1, recompute: ttft - 2, first_token: 1 },
    recomputed: 10, prompt_tokens: 100, recompute_fraction: 0.1, new_tokens: 3, decode_tokens_per_s: 10, compile_ms: 5,
  });
  const r = aggregate(['full', 'naive'], [c('a', 'full', 1, 30, 'red fox'), c('b', 'full', 0, 10, 'blue'), c('a', 'naive', 0.5, 4, 'red'), c('b', 'naive', 0, 2, 'green')]);
  assert.equal(r[0].ttft_ms_mean, 20);
  assert.equal(r[0].ttft_ms_median, 20);
  assert.equal(r[1].accuracy, 0.25);
  assert.equal(r[0].agreement_with_full, 1);
  assert.equal(r[0].agreement_with_prompt, null, 'no prompt, no agreement with it');
  assert.ok(Math.abs(r[1].agreement_with_full! - (2 / 3) / 2) < 1e-12);
  assert.deepEqual(r[1].params, {});
  // per case, side by side: a: 30/4 = 7.5, b: 10/2 = 5 → median 6.25 (the ratio of means would be 20/3)
  assert.equal(r[1].speedup_vs_full_median, 6.25);
  assert.equal(r[0].speedup_vs_full_median, 1);
  assert.equal(aggregate(['naive'], [c('a', 'naive', 1, 4, 'x')])[0].speedup_vs_full_median, null, 'no full, no ratio');
});

test('lineChart: deterministic SVG with every series in the legend', () => {
  const o = { title: 'T <&>', xLabel: 'x', yLabel: 'y', xLog: true, yLog: true, series: [{ name: 'a', points: [[1, 2], [10, 20]] as [number, number][] }, { name: 'b', markersOnly: true, points: [[3, 4]] as [number, number][] }] };
  const svg = lineChart(o);
  assert.equal(svg, lineChart(o));
  assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.match(svg, /T &lt;&amp;&gt;/);
  assert.match(svg, />a<\/text>/);
  assert.match(svg, />b<\/text>/);
  assert.ok(!/NaN|undefined/.test(svg));
});

test('RESULTS.md is built from the JSON files alone', () => {
  const dir = mkdtempSync(join(tmpdir(), 'legokv-results-'));
  const adapter = 'Test Adapter 9000';
  const point = (algorithm: string, n: number, ms: number) => ({
    algorithm, context_tokens: n, chunks: n / 512, prompt_tokens: n + 12, recomputed: algorithm === 'full' ? n + 12 : 7, ttft_ms: ms, samples_ms: [ms],
    breakdown_ms: { lookup: 0, load: 1, recompute: ms - 2, first_token: 1 },
  });
  const points = [point('full', 4096, 40000), point('full', 8192, 160000), point('legolink:16', 4096, 1234), point('legolink:16', 8192, 2345), point('cacheblend:0.15', 4096, 5000)];
  writeFileSync(join(dir, 'scaling.json'), JSON.stringify({
    kind: 'scaling', adapter, model: 'tiny.bin', chunk_tokens: 512, question: 'q', date: '2025-01-02T00:00:00Z', complete: true,
    loadavg_start: 1, loadavg_end: 2, cpus: 2, points, skipped: [{ algorithm: 'cacheblend:0.15', context_tokens: 8192, reason: 'predicted 999 s > 240 s per point' }],
    fits: [{ algorithm: 'full', exponent: 2, coefficient: 1, r2: 1, points: 2 }, { algorithm: 'legolink:16', exponent: 0.93, coefficient: 1, r2: 1, points: 2 }],
  }));
  // A second model's run, with LegoLink only: its own section, chart and targets.
  writeFileSync(join(dir, 'scaling-big.json'), JSON.stringify({
    kind: 'scaling', adapter, model: 'big.gguf', chunk_tokens: 512, question: 'q', date: '2025-01-03T00:00:00Z', complete: true,
    loadavg_start: 1, loadavg_end: 2, cpus: 2, points: [point('legolink:16', 4096, 1000), point('legolink:16', 8192, 2500)], skipped: [],
    fits: [{ algorithm: 'legolink:16', exponent: 1.32, coefficient: 1, r2: 1, points: 2 }],
  }));
  const { markdown, charts } = buildResults(dir, join(dir, '..', 'RESULTS.md'));
  assert.ok(markdown.indexOf('## Context-length scaling (EPIC Figure 9) · tiny.bin') < markdown.indexOf('## Context-length scaling (EPIC Figure 9) · big.gguf'));
  assert.match(markdown, /TTFT\(legolink:16\) at 8192 \/ at 4096 tokens \| 2\.50 \| ≤ 2\.2 \| no \|/);
  assert.match(markdown, /TTFT\(full\) \/ TTFT\(legolink:16\) at 4096 tokens \(8 chunks\) \| not measured \|/);
  assert.match(markdown, /!\[TTFT against context length\]\(.*\/scaling-big\.svg\)/);
  assert.ok(charts['scaling-big.svg'].includes('legolink:16 (N^1.32)'));
  assert.match(markdown, /Test Adapter 9000/);
  assert.match(markdown, /tiny\.bin/);
  assert.match(markdown, /\| legolink:16 \| 1234 \(7\/4108\) \| 2345 \(7\/8204\) \|/);
  assert.match(markdown, /TTFT\(full\) \/ TTFT\(legolink:16\) at 4096 tokens \(8 chunks\) \| 32\.41 \| ≥ 10 \| yes \|/);
  assert.match(markdown, /TTFT\(legolink:16\) at 8192 \/ at 4096 tokens \| 1\.90 \| ≤ 2\.2 \| yes \|/);
  assert.match(markdown, /\| legolink:16 \| 0\.93 \|/);
  // Speed-ups over full beside the rows it skips, where full was measured: tiny.bin's run only.
  assert.match(markdown, /\| legolink:16 \| 32\.4× \(586\.9×\) \| 68\.2× \(1172\.0×\) \|/);
  assert.match(markdown, /\| cacheblend:0\.15 \| 8\.0× \(586\.9×\) \| – \|/);
  assert.equal(markdown.split('TTFT(full) / TTFT(algorithm) at each length').length, 2, 'one table: big.gguf has no full');
  assert.match(markdown, /cacheblend:0\.15 at 8192 tokens: predicted 999 s/);
  assert.ok(charts['scaling.svg'].includes('legolink:16 (N^0.93)'));
  assert.ok(!/NaN|undefined/.test(markdown));
});

test('RESULTS.md: a partial evaluation says how many cases every algorithm answered', () => {
  const dir = mkdtempSync(join(tmpdir(), 'legokv-results-'));
  const c = (id: string, algorithm: string): CaseResult => ({
    id, algorithm, metric: 'f1', score: 1, prediction: 'x', answers: ['x'], ttft_ms: 10, ttft_wall_ms: 10, breakdown_ms: { lookup: 0, load: 1, recompute: 8, first_token: 1 },
    recomputed: 10, prompt_tokens: 100, recompute_fraction: 0.1, new_tokens: 1, decode_tokens_per_s: 10, compile_ms: 5,
  });
  const algorithms = ['full', 'naive'];
  const cases = [c('a', 'full'), c('a', 'naive'), c('b', 'naive')];
  const run = (o: object) => ({
    kind: 'eval', adapter: 'Test Adapter', model: 'm', data: 'd.jsonl', backend: 'node', algorithms, max_new_tokens: 4, started_at: '2025-01-02T00:00:00Z',
    finished_at: '2025-01-02T00:01:00Z', complete: false, loadavg_start: 1, loadavg_end: 1, cpus: 2, results: aggregate(algorithms, cases), cases, errors: [], ...o,
  });
  writeFileSync(join(dir, 'eval-resumable.json'), JSON.stringify(run({ cases_planned: 3, command: 'npm run eval -- --out x.json --resume' })));
  writeFileSync(join(dir, 'eval-old.json'), JSON.stringify(run({})));
  const { markdown } = buildResults(dir, join(dir, '..', 'RESULTS.md'));
  assert.match(markdown, /\*\*partial: 1 of 3 cases \(the same command continues it\)\*\*/);
  assert.match(markdown, /\*\*stopped early\*\*/, 'a file from before cases_planned');
  assert.doesNotMatch(markdown, /resumed on other hosts/);
});

test('RESULTS.md: a file resumed on another CPU says its mean TTFTs mix hosts, and shows the per-case × full', () => {
  const dir = mkdtempSync(join(tmpdir(), 'legokv-results-'));
  const c = (id: string, algorithm: string, ttft: number): CaseResult => ({
    id, algorithm, metric: 'f1', score: 1, prediction: 'x', answers: ['x'], ttft_ms: ttft, ttft_wall_ms: ttft, breakdown_ms: { lookup: 0, load: 1, recompute: ttft - 2, first_token: 1 },
    recomputed: 10, prompt_tokens: 100, recompute_fraction: 0.1, new_tokens: 1, decode_tokens_per_s: 10, compile_ms: 5,
  });
  const algorithms = ['full', 'naive'];
  // case a on a fast host, case b on one twice as slow: naive is 4x full on both
  const cases = [c('a', 'full', 40), c('a', 'naive', 10), c('b', 'full', 80), c('b', 'naive', 20)];
  const host = { loadavg_start: 1, loadavg_end: 1, cpus: 2, commit: 'abc' };
  writeFileSync(join(dir, 'eval-mixed.json'), JSON.stringify({
    kind: 'eval', adapter: 'Test Adapter', model: 'm', data: 'd.jsonl', backend: 'node', algorithms, max_new_tokens: 4, started_at: '2025-01-02T00:00:00Z',
    finished_at: '2025-01-02T00:01:00Z', complete: true, ...host, cpu_model: 'CPU B', results: [], cases, errors: [],
    resumed: [{ ...host, started_at: '2025-01-01T00:00:00Z', finished_at: '2025-01-01T00:01:00Z' }],
  }));
  const { markdown } = buildResults(dir, join(dir, '..', 'RESULTS.md'));
  assert.match(markdown, /resumed on other hosts \(of its 2 runs, 1 with the CPU not recorded, 1 on CPU B\)/);
  assert.match(markdown, /\| naive \| 2 \| 1\.000 \| 1\.000 \| 1\.000 \| 15 \| 15 \| 4\.00 \|/, 'rows recomputed from the cases, × full per case');
});

test('busy-host note: one figure per case, the busy ones counted; nothing for files without it', () => {
  const c = (id: string, algorithm: string, other_cpu?: number | null): CaseResult => ({
    id, algorithm, metric: 'f1', score: 1, prediction: 'x', answers: ['x'], ttft_ms: 10, ttft_wall_ms: 10, breakdown_ms: { lookup: 0, load: 1, recompute: 8, first_token: 1 },
    recomputed: 10, prompt_tokens: 100, recompute_fraction: 0.1, new_tokens: 1, decode_tokens_per_s: 10, compile_ms: 5, ...(other_cpu === undefined ? {} : { other_cpu }),
  });
  const note = (cases: CaseResult[]) => busyHostNote(perCaseOtherCpu({ cases }), 'case', 'x holds');
  assert.equal(note([c('a', 'full'), c('a', 'naive')]), null, 'written before other_cpu');
  assert.equal(note([c('a', 'full', null)]), null, 'not readable on that host');
  assert.equal(note([c('a', 'full', 0.02), c('a', 'naive', 0.02), c('b', 'full', 0.1), c('b', 'naive', 0.1)]),
    "Other programs' CPU while the cases were timed (`other_cpu`): at most 0.10 cores, 0.06 on average over 2 cases: a quiet host.");
  assert.equal(note([c('a', 'full', 0), c('b', 'full', 1), c('c', 'full', 0.9)]),
    "Other programs' CPU while the cases were timed (`other_cpu`): at most 1.00 cores, 0.63 on average over 3 cases; **2 cases were timed on a busy host** (over 0.25 of a core), so on a CPU adapter their TTFTs are inflated, while x holds.");
  assert.match(busyHostNote([0.3, null], 'point')!, /\*\*1 point was timed on a busy host\*\* \(over 0\.25 of a core\), so on a CPU adapter its TTFTs are inflated\.$/);
});

test('RESULTS.md: the peers section comes from peers.json, with the ratios and why a WebGPU row has no figures', () => {
  const dir = mkdtempSync(join(tmpdir(), 'legokv-results-'));
  const fig = (engine: string, adapter: string, prefill: number, decode: number, extra = {}) => ({
    model: 'tiny.gguf', adapter_config: 'swiftshader', engine, adapter, prompt_tokens: 128, prefill_ms: 1, prefill_tokens_per_s: prefill, decode_steps: 23, decode_ms: 1, decode_tokens_per_s: decode, text: ' a b', ...extra,
  });
  writeFileSync(join(dir, 'peers.json'), JSON.stringify({
    command: 'npm run bench:peers', date: '2025-01-04T00:00:00Z', wllama_version: '9.9.9', llama_cpp: 'b1-abc', chromium: '156', commit: 'abc123', prompt_tokens: 128, decode_tokens: 24,
    host: { cpus: 2, cpu_model: 'AMD EPYC 7B13', loadavg_start: [1.5, 1, 1], loadavg_end: [2.5, 1, 1], uptime_start: '', uptime_end: '' },
    adapters: { swiftshader: { core: 'Test Adapter 9000', compatibility: 'Test Adapter 9000', worker_core: 'Test Adapter 9000', worker_compatibility: 'Test Adapter 9000' } },
    rows: [
      fig('legokv', 'Test Adapter 9000', 3, 0.5, { weight_dtype: 'f16' }),
      fig('wllama-wasm', 'none (WebAssembly on the CPU)', 12, 2.5, { threads: 1, ratio_prefill: 0.25, ratio_decode: 0.2, same_text: false, parted_at: { token: 3, legokv_top2_gap: 0.046 } }),
      { model: 'tiny.gguf', adapter_config: 'swiftshader', engine: 'wllama-webgpu', threads: 1, adapter: 'Test Adapter 9000', skipped: 'ggml-webgpu offered llama.cpp no device (adapter has shader-f16: false)' },
    ],
  }));
  const { markdown } = buildResults(dir, join(dir, '..', 'RESULTS.md'));
  assert.match(markdown, /## LegoKV against wllama in the browser/);
  assert.match(markdown, /wllama \*\*9\.9\.9\*\* \(llama\.cpp b1-abc\).*host load 1\.5 → 2\.5 on 2 CPUs/);
  assert.match(markdown, /\| tiny\.gguf \| LegoKV \(its WGSL kernels\) \| Test Adapter 9000 \| 3\.0 \| 0\.5 \| – \| – \| – \|/);
  assert.match(markdown, /\| tiny\.gguf \| wllama, WASM CPU \| none \(WebAssembly on the CPU\) \| 12\.0 \| 2\.5 \| 0\.25 \| 0\.20 \| no \|/);
  assert.match(markdown, /tiny\.gguf: the greedy texts part ways.*stores f16 weights.*token 3, gap 0\.05 \(swiftshader\)/);
  assert.match(markdown, /wllama, WebGPU \(ggml-webgpu\), swiftshader flags \(adapter Test Adapter 9000\), tiny\.gguf: ggml-webgpu offered llama\.cpp no device/);
  assert.match(markdown, /needs `shader-f16`/);
  assert.ok(!/fastest over its slowest/.test(markdown), 'one wllama WASM row per model: no spread');
  assert.match(markdown, /\| swiftshader \| Test Adapter 9000 \| Test Adapter 9000 \|/);
  assert.ok(!/NaN|undefined/.test(markdown));
});

test('RESULTS.md: the two references are explained; a run with prompt shows its row, agreement with it and its chart point', () => {
  const dir = mkdtempSync(join(tmpdir(), 'legokv-results-'));
  const c = (id: string, algorithm: string, prediction: string, ttft: number, load: number): CaseResult => ({
    id, algorithm, metric: 'f1', score: 1, prediction, answers: ['the fox'], ttft_ms: ttft, ttft_wall_ms: ttft, breakdown_ms: { lookup: 0, load, recompute: ttft - load - 1, first_token: 1 },
    recomputed: 10, prompt_tokens: 100, recompute_fraction: 0.1, new_tokens: 1, decode_tokens_per_s: 10, compile_ms: 5,
  });
  const run = (algorithms: string[], cases: CaseResult[]) => JSON.stringify({
    kind: 'eval', adapter: 'Test Adapter', model: 'm', data: 'd.jsonl', backend: 'node', algorithms, max_new_tokens: 4, started_at: '2025-01-02T00:00:00Z',
    finished_at: '2025-01-02T00:01:00Z', complete: true, loadavg_start: 1, loadavg_end: 1, cpus: 2, results: [], cases, errors: [],
  });
  writeFileSync(join(dir, 'eval-new.json'), run(['prompt', 'full', 'naive'], [c('a', 'prompt', 'red fox', 38, 0), c('a', 'full', 'red fox', 40, 0), c('a', 'naive', 'red', 10, 2)]));
  writeFileSync(join(dir, 'eval-old.json'), run(['full', 'naive'], [c('a', 'full', 'red fox', 40, 0), c('a', 'naive', 'red', 10, 2)]));
  const { markdown, charts } = buildResults(dir, join(dir, '..', 'RESULTS.md'));
  assert.match(markdown, /\*\*full\*\* is EPIC's Full Recompute over the linked layout/);
  assert.match(markdown, /\*\*prompt\*\* is the question asked as an ordinary prompt: one BOS/);
  const [newer, older] = [markdown.indexOf('### d.jsonl'), markdown.lastIndexOf('### d.jsonl')].map((i) => markdown.slice(i, markdown.indexOf('![', i)));
  // Answer recall, from the stored predictions: 'red fox' holds the answer 'the fox' (articles dropped), 'red' does not.
  assert.match(newer, /\| algorithm \| n \| accuracy \| answer recall \| agree w\/ full \| agree w\/ prompt \| TTFT mean \(ms\) \|/);
  assert.match(newer, /\| prompt \| 1 \| 1\.000 \| 1\.000 \| 1\.000 \| 1\.000 \| 38 \| 38 \| 1\.05 \| 0\.0 \|/);
  assert.match(newer, /\| naive \| 1 \| 1\.000 \| 0\.000 \| 0\.667 \| 0\.667 \| 10 \|/);
  assert.match(older, /\| algorithm \| n \| accuracy \| answer recall \| agree w\/ full \| TTFT mean \(ms\) \|/, 'a file without prompt: no such column');
  assert.match(charts['eval-new-recall.svg'], /Answer recall vs TTFT/);
  // A summary set (Rouge-L) has no answer to find: no recall column and no recall chart.
  writeFileSync(join(dir, 'eval-sum.json'), run(['full', 'naive'], [c('a', 'full', 'red fox', 40, 0), c('a', 'naive', 'red', 10, 2)].map((x) => ({ ...x, metric: 'rougeL' as const }))));
  const sum = buildResults(dir, join(dir, '..', 'RESULTS.md'));
  assert.equal(sum.charts['eval-sum-recall.svg'], undefined);
  assert.ok(sum.charts['eval-sum.svg']);
  assert.match(sum.markdown, /\| algorithm \| n \| accuracy \| agree w\/ full \| TTFT mean \(ms\) \|/, 'the Rouge-L run: no answer recall column');

  assert.doesNotMatch(older, /\| prompt \|/);
  assert.match(charts['eval-new.svg'], />prompt<\/text>/);
  assert.doesNotMatch(charts['eval-old.svg'], />prompt<\/text>/);
  assert.ok(!/NaN|undefined/.test(markdown));
});

test('RESULTS.md: the engine section shows decode against its GEMVs (repeated and streamed) and llama.cpp beside it, from engine-*.json', () => {
  const dir = mkdtempSync(join(tmpdir(), 'legokv-engine-'));
  const ours = {
    adapter: 'TestAdapter / x', model: 'smollm2-135m-instruct', tokens: 64, tokens_per_s: 12.34, decode_tokens_per_s: 2.5, decode_logits_tokens_per_s: 2.25,
    decode_gflops: 0.75, decode_matmul_alone_gflops: 1.2, decode_matmul_variant: 'reg', decode_ratio_to_matmul: 0.625, ratio_to_matmul: 0.5,
    decode_matmul_streamed_gflops: 0.8, decode_ratio_to_streamed: 0.9375,
  };
  const peer = { adapter: 'llama.cpp 3.21.1 (CPU)', model: 'smollm2-135m-instruct', tokens: 64, tokens_per_s: 456.7, decode_tokens_per_s: 89.1 };
  writeFileSync(join(dir, 'engine-test.json'), JSON.stringify({
    kind: 'engine', command: 'npm run bench:engine -- --lengths 64', date: '2026-11-27T00:00:00Z', commit: 'abc', loadavg_start: 0.5, loadavg_end: 0.7, cpus: 2, cpu_model: 'CPU', results: [ours, peer],
  }));
  const md = buildResults(dir, join(dir, 'RESULTS.md')).markdown;
  assert.match(md, /## Engine throughput on the CPU adapters/);
  assert.match(md, /adapter \*\*TestAdapter \/ x\*\*/);
  assert.match(md, /\| smollm2-135m-instruct \| 64 \| 12\.3 \| 2\.50 \| 2\.25 \| 0\.75 \| 1\.20 \(reg\) \| \*\*63%\*\* \| 0\.80 \| 94% \| 456\.7 \/ 89\.1 \| llama\.cpp 3\.21\.1 \(CPU\) \|/);
  assert.match(md, /engine throughput \(not run by --rerun, a few minutes\): `npm run bench:engine -- --lengths 64`/);
  assert.ok(!/llama\.cpp's Vulkan build/.test(md), 'no same-adapter sentence without a Vulkan row');
});

test('RESULTS.md: on lavapipe the engine section puts llama.cpp\'s Vulkan build beside its CPU build, with LegoKV\'s ratios on the same adapter', () => {
  const dir = mkdtempSync(join(tmpdir(), 'legokv-engine-'));
  const ours = {
    adapter: 'llvmpipe: Mesa 25 / mesa', model: 'gemma-3-270m', tokens: 64, tokens_per_s: 40, decode_tokens_per_s: 6,
    decode_gflops: 3, decode_matmul_alone_gflops: 4, decode_matmul_variant: 'reg', decode_ratio_to_matmul: 0.75, ratio_to_matmul: 0.5,
  };
  const cpu = { adapter: 'llama.cpp (node-llama-cpp 3.21.1, CPU, 1 thread)', model: 'gemma-3-270m', tokens: 64, tokens_per_s: 200, decode_tokens_per_s: 50 };
  const vk = { adapter: 'llama.cpp (node-llama-cpp 3.21.1, Vulkan, every layer on llvmpipe)', model: 'gemma-3-270m', tokens: 64, tokens_per_s: 16, decode_tokens_per_s: 2 };
  writeFileSync(join(dir, 'engine-lavapipe.json'), JSON.stringify({
    kind: 'engine', command: 'LEGOKV_NODE_BACKEND=lavapipe npm run bench:engine -- --lengths 64', date: '2026-11-27T00:00:00Z', loadavg_start: 0.5, loadavg_end: 0.7, cpus: 2, cpu_model: 'CPU', results: [ours, cpu, vk],
  }));
  const md = buildResults(dir, join(dir, 'RESULTS.md')).markdown;
  assert.match(md, /\| 200\.0 \/ 50\.0; 16\.0 \/ 2\.0 \| llama\.cpp \(node-llama-cpp 3\.21\.1, CPU, 1 thread\); llama\.cpp \(node-llama-cpp 3\.21\.1, Vulkan, every layer on llvmpipe\) \|/);
  assert.match(md, /On the same adapter, llama\.cpp's Vulkan build .*: gemma-3-270m, LegoKV's prefill 2\.5× and decode 3\.0× llama\.cpp's\./);
});

test('docs/RESULTS.md, its pages and charts are what npm run results writes from docs/results', () => {
  // Docs show only figures a command regenerates: a change to the report that was not run through it fails here.
  const root = join(import.meta.dirname, '../..');
  const dir = join(root, 'docs/results'), out = join(root, 'docs/RESULTS.md');
  const { markdown, charts, pages } = buildResults(dir, out);
  const stale = 'is stale: run npm run results';
  assert.equal(readFileSync(out, 'utf8'), markdown, `docs/RESULTS.md ${stale}`);
  for (const [name, md] of Object.entries(pages)) assert.equal(readFileSync(join(root, 'docs', name), 'utf8'), md, `docs/${name} ${stale}`);
  for (const [name, svg] of Object.entries(charts)) assert.equal(readFileSync(join(dir, name), 'utf8'), svg, `docs/results/${name} ${stale}`);
});
