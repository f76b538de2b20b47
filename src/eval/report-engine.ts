/**
 * RESULTS.md's section for `npm run bench:engine --json docs/results/engine-*.json`: prefill and decode of the
 * real models on the CPU adapters, decode's share of its own matrix-vector products timed alone (the real-LLM
 * issue's target: at least 60%), and llama.cpp on the same CPU, file and token ids, from the same run.
 */
import { mdTable } from './markdown';

export interface EngineRow {
  adapter: string;
  model: string;
  tokens: number;
  tokens_per_s: number;
  decode_tokens_per_s?: number;
  decode_logits_tokens_per_s?: number;
  decode_gflops?: number;
  decode_matmul_alone_gflops?: number;
  decode_matmul_variant?: string;
  decode_ratio_to_matmul?: number;
  /** The same products in a token's order, each layer on weights of its own (decodeMatmulStreamed); absent in older runs. */
  decode_matmul_streamed_gflops?: number;
  decode_ratio_to_streamed?: number;
  ratio_to_matmul?: number;
}

export interface EngineRun {
  kind: 'engine';
  command: string;
  date: string;
  commit: string | null;
  loadavg_start: number;
  loadavg_end: number;
  cpus: number;
  cpu_model: string;
  results: EngineRow[];
}

const n1 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(1));
const n2 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(2));
const pc = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : `${(x * 100).toFixed(0)}%`);

/** llama.cpp's rows of the same model in the same run (its CPU build, and on lavapipe its Vulkan build). */
function peersOf(r: EngineRun, x: EngineRun['results'][number]) {
  return r.results.filter((p) => p.model === x.model && p.adapter !== x.adapter && p.decode_ratio_to_matmul === undefined);
}

/** One table per run (one adapter each); llama.cpp's rows sit beside LegoKV's for the same model. */
export function engineSection(runs: { file: string; r: EngineRun }[]): string {
  const lines = ['## Engine throughput on the CPU adapters (`bench:engine`)', ''];
  lines.push('Prefill and decode of the real models, each run on one adapter, with llama.cpp (node-llama-cpp, CPU; on lavapipe also its Vulkan build, on the same adapter) on the same GGUF file and token ids in the same run. *Decode / its GEMVs* is decode\'s GFLOP/s over the GFLOP/s of the same step\'s matrix-vector products timed alone on the same adapter, each repeated on the same weights; the target is at least 60%. Repeated, a small model\'s layer stays in the CPU\'s caches, which the model\'s weights, read once a token, do not; so *decode / streamed* also divides by the same products run in a token\'s order with each layer on weights of its own: what the rest of a step (attention, norms, launches, the host) costs. Decode is greedy (the token picked on the GPU); *reading logits* reads every step\'s logits back instead.', '');
  for (const { file, r } of runs) {
    const ours = r.results.filter((x) => x.decode_tokens_per_s !== undefined && x.decode_ratio_to_matmul !== undefined);
    const adapter = ours[0]?.adapter ?? '–';
    lines.push(`\`${r.command}\` · adapter **${adapter}** · ${r.date.slice(0, 10)} · host load ${r.loadavg_start.toFixed(1)} → ${r.loadavg_end.toFixed(1)} on ${r.cpus} CPUs (${r.cpu_model})${r.commit ? ` · commit ${r.commit}` : ''} · \`${file}\``, '');
    lines.push(mdTable(
      ['model', 'prompt', 'prefill tok/s', 'decode tok/s', 'reading logits', 'decode GFLOP/s', 'its GEMVs alone', 'decode / its GEMVs', 'streamed', 'decode / streamed', 'llama.cpp prefill / decode tok/s', 'engine'],
      ours.map((x) => {
        const peers = peersOf(r, x);
        return [x.model, x.tokens, n1(x.tokens_per_s), n2(x.decode_tokens_per_s), n2(x.decode_logits_tokens_per_s), n2(x.decode_gflops),
          `${n2(x.decode_matmul_alone_gflops)} (${x.decode_matmul_variant ?? '–'})`, `**${pc(x.decode_ratio_to_matmul)}**`,
          n2(x.decode_matmul_streamed_gflops), pc(x.decode_ratio_to_streamed),
          peers.map((p) => `${n1(p.tokens_per_s)} / ${n1(p.decode_tokens_per_s)}`).join('; ') || '–', peers.map((p) => p.adapter).join('; ') || '–'];
      }),
    ), '');
    // llama.cpp's Vulkan build on the adapter LegoKV ran on (bench:engine under LEGOKV_NODE_BACKEND=lavapipe).
    const sameAdapter = ours.flatMap((x) => peersOf(r, x).filter((p) => / Vulkan, /.test(p.adapter)).map((p) => ({ x, p })));
    if (sameAdapter.length) {
      lines.push(`On the same adapter, llama.cpp's Vulkan build (ggml's own GPU kernels, every layer on the device) against LegoKV: ${sameAdapter.map(({ x, p }) =>
        `${x.model}, LegoKV's prefill ${(x.tokens_per_s / p.tokens_per_s).toFixed(1)}× and decode ${(x.decode_tokens_per_s! / p.decode_tokens_per_s!).toFixed(1)}× llama.cpp's`).join('; ')}.`, '');
    }
  }
  return lines.join('\n');
}
