/**
 * Decode timed two ways side by side on one model and cache, for the GPU kit's engine stage, so each lent GPU says
 * which way pays there: with the fused launches (Ops.fuse: RMSNorm and GLU folded into the GEMVs after them) and
 * without; and with decode's attention in attention_decode.wgsl ('keys', the GPU default; 'lanes', its invocations
 * walking keys of their own) and in attention.wgsl ('rows'); on devices with subgroups, with its GEMVs in gemv_sg (the default there) and in gemv; and, fused,
 * with attention's few key slices merged in the output projection (Ops.foldCombine) and by attention_combine's
 * launch; and, fused, with the GEMVs reading x (RMSNorm's and GLU's) from workgroup memory, worked out there once a
 * workgroup (Ops.stageX), and from x's buffer in every column's lanes; and, fused, with f16 weights read 16 bytes a
 * load (Ops.gemvWide) and 8. Each way reports its wall and GPU time a step and its dispatches a step.
 */
import { describeAttentionWay, describeSettings, describeTiledWay, type AttentionVariant, type KVCache, type DecodeTuning, type Engine, type GemvVariant, type PrefillTuning, type UploadTuning } from '../engine';
import { benchTokens } from './prefill';
import type { LinkPart } from '../types/kv';
import { link } from '../kvlink/link';
import { parseAlgorithm } from '../kvlink/algorithms';

export interface DecodeWay {
  /** What the way sets (fused launches or not; the attention kernel). */
  fused: boolean;
  attention: AttentionVariant | 'default';
  /** The GEMV kernel, where the way sets it (absent in files written before it could be chosen). */
  gemv?: GemvVariant | 'default';
  /** Whether a fused step's output projection merges the key slices (Ops.foldCombine), where the way sets it. */
  foldCombine?: boolean;
  /** Whether the step's GEMVs stage x in workgroup memory (Ops.stageX), where the way sets it. */
  stageX?: boolean;
  /** Whether gemv reads f16 weights 16 bytes a load (Ops.gemvWide), where the way sets it. */
  gemvWide?: boolean;
  /** Whether this is the way the engine decodes on this adapter by default. */
  chosen: boolean;
  steps: number;
  decode_tokens_per_s: number;
  decode_wall_ms: number;
  /** GPU busy time a step (timestamp queries), where the adapter has them. */
  decode_gpu_ms?: number;
  dispatches_per_step: number;
}
/** The fused/unfused comparison's rows (their attention is the default). */
export type FuseTiming = DecodeWay;

type Way = { fused: boolean; attention?: AttentionVariant; gemv?: GemvVariant; foldCombine?: boolean; stageX?: boolean; gemvWide?: boolean; chosen: boolean; steps: number };

/** Rows a cache needs past its context for timeWaysOn's steps: one warm step and the timed and probed steps of each way. */
function stepRows(ways: Way[]): number {
  return ways.length + ways.reduce((s, w) => s + w.steps + Math.min(8, w.steps), 0);
}

/** After a `context`-token prefill, each way timed (timeWaysOn). */
async function timeWays(e: Engine, context: number, ways: Way[]): Promise<DecodeWay[]> {
  const tokens = benchTokens(context + stepRows(ways), e.config.vocabSize, 1);
  const cache = e.newCache(tokens.length + 1);
  try {
    await e.prefill(cache, tokens.slice(0, context), undefined, { logits: 'last' });
    return await timeWaysOn(e, cache, tokens.slice(context), ways);
  } finally {
    cache.destroy();
  }
}

/**
 * On a cache that holds its context already, with room for stepRows(ways) more, one step each way to build its
 * pipelines, then each way's timed steps (fed `tokens`), the engine's own way first; the engine's settings are
 * restored after.
 */
async function timeWaysOn(e: Engine, cache: KVCache, tokens: number[], ways: Way[]): Promise<DecodeWay[]> {
  const saved = { fuse: e.ops.fuse, attention: e.ops.attentionVariant, gemv: e.ops.gemvVariant, foldCombine: e.ops.foldCombine, stageX: e.ops.stageX, gemvWide: e.ops.gemvWide };
  const set = (w: Way) => {
    e.ops.fuse = w.fused;
    e.ops.attentionVariant = w.attention;
    e.ops.gemvVariant = w.gemv;
    e.ops.foldCombine = w.foldCombine ?? saved.foldCombine;
    e.ops.stageX = w.stageX ?? saved.stageX;
    e.ops.gemvWide = w.gemvWide ?? saved.gemvWide;
  };
  let at = 0;
  const d = e.ops.d;
  const out: DecodeWay[] = [];
  try {
    for (const w of ways) {
      set(w);
      await e.decode(cache, tokens[at++]);
    }
    for (const w of ways) {
      set(w);
      const c0 = d.count;
      const t0 = performance.now();
      for (let i = 0; i < w.steps; i++) await e.decode(cache, tokens[at++]);
      const wall = (performance.now() - t0) / w.steps;
      const dispatches = (d.count - c0) / w.steps;
      let gpu: number | undefined;
      const probe = Math.min(8, w.steps);
      if (d.startGpuTimer()) {
        for (let i = 0; i < probe; i++) await e.decode(cache, tokens[at++]);
        gpu = ((await d.stopGpuTimer()) ?? NaN) / probe;
      }
      out.push({ fused: w.fused, attention: w.attention ?? 'default', gemv: w.gemv ?? 'default', ...(w.foldCombine === undefined ? {} : { foldCombine: w.foldCombine }), ...(w.stageX === undefined ? {} : { stageX: w.stageX }), ...(w.gemvWide === undefined ? {} : { gemvWide: w.gemvWide }), chosen: w.chosen, steps: w.steps, decode_tokens_per_s: 1000 / wall, decode_wall_ms: wall, decode_gpu_ms: gpu, dispatches_per_step: dispatches });
    }
    return out;
  } finally {
    e.ops.fuse = saved.fuse;
    e.ops.attentionVariant = saved.attention;
    e.ops.gemvVariant = saved.gemv;
    e.ops.foldCombine = saved.foldCombine;
    e.ops.stageX = saved.stageX;
    e.ops.gemvWide = saved.gemvWide;
  }
}

/**
 * Fused and unfused decode, `steps` timed steps each. `otherSteps` bounds the steps of the way the engine does not
 * choose (on CPU adapters the fused way, whose gemv is far slower there).
 */
export function decodeBothWays(e: Engine, context: number, steps: number, otherSteps = steps): Promise<FuseTiming[]> {
  const chosen = e.ops.fuses(1);
  return timeWays(e, context, [chosen, !chosen].map((fused) => ({ fused, chosen: fused === chosen, steps: Math.max(1, fused === chosen ? steps : Math.min(steps, otherSteps)) })));
}

/** Decode with its attention in each kernel that serves a single row ('keys', 'lanes', 'grouped', 'grouped-keys' and 'rows'), the engine's fusion kept. */
export function decodeAttentionWays(e: Engine, context: number, steps: number): Promise<DecodeWay[]> {
  return timeWays(e, context, attentionWays(e, steps));
}

/** A way for each kernel that can attend for a decode step's row, the engine's own first (for rows scanning `keys`), its fusion kept. */
function attentionWays(e: Engine, steps: number, keys?: number): Way[] {
  const picked = e.ops.pickAttention(1, e.config.headDim, keys);
  const kernels = [picked, ...e.ops.decodeKernels(e.config.headDim, e.config.nHeads / e.config.nKvHeads).filter((k) => k !== picked)];
  return kernels.map((attention) => ({ fused: e.ops.fuses(1), attention, chosen: attention === picked, steps }));
}

/** Decode right after a link, on its cache: LegoKV's own decode, answering from the linked prompt. */
export interface DecodeAfterLink {
  algorithm: string;
  /** Rows the linked cache held when decode began (the prompt, its chunks and the question). */
  context: number;
  ways: DecodeWay[];
}

/**
 * Links `parts` with `spec` and times `steps` decode steps on the linked cache with each single-row attention
 * kernel, the engine's own first (the way the app answers after a link; a 512-row cache says little of it).
 */
export async function decodeAfterLink(e: Engine, parts: LinkPart[], spec: string, steps: number): Promise<DecodeAfterLink> {
  const rows = stepRows(attentionWays(e, steps));
  const r = await link(e, parts, parseAlgorithm(spec), { bosId: e.config.bosId, reserve: rows + 1 });
  try {
    // The engine's own kernel for rows that scan the linked prompt (a long spans' kernel where tuning kept one).
    const ways = attentionWays(e, steps, r.layout.tokens.length);
    return { algorithm: spec, context: r.layout.tokens.length, ways: await timeWaysOn(e, r.cache, benchTokens(rows, e.config.vocabSize, 2), ways) };
  } finally {
    r.cache.destroy();
  }
}

/**
 * Decode with its GEMVs in each kernel (gemv_sg, the default where the device has subgroups, and gemv), the
 * engine's fusion and attention kept; nothing on a device without subgroups, where gemv is the only one. On the
 * 'cpu' profile unfused decode multiplies with the register kernel, so only fused decode's GEMVs change there.
 */
export function decodeGemvWays(e: Engine, context: number, steps: number): Promise<DecodeWay[]> {
  if (!e.ops.subgroupMin) return Promise.resolve([]);
  const picked = e.ops.pickGemv();
  const kernels: GemvVariant[] = [picked, picked === 'gemv_sg' ? 'gemv' : 'gemv_sg'];
  return timeWays(e, context, kernels.map((gemv) => ({ fused: e.ops.fuses(1), gemv, chosen: gemv === picked, steps })));
}

/**
 * Fused decode each way of one on/off choice, the engine's own first and its other settings kept (where it does not
 * fuse, neither way is its own): 'foldCombine', attention's key slices merged in the output projection (gemv's
 * COMBINE; only where a step has 2 to 8 slices, Ops.combineFold, elsewhere both ways are the same) or by
 * attention_combine's launch; 'stageX', the GEMVs' x staged once a workgroup in workgroup memory (gemv's STAGE) or
 * read from its buffer in every column's lanes; 'gemvWide', f16 weights read 16 bytes a load or 8 (gemv's W8).
 */
export function decodeSwitchWays(e: Engine, context: number, steps: number, choice: 'foldCombine' | 'stageX' | 'gemvWide'): Promise<DecodeWay[]> {
  const picked = choice === 'foldCombine' ? e.ops.foldCombine !== false : e.ops[choice] === true, fused = e.ops.fuses(1);
  return timeWays(e, context, [picked, !picked].map((on) => ({ fused: true, [choice]: on, chosen: fused && on === picked, steps })));
}

/**
 * What a way sets, in words: "fused, attention keys", "unfused, gemv_sg", "fused, attention keys (4 keys a thread)",
 * "fused, attention_combine launched" (a fused way that does not fold it: Ops.foldCombine), "fused, x staged"
 * (Ops.stageX), "fused, 16-byte loads" (Ops.gemvWide).
 */
export function wayLabel(r: Pick<DecodeWay, 'fused' | 'attention' | 'gemv'> & { keysPerThread?: number; foldCombine?: boolean; stageX?: boolean; gemvWide?: boolean }): string {
  const keys = (r.attention === 'keys' || r.attention === 'grouped-keys') && (r.keysPerThread ?? 1) > 1 ? ` (${r.keysPerThread} keys a thread)` : '';
  const combine = (r.fused && r.foldCombine === false ? ', attention_combine launched' : '') + (r.stageX === true ? ', x staged' : '') + (r.gemvWide === true ? ', 16-byte loads' : '');
  return `${r.fused ? 'fused' : 'unfused'}${combine}${r.attention && r.attention !== 'default' ? `, attention ${r.attention}${keys}` : ''}${r.gemv && r.gemv !== 'default' ? `, ${r.gemv}` : ''}`;
}

/** One line for logs. */
export function formatFuse(rows: DecodeWay[]): string {
  const way = (r: DecodeWay) =>
    `${wayLabel(r)}${r.chosen ? ' (chosen)' : ''} ${r.decode_tokens_per_s.toFixed(1)} tok/s, ` +
    `${r.decode_wall_ms.toFixed(2)} ms wall${r.decode_gpu_ms !== undefined ? `, ${r.decode_gpu_ms.toFixed(2)} ms GPU` : ''}, ${r.dispatches_per_step} dispatches a step`;
  return `decode ${rows.map(way).join('; ')}`;
}

/**
 * Tunes decode's kernels as the app does when it loads a model (Engine.tuneDecode; nothing on the 'cpu' profile),
 * so what the kit times next is what the app would run, and logs what was chosen and each way's time.
 */
export async function tuneAsTheApp(e: Engine, log: (line: string) => void): Promise<DecodeTuning | null> {
  // A failed timing leaves the defaults in place (tuneDecode restores them): the stage goes on with those.
  const t = await e.tuneDecode().catch((err) => (log(`decode tuning failed, the defaults kept: ${String(err?.stack ?? err)}`), null));
  if (t) log(`decode tuned in ${(t.ms / 1000).toFixed(1)} s: ${t.trials.map((x) => `${describeSettings(x.settings)}${x.settings === t.chosen ? ' (chosen)' : ''} ${x.msPerStep.toFixed(2)} ms`).join('; ')}`);
  if (t?.longError !== undefined) log(`timing attention alone over a long span failed, no long spans' kernel kept: ${t.longError}`);
  const l = t?.long;
  if (l) {
    const us = l.ways.map((w) => `${describeAttentionWay(w)} ${w.usShort.toFixed(1)} / ${w.usLong.toFixed(1)}`).join('; ');
    log(`attention alone, µs a layer over ${l.short} / ${l.long} keys: ${us}; ${l.chosen ? `${describeAttentionWay(l.chosen)} kept from ${l.chosen.from} keys` : 'the short spans\' kernel kept for long spans too'}`);
  }
  return t;
}

/**
 * Times how host rows go up as the app does when it loads a model (Engine.tuneUpload; nothing on the 'cpu'
 * profile), so the links the kit times next bring host rows the way the app would, and logs both rates.
 */
export async function tuneUploadAsTheApp(e: Engine, log: (line: string) => void): Promise<UploadTuning | null> {
  const t = await e.tuneUpload().catch((err) => (log(`upload timing failed, writeBuffer kept: ${String(err?.stack ?? err)}`), null));
  if (t) log(`uploads timed in ${(t.ms / 1000).toFixed(1)} s: writeBuffer ${t.gbPerS.write.toFixed(1)} GB/s, mapped staging ${t.gbPerS.mapped.toFixed(1)} GB/s; ${t.chosen === 'mapped' ? 'mapped staging' : 'writeBuffer'} kept`);
  return t;
}

/**
 * Times prefill's attention as the app does when it loads a model (Engine.tunePrefill; nothing on the 'cpu'
 * profile), so the prefills and links the kit times next attend as the app's would; logs each way.
 */
export async function tunePrefillAsTheApp(e: Engine, log: (line: string) => void): Promise<PrefillTuning | null> {
  const t = await e.tunePrefill().catch((err) => (log(`prefill attention timing failed, the default way kept: ${String(err?.stack ?? err)}`), null));
  if (t) log(`prefill attention timed in ${(t.ms / 1000).toFixed(2)} s, µs a layer for ${t.rows} rows over ${t.keys} keys: ${t.ways.map((w) => `${describeTiledWay(w)} ${w.error ? `not timed: ${w.error}` : w.us.toFixed(0)}`).join('; ')}; ${describeTiledWay(t.chosen)} kept`);
  return t;
}
