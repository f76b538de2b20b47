/**
 * Where one decode step's GPU time goes, kernel by kernel: the GPU kit's
 * `profile` stage. Each dispatch runs in a timed pass of its own
 * (Dispatcher.startGpuTimer(true)); the per-kernel sums say which kernels
 * to make faster, and their total beside the plain step (all dispatches in
 * one pass) says how much of the step is spent between dispatches.
 */
import type { Engine } from '../engine';
import type { LinkPart } from '../types/kv';
import { link } from '../kvlink/link';
import { parseAlgorithm } from '../kvlink/algorithms';
import { benchTokens } from './prefill';

export interface KernelTime {
  /** The kernel's file name (its defines are folded together). */
  kernel: string;
  /** Dispatches a step. */
  dispatches: number;
  /** GPU microseconds a step, summed over its dispatches. */
  us: number;
}

export interface DecodeProfile {
  context: number;
  steps: number;
  /** GPU ms of a step with every dispatch in one pass (what decode really runs). */
  step_gpu_ms: number;
  /** Wall ms of a step (host encoding, submission and the logits' readback included). */
  step_wall_ms: number;
  /** Whether the engine submits each layer as soon as it is recorded (Engine.submitEachLayer), and the wall ms the other way. */
  submit_each_layer: boolean;
  step_wall_ms_other_way: number;
  /** Sum of the kernels' own times, each in its own pass. */
  kernels_gpu_ms: number;
  kernels: KernelTime[];
  /**
   * The same time by kind of launch, slowest first: a kernel with the defines it was built with and its workgroup
   * count (`launchName`), so the step's GEMVs part by what they fold in and by their shape.
   */
  launches?: KernelTime[];
}

/** Profiles `steps` decode steps after a `context`-token prefill; null without timestamp queries. */
export async function profileDecode(e: Engine, context = 512, steps = 8): Promise<DecodeProfile | null> {
  const c = e.config;
  const tokens = benchTokens(context + 2 * steps + 2, c.vocabSize);
  const cache = e.newCache(context + 5 * steps + 4);
  try {
    await e.prefill(cache, tokens.slice(0, context), undefined, { logits: 'last' });
    await e.decode(cache, tokens[context]); // warm the decode pipelines
    const d = e.ops.d;
    const wallMs = async () => {
      const t0 = performance.now();
      for (let i = 0; i < steps; i++) await e.decode(cache, tokens[context + 1 + i]);
      return (performance.now() - t0) / steps;
    };
    const chosen = e.submitEachLayer;
    e.submitEachLayer = !chosen;
    let other: number;
    try {
      await e.decode(cache, tokens[context]);
      other = await wallMs();
    } finally {
      e.submitEachLayer = chosen;
    }
    const wall = await wallMs();
    if (!d.startGpuTimer()) return null;
    for (let i = 0; i < steps; i++) await e.decode(cache, tokens[context + 1 + i]);
    const stepGpu = (await d.stopGpuTimer())! / steps;
    d.startGpuTimer(true);
    for (let i = 0; i < steps; i++) await e.decode(cache, tokens[context + 1 + i]);
    await d.stopGpuTimer();
    const kernels = kernelTimes(e, steps);
    return {
      context, steps, step_gpu_ms: stepGpu, step_wall_ms: wall, submit_each_layer: chosen, step_wall_ms_other_way: other,
      kernels_gpu_ms: kernels.reduce((s, k) => s + k.us, 0) / 1000, kernels, launches: kernelTimes(e, steps, launchName),
    };
  } finally {
    cache.destroy();
  }
}

/** A timed launch's kernel file (its defines and workgroups folded together). */
const kernelName = (label: string) => label.split(/[|#]/)[0];

/**
 * A timed launch's kind: the kernel, the defines it was built with that are on or have a value (those off left
 * out), and its workgroups: `gemv NORM STAGE TX=1 · 384 workgroups`.
 */
export function launchName(label: string): string {
  const [pipe, groups] = label.split('#');
  const [kernel, ...defines] = pipe.split('|');
  const on = defines.filter((d) => !d.endsWith('=false')).map((d) => d.replace(/=true$/, ''));
  return [kernel, ...on].join(' ') + (groups === undefined ? '' : ` · ${groups} workgroups`);
}

/** The last per-dispatch timing by `name` of its label (the kernel file by default), slowest first; `per` divides (decode steps). */
function kernelTimes(e: Engine, per = 1, name = kernelName): KernelTime[] {
  const byName = new Map<string, KernelTime>();
  for (const [label, t] of e.ops.d.gpuTimeByKernel()) {
    const kernel = name(label);
    const k = byName.get(kernel) ?? { kernel, dispatches: 0, us: 0 };
    k.dispatches += t.passes / per;
    k.us += (t.ms * 1000) / per;
    byName.set(kernel, k);
  }
  return [...byName.values()].sort((x, y) => y.us - x.us);
}

export interface LinkProfile {
  algorithm: string;
  tokens: number;
  recomputed: number;
  /** The link's TTFT and GPU time with every dispatch in a pass of its own (both above a plain link's). */
  ttft_ms: number;
  kernels_gpu_ms: number;
  /** Per kernel over the whole link (dispatches and µs summed). */
  kernels: KernelTime[];
  /** The same by kind of launch (`launchName`): attention with or without key slices, each product's shape. */
  launches?: KernelTime[];
}

/** One link kernel by kernel (after a plain link, so pipelines are built); null without timestamp queries. */
export async function profileLink(e: Engine, parts: LinkPart[], spec: string): Promise<LinkProfile | null> {
  const d = e.ops.d;
  if (!e.gpu.device.features.has('timestamp-query')) return null;
  d.profileEveryTimer = true;
  let r;
  try {
    r = await link(e, parts, parseAlgorithm(spec), { bosId: e.config.bosId });
  } finally {
    d.profileEveryTimer = false;
  }
  r.cache.destroy();
  const kernels = kernelTimes(e);
  return {
    algorithm: spec, tokens: r.layout.tokens.length, recomputed: r.recomputed, ttft_ms: r.ttft.totalMs,
    kernels_gpu_ms: kernels.reduce((s, k) => s + k.us, 0) / 1000, kernels, launches: kernelTimes(e, 1, launchName),
  };
}

/** One line per kernel, for logs. */
export function formatProfile(p: DecodeProfile): string[] {
  const lines = [
    `decode step at ${p.context} tokens: wall ${p.step_wall_ms.toFixed(2)} ms (${p.step_wall_ms_other_way.toFixed(2)} ms ` +
      `${p.submit_each_layer ? 'without' : 'with'} a submission a layer), GPU ${p.step_gpu_ms.toFixed(2)} ms in one pass, ` +
      `kernels alone ${p.kernels_gpu_ms.toFixed(2)} ms (${p.kernels.reduce((s, k) => s + k.dispatches, 0)} dispatches)`,
  ];
  for (const k of p.kernels) lines.push(`  ${k.kernel.padEnd(20)} ${String(k.dispatches).padStart(4)} dispatches ${k.us.toFixed(0).padStart(7)} µs`);
  for (const k of (p.launches ?? []).slice(0, 8)) lines.push(`    ${k.kernel}: ${k.dispatches} × ${(k.us / k.dispatches).toFixed(1)} µs`);
  return lines;
}

/** A link's profile on one line, its kernels after. */
export function formatLinkProfile(p: LinkProfile): string {
  return `${p.algorithm} kernel by kernel (each dispatch in a pass of its own): TTFT ${p.ttft_ms.toFixed(0)} ms, kernels ${p.kernels_gpu_ms.toFixed(1)} ms in ` +
    `${p.kernels.reduce((s, k) => s + k.dispatches, 0)} dispatches, ${p.recomputed}/${p.tokens} rows: ` + p.kernels.slice(0, 6).map((k) => `${k.kernel} ${(k.us / 1000).toFixed(1)} ms`).join(', ');
}
