/** Where a measurement ran: the source revision and how busy the host was (machines may be shared). */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from './tokenizer';

export interface RunHost {
  /** `git rev-parse HEAD`, with "+dirty" when files outside docs/results/ had uncommitted changes; null outside a checkout. */
  commit: string | null;
  loadavg_start: number;
  cpus: number;
  /**
   * The CPU's model name. On a CPU adapter (SwiftShader) it sets the pace as
   * much as the adapter does, and a resumed run may continue on another host.
   */
  cpu_model: string;
}

export function runHost(): RunHost {
  let commit: string | null = null;
  const head = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' });
  if (head.status === 0) {
    // docs/results/ is left out: a resumed run's own output file is always modified.
    const dirty = spawnSync('git', ['status', '--porcelain', '--untracked-files=no', '--', '.', ':!docs/results'], { cwd: REPO_ROOT, encoding: 'utf8' });
    commit = head.stdout.trim().slice(0, 12) + (dirty.status === 0 && dirty.stdout.trim() ? '+dirty' : '');
  }
  const cores = cpus();
  return { commit, loadavg_start: loadavg()[0], cpus: cores.length, cpu_model: cores[0]?.model.trim() || 'unknown' };
}

/**
 * The command line that reruns this measurement: the npm script with this process's arguments, after the Node
 * backend it ran on when one was chosen (LEGOKV_NODE_BACKEND), since that picks the adapter.
 */
export function commandLine(script: string): string {
  const backend = process.env.LEGOKV_NODE_BACKEND;
  return [...(backend ? [`LEGOKV_NODE_BACKEND=${backend}`] : []), `npm run ${script} --`, ...process.argv.slice(2)].join(' ');
}

/**
 * SHA-256 of a model's bytes: the file, or every file under the folder (sorted
 * by relative path, each name hashed before its contents). A resumed
 * evaluation checks it, so answers from two different weights never mix.
 */
export function modelDigest(path: string): string {
  const h = createHash('sha256');
  const walk = (p: string, rel: string) => {
    if (statSync(p).isDirectory()) {
      for (const name of readdirSync(p).sort()) walk(join(p, name), rel ? `${rel}/${name}` : name);
    } else {
      h.update(`${rel}\0`);
      h.update(readFileSync(p));
    }
  };
  walk(path, '');
  return h.digest('hex');
}
