/**
 * How much CPU other programs took while a measurement ran.
 *
 * On a CPU adapter (SwiftShader, llvmpipe) the GPU is the host's cores, so
 * any other busy program on the machine (a training run, a test suite) slows
 * every TTFT, often several times over, without leaving a trace in the
 * numbers. The load average cannot tell: it counts this run's own threads
 * too. So the runner reads, before and after each case, the whole machine's
 * busy CPU time (/proc/stat) and the CPU time of this run's own process tree
 * (this process, its threads, and its descendants, such as the headless
 * Chromium of the browser backend), and records the difference as cores:
 * 0 on a quiet host, 1 when another program kept one core busy throughout.
 * Linux only; elsewhere every figure is null.
 */
import { readdirSync, readFileSync } from 'node:fs';

export interface CpuSample {
  /** The machine's CPU time across all CPUs: all of it, and the busy part (not idle or waiting on I/O), in clock ticks. */
  total: number;
  busy: number;
  /** CPU time of this process tree in clock ticks (user and system, reaped children's included). */
  tree: number;
  cpus: number;
}

/** The first line of /proc/stat as (total, busy) clock ticks, and the number of CPUs it lists. */
export function parseProcStat(text: string): { total: number; busy: number; cpus: number } {
  const lines = text.split('\n');
  const f = lines[0].trim().split(/\s+/);
  if (f[0] !== 'cpu') throw new Error('/proc/stat: no aggregate cpu line');
  // user nice system idle iowait irq softirq steal (guest time is already inside user)
  const [user, nice, system, idle, iowait, irq, softirq, steal] = f.slice(1, 9).map((x) => Number(x) || 0);
  const total = user + nice + system + idle + iowait + irq + softirq + steal;
  return { total, busy: total - idle - iowait, cpus: lines.filter((l) => /^cpu\d+\s/.test(l)).length };
}

/** (ppid, CPU ticks: utime + stime + cutime + cstime) from the text of /proc/<pid>/stat. */
export function parsePidStat(text: string): { ppid: number; ticks: number } {
  // The command name (field 2) is in parentheses and may hold spaces or ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // rest[0] is field 3 (state): ppid is field 4, utime..cstime fields 14..17.
  const n = (field: number) => Number(rest[field - 3]) || 0;
  return { ppid: n(4), ticks: n(14) + n(15) + n(16) + n(17) };
}

/** CPU ticks of `root` and all its descendants, from a pid → stat-text reader. */
export function treeTicks(root: number, pids: number[], read: (pid: number) => string | null): number {
  const stats = new Map<number, { ppid: number; ticks: number }>();
  for (const pid of pids) {
    const t = read(pid);
    if (t) stats.set(pid, parsePidStat(t));
  }
  const children = new Map<number, number[]>();
  for (const [pid, s] of stats) children.set(s.ppid, [...(children.get(s.ppid) ?? []), pid]);
  let ticks = 0;
  const todo = [root];
  const seen = new Set<number>();
  while (todo.length) {
    const pid = todo.pop()!;
    if (seen.has(pid)) continue;
    seen.add(pid);
    ticks += stats.get(pid)?.ticks ?? 0;
    todo.push(...(children.get(pid) ?? []));
  }
  return ticks;
}

const readOr = (path: string): string | null => {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null; // a process that ended between the listing and the read
  }
};

/** The machine's and this process tree's CPU time now; null where /proc is not there to read. */
export function sampleCpu(): CpuSample | null {
  const stat = readOr('/proc/stat');
  if (!stat) return null;
  try {
    const m = parseProcStat(stat);
    const pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d)).map(Number);
    return { ...m, tree: treeTicks(process.pid, pids, (pid) => readOr(`/proc/${pid}/stat`)) };
  } catch {
    return null;
  }
}

/**
 * Cores kept busy by programs outside this process tree between two samples
 * (the mean over that time, 0 to the number of CPUs, two decimals), or null
 * when either sample is missing or no time passed.
 */
export function otherCores(a: CpuSample | null, b: CpuSample | null): number | null {
  if (!a || !b) return null;
  const total = b.total - a.total;
  if (total <= 0) return null;
  const other = (b.busy - a.busy - (b.tree - a.tree)) / total * b.cpus;
  return Math.round(Math.min(b.cpus, Math.max(0, other)) * 100) / 100;
}
