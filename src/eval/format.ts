/** Text output for the command line: tables and a progress bar. */
import type { AlgorithmResult } from './runner';

export function table(headers: string[], rows: (string | number)[][], align: ('l' | 'r')[] = []): string {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => ((align[i] ?? (i === 0 ? 'l' : 'r')) === 'l' ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(cells[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(x < 10 ? 1 : 0) : '-');

const f3 = (x: number | null | undefined) => (x === null || x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(3));

/** The per-algorithm table; *agree w/ prompt* only where the run has the ordinary prompt. */
export function resultsTable(results: AlgorithmResult[]): string {
  const withPrompt = results.some((r) => r.algorithm === 'prompt');
  return table(
    ['algorithm', 'n', 'accuracy', 'agree w/ full', ...(withPrompt ? ['agree w/ prompt'] : []), 'TTFT mean ms', 'TTFT median ms', 'lookup', 'load', 'recompute', 'first token', 'recomputed'],
    results.map((r) => [
      r.algorithm, r.n, f3(r.accuracy), f3(r.agreement_with_full), ...(withPrompt ? [f3(r.agreement_with_prompt)] : []), ms(r.ttft_ms_mean), ms(r.ttft_ms_median),
      ms(r.breakdown_ms_mean.lookup), ms(r.breakdown_ms_mean.load), ms(r.breakdown_ms_mean.recompute), ms(r.breakdown_ms_mean.first_token),
      Number.isFinite(r.recompute_fraction) ? `${(r.recompute_fraction * 100).toFixed(1)}%` : '-',
    ]),
  );
}

export function duration(s: number): string {
  if (!Number.isFinite(s)) return '?';
  s = Math.round(s);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
  return h ? `${h}h${String(m).padStart(2, '0')}m` : m ? `${m}m${String(sec).padStart(2, '0')}s` : `${sec}s`;
}

/** A one-line progress bar on stderr: redrawn in place on a terminal, a line per step otherwise. */
export class ProgressBar {
  private t0: number;
  /** `done` at the first update: work an earlier run finished (a resumed run) is not this run's pace. */
  private done0: number | null = null;
  private last = '';
  constructor(
    private stream: Pick<NodeJS.WriteStream, 'write' | 'isTTY' | 'columns'> = process.stderr,
    private width = 28,
    private now: () => number = () => performance.now(),
  ) {
    this.t0 = now();
  }

  update(done: number, total: number, label: string) {
    this.done0 ??= done;
    const f = total ? Math.min(1, done / total) : 0;
    const filled = Math.round(f * this.width);
    const elapsed = (this.now() - this.t0) / 1000;
    const eta = done >= total ? 0 : done > this.done0 ? (elapsed / (done - this.done0)) * (total - done) : NaN;
    const text = `[${'#'.repeat(filled)}${'.'.repeat(this.width - filled)}] ${done}/${total} ${(f * 100).toFixed(0).padStart(3)}% ` +
      `${duration(elapsed)} elapsed, ETA ${duration(eta)} | ${label}`;
    if (this.stream.isTTY) {
      const cols = this.stream.columns ?? 120;
      this.stream.write(`\r${text.slice(0, cols - 1).padEnd(Math.min(cols - 1, this.last.length))}`);
    } else if (text.replace(/ \d+s elapsed.*\|/, '|') !== this.last.replace(/ \d+s elapsed.*\|/, '|')) {
      this.stream.write(text + '\n');
    }
    this.last = text;
  }

  /** A line of its own above the bar (the bar is drawn again below it on a terminal). */
  note(line: string) {
    if (!this.stream.isTTY) {
      this.stream.write(line + '\n');
      return;
    }
    const cols = this.stream.columns ?? 120;
    this.stream.write(`\r${line.padEnd(Math.min(cols - 1, this.last.length))}\n`);
    if (this.last) this.stream.write(this.last.slice(0, cols - 1));
  }

  done() {
    if (this.stream.isTTY && this.last) this.stream.write('\n');
    this.last = '';
  }
}
