/**
 * The JSON files the benchmarks write (docs/results/*.json) and the charts and the report read:
 * `bench:scaling` (EPIC Fig. 9) and `bench:load` (EPIC Fig. 8). Kept apart so the readers need not import the runs.
 */

export interface ScalingPoint {
  algorithm: string;
  context_tokens: number;
  chunks: number;
  prompt_tokens: number;
  recomputed: number;
  ttft_ms: number;
  samples_ms: number[];
  breakdown_ms: { lookup: number; load: number; recompute: number; first_token: number };
  /** Cores other programs kept busy while this point was timed (src/eval/host-cpu.ts); null where unreadable. */
  other_cpu?: number | null;
}

export interface ScalingResults {
  kind: 'scaling';
  /** The command line that produced the file. */
  command?: string;
  adapter: string;
  model: string;
  chunk_tokens: number;
  question: string;
  date: string;
  complete: boolean;
  points: ScalingPoint[];
  skipped: { algorithm: string; context_tokens: number; reason: string }[];
  fits: { algorithm: string; exponent: number; coefficient: number; r2: number; points: number }[];
  /** The source revision, the host's 1-minute load average when the run started and ended, and its CPU count. */
  commit?: string | null;
  loadavg_start: number;
  loadavg_end: number | null;
  cpus: number;
  cpu_model?: string;
}

export interface LoadPoint {
  algorithm: string;
  rate: number;
  arrivals: number;
  served: number;
  unserved: number;
  ttft_ms_mean: number;
  ttft_ms_std: number;
  ttft_ms_p50: number;
  ttft_ms_p95: number;
  /** TTFT without the wait: the link itself. */
  service_ttft_ms_mean: number;
  queue_ms_mean: number;
  service_ms_mean: number;
  throughput_rps: number;
  throughput_tokens_per_s: number;
  span_s: number;
  busy_s: number;
  /** Cores other programs kept busy while this rate ran (src/eval/host-cpu.ts); null where unreadable. */
  other_cpu?: number | null;
}

export interface LoadResults {
  kind: 'load';
  /** The command line that produced the file. */
  command?: string;
  adapter: string;
  model: string;
  users: number;
  context_tokens: number;
  chunk_tokens: number;
  duration_s: number;
  max_busy_s: number;
  max_new_tokens: number;
  seed: number;
  date: string;
  complete: boolean;
  /** The source revision, the host's 1-minute load average when the run started and ended, and its CPU count. */
  commit?: string | null;
  loadavg_start: number;
  loadavg_end: number | null;
  cpus: number;
  cpu_model?: string;
  points: LoadPoint[];
}
