/** The GPU kit's parity runs: test files in one `node --test` process, and what it reported. */
import { spawnSync } from 'node:child_process';

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
}

/** Runs `files` (paths under `dir`, reported relative to it) one at a time in one process, with `env` added. */
export function runTests(dir: string, files: string[], o: { env?: Record<string, string>; timeoutS: number }): TestRun {
  // Run from inside another test run (the CI rehearsal), node --test would report to its parent instead of printing.
  const env: Record<string, string | undefined> = { ...process.env, ...o.env };
  delete env.NODE_TEST_CONTEXT;
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
    files: files.map((f) => f.slice(dir.length + 1)), status: r.status, signal: r.signal,
    pass: count(/^ℹ pass (\d+)$/m), fail: count(/^ℹ fail (\d+)$/m), skipped: count(/^ℹ skipped (\d+)$/m),
    failed: [...new Set(failed)], tail: out.slice(-4000),
  };
}
