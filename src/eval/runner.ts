/**
 * The evaluation runner: EPIC's synchronous workload. For every case its
 * chunks are compiled first (every compile variant the algorithms need), then
 * put in the store's fastest tier, and only then is each algorithm timed,
 * one request at a time, greedy. Results are aggregated per algorithm and
 * written after every answer, so a stopped run keeps what it measured, and a
 * later run can resume it (`resume`): cases already answered by every
 * algorithm are kept, the rest are run, provided nothing that shapes the
 * numbers changed (model bytes, data, algorithms, backend, adapter).
 */
import { renameSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { runHost } from './env';
import { otherCores, sampleCpu, type CpuSample } from './host-cpu';
import { parseAlgorithm, formatAlgorithm } from '../kvlink/algorithms';
import type { EvalCase } from './dataset';
import { variantFor, type EvalBackend, type VariantName } from './backend';
import { qaF1, recallScore, score } from './metrics';
import { predictionForScoring } from './prompt';
import { mean, median } from './stats';

export interface CaseResult {
  id: string;
  algorithm: string;
  metric: EvalCase['metric'];
  score: number;
  prediction: string;
  answers: string[];
  ttft_ms: number;
  ttft_wall_ms: number;
  breakdown_ms: { lookup: number; load: number; recompute: number; first_token: number };
  recomputed: number;
  prompt_tokens: number;
  recompute_fraction: number;
  new_tokens: number;
  decode_tokens_per_s: number;
  compile_ms: number;
  /**
   * Cores that programs outside this run kept busy, on average, while the
   * case's answers were timed (src/eval/host-cpu.ts): about 0 on a quiet
   * host; on a CPU adapter anything near 1 inflates every TTFT. Null where
   * it cannot be read (not Linux); absent in files written before it was.
   */
  other_cpu?: number | null;
  meta?: Record<string, unknown>;
}

/** Other programs' CPU (cores) above which a case's TTFTs count as measured on a busy host. */
export const BUSY_HOST_CORES = 0.25;

export interface AlgorithmResult {
  algorithm: string;
  params: Record<string, unknown>;
  n: number;
  accuracy: number;
  /**
   * Mean answer recall (metrics.ts: the share of the reference answer's tokens the reply contains), derived from
   * the stored predictions, so files written before it existed have it too. Null where the cases are summaries.
   */
  answer_recall?: number | null;
  ttft_ms_mean: number;
  ttft_ms_median: number;
  recompute_fraction: number;
  breakdown_ms_mean: CaseResult['breakdown_ms'];
  prompt_tokens_mean: number;
  /**
   * Mean F1 (token overlap, as above) between this algorithm's answer and
   * full recompute's on the same case: how closely linking reproduces full
   * attention's output, whether or not the model answers correctly. Null
   * without full in the run.
   */
  agreement_with_full: number | null;
  /**
   * The same F1 against the answer to the ordinary prompt (`prompt`: one BOS, nothing cached): how close an
   * algorithm comes to what the model says without LegoKV. Null without prompt in the run; absent in files
   * written before it existed.
   */
  agreement_with_prompt?: number | null;
  /**
   * Median over cases of full's TTFT divided by this algorithm's, both from
   * the same case: a ratio measured side by side, so it holds even when a
   * resumed run finished its cases on different hosts. Null without full.
   */
  speedup_vs_full_median: number | null;
}

export interface EvalResults {
  kind: 'eval';
  /** The command line that produced the file, when run from it. */
  command?: string;
  adapter: string;
  model: string;
  data: string;
  backend: string;
  /** SHA-256 of the model's files (env.ts `modelDigest`), when the caller gave it. */
  model_sha256?: string;
  algorithms: string[];
  max_new_tokens: number;
  /** How the engine kept keys and values; absent in files written before it was recorded, which all ran with f32. */
  kv_dtype?: 'f32' | 'f16';
  started_at: string;
  finished_at: string | null;
  /** False when the run was stopped (Ctrl-C) or is still going. */
  complete: boolean;
  /** How many cases the run was asked for (`cases` holds one entry per case and algorithm answered). */
  cases_planned?: number;
  /** The source revision, the host's 1-minute load average when the run started and ended, and its CPU count. */
  commit?: string | null;
  loadavg_start: number;
  loadavg_end: number | null;
  cpus: number;
  /** The CPU's model name (absent in files written before it was recorded). */
  cpu_model?: string;
  results: AlgorithmResult[];
  cases: CaseResult[];
  /** Requests that failed (e.g. a context too large for the device); the run goes on without them. */
  errors: { id: string; algorithm: string; message: string }[];
  /** Earlier runs this one resumed, oldest first; the fields above describe the last run. */
  resumed?: RunRecord[];
}

/** When and where one run of a resumed evaluation measured. */
export type RunRecord = Pick<EvalResults, 'started_at' | 'finished_at' | 'commit' | 'loadavg_start' | 'loadavg_end' | 'cpus' | 'cpu_model'>;

export interface Progress {
  phase: 'compile' | 'warmup' | 'answer';
  caseIndex: number;
  cases: number;
  done: number;
  total: number;
  caseId: string;
  algorithm?: string;
}

export interface RunOptions {
  backend: EvalBackend;
  cases: EvalCase[];
  data: string;
  algorithms: string[];
  maxNewTokens: number;
  out?: string;
  /** Untimed run of every algorithm on the first case, so no pipeline is built inside a timed request. */
  warmup?: boolean;
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
  /** Called after a case whose answers were timed while other programs kept more than BUSY_HOST_CORES busy. */
  onBusyHost?: (caseId: string, otherCpu: number) => void;
  /** Reads the machine's CPU counters (default: /proc, see host-cpu.ts); tests give their own readings. */
  sampleCpu?: () => CpuSample | null;
  command?: string;
  modelSha256?: string;
  /** An earlier, stopped run of the same evaluation to continue (see `resumeMismatch`). */
  resume?: EvalResults;
}

export function algorithmParams(spec: string): Record<string, unknown> {
  const { kind, ...params } = parseAlgorithm(spec) as { kind: string } & Record<string, unknown>;
  void kind;
  return params;
}

/** A case's answer recall, from its stored prediction scored as its metric scores it; null for summaries. */
export function caseRecall(c: CaseResult): number | null {
  return recallScore(c.metric, predictionForScoring(c.prediction, c.metric), c.answers);
}

/** Whether a run's cases are QA cases (scored by F1), so their answer recall means something. */
export function hasRecall(r: Pick<EvalResults, 'cases'>): boolean {
  return r.cases.some((c) => caseRecall(c) !== null);
}

export function aggregate(algorithms: string[], cases: CaseResult[]): AlgorithmResult[] {
  const fulls = cases.filter((c) => c.algorithm === 'full');
  const answersOf = (algorithm: string) => new Map(cases.filter((c) => c.algorithm === algorithm).map((c) => [c.id, c.prediction]));
  const full = answersOf('full');
  const prompt = answersOf('prompt');
  const fullTtft = new Map(fulls.map((c) => [c.id, c.ttft_ms]));
  /** Mean F1 of the answers against a reference's answers to the same cases, null where it answered none of them. */
  const agreement = (rs: CaseResult[], ref: Map<string, string>) => {
    const f1 = rs.filter((r) => ref.has(r.id)).map((r) => qaF1(r.prediction, ref.get(r.id)!));
    return f1.length ? mean(f1) : null;
  };
  const recallOf = (rs: CaseResult[]) => {
    const xs = rs.map(caseRecall).filter((x): x is number => x !== null);
    return xs.length ? mean(xs) : null;
  };
  return algorithms.map((algorithm) => {
    const rs = cases.filter((c) => c.algorithm === algorithm);
    const speedups = rs.filter((r) => fullTtft.has(r.id) && r.ttft_ms > 0).map((r) => fullTtft.get(r.id)! / r.ttft_ms);
    const b = (k: keyof CaseResult['breakdown_ms']) => mean(rs.map((r) => r.breakdown_ms[k]));
    return {
      algorithm, params: algorithmParams(algorithm), n: rs.length,
      accuracy: mean(rs.map((r) => r.score)),
      answer_recall: recallOf(rs),
      ttft_ms_mean: mean(rs.map((r) => r.ttft_ms)),
      ttft_ms_median: median(rs.map((r) => r.ttft_ms)),
      recompute_fraction: mean(rs.map((r) => r.recompute_fraction)),
      breakdown_ms_mean: { lookup: b('lookup'), load: b('load'), recompute: b('recompute'), first_token: b('first_token') },
      prompt_tokens_mean: mean(rs.map((r) => r.prompt_tokens)),
      agreement_with_full: agreement(rs, full),
      agreement_with_prompt: agreement(rs, prompt),
      speedup_vs_full_median: speedups.length ? median(speedups) : null,
    };
  });
}

/** Writes JSON atomically (temporary file, then rename), so a reader never sees half a file. */
export function writeJsonAtomic(path: string, value: unknown) {
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, JSON.stringify(value, (_k, v) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 1) + '\n');
  renameSync(tmp, path);
}

export class ResumeMismatchError extends Error {}

/** Ids of the cases that every algorithm answered: a run's finished cases. */
export function answeredByAll(algorithms: readonly string[], cases: readonly CaseResult[]): Set<string> {
  const by = new Map<string, Set<string>>();
  for (const c of cases) by.set(c.id, (by.get(c.id) ?? new Set()).add(c.algorithm));
  return new Set([...by].filter(([, seen]) => algorithms.every((a) => seen.has(a))).map(([id]) => id));
}

/** Why `prev` cannot be resumed by a run with these settings, or null when it can. */
export function resumeMismatch(prev: EvalResults, next: Pick<EvalResults, 'adapter' | 'model' | 'model_sha256' | 'data' | 'backend' | 'algorithms' | 'max_new_tokens' | 'kv_dtype'>): string | null {
  if (prev.kind !== 'eval') return 'it is not an evaluation results file';
  if ((prev.kv_dtype ?? 'f32') !== (next.kv_dtype ?? 'f32')) return `its keys and values were kept as ${prev.kv_dtype ?? 'f32'}, this run's as ${next.kv_dtype ?? 'f32'} (--kv-dtype)`;
  for (const k of ['model_sha256', 'model', 'data', 'backend', 'adapter', 'max_new_tokens'] as const) {
    if (prev[k] !== next[k]) return `its ${k} is ${JSON.stringify(prev[k] ?? null)}, this run's is ${JSON.stringify(next[k] ?? null)}`;
  }
  if (prev.algorithms.join(',') !== next.algorithms.join(',')) return `its algorithms are ${prev.algorithms.join(',')}, this run's are ${next.algorithms.join(',')}`;
  return null;
}

export async function runEval(o: RunOptions): Promise<EvalResults> {
  const algorithms = o.algorithms.map((a) => formatAlgorithm(parseAlgorithm(a)));
  const variants = new Set<VariantName>(algorithms.map(variantFor));
  const res: EvalResults = {
    kind: 'eval', ...(o.command ? { command: o.command } : {}), adapter: o.backend.adapter, model: o.backend.model, data: o.data, backend: o.backend.name,
    ...(o.modelSha256 ? { model_sha256: o.modelSha256 } : {}), algorithms,
    max_new_tokens: o.maxNewTokens, kv_dtype: o.backend.kvDtype, started_at: new Date().toISOString(), finished_at: null, complete: false, cases_planned: o.cases.length,
    ...runHost(), loadavg_end: null, results: aggregate(algorithms, []), cases: [], errors: [],
  };
  let finished = new Set<string>();
  if (o.resume) {
    const why = resumeMismatch(o.resume, res);
    if (why) throw new ResumeMismatchError(`cannot resume ${o.out ?? 'the earlier run'}: ${why}`);
    // Kept: this run's cases that every algorithm answered; a partly answered one runs again, whole.
    const answered = answeredByAll(algorithms, o.resume.cases);
    finished = new Set(o.cases.map((c) => c.id).filter((id) => answered.has(id)));
    res.cases = o.resume.cases.filter((r) => finished.has(r.id));
    const { started_at, finished_at, commit, loadavg_start, loadavg_end, cpus, cpu_model } = o.resume;
    res.resumed = [...(o.resume.resumed ?? []), { started_at, finished_at, commit, loadavg_start, loadavg_end, cpus, cpu_model }];
  }
  const save = () => {
    res.results = aggregate(algorithms, res.cases);
    if (o.out) writeJsonAtomic(o.out, res);
  };
  save();
  const total = o.cases.length * algorithms.length;
  let done = finished.size * algorithms.length;
  const stopped = () => !!o.signal?.aborted;
  let warm = o.warmup === false;
  for (const [index, c] of o.cases.entries()) {
    if (finished.has(c.id)) continue;
    if (stopped()) break;
    const progress = (phase: Progress['phase'], algorithm?: string) =>
      o.onProgress?.({ phase, caseIndex: index, cases: o.cases.length, done, total, caseId: c.id, algorithm });
    progress('compile');
    let p;
    try {
      p = await o.backend.prepare(c, variants);
    } catch (e) {
      for (const a of algorithms) res.errors.push({ id: c.id, algorithm: a, message: `compile: ${e instanceof Error ? e.message : String(e)}` });
      done += algorithms.length;
      save();
      continue;
    }
    try {
      if (!warm) {
        warm = true;
        for (const a of algorithms) {
          if (stopped()) break;
          progress('warmup', a);
          await o.backend.answer(p, a, 2, o.signal);
        }
      }
      await o.backend.preload(p);
      // Start each case with a different algorithm, so no algorithm always pays for going first.
      const order = algorithms.map((_, i) => algorithms[(i + index) % algorithms.length]);
      const rows: CaseResult[] = [];
      const cpu0 = (o.sampleCpu ?? sampleCpu)();
      for (const a of order) {
        if (stopped()) break;
        progress('answer', a);
        let r;
        try {
          r = await o.backend.answer(p, a, o.maxNewTokens, o.signal);
        } catch (e) {
          res.errors.push({ id: c.id, algorithm: a, message: e instanceof Error ? e.message : String(e) });
          done++;
          save();
          continue;
        }
        if (r.cancelled) break;
        const prediction = predictionForScoring(r.text, c.metric);
        const row: CaseResult = {
          id: c.id, algorithm: a, metric: c.metric, score: score(c.metric, prediction, c.answers), prediction: r.text, answers: c.answers,
          ttft_ms: r.ttft.totalMs, ttft_wall_ms: r.wallTtftMs,
          breakdown_ms: { lookup: r.ttft.lookupMs, load: r.ttft.loadMs, recompute: r.ttft.recomputeMs, first_token: r.ttft.firstTokenMs },
          recomputed: r.recomputed, prompt_tokens: r.promptTokens, recompute_fraction: r.recomputedFraction,
          new_tokens: r.newTokens, decode_tokens_per_s: r.decodeTokensPerS, compile_ms: p.compileMs, meta: c.meta,
        };
        rows.push(row);
        res.cases.push(row);
        done++;
        save();
      }
      // One figure for the case, over all its timed answers, on each of its rows.
      const other = otherCores(cpu0, (o.sampleCpu ?? sampleCpu)());
      for (const row of rows) row.other_cpu = other;
      if (rows.length) save();
      if (other !== null && other > BUSY_HOST_CORES) o.onBusyHost?.(c.id, other);
    } finally {
      await o.backend.release(p);
    }
  }
  res.complete = !stopped() && done === total && res.errors.length === 0;
  res.finished_at = new Date().toISOString();
  res.loadavg_end = loadavg()[0];
  save();
  return res;
}
