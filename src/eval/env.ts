/** Where a measurement ran: the source revision and how busy the host was (machines may be shared). */
import { spawnSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { REPO_ROOT } from './tokenizer';

export interface RunHost {
  /** `git rev-parse HEAD`, with "+dirty" when the work tree had uncommitted changes; null outside a checkout. */
  commit: string | null;
  loadavg_start: number;
  cpus: number;
}

export function runHost(): RunHost {
  let commit: string | null = null;
  const head = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' });
  if (head.status === 0) {
    const dirty = spawnSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: REPO_ROOT, encoding: 'utf8' });
    commit = head.stdout.trim().slice(0, 12) + (dirty.status === 0 && dirty.stdout.trim() ? '+dirty' : '');
  }
  return { commit, loadavg_start: loadavg()[0], cpus: cpus().length };
}
