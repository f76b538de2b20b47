/**
 * The command line's text output: aligned tables, durations, and a progress
 * bar whose ETA comes from this run's pace, not from cases an earlier run
 * finished (a resumed run starts most of the way along).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ProgressBar, duration, table } from '../../src/eval/format';

function fakeBar() {
  const lines: string[] = [];
  let t = 0;
  const stream = { isTTY: false, columns: 120, write: (s: string) => (lines.push(s), true) };
  const bar = new ProgressBar(stream as never, 10, () => t);
  return { bar, lines, advance: (ms: number) => (t += ms) };
}

test('duration: seconds, minutes, hours', () => {
  assert.equal(duration(9.4), '9s');
  assert.equal(duration(100), '1m40s');
  assert.equal(duration(2 * 3600 + 5 * 60 + 7), '2h05m');
  assert.equal(duration(NaN), '?');
});

test('ETA extrapolates from the work done so far', () => {
  const { bar, lines, advance } = fakeBar();
  bar.update(0, 20, 'start');
  advance(10_000);
  bar.update(10, 20, 'case 1');
  assert.match(lines.at(-1)!, /10\/20 +50% 10s elapsed, ETA 10s \| case 1/);
});

test('a resumed run (first update already 90 along): the ETA counts only what this run did', () => {
  const { bar, lines, advance } = fakeBar();
  bar.update(90, 200, 'case 10');
  assert.match(lines.at(-1)!, /ETA \?/, 'no pace yet: no ETA');
  advance(10_000);
  bar.update(100, 200, 'case 11');
  // 10 answers in 10 s, 100 left: 100 s (not the 11 s that counting the 90 resumed ones would give)
  assert.match(lines.at(-1)!, /100\/200 +50% 10s elapsed, ETA 1m40s \| case 11/);
});

test('table: columns padded to the widest cell, first column left-aligned', () => {
  assert.equal(table(['a', 'bb'], [['xyz', 1], ['q', 22]]), 'a    bb\n---  --\nxyz   1\nq    22');
});
