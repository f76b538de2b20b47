/**
 * The "On a real GPU" section of docs/RESULTS.md, from the GPU kit's runs
 * (docs/results/gpu-*.json, written by `npm run gpu:collect`): parity on the
 * real adapter, prefill and decode of the real-shape models beside PyTorch
 * on the same GPU in the same call, and TTFT of the linking algorithms.
 */
import { appDecodeTokS, type PrefillRow } from '../bench/prefill';
import type { TierPut, TtftRow } from '../bench/ttft';
import type { DecodeProfile, LinkProfile } from '../bench/profile';
import { wayLabel, type DecodeAfterLink, type DecodeWay } from '../bench/fuse';
import { describeBound, type BoundUse } from '../bench/run-tests';
import { mdTable } from './markdown';
import { describeAttentionWay, describeTiledWay, sameTiledWay, type DecodeSettings, type DecodeTuning, type PrefillTuning, type UploadTuning } from '../engine';

type KernelRow = { rows?: string; variant?: string; half?: boolean; wide?: boolean; rowsPerThread?: number; keysPerTile?: number; keysPerThread?: number; tiledLanes?: number; tiledRows?: number; splits?: number | string; T: number; K?: number; N?: number; n?: number; H?: number; HD?: number; ms: number; gflops: number; weightGBps?: number; chosen: boolean; clock?: string };
type EngineRow = PrefillRow & { adapter: string; model: string; weight_bytes: number; weight_dtype: string; weights?: string; profile?: DecodeProfile | string; fuse?: DecodeWay[]; attention?: DecodeWay[]; gemv?: DecodeWay[]; combine?: DecodeWay[]; skipped?: string; error?: string };
type TorchRow = { model: string; tokens: number; tokens_per_s: number; gflops: number; decode_tokens_per_s?: number; skipped?: string; error?: string };
type LinkRow = { model: string; context: number; chunks: number; chunk_tokens: number; tier?: 'host' | 'host-f16' | 'gpu'; kv_dtype?: 'f32' | 'f16'; gpu_rows?: 'f32' | 'f16'; put?: TierPut; submit_each_layer?: boolean; results?: TtftRow[]; ratios?: Record<string, number>; profiles?: LinkProfile[]; decode_after_link?: DecodeAfterLink; skipped?: string; error?: string };
type RealRun = {
  model: string; file: string; bytes: number; parts: number; gather_ms: number; load_ms?: number; check_weight_bytes?: number; profile?: string; half?: boolean; tolerance?: number;
  /** How the speed and links were timed: as the app loads the model. */
  weight_bytes?: number; weight_dtype?: string; kv_dtype?: string;
  /** Its decode tuned as the app's load tunes it, before it was timed (null on CPU adapters). */
  decode_tuning?: DecodeTuning | null;
  upload_tuning?: UploadTuning | null;
  prefill_tuning?: PrefillTuning | null;
  reference: { llama: string; adapter: string; profile: string };
  check?: { prompts: { text: string; answer: string; tokens: number[]; greedy_equal: boolean; max_err: number; min_gap: number }[]; max_err: number; pass: boolean };
  throughput?: (PrefillRow & { decode_share_of_roofline?: number; decode_roofline_tokens_per_s?: number })[];
  link?: { context: number; chunks: number; chunk_tokens: number; tier?: 'host' | 'gpu'; put?: TierPut; results: TtftRow[]; ratios: Record<string, number> }[];
  error?: string;
};
export interface GpuRun {
  command: string;
  kit: {
    started: string; budget_s: number; node: string;
    adapter: { description: string; vendor: string; features: string[]; adapter_features?: string[]; limits: Record<string, number> };
    parity?: { pass: number; fail: number; skipped: number; failed: string[]; files: string[]; bounds?: BoundUse[] };
    copy?: { gbytes_per_s: number; upload?: { block: number; gbytes_per_s: number }[]; upload_mapped?: { block: number; gbytes_per_s: number } };
    matmul?: KernelRow[];
    /** shader-f16's path with Dawn's toggle for NVIDIA (f16-stage.ts). */
    f16?: {
      toggle: string; adapter: string; shader_f16: boolean; parity?: { pass: number; fail: number; skipped: number; failed: string[]; bounds?: BoundUse[] }; matmul?: KernelRow[];
      prefill?: { model: string; tokens: number; f32_ms: number; f16_ms: number; runs: number }[]; skipped?: string; error?: string;
    };
    attention?: KernelRow[];
    engine?: EngineRow[];
    quant?: EngineRow[];
    link?: LinkRow[];
    real?: RealRun;
    /** Decode's kernels tuned as the app tunes them at load (Engine.tuneDecode), per model loaded. */
    tune?: (DecodeTuning & { model: string; quant: string | null })[];
    /** How host rows go up, timed as the app times it at load (Engine.tuneUpload), per model loaded. */
    upload_tune?: (UploadTuning & { model: string })[];
    /** Prefill's attention timed as the app times it at load (Engine.tunePrefill), per model loaded. */
    prefill_tune?: (PrefillTuning & { model: string; quant: string | null })[];
  };
  torch: { device: string; torch: string; transformers: string; copy_gbytes_per_s: number; rows: TorchRow[] } | null;
}

const n0 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(0));
const n1 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(1));
const pc = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : `${(x * 100).toFixed(0)}%`);
const table = mdTable;

/** The issue's three GPU targets, from one run (undefined where the run did not measure it). */
export function gpuTargets(r: GpuRun) {
  const eng = (r.kit.engine ?? []).filter((x) => !x.skipped && !x.error);
  const ours = eng.find((x) => x.model === 'llama-3.2-1b' && x.tokens === 2048);
  const theirs = r.torch?.rows.find((x) => x.model === 'llama-3.2-1b' && x.tokens === 2048 && !x.skipped);
  const dec = eng.find((x) => x.model === 'llama-3.2-1b' && x.decode_tokens_per_s);
  // The roofline uses the GPU's best measured copy rate (PyTorch's, in the same call) and the weight bytes. A run
  // without PyTorch has only WebGPU's own copy rate, far below what the memory can do: no verdict from that alone.
  const bw = r.torch?.copy_gbytes_per_s ? Math.max(r.torch.copy_gbytes_per_s, r.kit.copy?.gbytes_per_s ?? 0) : 0;
  const roof = dec && bw ? (bw * 1e9) / dec.weight_bytes : undefined;
  const roofWebGpu = dec && r.kit.copy ? (r.kit.copy.gbytes_per_s * 1e9) / dec.weight_bytes : undefined;
  const at32k = (tier: 'host' | 'host-f16' | 'gpu') => (r.kit.link ?? []).find((x) => x.context === 32768 && (x.tier ?? 'host') === tier && x.ratios)?.ratios;
  const link = (tier: 'host' | 'host-f16' | 'gpu') => at32k(tier)?.['full/legolink:16'];
  // naive recomputes the question alone: TTFT(full) / TTFT(naive) is what no algorithm reusing the same caches from
  // the same tier can beat on this machine (from host memory, the upload bounds it).
  const ceiling = (tier: 'host' | 'host-f16' | 'gpu') => {
    const x = at32k(tier);
    return x?.['full/legolink:16'] && x['naive/legolink:16'] ? x['full/legolink:16'] / x['naive/legolink:16'] : undefined;
  };
  return {
    prefill: ours && theirs ? ours.tokens_per_s / theirs.tokens_per_s : undefined,
    decode: dec && roof ? appDecodeTokS(dec)! / roof : undefined,
    roofline: roof,
    decodeWebGpu: dec && roofWebGpu ? appDecodeTokS(dec)! / roofWebGpu : undefined,
    rooflineWebGpu: roofWebGpu,
    link32k: link('host'),
    link32kHalves: link('host-f16'),
    link32kGpu: link('gpu'),
    ceiling32k: ceiling('host'),
    ceiling32kHalves: ceiling('host-f16'),
    ceiling32kGpu: ceiling('gpu'),
  };
}

type GpuRunFile = { file: string; r: GpuRun };

const ABOUT_KIT = '`npm run gpu:kit` builds a bundle (Node, Dawn, the engine and tests as plain JS) that runs on a lent GPU machine with `bash scripts/gpu-check.sh` (scripts/gpu/README.md). The models are of real shape with random f16 weights (`src/bench/shapes.json`); PyTorch runs the same shapes in float32 with TF32 off and SDPA attention, on the same GPU in the same call. LegoKV stores weights as packed f16 and computes in f32.';

/** The page every GPU run is written out on in full (RESULTS.md keeps the targets of each and the newest in full). */
export const GPU_RUNS_PAGE = 'GPU-RUNS.md';

/** Whether RESULTS.md shows the runs' targets and the newest run, with every run in full on GPU_RUNS_PAGE (more than one run). */
export const hasRunsPage = (runs: readonly unknown[]) => runs.length > 1;

/** The runs in the order they started (file names need not sort so: gpu-h100-10 after gpu-h100-9). */
const byStart = (runs: GpuRunFile[]) => [...runs].sort((a, b) => a.r.kit.started.localeCompare(b.r.kit.started));

/**
 * RESULTS.md's section: the issue's targets as each run measured them, oldest first, then the newest run in full,
 * and where the others are in full (GPU_RUNS_PAGE, gpuRunsPage).
 */
export function gpuSection(runs: GpuRunFile[]): string {
  if (!runs.length) return '';
  const ordered = byStart(runs);
  const last = ordered[ordered.length - 1];
  const lines: string[] = ['## On a real GPU (the GPU kit)', '', ABOUT_KIT, ''];
  if (hasRunsPage(runs)) {
    lines.push(...history(ordered), '');
    lines.push(`The newest run in full below; every run's tables, oldest first, are in [${GPU_RUNS_PAGE}](${GPU_RUNS_PAGE}).`, '');
  }
  lines.push(...runDetails(last.file, last.r));
  return lines.join('\n');
}

/** GPU_RUNS_PAGE: every run in full, oldest first. */
export function gpuRunsPage(runs: GpuRunFile[]): string {
  const lines = ['# Every run of the GPU kit', '', '<!-- Generated by `npm run results` from docs/results/gpu-*.json; do not edit by hand. -->', '', ABOUT_KIT, ''];
  lines.push('The issue\'s targets run by run are in [RESULTS.md](RESULTS.md#on-a-real-gpu-the-gpu-kit).', '');
  for (const { file, r } of byStart(runs)) lines.push(...runDetails(file, r));
  return lines.join('\n').replace(/\n{3,}/g, '\n\n');
}

/** The targets of each run, oldest first, with the kit's commit where its command names it. */
function history(runs: GpuRunFile[]): string[] {
  return ['The GPU issue\'s targets, run by run (each run\'s own table says how it measured them; – where a run did not):', '',
    table(['run', 'date', 'kit at', 'GPU', 'prefill llama-3.2-1b @2048 / PyTorch (≥ 40%)', 'decode llama-3.2-1b / roofline (≥ 50%)', 'TTFT(full) / TTFT(legolink:16) @32K: host f32 / host f16 / GPU tier (≥ 20)'], runs.map(({ file, r }) => {
      const g = gpuTargets(r);
      return [`\`${file}\``, r.kit.started.slice(0, 10), /\(kit at ([0-9a-f]{7,40})\)/.exec(r.command)?.[1] ?? '–', r.torch?.device ?? r.kit.adapter.description,
        pc(g.prefill), g.decode === undefined ? '–' : `${pc(g.decode)} of ${n0(g.roofline)} tok/s`, `${n1(g.link32k)} / ${n1(g.link32kHalves)} / ${n1(g.link32kGpu)}`];
    }))];
}

/** One run's tables, under a heading of its own. */
function runDetails(file: string, r: GpuRun): string[] {
  const lines: string[] = [];
  const k = r.kit, t = r.torch;
  lines.push(`### ${k.adapter.description} · ${k.started.slice(0, 10)} · \`${file}\``, '');
  lines.push(`\`${r.command}\` · adapter **${k.adapter.description}** (vendor ${k.adapter.vendor || '?'}; ${k.adapter.adapter_features ? `adapter features ${k.adapter.adapter_features.join(', ')}; shader-f16 ${k.adapter.adapter_features.includes('shader-f16') ? 'offered' : 'not offered'}` : `features ${k.adapter.features.join(', ') || 'none'}`}; max storage binding ${n0(k.adapter.limits.maxStorageBufferBindingSize / 2 ** 20)} MiB) · Node ${k.node}` +
    (t ? ` · PyTorch ${t.torch} with transformers ${t.transformers} on **${t.device}**` : ' · no PyTorch reference in this run'), '');
  if (k.parity) {
    lines.push(`Parity tests on this adapter (${k.parity.files.join(', ')}): **${k.parity.pass} passed, ${k.parity.fail} failed**` +
      (k.parity.failed.length ? ` (${k.parity.failed.join('; ')})` : '') + '.', '');
    if (k.parity.bounds?.length) lines.push(boundsLine(k.parity.bounds), '');
  }
  if (k.copy) lines.push(`Copy bandwidth (bytes read + written): WebGPU \`copyBufferToBuffer\` ${n0(k.copy.gbytes_per_s)} GB/s` + (t ? `; PyTorch \`copy_\` ${n0(t.copy_gbytes_per_s)} GB/s.` : '.') +
    (k.copy.upload?.length ? ` Host to GPU through \`writeBuffer\` (what a link's host-tier load does): ${k.copy.upload.map((u) => `${n0(u.block / 1024)} KiB blocks ${u.gbytes_per_s.toFixed(1)} GB/s`).join(', ')}.` : '') +
    (k.copy.upload_mapped ? ` Through two mapped staging buffers taking turns, ${n0(k.copy.upload_mapped.block / 1024)} KiB each: ${k.copy.upload_mapped.gbytes_per_s.toFixed(1)} GB/s.` : ''), '');
  if (k.real) lines.push(...realModel(k.real, k.copy?.gbytes_per_s));
  const clocked = [...(k.matmul ?? []), ...(k.attention ?? [])].filter((x) => x.ms);
  if (clocked.length && !clocked.some((x) => x.clock)) {
    lines.push('These kernel timings are wall-clock slopes between two repetition counts. Submission and read-back jitter was as large as the work, so single figures can be off by several times (rows faster than the GPU can compute are left out); later runs time kernels with GPU timestamps.', '');
  }
  // A kernel cannot beat the adapter's peak: such a row timed refused work (a validation error) or jitter.
  const plausible = (x: KernelRow) => !!x.ms && x.gflops < PEAK_GFLOPS;
  const mm = (k.matmul ?? []).filter(plausible);
  if (mm.length) {
    lines.push('Each matmul kernel alone on the products of a Llama-3.2-1B layer (f16 weights; *chosen* is what the engine picks for that shape):', '');
    lines.push(table(['variant', '[T×K]·[K×N]', 'ms', 'GFLOP/s', 'weights GB/s', 'chosen'], mm.map((x) => [`${x.variant!}${x.half ? ' (f16 math)' : ''}${x.wide ? ' (16-byte loads)' : ''}`, `[${x.T}×${x.K}]·[${x.K}×${x.N}]`, x.ms.toFixed(3), n0(x.gflops), n0(x.weightGBps), x.chosen ? 'yes' : ''])), '');
  }
  if (k.f16) lines.push(...f16Lines(k.f16, plausible));
  const at = (k.attention ?? []).filter(plausible);
  if (at.length) {
    lines.push('The attention kernels alone, every query row seeing every key except in rows marked *linked* (the rows legolink:16 recomputes over those keys in 512-token chunks, each seeing the keys up to its own position; GFLOP/s counts the keys seen) (*rows*: attention.wgsl, rows per invocation; *tiled*: attention_tiled.wgsl, or attention_tiled_sg.wgsl where R lanes a row group share R rows; *keys*: attention_decode.wgsl, a workgroup per row; *lanes*: the same with each invocation walking keys of its own; *grouped*: attention_grouped.wgsl, lanes for all the q heads of a kv head in one workgroup; *grouped-keys*: attention_decode.wgsl in rounds for all the q heads of a kv head in one workgroup; key slices; *chosen* is what this run\'s engine picked):', '');
    // Runs before attention_tiled have no variant: theirs is attention.wgsl ('rows').
    const kernel = (x: KernelRow) => (x.variant === 'tiled' ? `tiled${x.keysPerTile ? ` (${x.keysPerTile} keys a tile${x.tiledLanes ? `, ${x.tiledLanes} lanes ${x.tiledRows === 1 ? 'a row' : 'sharing rows'}` : ''})` : ''}` : x.variant === 'keys' || x.variant === 'grouped-keys' ? `${x.variant}${x.keysPerThread ? ` (${x.keysPerThread} a thread)` : ''}` : x.variant === 'lanes' ? 'lanes' : x.variant === 'grouped' ? 'grouped' : 'rows');
    lines.push(table(['T × keys', 'heads × dim', 'kernel', 'rows a thread', 'slices', 'ms', 'GFLOP/s', 'chosen'], at.map((x) => [`${x.T} × ${x.n}${x.rows === 'linked' ? ' linked' : ''}`, `${x.H} × ${x.HD}`, kernel(x), x.rowsPerThread!, String(x.splits), x.ms.toFixed(3), n0(x.gflops), x.chosen ? 'yes' : ''])), '');
  }
  const eng = k.engine ?? [];
  const torchRow = (m: string, n: number) => t?.rows.find((x) => x.model === m && x.tokens === n && !x.skipped && !x.error);
  if (eng.some((x) => x.tokens)) lines.push('Prefill (tokens/s; GFLOP/s counts matmuls and attention):', '', table(['model', 'tokens', 'LegoKV tok/s', 'LegoKV GFLOP/s', 'PyTorch tok/s', 'PyTorch GFLOP/s', 'LegoKV / PyTorch'], eng.filter((x) => x.tokens).map((x) => {
    const p = torchRow(x.model, x.tokens);
    return [x.model, x.tokens, n0(x.tokens_per_s), n0(x.gflops), n0(p?.tokens_per_s), n0(p?.gflops), pc(p ? x.tokens_per_s / p.tokens_per_s : undefined)];
  })), '');
  const bw = Math.max(t?.copy_gbytes_per_s ?? 0, k.copy?.gbytes_per_s ?? 0);
  const rate = t ? `the GPU's best measured copy rate, ${n0(bw)} GB/s` : `WebGPU's own copy rate, ${n0(bw)} GB/s (this run had no PyTorch to measure what the memory can do)`;
  if (eng.some((x) => x.decode_tokens_per_s)) lines.push(`Decode (tokens/s after a ${eng.find((x) => x.decode_context)?.decode_context ?? '?'}-token prefill; the roofline is ${rate}, over the weight bytes one step reads; greedy decode, the token picked on the GPU: *step by step* reads each step's token before recording the next, except in runs without a "reading logits" figure, which read every step's logits back as that column does; *recorded ahead* lets the GPU feed each token to the next step while the host records steps ahead of it, which the app's decode loop does on this adapter, each step replayed from an earlier one's launches where they are the same (*unreplayed*: every step recorded anew, as before replay); LegoKV / roofline takes the app's way):`, '', table(['model', 'weights', 'step by step tok/s', 'recorded ahead tok/s', 'reading logits tok/s', 'GPU busy / wall per step (ms)', 'host records a step (ms)', 'roofline tok/s', 'LegoKV / roofline', 'PyTorch tok/s'], eng.filter((x) => x.decode_tokens_per_s).map((x) => {
    const roof = bw ? (bw * 1e9) / x.weight_bytes : undefined;
    const busy = x.decode_gpu_ms === undefined ? '–' : `${x.decode_gpu_ms.toFixed(1)} / ${(1000 / x.decode_tokens_per_s!).toFixed(1)}`;
    const unreplayed = (v: number | undefined, f: (v: number) => string) => (v === undefined ? '' : `; ${f(v)} unreplayed`);
    return [x.model, `${n0(x.weight_bytes / 2 ** 20)} MiB ${x.weight_dtype}`, n1(x.decode_tokens_per_s), `${n1(x.decode_ahead_tokens_per_s)}${unreplayed(x.decode_unreplayed_tokens_per_s, n1)}`, n1(x.decode_logits_tokens_per_s), busy, x.decode_record_ms === undefined ? '–' : `${x.decode_record_ms.toFixed(2)}${x.decode_submit_ms === undefined ? '' : ` (${x.decode_submit_ms.toFixed(2)} submitting)`}${unreplayed(x.decode_unreplayed_record_ms, (v) => v.toFixed(2))}`, n0(roof), pc(roof ? appDecodeTokS(x)! / roof : undefined), n1(t?.rows.find((p) => p.model === x.model && p.decode_tokens_per_s)?.decode_tokens_per_s)];
  })), '');
  const real = k.real?.decode_tuning ? [{ ...k.real.decode_tuning, model: k.real.model, quant: `GGUF, ${k.real.weight_dtype ?? '?'}` }] : [];
  lines.push(...tuning([...(k.tune ?? []), ...real]));
  const ups = [...(k.upload_tune ?? []), ...(k.real?.upload_tuning ? [{ ...k.real.upload_tuning, model: k.real.model }] : [])];
  if (ups.length) lines.push('Host-to-GPU uploads timed as the app times them when it loads a model (Engine.tuneUpload: 32 MiB in 256 KiB pieces each way, the fastest of 3 runs; mapped staging kept only when over 10% faster; the links below bring host rows the way kept):', '', table(['model', 'writeBuffer GB/s', 'mapped staging GB/s', 'kept'], ups.map((u) => [u.model, n1(u.gbPerS.write), n1(u.gbPerS.mapped), u.chosen === 'mapped' ? 'mapped staging' : 'writeBuffer'])), '');
  const pre = [...(k.prefill_tune ?? []), ...(k.real?.prefill_tuning ? [{ ...k.real.prefill_tuning, model: k.real.model }] : [])];
  if (pre.length) lines.push(`Prefill's attention timed as the app times it when it loads a model (Engine.tunePrefill: a layer's attention for ${pre[0].rows} rows over ${pre[0].keys} keys each way, µs, the fastest of 3 runs in turns; a way kept only when over 3% faster than the first, and timed only where its output agrees with the first's on the GPU):`, '', table(['model', 'way', 'µs', 'kept'], pre.flatMap((x) => x.ways.map((w) => [x.model, describeTiledWay(w), w.error ? `not timed: ${w.error}` : n0(w.us), sameTiledWay(w, x.chosen) ? 'yes' : '']))), '');
  lines.push(...quantAndProfiles(k.quant ?? [], eng, bw));
  const notes = [...eng.filter((x) => x.skipped || x.error), ...(t?.rows ?? []).filter((x) => x.skipped || x.error)];
  for (const x of notes) lines.push(`- ${x.model}: ${x.skipped ?? x.error}`);
  if (notes.length) lines.push('');
  for (const l of k.link ?? []) {
    if (!l.results) {
      lines.push(`- TTFT at ${l.context} tokens, ${l.model}: ${l.skipped ?? l.error}`, '');
      continue;
    }
    const where = (l.tier === 'gpu' ? `resident on the GPU${l.gpu_rows === 'f16' ? ' as halves' : ''}${putText(l.put)}, as KVStore\'s GPU tier keeps hot chunks; full recompute reads no cached row, so its time is the host run\'s`
      : l.tier === 'host-f16' ? 'kept in host memory as halves, as KVStore\'s f16 blobs hold them, uploaded at link time and widened on the GPU; full recompute\'s time is the host run\'s'
      : `kept in host memory${l.kv_dtype ? ' as f32' : ''}, uploaded at link time${l.kv_dtype ? `; the linked cache keeps ${l.kv_dtype} keys and values` : ''}`) +
      (l.submit_each_layer === undefined ? '' : l.submit_each_layer ? '; work submitted after each layer' : '; each pass submitted whole');
    // Kits since the host's recording times were kept say how much of the recompute the host spent recording it.
    const host = l.results.some((x) => x.recordMs !== undefined);
    lines.push(`TTFT at ${l.context} tokens in ${l.chunks} chunks of ${l.chunk_tokens}, ${l.model} (ms; chunks compiled ahead and ${where}` +
      (host ? '; *host*: of the recompute, the host\'s time laying the parts out and making the working cache, recording the launches layer by layer and submitting them, and waiting for room to upload host rows; then the whole link\'s time in WebGPU\'s finish and submit, and its submissions' : '') + '):', '');
    lines.push(table(['algorithm', 'TTFT', 'load', 'recompute', 'first token', 'GPU busy', ...(host ? ['host: cache / recording / waiting; finish + submit (submissions)'] : []), 'recomputed rows', '× legolink:16'], l.results.map((x) => [
      x.algorithm, n0(x.totalMs), n0(x.loadMs), n0(x.recomputeMs), n0(x.firstTokenMs), n0(x.gpuMs ?? undefined),
      ...(host ? [x.recordMs === undefined ? '–' : `${n0(x.cacheMs)} / ${n0(x.recordMs)} / ${n0(x.waitMs)}; ${n0(x.submitMs)} (${x.submits})`] : []),
      `${x.recomputed} / ${x.tokens}`, n1(l.ratios?.[`${x.algorithm}/legolink:16`] ?? (x.algorithm === 'legolink:16' ? 1 : undefined)),
    ])), '');
    if (l.profiles?.length) {
      lines.push(`Where those links' GPU time goes, kernel by kernel (${l.context} tokens; GPU timestamps, each dispatch in a pass of its own, so both times run above the plain links'; legolink:16 from the GPU tier):`, '');
      lines.push(table(['algorithm', 'TTFT ms', 'kernels ms', 'dispatches', 'where the kernels\' time goes (ms)'], l.profiles.map((p) => [
        p.algorithm, n0(p.ttft_ms), n1(p.kernels_gpu_ms), n0(p.kernels.reduce((s, k) => s + k.dispatches, 0)), p.kernels.slice(0, 5).map((k) => `${k.kernel} ${n1(k.us / 1000)}`).join(', '),
      ])), '');
    }
    const dl = l.decode_after_link;
    if (dl) {
      lines.push(`Then the answer: decode on ${dl.algorithm}'s linked cache (${dl.context} rows, from the GPU tier), with each kernel that attends for a step's row (*keys*: attention_decode.wgsl in rounds; *lanes*: the same, each invocation walking keys of its own; *grouped*: attention_grouped.wgsl, lanes for a kv head's q heads in one workgroup; *grouped-keys*: attention_decode.wgsl in rounds for a kv head's q heads in one workgroup; *rows*: attention.wgsl; each step's logits read back; *chosen* is the way the engine decodes here):`, '');
      lines.push(table(['attention', 'tok/s', 'wall ms', 'GPU ms', 'dispatches', 'chosen'], dl.ways.map((w) => [
        String(w.attention), n1(w.decode_tokens_per_s), w.decode_wall_ms.toFixed(2), w.decode_gpu_ms === undefined ? '–' : w.decode_gpu_ms.toFixed(2), n0(w.dispatches_per_step), w.chosen ? 'yes' : '',
      ])), '');
    }
  }
  const g = gpuTargets(r);
  lines.push('The GPU issue\'s targets, from this run (*ceiling*, for the TTFT ratios: TTFT(full) / TTFT(naive), since naive recomputes the question alone, no algorithm that reuses the same caches from the same place does better here; from host memory the upload bounds it):', '');
  const ttftRow = (where: string, x: number | undefined, ceil: number | undefined) => [`TTFT(full) / TTFT(legolink:16) at 32K tokens, ${where}`, n1(x), '≥ 20', x === undefined ? '–' : x >= 20 ? 'yes' : 'no', n1(ceil)];
  lines.push(table(['target', 'measured', 'goal', 'met', 'ceiling'], [
    ['Prefill of llama-3.2-1b at 2048 tokens, against PyTorch fp32', pc(g.prefill), '≥ 40%', g.prefill === undefined ? '–' : g.prefill >= 0.4 ? 'yes' : 'no', ''],
    ['Decode of llama-3.2-1b, against its roofline', `${pc(g.decode)} of ${n0(g.roofline)} tok/s`, '≥ 50%', g.decode === undefined ? '–' : g.decode >= 0.5 ? 'yes' : 'no', ''],
    ['(the same, against the roofline of WebGPU\'s own copy rate, which is lower)', `${pc(g.decodeWebGpu)} of ${n0(g.rooflineWebGpu)} tok/s`, '', '', ''],
    ttftRow('chunks in host memory', g.link32k, g.ceiling32k),
    ...(g.link32kHalves === undefined ? [] : [ttftRow('chunks in host memory as f16', g.link32kHalves, g.ceiling32kHalves)]),
    ttftRow('chunks on the GPU', g.link32kGpu, g.ceiling32kGpu),
  ]), '');
  return lines;
}

/** What tuning decode's kernels at load measured and kept, per model (runs before tuning have none). */
function tuning(rows: NonNullable<GpuRun['kit']['tune']>): string[] {
  if (!rows.length) return [];
  const way = (x: DecodeSettings) => wayLabel({ fused: x.fuse, attention: x.attention, gemv: x.gemv, keysPerThread: x.keysPerThread, foldCombine: x.foldCombine, stageX: x.stageX, gemvWide: x.wide });
  const t0 = rows[0];
  return [
    `Decode's kernels tuned as the app tunes them when it loads a model (Engine.tuneDecode: greedy steps recorded ahead after ${t0.context} cached rows, the fastest of ${t0.reps} or more runs of ${t0.steps} steps a way; the defaults first, an alternative kept only when over 3% faster; from gpu-h100-8 on, after the defaults ran untimed for 300 ms, each alternative timed in turns with the best so far; the kit's decode figures above and below use the way kept):`, '',
    table(['model', 'weights', 'way', 'wall ms a step', 'kept', 'tuning took (s)'], rows.flatMap((r) => r.trials.map((x, i) => [
      r.model, r.quant ?? 'f16', `${way(x.settings)}${i === 0 ? ' (the defaults)' : ''}`, x.msPerStep.toFixed(2), way(x.settings) === way(r.chosen) ? 'yes' : '', i === 0 ? (r.ms / 1000).toFixed(1) : '',
    ]))), '',
    ...longSpans(rows),
  ];
}

/** The last stage of that tuning: attention alone over a short and a long span, and the long spans' kernel kept (runs before it have none). */
function longSpans(rows: NonNullable<GpuRun['kit']['tune']>): string[] {
  const timed = rows.filter((r) => r.long);
  if (!timed.length) return [];
  const l0 = timed[0].long!;
  return [
    `Then attention alone, each kernel that can attend for a decode row, over the ${l0.short} keys the steps scanned and over ${l0.long} (µs a layer, attention_combine included where it slices; the fastest of ${timed[0].reps} runs taken in turns; the short spans' kernel first). The long span's fastest is kept for rows scanning from *from* keys on, where it beats the short spans' kernel there by over 3% (from where their times, linear in the keys, cross):`, '',
    table(['model', 'weights', 'kernel', `µs over ${l0.short} keys`, `µs over ${l0.long} keys`, 'kept for long spans', 'from'], timed.flatMap((r) => r.long!.ways.map((w, i) => {
      const kept = r.long!.chosen && w.attention === r.long!.chosen.attention && w.keysPerThread === r.long!.chosen.keysPerThread;
      return [r.model, r.quant ?? 'f16', `${describeAttentionWay(w)}${i === 0 ? ' (the short spans\')' : ''}`, w.usShort.toFixed(1), w.usLong.toFixed(1), kept ? 'yes' : '', kept ? String(r.long!.chosen!.from) : ''];
    }))), '',
  ];
}

/** A real GGUF on the GPU (the kit's real stage): its check against llama.cpp and this machine, its speed, its links. */
function realModel(x: RealRun, copyGBps: number | undefined): string[] {
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
  // Refused before it loaded (a part missing or corrupt): the reason alone.
  if (!x.file) return [`- the real model's stage failed: ${x.error?.split('\n')[0]}`, ''];
  const out = [`A real model on this GPU: **${x.model}** (\`${x.file}\`, ${mib(x.bytes)}, carried in ${x.parts} parts over as many device calls, joined and verified by its sha256 there in ${(x.gather_ms / 1000).toFixed(1)} s)` +
    (x.load_ms === undefined ? '.' : `, loaded in ${(x.load_ms / 1000).toFixed(1)} s with its quantized matrices kept packed on the GPU (${mib(x.check_weight_bytes!)} of weights; ${x.profile} kernel profile).`), ''];
  if (x.error) out.push(`- the real model's stage failed: ${x.error.split('\n')[0]}`, '');
  if (x.check) {
    out.push(`Fed each prompt and its greedy continuation by ${x.reference.llama}: the token this GPU picks at each step against llama.cpp's, and its logits against those taken on ${x.reference.adapter} (${x.reference.profile} profile; max |Δ log-softmax| over the range, tolerance ${x.tolerance}${x.half ? ', the GPU\'s tiled products taking f16 slices' : ', f32 math on both'}):`, '');
    out.push(table(['prompt', 'answer on this GPU', 'llama.cpp\'s tokens', 'max error', 'smallest top-2 gap'], x.check.prompts.map((p) => [
      JSON.stringify(p.text.replace(/<[^>]*>/g, ' ').replace(/\s+/g, ' ').trim()), JSON.stringify(p.answer), p.greedy_equal ? `all ${p.tokens.length} equal` : 'differ', p.max_err.toExponential(1), p.min_gap.toFixed(2),
    ])), '');
  }
  const tp = (x.throughput ?? []).filter((r) => r.tokens);
  if (tp.length) {
    const d = tp.find((r) => r.decode_tokens_per_s);
    out.push(`Its speed, loaded as the app loads it (${mib(x.weight_bytes!)} of weights, ${x.weight_dtype} where not packed; ${x.kv_dtype} keys and values): prefill ${tp.map((r) => `${n0(r.tokens_per_s)} tok/s at ${r.tokens}`).join(', ')}` + (d ? `; decode ${n1(appDecodeTokS(d))} tok/s after ${d.decode_context}${d.decode_ahead_tokens_per_s ? ` as the app decodes (${n1(d.decode_tokens_per_s)} step by step, ${n1(d.decode_ahead_tokens_per_s)} with steps recorded ahead)` : ''}` +
      (d.decode_share_of_roofline === undefined ? '' : `, ${pc(d.decode_share_of_roofline)} of the ${n0(d.decode_roofline_tokens_per_s)} tok/s that its weight bytes allow at WebGPU's copy rate (${n0(copyGBps)} GB/s)`) : '') + '.', '');
  }
  for (const l of x.link ?? []) {
    const where = l.tier === 'gpu' ? `resident on the GPU${putText(l.put)}, as the app keeps the chunks it compiles; full recompute's time is the host run's` : 'kept in host memory';
    out.push(`Its TTFT at ${l.context} tokens in ${l.chunks} chunks of about ${l.chunk_tokens} (ms; loaded as above, chunks compiled ahead and ${where}):`, '');
    out.push(table(['algorithm', 'TTFT', 'load', 'recompute', 'first token', 'recomputed rows', '× legolink:16'], l.results.map((r) => [
      r.algorithm, n0(r.totalMs), n0(r.loadMs), n0(r.recomputeMs), n0(r.firstTokenMs), `${r.recomputed} / ${r.tokens}`, n1(l.ratios[`${r.algorithm}/legolink:16`] ?? (r.algorithm === 'legolink:16' ? 1 : undefined)),
    ])), '');
    const ratio = l.ratios['full/legolink:16'];
    if (ratio !== undefined && !l.results.some((r) => r.algorithm === 'full')) out.push(`TTFT(full), timed from host memory above, over TTFT(legolink:16) from here: ${n1(ratio)}.`, '');
  }
  return out;
}

/** How long putting a link's chunks on the GPU tier took, as the app puts a chunk it compiles (kits since Engine.upload). */
function putText(put: TierPut | undefined): string {
  return put ? ` (put there as the app puts a chunk it compiles, ${n0(put.ms)} ms for ${n0(put.bytes / 2 ** 20)} MiB: ${n1(put.bytes / put.ms / 1e6)} GB/s by ${put.way === 'mapped' ? 'mapped staging' : 'writeBuffer'})` : '';
}

/** An H100's f32 peak without tensor cores is about 67 TFLOP/s; no kernel of ours can time faster than this. */
const PEAK_GFLOPS = 100_000;

/** The quant stage's table (f16 against packed quantized weights) and every decode profile of the run. */
function quantAndProfiles(quant: EngineRow[], eng: EngineRow[], bw: number): string[] {
  const lines: string[] = [];
  const q = quant.filter((x) => x.tokens);
  if (q.length) {
    lines.push(`One model with f16 and with packed quantized weights (dequantized in registers by the matmul and GEMV kernels; the roofline is ${n0(bw)} GB/s over the weight bytes):`, '');
    const byType = new Map<string, EngineRow[]>();
    for (const x of q) byType.set(x.weights ?? x.weight_dtype, [...(byType.get(x.weights ?? x.weight_dtype) ?? []), x]);
    lines.push(table(['model', 'weights', 'bytes', 'prefill tok/s', 'decode tok/s', 'GPU busy / wall per step (ms)', 'decode / roofline'], [...byType].map(([type, rows]) => {
      const d = rows.find((x) => x.decode_tokens_per_s);
      const roof = bw && d ? (bw * 1e9) / d.weight_bytes : undefined;
      return [rows[0].model, type, `${n0(rows[0].weight_bytes / 2 ** 20)} MiB`, rows.map((x) => `${n0(x.tokens_per_s)} at ${x.tokens}`).join(', '), n1(d && appDecodeTokS(d)),
        d?.decode_gpu_ms === undefined ? '–' : `${d.decode_gpu_ms.toFixed(1)} / ${(1000 / d.decode_tokens_per_s!).toFixed(1)}`, pc(roof ? appDecodeTokS(d!)! / roof : undefined)];
    })), '');
  }
  const profiles = [...eng, ...quant].filter((x): x is EngineRow & { profile: DecodeProfile } => typeof x.profile === 'object');
  if (profiles.length) {
    lines.push('One decode step kernel by kernel (GPU timestamps; each dispatch in a pass of its own for the per-kernel times, all in one pass for the step\'s GPU time; wall both with and without a submission after each layer):', '');
    lines.push(table(['model', 'weights', 'wall ms', 'wall ms, other way', 'GPU ms (one pass)', 'kernels alone ms', 'dispatches', 'where the kernels\' time goes (µs)'], profiles.map((x) => {
      const p = x.profile;
      return [x.model, x.weights ?? x.weight_dtype, `${p.step_wall_ms.toFixed(2)} (${p.submit_each_layer ? 'a submission a layer' : 'one submission'})`, p.step_wall_ms_other_way.toFixed(2),
        p.step_gpu_ms.toFixed(2), p.kernels_gpu_ms.toFixed(2), n0(p.kernels.reduce((s, k) => s + k.dispatches, 0)), p.kernels.slice(0, 4).map((k) => `${k.kernel} ${n0(k.us)}`).join(', ')];
    })), '');
    for (const x of profiles.filter((y) => y.profile.launches?.length)) {
      lines.push(`The same step of ${x.model} (${x.weights ?? x.weight_dtype}) launch by launch, the slowest kinds (a kernel, the defines it was built with, its workgroups):`, '');
      lines.push(table(['launch', 'a step', 'µs a step', 'µs a launch'], x.profile.launches!.slice(0, 10).map((k) => [k.kernel, n0(k.dispatches), n0(k.us), n1(k.us / k.dispatches)])), '');
    }
  }
  const ways = [...eng, ...quant].flatMap((x) => [...(x.fuse ?? []), ...(x.attention ?? []), ...(x.gemv ?? []), ...(x.combine ?? [])].map((w) => ({ x, w })));
  if (ways.length) {
    const combine = (ways.some(({ w }) => w.foldCombine !== undefined) ? '*attention_combine launched*: key slices merged by that launch instead of in the output projection; ' : '') +
      (ways.some(({ w }) => w.stageX !== undefined) ? '*x staged*: the GEMVs\' input (normed, or the GLU\'s) worked out once a workgroup in workgroup memory; ' : '') +
      (ways.some(({ w }) => w.gemvWide !== undefined) ? '*16-byte loads*: gemv reading f16 weights 16 bytes a load instead of 8; ' : '');
    lines.push(`Decode each way, side by side on one model and cache (*fused*: RMSNorm and GLU folded into the GEMVs; *attention*: attention_decode.wgsl, \`keys\` (in rounds) or \`lanes\` (each invocation its own keys), attention_grouped.wgsl, \`grouped\` (lanes for a kv head's q heads in one workgroup), attention_decode.wgsl for them in rounds, \`grouped-keys\`, or attention.wgsl, \`rows\`; *gemv_sg* or *gemv*: gemv.wgsl summing with subgroup operations or in workgroup memory; ${combine}*chosen* is the way the engine decodes here, after tuning where the run tuned):`, '');
    lines.push(table(['model', 'weights', 'way', 'tok/s', 'wall ms', 'GPU ms', 'dispatches', 'chosen'], ways.map(({ x, w }) => [
      x.model, x.weights ?? x.weight_dtype, wayLabel(w),
      n1(w.decode_tokens_per_s), w.decode_wall_ms.toFixed(2), w.decode_gpu_ms === undefined ? '–' : w.decode_gpu_ms.toFixed(2), n0(w.dispatches_per_step), w.chosen ? 'yes' : '',
    ])), '');
  }
  return lines;
}

/** The f16 stage: shader-f16 asked for with Dawn's toggle, the f16 kernels' tests, and the tiled products both ways. */
function f16Lines(f: NonNullable<GpuRun['kit']['f16']>, plausible: (x: KernelRow) => boolean): string[] {
  const head = `With Dawn's toggle \`${f.toggle}\` (Dawn offers \`shader-f16\` on NVIDIA's Vulkan driver only with it), ${f.adapter} ${f.shader_f16 ? 'offers' : 'still offers no'} \`shader-f16\``;
  const p = f.parity;
  const tests = p ? `; the f16 path's tests (half-kernels.test): **${p.pass} passed, ${p.fail} failed**${p.failed.length ? ` (${p.failed.join('; ')})` : ''}` : '';
  const out = [`${head}${tests}${f.skipped ? `; ${f.skipped}` : ''}${f.error ? `; the timings failed: ${f.error.split('\n')[0]}` : ''}.`, ''];
  if (p?.bounds?.length) out.push(boundsLine(p.bounds), '');
  for (const p of f.prefill ?? []) {
    out.push(`${p.model}'s prefill of ${p.tokens} tokens (random weights; the fastest of ${p.runs} runs each, taken in turns): ${n1(p.f32_ms)} ms with f32 math, ${n1(p.f16_ms)} ms with f16 math, **${(p.f32_ms / p.f16_ms).toFixed(2)}×** the speed.`, '');
  }
  const rows = (f.matmul ?? []).filter(plausible);
  if (!rows.length) return out;
  // Each tiled kernel's f32-math row beside its f16-math row, one line per kernel and product.
  const key = (x: KernelRow) => `${x.variant} ${x.T} ${x.K} ${x.N}`;
  const f32 = new Map(rows.filter((x) => !x.half).map((x) => [key(x), x]));
  out.push('The tiled products of a layer of that model at 2048 tokens, with f16 math (kernels/matmul_half.wgsl) and with f32 math, side by side:', '');
  out.push(table(['variant', '[T×K]·[K×N]', 'f32 math ms', 'f16 math ms', 'f16 math GFLOP/s', 'f16 / f32 speed'], rows.filter((x) => x.half).map((x) => {
    const w = f32.get(key(x));
    return [x.variant!, `[${x.T}×${x.K}]·[${x.K}×${x.N}]`, w ? w.ms.toFixed(3) : '–', x.ms.toFixed(3), n0(x.gflops), w ? `${(w.ms / x.ms).toFixed(2)}×` : '–'];
  })), '');
  return out;
}

/**
 * The parity bounds against this adapter's error: the three closest calls (their share of the bound), and how many
 * bounds the adapter's error used under a hundredth of (over 100x: looser than the project's about-10x rule here).
 */
export function boundsLine(bounds: BoundUse[]): string {
  const share = (b: BoundUse) => b.share ?? Infinity;
  const top = bounds.slice(0, 3).map((b) => `${Number.isFinite(share(b)) ? share(b).toPrecision(2) : 'NaN met'} (${describeBound(b)})`);
  const loose = bounds.filter((b) => share(b) > 0 && share(b) < 0.01).length, exact = bounds.filter((b) => share(b) === 0).length;
  return `Parity bounds against this adapter's error (each file's bound, its closest call): the closest used ${top.join('; ')}. ` +
    `${loose} of ${bounds.length} bounds were used under a hundredth` + (exact ? `; ${exact} held only exact results.` : '.');
}
