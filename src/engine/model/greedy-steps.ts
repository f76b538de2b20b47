/**
 * Greedy decode steps recorded ahead of the GPU (Engine.greedySteps). Each
 * step's token is picked by argmax on the GPU and embedded by the next step
 * straight from there, so the host never has to read a token before it
 * records the next step: it records up to `depth` steps ahead of the one
 * whose token it waits for, and on a real GPU its recording (a step is over a
 * hundred dispatches) hides behind the GPU's work instead of adding to it.
 * Steps recorded past a stop token are undone by truncating the cache.
 */
import type { Tape } from '../gpu/dispatcher';
import type { Ops } from '../ops';
import type { ModelConfig } from './config';
import type { ForwardPass, ScoresRequest, ScoresResult } from './forward';
import type { KVCache } from './kv-cache';

/** Greedy decode steps run ahead on the GPU (Engine.greedySteps). */
export interface GreedyStepsOptions {
  /** At most this many steps. */
  count: number;
  /** Tokens that end the run: the step that picks one is the last. */
  stopIds: readonly number[];
  /** Steps recorded before the host waits for the oldest one's token (default 3; 1 runs them one by one). */
  depth?: number;
  /** Adds the host's milliseconds spent recording and submitting the steps (not waiting) to `recordMs`. */
  stats?: { recordMs: number };
  /** Attention scores of each step's new row to capture (some layers and heads), read back behind the GPU too. */
  scores?: Omit<ScoresRequest, 'rows'>;
}

/** The tokens the steps picked, and per step the scores of the row it fed (empty lists unless asked for). */
export interface GreedyStepsResult {
  tokens: number[];
  scores: ScoresResult[][];
}

/** What the steps need of the engine. */
export interface Stepper {
  pass(cache: KVCache): ForwardPass;
  readonly ops: Ops;
  readonly config: ModelConfig;
  readonly submitEachLayer: boolean;
  /** Whether steps are replayed from an earlier step's tape where their launches are the same (Engine.replaySteps). */
  readonly replaySteps: boolean;
}

/** Tapes a run keeps (the newest): a key changes only as the keys a step scans change its attention's shape. */
const TAPES_KEPT = 4;

/** Runs the steps, feeding `token` first; returns the tokens picked (see Engine.greedySteps). */
export async function greedySteps(e: Stepper, cache: KVCache, token: number, o: GreedyStepsOptions): Promise<GreedyStepsResult> {
  const depth = Math.max(1, o.depth ?? 3);
  const base = cache.length;
  const reads: Promise<number>[] = [];
  // With scores, each step's pass, kept until its scores are read.
  const passes: ForwardPass[] = [];
  const scores: ScoresResult[][] = [];
  const out: number[] = [];
  const req = o.scores && { ...o.scores, rows: [0] };
  let fed: number | GPUBuffer = token;
  let stopped = false;
  // Recorded steps by ForwardPass.stepKey, each with the buffer its token lands in: later steps of the same key are
  // replayed (Dispatcher.replay), their launches issued again with the new row's values instead of chosen anew. The
  // tapes live for this run alone, which holds the engine's lock: Ops' settings (tuning's) do not change under them.
  const tapes = e.replaySteps && !req ? new Map<string, { tape: Tape; fed: GPUBuffer }>() : null;
  const take = async () => {
    const t = await reads[out.length];
    scores.push(req ? await passes[out.length].scores() : []);
    out.push(t);
    stopped = o.stopIds.includes(t);
  };
  try {
    for (let i = 0; i < o.count && !stopped; i++) {
      const t0 = performance.now();
      const row = cache.length;
      cache.setPositions(row, [row ? cache.positions[row - 1] + 1 : 0]);
      const pass = e.pass(cache);
      pass.begin(typeof fed === 'number' ? [fed] : fed, [row]);
      // A submission a layer lets an idle GPU start the step's first layers while the host records the rest; once
      // steps are in flight the GPU is not idle, and each submission costs the host what it records ahead for.
      const eachLayer = e.submitEachLayer && (depth === 1 || reads.length === out.length);
      // Steps submitted layer by layer (the first, on a real GPU) are never taped: the steady state is not.
      const step = tapes && !eachLayer ? pass.stepKey() : null;
      // A tape binds the uniform slots it was recorded in: it replays from the same slot (after begin's launches).
      const key = step !== null ? `${e.ops.d.slotInUse} ${step}` : null;
      const kept = key !== null ? tapes!.get(key) : undefined;
      if (kept && e.ops.d.replay(kept.tape, pass.stepValues())) fed = kept.fed;
      else {
        if (key !== null) e.ops.d.startTape();
        for (let l = 0; l < e.config.nLayers; l++) {
          pass.layer(l, { scores: req });
          if (eachLayer) e.ops.d.flush();
        }
        fed = pass.greedyOn();
        const tape = key !== null ? e.ops.d.endTape() : null;
        // Keyed as the step stands now: buffers made while it was recorded are what its launches bind.
        const now = tape && pass.stepKey();
        if (tape && now !== null) {
          tapes!.set(`${tape.segments[0].slot0} ${now}`, { tape, fed });
          if (tapes!.size > TAPES_KEPT) tapes!.delete(tapes!.keys().next().value!);
        }
      }
      if (req) passes.push(pass);
      // The read's copy is recorded now, before the next step overwrites the token; its result is awaited later.
      const read = e.ops.d.read(fed, 0, 4).then((b) => new Uint32Array(b)[0]);
      read.catch(() => {}); // rejections surface where the read is awaited
      reads.push(read);
      if (o.stats) o.stats.recordMs += performance.now() - t0;
      while (!stopped && reads.length - out.length >= depth) await take();
    }
    while (!stopped && out.length < reads.length) await take();
  } finally {
    // Steps recorded past a stop (or a failure) still run: let their reads finish, then drop their rows.
    await Promise.allSettled([...reads, ...passes.slice(out.length).map((p) => p.scores())]);
    cache.truncate(base + out.length);
  }
  return { tokens: out, scores };
}
