/**
 * Other programs' CPU while a case is timed (src/eval/host-cpu.ts): the
 * /proc parsers, the process-tree sum, the arithmetic, and, on Linux, the
 * real thing: a busy program outside this process tree is counted as other
 * programs' CPU, and one inside it (a child of this process) as ours.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { spin } from '../helpers/spin';
import { otherCores, parsePidStat, parseProcStat, sampleCpu, treeTicks, type CpuSample } from '../../src/eval/host-cpu';

test('/proc/stat: total and busy ticks of the aggregate line, and the CPU count', () => {
  const text = 'cpu  100 5 50 800 20 3 2 10 7 0\ncpu0 50 2 25 400 10 1 1 5 3 0\ncpu1 50 3 25 400 10 2 1 5 4 0\nintr 1 2 3\n';
  // guest (7) is already inside user: not added again
  assert.deepEqual(parseProcStat(text), { total: 990, busy: 170, cpus: 2 });
  assert.throws(() => parseProcStat('intr 1\n'), /aggregate cpu/);
});

test('/proc/<pid>/stat: a command name with spaces and parentheses does not shift the fields', () => {
  const rest = 'S 41 42 42 0 -1 4194560 100 0 0 0 7 3 2 1 20 0 1 0';
  assert.deepEqual(parsePidStat(`1234 (Web Content) ${rest}`), { ppid: 41, ticks: 13 });
  assert.deepEqual(parsePidStat(`1234 (a) b (c)) ${rest}`), { ppid: 41, ticks: 13 });
});

test('the tree sum takes the root and every descendant, nothing else', () => {
  const line = (ppid: number, u: number) => `0 (x) S ${ppid} 0 0 0 0 0 0 0 0 0 ${u} 0 0 0`;
  const procs: Record<number, string> = { 10: line(1, 1), 11: line(10, 2), 12: line(11, 4), 13: line(1, 8), 14: line(13, 16) };
  const read = (pid: number) => procs[pid] ?? null;
  assert.equal(treeTicks(10, [10, 11, 12, 13, 14, 99], read), 7);
  assert.equal(treeTicks(13, [10, 11, 12, 13, 14], read), 24);
  assert.equal(treeTicks(50, [10, 11], read), 0, 'a root that is gone');
});

test('other cores: busy time less this tree\'s, over the elapsed time of all CPUs', () => {
  const s = (total: number, busy: number, tree: number): CpuSample => ({ total, busy, tree, cpus: 2 });
  // 2 CPUs × 100 ticks elapsed = 200; 150 busy, 50 of them ours: 100 / 200 × 2 = 1 core
  assert.equal(otherCores(s(0, 0, 0), s(200, 150, 50)), 1);
  assert.equal(otherCores(s(0, 0, 0), s(200, 40, 50)), 0, 'never below 0 (tick rounding)');
  assert.equal(otherCores(s(0, 0, 0), s(0, 0, 0)), null, 'no time passed');
  assert.equal(otherCores(null, s(200, 150, 50)), null);
});

const linux = existsSync('/proc/stat') && existsSync(`/proc/${process.pid}/stat`);

/** Samples around a window in which a spinner runs (or nothing), with the spinner's own CPU ticks in that window. */
async function measure(load: 'none' | 'own child' | 'outside') {
  const p = load === 'none' ? null : spin(2500, load === 'outside');
  const ticks = () => (p ? parsePidStat(readFileSync(`/proc/${p.pid}/stat`, 'utf8')).ticks : 0);
  try {
    await new Promise((r) => setTimeout(r, 300)); // let it start
    const a = sampleCpu(), t0 = ticks();
    await new Promise((r) => setTimeout(r, 1500));
    const b = sampleCpu(), t1 = ticks();
    assert.ok(a && b);
    return { a, b, spinner: t1 - t0, other: otherCores(a, b)! };
  } finally {
    await p?.stop();
  }
}

// The accounting, not the machine's spare capacity: whatever share of a core the spinner got (less on a loaded
// host), its ticks are in "other" when it runs outside this process tree, and in the tree's own when it is a child.
// The slack (a tenth, and two ticks) covers samples taken a moment apart and the aggregate counters' tick sampling,
// which on a busy host fell 2.5 ticks short of the spinner's own 150 (CI, 2026-11-27); counting the spinner on the
// wrong side would leave it near 0.
test('a busy program outside this run counts as other programs\' CPU; one of its own children counts as ours', { skip: !linux && 'needs /proc (Linux)' }, async () => {
  const outside = await measure('outside');
  assert.ok(outside.spinner > 0, 'the outside spinner ran');
  const otherTicks = (outside.other / outside.b.cpus) * (outside.b.total - outside.a.total);
  assert.ok(otherTicks >= 0.9 * outside.spinner - 2, `other programs' ticks ${otherTicks.toFixed(1)} leave out the spinner's ${outside.spinner}`);
  const own = await measure('own child');
  assert.ok(own.spinner > 0, 'the child spinner ran');
  assert.ok(own.b.tree - own.a.tree >= 0.9 * own.spinner - 2, `this tree's ticks ${own.b.tree - own.a.tree} leave out its child's ${own.spinner}`);
  const none = await measure('none');
  assert.ok(none.other >= 0 && none.other <= none.b.cpus);
});
