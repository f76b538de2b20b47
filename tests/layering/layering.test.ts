/**
 * The layering rule (.dependency-cruiser.cjs) holds for src/, and each of its rules fails on a deliberate violation:
 * tests/fixtures/layering/src is a small tree with one of each, and one allowed import that must not be flagged.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '../..');
const BIN = join(ROOT, 'node_modules/dependency-cruiser/bin/dependency-cruise.mjs');
const CONFIG = join(ROOT, '.dependency-cruiser.cjs');

const depcruise = (cwd: string, output: string) =>
  spawnSync(process.execPath, [BIN, 'src', '--config', CONFIG, '--output-type', output], { cwd, encoding: 'utf8' });

/** The violations (JSON report), and the exit status of the command CI runs (its text report). */
function cruise(cwd: string) {
  const out = JSON.parse(depcruise(cwd, 'json').stdout) as { summary: { violations: { rule: { name: string }; from: string; to: string }[] } };
  const text = depcruise(cwd, 'err');
  return { status: text.status, text: text.stdout, violations: out.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort() };
}

test('src/ has no cycles and no import against the layers', () => {
  const r = cruise(ROOT);
  assert.deepEqual(r.violations, []);
  assert.equal(r.status, 0, r.text);
});

test('every rule fails on its deliberate violation, and only there', () => {
  const r = cruise(join(ROOT, 'tests/fixtures/layering'));
  assert.notEqual(r.status, 0, 'a violation makes the check exit non-zero');
  assert.deepEqual(r.violations, [
    'compile-before-store: src/kvcompile/cycle-a.ts -> src/kvlink/reaches-up.ts',
    'engine-door: src/api/past-door.ts -> src/engine/model/deep.ts',
    'no-cycles: src/kvcompile/cycle-a.ts -> src/kvcompile/cycle-b.ts',
    'pipeline-below-api: src/kvlink/reaches-up.ts -> src/ui/page.ts',
    'tools-not-ui: src/eval/uses-page.ts -> src/ui/runs-engine.ts',
    'ui-no-engine-code: src/ui/runs-engine.ts -> src/engine/index.ts',
  ]);
});
