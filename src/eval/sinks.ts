/**
 * npm run sinks -- --model <m> --data <file.jsonl> [--limit 20] [--algorithms prompt,naive,legolink:16,full]
 *     [--sink-tokens 1] [--out sinks.json]
 *
 * The attention-sink report: how much of the question's attention lands on
 * the first token(s) of every linked chunk. Each chunk was compiled alone
 * from position 0 with its BOS (KVCompile), so under `naive` linking every
 * chunk start keeps the key of a sequence start; EPIC (Fig. 4) shows those
 * tokens drawing attention like the real first token does. For each case,
 * algorithm and layer the chunks are linked, and the question rows' raw
 * scores for every head are read back from the engine (the same capture as
 * the studio's attention map), turned into softmax probabilities, and summed
 * over each chunk's first `--sink-tokens` rows.
 *
 * The ordinary prompt (`prompt`: one BOS, the chunks' own tokens) is the
 * reference row: there no chunk but the first starts with a BOS, and its
 * segments mark each chunk's tokens (the first holding the prompt's BOS).
 *
 * Per chunk index (1 = the prompt's real start) it prints and writes: the
 * mean share on the chunk's start, the share on the whole chunk, and the
 * mean share of one ordinary token of that chunk, so "start / token" says how
 * many ordinary tokens one chunk start weighs. Means are over cases, layers,
 * heads and question rows; per-layer means are in the JSON.
 */
import { writeFileSync } from 'node:fs';
import { readDataset, type EvalCase } from './dataset';
import { NodeBackend } from './node-backend';
import { table } from './format';
import { variantFor, type VariantName } from './backend';
import type { ScoresResult } from '../engine';
import { segmentShares } from '../analysis/attention-math';
import { existing, parseCommand } from '../cli/options';
import { modelOption } from './tokenizer';
import { commandLine } from './env';

interface Acc { start: number; chunk: number; tokens: number; n: number }

/** Per segment: softmax mass of the question rows on its first `sinkTokens` rows and on all of it (analysis/attention-math). */
export function chunkShares(layout: { segments: { start: number; length: number }[] }, s: ScoresResult, sinkTokens: number): { start: number; chunk: number; length: number }[] {
  const rows = s.rows.map((_, r) => s.scores.subarray(r * s.keys, (r + 1) * s.keys));
  return segmentShares(rows, s.keys, layout.segments, sinkTokens).map((x, i) => ({ start: x.sink, chunk: x.chunk, length: layout.segments[i].length }));
}

/** Mean of field `k` over the accumulated cells (each weighted by its count). */
function mean(cells: (Acc | undefined)[], k: keyof Omit<Acc, 'n'>): number {
  const live = cells.filter((c): c is Acc => !!c);
  const n = live.reduce((t, x) => t + x.n, 0);
  return n ? live.reduce((t, x) => t + x[k], 0) / n : NaN;
}

/** The report's default rows: the two references (the ordinary prompt, full recompute) and the linking algorithms. */
export const SINK_ALGORITHMS = 'prompt,naive,legolink:16,full';

export interface SinkReport {
  adapter: string;
  model: string;
  data?: string;
  cases: number;
  layers: number;
  sink_tokens: number;
  command?: string;
  algorithms: Record<string, {
    per_chunk: { chunk: number; start_share: number; chunk_share: number; token_share: number; cases: number }[];
    per_layer: { layer: number; first_start_share: number; later_start_share: number }[];
  }>;
}

/** Links every case with every algorithm once and averages the question rows' attention on each chunk (see above). */
export async function sinkReport(
  backend: NodeBackend, cases: EvalCase[], algorithms: string[], sinkTokens: number, onCase?: (done: number) => void,
): Promise<SinkReport> {
  const L = backend.layers;
  // acc[algorithm][layer][chunk index]
  const acc = new Map<string, Acc[][]>(algorithms.map((al) => [al, Array.from({ length: L }, () => [])]));
  const variants = new Set<VariantName>(algorithms.map(variantFor));
  const casesWithChunk: number[] = [];
  for (const [ci, c] of cases.entries()) {
    const p = await backend.prepare(c, variants);
    try {
      c.chunks.forEach((_, i) => (casesWithChunk[i] = (casesWithChunk[i] ?? 0) + 1));
      for (const al of algorithms) {
        // One link per algorithm captures every layer and head.
        const { layout, scores } = await backend.attention(p, al);
        for (const s of scores) {
          chunkShares(layout, s, sinkTokens).forEach((x, i) => {
            const cell = (acc.get(al)![s.layer][i] ??= { start: 0, chunk: 0, tokens: 0, n: 0 });
            cell.start += x.start;
            cell.chunk += x.chunk;
            cell.tokens += x.chunk / x.length;
            cell.n++;
          });
        }
      }
    } finally {
      await backend.release(p);
    }
    onCase?.(ci + 1);
  }
  return {
    adapter: backend.adapter, model: backend.model, cases: cases.length, layers: L, sink_tokens: sinkTokens,
    algorithms: Object.fromEntries(algorithms.map((al) => {
      const layers = acc.get(al)!;
      const chunks = Math.max(...layers.map((x) => x.length));
      return [al, {
        per_chunk: Array.from({ length: chunks }, (_, i) => {
          const cells = layers.map((x) => x[i]);
          return {
            chunk: i + 1, start_share: mean(cells, 'start'), chunk_share: mean(cells, 'chunk'), token_share: mean(cells, 'tokens'),
            cases: casesWithChunk[i] ?? 0,
          };
        }),
        per_layer: layers.map((cells, l) => ({ layer: l, first_start_share: mean(cells.slice(0, 1), 'start'), later_start_share: mean(cells.slice(1), 'start') })),
      }];
    })),
  };
}

async function main() {
  const a = parseCommand({
    command: 'npm run sinks',
    summary: 'Links each case under every algorithm and reports how much of the question rows\' attention (every layer and head) lands on each chunk\'s first tokens: the attention sinks LegoLink removes.',
    options: {
      model: modelOption('qa-demo'),
      data: { type: 'string', required: true, arg: 'file.jsonl', check: existing, help: 'the cases (format: src/eval/dataset.ts)' },
      limit: { type: 'integer', default: 20, min: 1, help: 'how many cases' },
      algorithms: { type: 'algorithms', default: SINK_ALGORITHMS.split(','), help: 'the linking algorithms to measure, comma-separated' },
      'sink-tokens': { type: 'integer', default: 1, min: 1, help: 'how many of each chunk\'s first tokens count as its start' },
      out: { type: 'string', arg: 'sinks.json', help: 'where to write the report' },
    },
  });
  const cases = readDataset(a.data).slice(0, a.limit);
  const algorithms = a.algorithms;
  const sinkTokens = a['sink-tokens'];
  const backend = await NodeBackend.open(a.model!);
  console.error(`[${backend.adapter}] ${backend.model}: ${cases.length} cases, ${backend.layers} layers, algorithms ${algorithms.join(', ')}`);
  try {
    const report = await sinkReport(backend, cases, algorithms, sinkTokens, (n) => process.stderr.write(`\rcase ${n}/${cases.length}`));
    process.stderr.write('\n');
    const { adapter, model, cases: n, layers, sink_tokens, algorithms: byAlgorithm } = report;
    const result: SinkReport = {
      adapter, model, data: a.data, cases: n, layers, sink_tokens, command: commandLine('sinks'), algorithms: byAlgorithm,
    };
    const f = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : '-');
    console.log(`[${result.adapter}] ${result.model} on ${a.data}: attention share of the question rows (first ${sinkTokens} token(s) of each chunk)`);
    const rows: (string | number)[][] = [];
    for (const al of algorithms) {
      for (const c of result.algorithms[al].per_chunk) {
        rows.push([al, c.chunk, f(c.start_share), f(c.chunk_share), f(c.token_share), Number.isFinite(c.token_share) && c.token_share > 0 ? (c.start_share / sinkTokens / c.token_share).toFixed(1) : '-']);
      }
    }
    console.log(table(['algorithm', 'chunk', 'start share', 'chunk share', 'token share', 'start / token'], rows));
    if (a.out) {
      writeFileSync(a.out, JSON.stringify(result, null, 1) + '\n');
      console.log(`written: ${a.out}`);
    }
  } finally {
    await backend.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((e) => {
    console.error(e instanceof Error ? (e.stack ?? e.message) : e);
    process.exit(1);
  });
}
