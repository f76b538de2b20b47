/**
 * The kit's parity stage measures each bound against the adapter's own error: assertClose records every comparison
 * where PARITY_LOG_ENV names a file (failed ones too), boundUses keeps each file's bound with its closest call, and
 * RESULTS.md says how close the closest came and how many bounds the adapter used under a hundredth of.
 * assertWithinRange does the same for whole models' logits, whose bound is a fraction of their range.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { boundUses, describeBound, PARITY_LOG_ENV, readRecords, type BoundRecord } from '../../src/bench/run-tests';
import { boundsLine, gpuSection, type GpuRun } from '../../src/eval/report-gpu';
import { assertClose, assertWithinRange } from '../helpers/gpu';

test('assertClose records each comparison where the kit asks, a failed one too, and nothing otherwise', () => {
  const dir = mkdtempSync(join(tmpdir(), 'legokv-bounds-'));
  const log = join(dir, 'bounds.jsonl');
  try {
    assertClose([1, 2], [1, 2.5], 0, 0.5, 'unlogged');
    process.env[PARITY_LOG_ENV] = log;
    assertClose([1, 2], [1, 2.5], 0, 0.5, 'passes');
    assert.throws(() => assertClose([1, 3], [1, 2], 0.1, 0, 'fails'), /fails: max \|Δ\| = 1 /);
    assert.throws(() => assertClose([1, NaN], [1, 2], 0, 1, 'nan'), /nan: max \|Δ\| = Infinity/);
  } finally {
    delete process.env[PARITY_LOG_ENV];
  }
  const records = readRecords(log);
  // A test killed mid-write leaves its last line cut short: the kit reads the whole lines and goes on.
  appendFileSync(log, readFileSync(log, 'utf8').split('\n')[0].slice(0, 20));
  assert.deepEqual(readRecords(log), records);
  assert.deepEqual(readRecords(join(dir, 'none.jsonl')), [], 'no comparison ran: no records');
  rmSync(dir, { recursive: true, force: true });
  assert.deepEqual(records.map((r) => [r.what, r.atol, r.rtol, r.diff, r.ref]), [['passes', 0, 0.5, 0.5, 2.5], ['fails', 0.1, 0, 1, 2], ['nan', 0, 1, null, 2]]);
  assert.ok(records.every((r) => r.file === process.argv[1]), 'each record names its test file');
});

test('each file\'s bound keeps its closest call, the closest first; exact ones and NaN are said as such', () => {
  const dir = '/kit/tests';
  const r = (file: string, what: string, atol: number, rtol: number, diff: number | null, ref: number): BoundRecord => ({ file: `${dir}/${file}`, what, atol, rtol, diff, ref });
  const uses = boundUses([
    r('engine/kernels.test.mjs', 'plain', 0, 6e-6, 1e-6, 2), // 1e-6 of a 1.2e-5 bound
    r('engine/kernels.test.mjs', 'bias+residual', 0, 6e-6, 3e-6, 2), // the closest of the three: 0.25
    r('engine/kernels.test.mjs', 'plain', 0, 6e-6, 0, 2),
    r('engine/kernels.test.mjs', 'glu', 1e-6, 6e-6, 1e-9, 1), // another bound in the same file
    r('engine/argmax.test.mjs', '', 0, 0, 0, 5), // exact only
    r('engine/attention-kernels.test.mjs', 'rows', 0, 2e-6, null, 1), // a NaN
  ], dir);
  assert.deepEqual(uses.map((u) => [u.file, u.atol, u.rtol, u.checks, u.what]), [
    ['engine/attention-kernels.test.mjs', 0, 2e-6, 1, 'rows'],
    ['engine/kernels.test.mjs', 0, 6e-6, 3, 'bias+residual'],
    ['engine/kernels.test.mjs', 1e-6, 6e-6, 1, 'glu'],
    ['engine/argmax.test.mjs', 0, 0, 1, ''],
  ]);
  assert.deepEqual(uses.map((u) => u.share), [Infinity, 0.25, 1e-9 / 7e-6, 0]);
  assert.equal(uses[1].rel, 1.5e-6);
  assert.equal(describeBound(uses[1]), 'engine/kernels.test.mjs, bias+residual: rtol 6e-6');
  assert.equal(describeBound(uses[2]), 'engine/kernels.test.mjs, glu: atol 1e-6, rtol 6e-6');
  assert.equal(describeBound(uses[3]), 'engine/argmax.test.mjs: exact');
  // JSON has no Infinity: the report reads a NaN's null share back as one.
  const back = JSON.parse(JSON.stringify(uses)) as typeof uses;
  assert.equal(back[0].share, null);
  assert.equal(boundsLine(back), 'Parity bounds against this adapter\'s error (each file\'s bound, its closest call): the closest used NaN met (engine/attention-kernels.test.mjs, rows: rtol 2e-6); ' +
    '0.25 (engine/kernels.test.mjs, bias+residual: rtol 6e-6); 0.00014 (engine/kernels.test.mjs, glu: atol 1e-6, rtol 6e-6). 1 of 4 bounds were used under a hundredth; 1 held only exact results.');
  // RESULTS.md's GPU section says it under the parity line.
  const run: GpuRun = {
    command: 'bash scripts/gpu-check.sh', torch: null,
    kit: { started: '2026-12-04T00:00:00Z', budget_s: 300, node: 'v22', adapter: { description: 'Test GPU', vendor: 'test', features: [], limits: { maxStorageBufferBindingSize: 2 ** 31 } },
      parity: { pass: 3, fail: 1, skipped: 0, failed: ['rows'], files: ['engine/kernels.test.mjs'], bounds: back } },
  } as GpuRun;
  assert.match(gpuSection([{ file: 'gpu-test-1.json', r: run }]), /\*\*3 passed, 1 failed\*\* \(rows\)\.\n\nParity bounds against this adapter's error .* 1 held only exact results\./);
});

test('assertWithinRange bounds logits by their range and records it so: a bound of its own, said "of the range"', () => {
  const dir = mkdtempSync(join(tmpdir(), 'legokv-bounds-'));
  const log = join(dir, 'bounds.jsonl');
  try {
    process.env[PARITY_LOG_ENV] = log;
    // The range is 4 (from -1 to 3), the largest magnitude 3: 0.2 is 0.05 of the range, over a bound of 0.04.
    const err = assertWithinRange([-1, 3.1, 0], [-1, 3, 0], 0.05, 'logits');
    assert.ok(Math.abs(err - 0.025) < 1e-12, `${err}: 0.1 of a range of 4`);
    assert.throws(() => assertWithinRange([-1, 3.2, 0], [-1, 3, 0], 0.04, 'far logits'), /far logits: max \|Δlogit\| 2\.00e-1 > 1\.60e-1 \(0\.04 of a range of 4\.00\)/);
    assert.throws(() => assertWithinRange([NaN, 3, 0], [-1, 3, 0], 1, 'nan logits'), /nan logits: max \|Δlogit\| Infinity/);
    assert.throws(() => assertWithinRange([1], [1, 2], 1, 'short'), /short: length/);
  } finally {
    delete process.env[PARITY_LOG_ENV];
  }
  const records = readRecords(log);
  rmSync(dir, { recursive: true, force: true });
  assert.deepEqual(records.map((r) => [r.what, r.rtol, r.diff === null ? null : Number(r.diff.toFixed(9)), r.ref, r.scale]),
    [['logits', 0.05, 0.1, 4, 'range'], ['far logits', 0.04, 0.2, 4, 'range'], ['nan logits', 1, null, 4, 'range']]);
  // The same rtol of the range and of the largest magnitude are two bounds, each said as what it is.
  const uses = boundUses([...records.slice(0, 1), { ...records[0], what: 'magnitude', scale: undefined }], dirname(records[0].file));
  assert.deepEqual(uses.map((u) => [u.what, u.scale]), [['logits', 'range'], ['magnitude', undefined]]);
  assert.match(describeBound(uses[0]), /, logits: 0\.05 of the range$/);
  assert.match(describeBound(uses[1]), /, magnitude: rtol 0\.05$/);
  assert.equal(uses[0].rel, uses[0].share * 0.05);
});
