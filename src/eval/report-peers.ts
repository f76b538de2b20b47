/**
 * The "LegoKV against wllama" section of docs/RESULTS.md, from
 * docs/results/peers.json (written by `npm run bench:peers`): prefill and
 * decode tokens/s of LegoKV and of wllama (llama.cpp in WebAssembly) on the
 * same GGUF and prompt, in the same Chromium on the same adapter, with the
 * ratios, and what wllama's WebGPU backend did there.
 */
import type { PeerRow, PeersResults } from '../bench/peers';

const n1 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(1));
const n2 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(2));
const table = (h: string[], rows: (string | number)[][]) =>
  [`| ${h.join(' | ')} |`, `| ${h.map((_, i) => (i ? '---:' : '---')).join(' | ')} |`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
const ENGINE: Record<PeerRow['engine'], string> = {
  legokv: 'LegoKV (its WGSL kernels)',
  'wllama-wasm': 'wllama, WASM CPU',
  'wllama-webgpu': 'wllama, WebGPU (ggml-webgpu)',
};

export function peersSection(r: PeersResults, file = 'peers.json'): string {
  const h = r.host;
  const load = `${n1(h.loadavg_start[0])} → ${n1(h.loadavg_end[0])} on ${h.cpus} CPUs${h.cpu_model ? ` (${h.cpu_model.split(' ').slice(0, 2).join(' ')})` : ''}`;
  const threads = r.rows.find((x) => x.threads)?.threads ?? 1;
  const lines: string[] = ['## LegoKV against wllama in the browser', ''];
  lines.push(`\`${r.command}\` · \`${file}\` · wllama **${r.wllama_version}** (llama.cpp ${r.llama_cpp}) · Chromium ${r.chromium} · ${r.prompt_tokens}-token prompt, ${r.decode_tokens} greedy tokens · ${r.date.slice(0, 10)} · host load ${load}${r.commit ? ` · commit ${r.commit}` : ''}`, '');
  lines.push(
    `The same GGUF file and the same prompt, one engine after the other in one headless Chromium per adapter. LegoKV runs its own engine on the page's WebGPU device (weights dequantized on load, f32 compute); wllama runs llama.cpp in its WebAssembly worker with ${threads} thread${threads > 1 ? 's' : ''}, on the quantized weights (and, with its WebGPU backend, on the adapter). ` +
      'Prefill is the prompt\'s tokens over the time to the first token\'s logits; decode is the tokens after the first over their time (for wllama, llama.cpp\'s own timings). Each engine first runs a short untimed prompt. On a CPU adapter a 2-core host shared with other work is noisy: read the host load beside the figures.',
    '',
  );
  const rows = r.rows.filter((x) => x.prefill_tokens_per_s !== undefined);
  lines.push(table(
    ['model', 'engine', 'adapter', 'prefill tok/s', 'decode tok/s', 'LegoKV / it, prefill', 'LegoKV / it, decode', 'same text as LegoKV'],
    rows.map((x) => [x.model, ENGINE[x.engine], x.adapter ?? x.adapter_config, n1(x.prefill_tokens_per_s), n1(x.decode_tokens_per_s), n2(x.ratio_prefill), n2(x.ratio_decode),
      x.same_text === undefined ? '–' : x.same_text ? 'yes' : 'no']),
  ), '');
  // wllama's WASM path does not use the adapter, so its repeats under each set of flags show the run's own noise.
  const spread = [...new Set(rows.map((x) => x.model))].flatMap((m) => {
    const w = rows.filter((x) => x.model === m && x.engine === 'wllama-wasm');
    if (w.length < 2) return [];
    const ratio = (k: 'prefill_tokens_per_s' | 'decode_tokens_per_s') => Math.max(...w.map((x) => x[k]!)) / Math.min(...w.map((x) => x[k]!));
    return [`${m} ${n2(ratio('prefill_tokens_per_s'))}× in prefill and ${n2(ratio('decode_tokens_per_s'))}× in decode`];
  });
  if (spread.length) lines.push(`wllama's WASM CPU path ignores the adapter, so it ran once under each set of flags: its fastest over its slowest run, ${spread.join(', ')}, is how far this run's figures can move with the host's other work alone.`, '');
  const parted = [...new Set(rows.filter((x) => x.same_text === false).map((x) => x.model))];
  for (const m of parted) {
    const where = rows.filter((x) => x.model === m && x.parted_at).map((x) => `token ${x.parted_at!.token}, gap ${n2(x.parted_at!.legokv_top2_gap)} (${x.adapter_config})`);
    lines.push(`${m}: the greedy texts part ways. The arithmetic differs (LegoKV stores ${r.rows.find((x) => x.model === m && x.weight_dtype)?.weight_dtype ?? '?'} weights and computes in f32; llama.cpp multiplies the quantized weights with activations quantized to 8 bits), and greedy decoding follows either where the top two logits nearly tie. The first token LegoKV chose differently, and its lead over the runner-up in LegoKV's logits: ${[...new Set(where)].join('; ') || 'not recorded'}. Token-for-token agreement with llama.cpp is checked on prompts without near-ties (tests/engine/llamacpp-parity.test.ts).`, '');
  }
  const others = r.rows.filter((x) => x.prefill_tokens_per_s === undefined);
  // One line per engine, flags and outcome, naming the models it held for.
  const groups = new Map<string, { head: string; what: string; models: string[] }>();
  for (const x of others) {
    const head = `${ENGINE[x.engine]}, ${x.adapter_config} flags${x.adapter ? ` (adapter ${x.adapter})` : ''}`;
    const what = x.skipped ?? `failed: ${(x.error ?? '').split('\n')[0]}`;
    const g = groups.get(head + what) ?? { head, what, models: [] };
    g.models.push(x.model);
    groups.set(head + what, g);
  }
  for (const g of groups.values()) lines.push(`- ${g.head}, ${g.models.join(' and ')}: ${g.what}`);
  if (others.length) lines.push('');
  if (others.some((x) => x.skipped && /shader-f16: false/.test(x.skipped))) {
    lines.push('wllama\'s WebGPU backend needs `shader-f16` (it asks for the device with `shader-f16` and `subgroups`). On an adapter without it (`shader-f16: false` above) ggml-webgpu registers no device and llama.cpp keeps every layer on the WASM CPU path without saying so; pretending the feature is there makes `requestDevice` fail ("Unsupported feature: shader-f16") and llama.cpp abort. With `n_gpu_layers: 0` wllama replaces `requestAdapter` by a stub returning null, which logs "ggml_webgpu: Failed to get an adapter". LegoKV needs no `shader-f16` (f16 is packed in `u32`). Chromium offers no adapter here with it: pointed at Mesa\'s lavapipe, which has it, the page still gets Chromium\'s own SwiftShader. ggml\'s GPU kernels do run beside ours on lavapipe in Node, through llama.cpp\'s Vulkan build: see the engine section.', '');
  }
  const sameInWorker = Object.values(r.adapters).every((a) => a.core === a.worker_core && a.compatibility === a.worker_compatibility);
  lines.push(`What \`requestAdapter()\` gives under each set of flags (in the page${sameInWorker ? ', and the same in a worker' : ' and in a worker'}):`, '');
  lines.push(sameInWorker
    ? table(['flags', 'core feature level', 'compatibility level'], Object.entries(r.adapters).map(([k, a]) => [k, a.core, a.compatibility]))
    : table(['flags', 'core', 'compatibility', 'worker, core', 'worker, compatibility'], Object.entries(r.adapters).map(([k, a]) => [k, a.core, a.compatibility, a.worker_core, a.worker_compatibility])), '');
  return lines.join('\n');
}
