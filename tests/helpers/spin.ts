/**
 * A program that keeps one core busy for a while: a child of this process,
 * or (started through a shell that exits at once, so it is re-parented)
 * outside this process tree, as another user's program would be.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export interface Spinner {
  pid: number;
  /** Ends it now (it also ends by itself after `ms`) and waits until it is gone. */
  stop(): Promise<void>;
}

export function spin(ms: number, outside: boolean): Spinner {
  const code = `const end = Date.now() + ${ms}; while (Date.now() < end);`;
  let pid: number;
  let gone: Promise<void>;
  if (outside) {
    const r = spawnSync('sh', ['-c', `"${process.execPath}" -e '${code}' >/dev/null 2>&1 & echo $!`], { encoding: 'utf8' });
    pid = Number(r.stdout.trim());
    gone = new Promise<void>((resolve) => {
      const t = setInterval(() => {
        if (!existsSync(`/proc/${pid}`)) (clearInterval(t), resolve());
      }, 50);
    });
  } else {
    const child = spawn(process.execPath, ['-e', code], { stdio: 'ignore' });
    pid = child.pid!;
    gone = new Promise((resolve) => child.on('exit', () => resolve()));
  }
  return {
    pid,
    async stop() {
      try {
        process.kill(pid);
      } catch { /* already ended */ }
      await gone;
    },
  };
}
