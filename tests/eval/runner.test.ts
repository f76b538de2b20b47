/**
 * The evaluation runner end to end in Node on stories260K: two cases, the
 * ordinary prompt and two linking algorithms, results JSON in the documented schema; a stop signal keeps
 * what was measured; Prompt Cache modules sit at the positions the chunks
 * take in the prompt; Ctrl-C on the command line exits cleanly with the
 * results written so far; a stopped run resumes, keeping its finished cases,
 * and refuses to resume with another model, data or algorithms; each case
 * records the CPU other programs took while it was timed.
 */
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { NodeBackend } from '../../src/eval/node-backend';
import { resumeMismatch, runEval, ResumeMismatchError, type EvalResults, type RunOptions } from '../../src/eval/runner';
import { modelDigest } from '../../src/eval/env';
import { generateMultiDoc } from '../../src/eval/generators/multidoc';
import { toJsonl } from '../../src/eval/dataset';
import { gpuEnv } from '../../scripts/gpu-env.mjs';
import type { EvalBackend } from '../../src/eval/backend';
import type { CpuSample } from '../../src/eval/host-cpu';

const dir = mkdtempSync(join(tmpdir(), 'legokv-eval-'));
const cases = generateMultiDoc({ seed: 3, n: 2, docs: 3 });
const data = join(dir, 'tiny.jsonl');
writeFileSync(data, toJsonl(cases));
let backend: NodeBackend | null = null;
const open = async () => (backend ??= await NodeBackend.open('stories260K'));
after(async () => backend?.close());

test('2 cases × 3 algorithms: results JSON in the documented schema, with the ordinary prompt\'s row', async () => {
  const b = await open();
  const out = join(dir, 'results.json');
  const seen: string[] = [];
  const res = await runEval({
    backend: b, cases, data, algorithms: ['full', 'legolink:16', 'prompt'], maxNewTokens: 6, out, warmup: false,
    onProgress: (p) => seen.push(`${p.phase}:${p.caseId}:${p.algorithm ?? ''}`),
  });
  const j = JSON.parse(readFileSync(out, 'utf8')) as EvalResults;
  assert.deepEqual(j, JSON.parse(JSON.stringify(res, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v))));
  for (const k of ['adapter', 'model', 'data', 'results', 'cases']) assert.ok(k in j, k);
  assert.ok(j.adapter.length > 0 && j.model === 'stories260K.bin' && j.data === data && j.complete && j.cases_planned === 2);
  assert.deepEqual(j.results.map((r) => r.algorithm), ['full', 'legolink:16', 'prompt']);
  assert.deepEqual(j.results[1].params, { k: 16 });
  assert.deepEqual(j.results[2].params, {});
  for (const r of j.results) {
    assert.equal(r.n, 2);
    for (const k of ['accuracy', 'ttft_ms_mean', 'ttft_ms_median', 'recompute_fraction'] as const) assert.equal(typeof r[k], 'number', k);
    assert.ok(r.accuracy >= 0 && r.accuracy <= 1 && r.ttft_ms_mean > 0 && r.recompute_fraction > 0 && r.recompute_fraction <= 1);
  }
  assert.equal(j.results[0].recompute_fraction, 1, 'full recomputes every token');
  assert.ok(j.results[1].recompute_fraction < 0.5);
  assert.equal(j.results[0].agreement_with_full, 1);
  assert.equal(j.results[2].agreement_with_prompt, 1);
  assert.equal(j.results[2].recompute_fraction, 1, 'prompt computes every token');
  for (const c of j.cases.filter((x) => x.algorithm === 'prompt')) {
    const full = j.cases.find((x) => x.id === c.id && x.algorithm === 'full')!;
    const chunks = cases.find((x) => x.id === c.id)!.chunks.length;
    assert.equal(c.prompt_tokens, full.prompt_tokens - (chunks - 1), 'one BOS where full has one per chunk');
    assert.equal(c.breakdown_ms.lookup + c.breakdown_ms.load, 0, 'no cache looked up or loaded');
  }
  assert.equal(j.cases.length, 6);
  for (const c of j.cases) {
    assert.ok(typeof c.prediction === 'string' && c.new_tokens > 0 && c.new_tokens <= 6);
    assert.ok(c.breakdown_ms.recompute > 0 && c.prompt_tokens > 300);
  }
  assert.equal(seen.filter((s) => s.startsWith('compile')).length, 2);
});

test('a stop signal keeps what was measured', async () => {
  const b = await open();
  const out = join(dir, 'stopped.json');
  const ac = new AbortController();
  const res = await runEval({
    backend: b, cases, data, algorithms: ['naive', 'legolink0'], maxNewTokens: 4, out, warmup: false, signal: ac.signal,
    onProgress: (p) => p.done === 1 && ac.abort(),
  });
  assert.equal(res.complete, false);
  const j = JSON.parse(readFileSync(out, 'utf8')) as EvalResults;
  assert.equal(j.cases.length, 1);
  assert.equal(j.complete, false);
  assert.equal(j.results.reduce((n, r) => n + r.n, 0), 1);
});

test('Prompt Cache modules take the positions of their chunks in the prompt', async () => {
  const b = await open();
  const tokens = [[10, 11, 12], [20, 21], [30, 31, 32, 33]];
  const pos = await b.promptCachePositions(cases[0], tokens);
  assert.deepEqual(pos, [[1, 2, 3], [4, 5], [6, 7, 8, 9]], 'after BOS, back to back (stories260K has no chat template)');
});

test('Ctrl-C on npm run eval stops cleanly and keeps the results so far', async () => {
  const out = join(dir, 'cli.json');
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/eval/run.ts', '--model', 'stories260K', '--data', data, '--algorithms', 'naive,full',
    '--max-new-tokens', '4', '--out', out, '--no-warmup'], { cwd: join(import.meta.dirname, '../..'), env: gpuEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  let stdout = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => {
    stderr += d;
    if (/\] 1\/4/.test(stderr) && !child.killed) child.kill('SIGINT');
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  assert.equal(code, 130, stderr);
  assert.match(stderr, /Stopping after the current step/);
  assert.match(stdout, /stopped early/);
  assert.match(stdout, /algorithm\s+n\s+accuracy/);
  const j = JSON.parse(readFileSync(out, 'utf8')) as EvalResults;
  assert.equal(j.complete, false);
  assert.ok(j.cases.length >= 1 && j.cases.length < 4, `${j.cases.length} answers kept`);
});

test('a stopped run resumes: finished cases kept, the partly answered one run again, whole', async () => {
  const b = await open();
  const out = join(dir, 'resumed.json');
  const algorithms = ['naive', 'legolink:1'];
  const ac = new AbortController();
  // Stop after three answers: case 1 finished, case 2 answered by one algorithm only.
  const first = await runEval({
    backend: b, cases, data, algorithms, maxNewTokens: 4, out, warmup: false, signal: ac.signal, modelSha256: 'abc',
    onProgress: (p) => p.done === 3 && p.phase === 'answer' && ac.abort(),
  });
  assert.equal(first.complete, false);
  assert.equal(first.cases.length, 3);
  const saved = JSON.parse(readFileSync(out, 'utf8')) as EvalResults;
  const seen: string[] = [];
  const res = await runEval({
    backend: b, cases, data, algorithms, maxNewTokens: 4, out, warmup: false, modelSha256: 'abc', resume: saved,
    onProgress: (p) => seen.push(`${p.phase}:${p.caseId}:${p.done}/${p.total}`),
  });
  assert.equal(res.complete, true);
  assert.equal(res.cases.length, 4);
  assert.deepEqual(res.cases.slice(0, 2), saved.cases.filter((c) => c.id === cases[0].id), 'case 1 kept as measured');
  assert.deepEqual(res.cases.slice(2).map((c) => c.id), [cases[1].id, cases[1].id]);
  assert.deepEqual(new Set(res.cases.slice(2).map((c) => c.algorithm)), new Set(algorithms));
  assert.ok(!seen.some((s) => s.includes(cases[0].id)), 'case 1 not compiled again');
  assert.equal(seen[0], `compile:${cases[1].id}:2/4`);
  assert.deepEqual(res.resumed, [{ started_at: saved.started_at, finished_at: saved.finished_at, commit: saved.commit, loadavg_start: saved.loadavg_start, loadavg_end: saved.loadavg_end, cpus: saved.cpus, cpu_model: saved.cpu_model }]);
  assert.ok(saved.cpu_model && saved.cpu_model.length > 0, 'the CPU model is recorded');
  assert.ok(res.results.every((r) => r.n === 2));
  const changes: [string, Partial<RunOptions>][] = [
    ['model bytes', { modelSha256: 'abd' }], ['algorithms', { algorithms: ['naive', 'legolink:2'] }],
    ['data', { data: join(dir, 'other.jsonl') }], ['max new tokens', { maxNewTokens: 5 }],
    ['keys and values as f16', { backend: { ...b, kvDtype: 'f16' } as EvalBackend }],
  ];
  assert.equal(res.kv_dtype, 'f32', 'how the engine kept keys and values is recorded');
  // A file from before kv_dtype was recorded ran with f32: it resumes under f32, not under f16.
  const { kv_dtype: _, ...older } = res;
  assert.equal(resumeMismatch(older, { ...older, kv_dtype: 'f32' }), null);
  assert.match(resumeMismatch(older, { ...older, kv_dtype: 'f16' })!, /kept as f32, this run's as f16/);
  for (const [what, o] of changes) {
    await assert.rejects(runEval({ backend: b, cases, data, algorithms, maxNewTokens: 4, warmup: false, modelSha256: 'abc', resume: res, ...o }),
      (e: unknown) => e instanceof ResumeMismatchError, what);
  }
});

test('modelDigest: one changed byte or file name changes it', () => {
  const m = join(dir, 'model');
  mkdirSync(join(m, 'sub'), { recursive: true });
  writeFileSync(join(m, 'config.json'), '{"a":1}');
  writeFileSync(join(m, 'sub', 'w.bin'), new Uint8Array([1, 2, 3]));
  const d0 = modelDigest(m);
  assert.match(d0, /^[0-9a-f]{64}$/);
  assert.equal(modelDigest(m), d0);
  writeFileSync(join(m, 'sub', 'w.bin'), new Uint8Array([1, 2, 4]));
  const d1 = modelDigest(m);
  assert.notEqual(d1, d0);
  writeFileSync(join(m, 'sub', 'w.bin'), new Uint8Array([1, 2, 3]));
  assert.equal(modelDigest(m), d0);
  writeFileSync(join(m, 'config2.json'), '');
  assert.notEqual(modelDigest(m), d0, 'an added file counts');
  assert.notEqual(modelDigest(join(m, 'config.json')), modelDigest(join(m, 'config2.json')));
});

/** A backend with no GPU that takes `ms` of wall time (sleeping, not using CPU) per answer. */
function sleepyBackend(ms: number): EvalBackend {
  const ttft = { lookupMs: 0, loadMs: 0, recomputeMs: ms, firstTokenMs: 0, totalMs: ms, gpuMs: null, overlapMs: null, pipelined: false, recordMs: 0, cacheMs: 0, waitMs: 0, submitMs: 0, submits: 0 };
  return {
    name: 'sleepy', adapter: 'none', model: 'none', hasChatTemplate: false, kvDtype: 'f32',
    prepare: async (c) => ({ case: c, ids: {}, compileMs: 0 }),
    preload: async () => {},
    answer: async () => {
      await new Promise((r) => setTimeout(r, ms));
      return { text: 'x', ttft, wallTtftMs: ms, recomputed: 1, recomputedFraction: 1, promptTokens: 1, newTokens: 1, decodeTokensPerS: 1, cancelled: false };
    },
    release: async () => {},
    close: async () => {},
  };
}

test('each case records the CPU other programs took while it was timed, and a busy host is reported', async () => {
  const one = cases.slice(0, 1);
  // Injected readings, so the test does not depend on how busy this machine is: 2 CPUs, 200 ticks elapsed per
  // case; other programs kept 20 ticks (0.2 cores) busy in the quiet run and 150 (1.5 cores) in the busy one.
  const sampler = (otherTicks: number) => {
    let n = 0;
    return (): CpuSample => {
      const i = n++;
      return { total: i * 200, busy: i * (otherTicks + 40), tree: i * 40, cpus: 2 };
    };
  };
  const flagged: string[] = [];
  const run = (sampleCpu: () => CpuSample) => runEval({ backend: sleepyBackend(5), cases: one, data, algorithms: ['full', 'naive'], maxNewTokens: 1, warmup: false, onBusyHost: (id) => flagged.push(id), sampleCpu });
  const quiet = await run(sampler(20));
  assert.deepEqual(flagged, [], 'a quiet case is not reported');
  const busy = await run(sampler(150));
  for (const r of [quiet, busy]) {
    assert.equal(r.cases.length, 2);
    assert.equal(r.cases[0].other_cpu, r.cases[1].other_cpu, 'one figure per case, on each of its rows');
  }
  assert.equal(quiet.cases[0].other_cpu, 0.2);
  assert.equal(busy.cases[0].other_cpu, 1.5);
  assert.deepEqual(flagged, [one[0].id], 'the busy case is reported');
});
