/** The GPU kit's parity runs: test files in one `node --test` process, and what it reported. */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

/**
 * Where this names a file, each parity comparison (tests/helpers/gpu.ts's assertClose) appends one BoundRecord to it
 * as a line of JSON: so a run on a real GPU measures every bound against the error that GPU makes.
 */
export const PARITY_LOG_ENV = 'LEGOKV_PARITY_LOG';

/** One comparison: its test file, what it compared, its bound (atol + rtol × the reference's largest magnitude) and its worst difference. */
export interface BoundRecord {
  file: string;
  what: string;
  atol: number;
  rtol: number;
  /**
   * The largest |got - want| (null where it met a NaN: JSON has no Infinity), and the reference's scale: its largest
   * magnitude, or with `scale: 'range'` its range (tests/helpers/gpu.ts's assertWithinRange, for whole models' logits).
   */
  diff: number | null;
  ref: number;
  scale?: 'range';
}

/** A bound, as one file's comparisons under it used it: the closest call. */
export interface BoundUse {
  file: string;
  atol: number;
  rtol: number;
  /** Comparisons held to it. */
  checks: number;
  /**
   * The closest call's difference over the bound: at most 1 where they passed, 0 where every one was exact,
   * Infinity (null in JSON) where one met a NaN.
   */
  share: number;
  /** That call's difference over the reference's scale (BoundRecord.ref), and what it compared. */
  rel: number;
  what: string;
  /** Whether rtol is of the reference's range (BoundRecord.scale). */
  scale?: 'range';
}

export interface TestRun {
  files: string[];
  status: number | null;
  signal: NodeJS.Signals | null;
  pass: number;
  fail: number;
  skipped: number;
  /** The names of the tests that failed. */
  failed: string[];
  /** The run's last 4000 characters of output (its diagnostics, the failures' messages). */
  tail: string;
  /** With `bounds`: each bound the files' comparisons were held to, the closest calls first. */
  bounds?: BoundUse[];
}

/** The bounds in `records` (file paths reported relative to `dir`), each with its closest call; the closest first. */
export function boundUses(records: BoundRecord[], dir: string): BoundUse[] {
  const by = new Map<string, BoundUse>();
  for (const r of records) {
    const tol = r.atol + r.rtol * r.ref;
    const diff = r.diff ?? Infinity;
    const share = diff === 0 ? 0 : diff / tol;
    const file = relative(dir, r.file);
    const key = JSON.stringify([file, r.atol, r.rtol, r.scale ?? null]);
    const u = by.get(key) ?? { file, atol: r.atol, rtol: r.rtol, checks: 0, share: -1, rel: 0, what: '', ...(r.scale ? { scale: r.scale } : {}) };
    u.checks++;
    if (share > u.share) Object.assign(u, { share, rel: r.ref > 0 ? diff / r.ref : diff, what: r.what });
    by.set(key, u);
  }
  return [...by.values()].sort((a, b) => b.share - a.share || a.file.localeCompare(b.file));
}

/** A bound in words: "engine/kernels.test.mjs, plain: rtol 6e-6" (atol too where it has one; "1e-5 of the range"). */
export function describeBound(b: Pick<BoundUse, 'file' | 'what' | 'atol' | 'rtol' | 'scale'>): string {
  const num = (x: number) => (x >= 1e-3 ? String(x) : x.toExponential());
  const rel = b.scale === 'range' ? `${num(b.rtol)} of the range` : `rtol ${num(b.rtol)}`;
  const parts = [b.atol ? `atol ${num(b.atol)}` : '', b.rtol ? rel : ''].filter(Boolean);
  return `${b.file}${b.what ? `, ${b.what}` : ''}: ${parts.length ? parts.join(', ') : 'exact'}`;
}

/** What a run's log line adds of its bounds: the closest call ("; the closest call used 0.31 of its bound (...)"), if any. */
export function closestCall(r: TestRun): string {
  const b = r.bounds?.[0];
  return b ? `; the closest call used ${b.share.toPrecision(2)} of its bound (${describeBound(b)})` : '';
}

/**
 * Runs `files` (paths under `dir`, reported relative to it) one at a time in one process, with `env` added; with
 * `bounds`, measures each bound their comparisons were held to (PARITY_LOG_ENV).
 */
export function runTests(dir: string, files: string[], o: { env?: Record<string, string>; timeoutS: number; bounds?: boolean }): TestRun {
  // Run from inside another test run (the CI rehearsal), node --test would report to its parent instead of printing.
  const env: Record<string, string | undefined> = { ...process.env, ...o.env };
  delete env.NODE_TEST_CONTEXT;
  const logDir = o.bounds ? mkdtempSync(join(tmpdir(), 'legokv-bounds-')) : null;
  if (logDir) env[PARITY_LOG_ENV] = join(logDir, 'bounds.jsonl');
  try {
    // --test-force-exit: each file's process exits once its tests have run. Without it, a bundled test file whose one
    // device did no work (every test skipped: half-kernels on SwiftShader) aborted in Dawn's teardown at exit
    // ("The futex facility returned an unexpected error code"), failing a file none of whose tests failed.
    const r = spawnSync(process.execPath, ['--test', '--test-force-exit', '--test-concurrency=1', '--test-reporter=spec', ...files], {
      env, encoding: 'utf8', maxBuffer: 1 << 26, timeout: Math.round(o.timeoutS * 1000),
    });
    const out = `${r.stdout}\n${r.stderr}`;
    const count = (re: RegExp) => Number(re.exec(out)?.[1] ?? NaN);
    const failed = [...out.matchAll(/^\s*✖ (.+?) \(\d/gm)].map((m) => m[1]);
    return {
      files: files.map((f) => relative(dir, f)), status: r.status, signal: r.signal,
      pass: count(/^ℹ pass (\d+)$/m), fail: count(/^ℹ fail (\d+)$/m), skipped: count(/^ℹ skipped (\d+)$/m),
      failed: [...new Set(failed)], tail: out.slice(-4000),
      ...(logDir ? { bounds: boundUses(readRecords(env[PARITY_LOG_ENV]!), dir) } : {}),
    };
  } finally {
    if (logDir) rmSync(logDir, { recursive: true, force: true });
  }
}

/** The records a run wrote (none where no comparison ran); a line cut short by a killed test is left out, not fatal. */
export function readRecords(path: string): BoundRecord[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8').split('\n').flatMap((l) => {
    try {
      return l ? [JSON.parse(l) as BoundRecord] : [];
    } catch {
      return [];
    }
  });
}
