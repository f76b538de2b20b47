/**
 * npm run bench:scaling [-- --model stories260K --lengths 1024,2048,4096,8192,16384
 *     --algorithms full,cacheblend:0.15,legolink:16 --max-point-s 240 --budget-s 540
 *     --out docs/results/scaling.json]
 *
 * EPIC Figure 9: TTFT against context length with a fixed chunk size (512
 * rows: BOS + 511 tokens of project-generated filler per chunk), plus a
 * short uncached question, through the ContextCache API. Chunks are compiled
 * before timing (full recompute ignores them). Each point is the median of
 * up to --reps runs (one when a run takes over 3 s). A point is skipped when
 * its time, extrapolated quadratically from the algorithm's previous point,
 * would exceed --max-point-s, or when the run has used --budget-s. Writes
 * JSON (points, skipped points, log-log fitted growth exponents) and an SVG.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { parseCommand } from '../cli/options';
import { loadavg } from 'node:os';
import { commandLine, runHost } from './env';
import { openModel } from '../node/session';
import { KVStore, MemoryBlobBackend, MemoryIndexBackend } from '../kvstore';
import { ContextCache } from '../api/context-cache';
import { SWEEP_ALGORITHMS } from '../kvlink/catalogue';
import type { TtftBreakdown } from '../kvlink/link';
import { Rng } from './rng';
import { fillerSentence } from './generators/text';
import { median, powerLawFit } from './stats';
import { modelOption, resolveModelPath } from './tokenizer';
import { writeJsonAtomic } from './runner';
import type { ScalingPoint, ScalingResults } from './result-files';
import { otherCores, sampleCpu } from './host-cpu';
import { scalingChart } from './charts';

export function fitScaling(points: ScalingPoint[], algorithms: string[]): ScalingResults['fits'] {
  return algorithms.map((algorithm) => {
    const p = points.filter((x) => x.algorithm === algorithm);
    const f = powerLawFit(p.map((x) => x.context_tokens), p.map((x) => x.ttft_ms));
    return { algorithm, exponent: f.exponent, coefficient: f.coefficient, r2: f.r2, points: p.length };
  });
}

async function main() {
  const a = parseCommand({
    command: 'npm run bench:scaling',
    summary: 'EPIC Figure 9: TTFT against context length with a fixed chunk size, through the ContextCache API; writes JSON (points, skipped points, fitted growth exponents) and an SVG.',
    options: {
      model: modelOption('stories260K'),
      lengths: { type: 'numbers', default: [1024, 2048, 4096, 8192, 16384], min: 1, help: 'context lengths in tokens' },
      'chunk-tokens': { type: 'integer', default: 512, min: 2, help: 'rows per chunk (BOS + filler)' },
      algorithms: { type: 'algorithms', default: SWEEP_ALGORITHMS, help: 'the linking algorithms to time, comma-separated' },
      reps: { type: 'integer', default: 3, min: 1, help: 'runs per point (one when a run takes over 3 s)' },
      'max-point-s': { type: 'number', default: 240, min: 0, help: 'skip a point predicted to take longer (seconds)' },
      'budget-s': { type: 'number', default: 540, min: 0, help: 'stop after this much time (seconds)' },
      out: { type: 'string', default: 'docs/results/scaling.json', arg: 'file.json', help: 'where to write the results' },
      svg: { type: 'string', arg: 'file.svg', help: 'where to draw the chart (default: --out with .svg)' },
      seed: { type: 'integer', default: 1, help: 'the filler text\'s seed' },
    },
  });
  const lengths = [...a.lengths].sort((x, y) => x - y);
  const chunkRows = a['chunk-tokens'];
  const algorithms = a.algorithms;
  const maxPointMs = a['max-point-s'] * 1000;
  const budgetMs = a['budget-s'] * 1000;
  const path = resolveModelPath(a.model);
  const s = await openModel(path);
  const adapter = s.gpu.adapter.description;
  const tok = s.model.tokenizer;
  const bos = s.model.config.bosId;
  const store = new KVStore({ blobs: new MemoryBlobBackend(), index: new MemoryIndexBackend(), budgets: { ram: 4 * 2 ** 30, opfs: 16 * 2 ** 30 } });
  await store.open();
  const lego = new ContextCache(s.engine, { id: basename(path), config: s.model.config, tokenizer: tok, tokenizerId: basename(path) }, store);
  let stop = false;
  process.on('SIGINT', () => {
    if (!stop) console.error('\nStopping after the current point…');
    stop = true;
  });

  // Filler text → token stream → chunks of exactly chunkRows rows (BOS + the rest), shared by every length.
  const per = chunkRows - (bos === null ? 0 : 1);
  const maxChunks = Math.ceil(lengths.at(-1)! / chunkRows);
  const rng = new Rng(`scaling:${a.seed}`);
  const stream: number[] = [];
  while (stream.length < per * maxChunks) {
    let para = '';
    for (let i = 0; i < 6; i++) para += (i ? ' ' : '') + fillerSentence(rng);
    stream.push(...tok.encode(para + '\n\n', { addBos: false }));
  }
  const chunkTokens = Array.from({ length: maxChunks }, (_, i) => stream.slice(i * per, (i + 1) * per));
  // A short uncached question (EPIC: mutable tokens are fewer than 50).
  const question = '\n\nQuestion: Who walked near the river?\nAnswer:';

  const res: ScalingResults = {
    kind: 'scaling', command: commandLine('bench:scaling'), adapter, model: basename(path), chunk_tokens: chunkRows, question, date: new Date().toISOString(), complete: false,
    ...runHost(), loadavg_end: null, points: [], skipped: [], fits: [],
  };
  const save = () => {
    res.fits = fitScaling(res.points, algorithms);
    mkdirSync(dirname(a.out), { recursive: true });
    writeJsonAtomic(a.out, res);
    writeFileSync(a.svg ?? a.out.replace(/\.json$/, '.svg'), scalingChart(res));
  };
  const t0 = performance.now();
  const ids: string[] = [];
  const once = async (algorithm: string, n: number) => {
    const messages = [{ role: 'user' as const, content: [...ids.slice(0, n).map((id) => ({ type: 'cache' as const, id })), { type: 'text' as const, text: question }] }];
    for await (const ev of lego.chatCompletion({ messages, algorithm, maxTokens: 1 })) {
      if (ev.type === 'first-token') return { ttft: ev.ttft as TtftBreakdown, recomputed: ev.recomputed, promptTokens: ev.promptTokens };
    }
    throw new Error('no first token');
  };
  let warmed = false;
  for (const L of lengths) {
    const n = Math.ceil(L / chunkRows);
    while (ids.length < n) {
      const tc = performance.now();
      ids.push(...(await lego.compileContext([chunkTokens[ids.length]])));
      process.stderr.write(`\r[${adapter}] compiling chunk ${ids.length}/${n} (${(performance.now() - tc).toFixed(0)} ms)   `);
    }
    process.stderr.write('\n');
    await once('naive', n); // puts the chunks in the store's fastest tier
    if (!warmed) {
      for (const alg of algorithms) await once(alg, n);
      warmed = true;
    }
    for (const alg of algorithms) {
      if (stop) break;
      const prev = res.points.filter((p) => p.algorithm === alg).at(-1);
      const predicted = prev ? prev.ttft_ms * (L / prev.context_tokens) ** 2 : 0;
      const used = performance.now() - t0;
      if (predicted > maxPointMs || used + predicted > budgetMs) {
        const reason = predicted > maxPointMs ? `predicted ${(predicted / 1000).toFixed(0)} s > ${a['max-point-s']} s per point` : `time budget (${a['budget-s']} s) used`;
        res.skipped.push({ algorithm: alg, context_tokens: n * chunkRows, reason });
        console.log(`[${adapter}] ${res.model} ${alg} at ${L} tokens: skipped (${reason})`);
        continue;
      }
      const samples: Awaited<ReturnType<typeof once>>[] = [];
      const cpu0 = sampleCpu();
      const tp = performance.now();
      do samples.push(await once(alg, n));
      while (samples.length < a.reps && performance.now() - tp < 3000 && !stop);
      const ms = samples.map((x) => x.ttft.totalMs);
      const mid = samples[ms.indexOf([...ms].sort((x, y) => x - y)[Math.floor((ms.length - 1) / 2)])];
      const p: ScalingPoint = {
        algorithm: alg, context_tokens: n * chunkRows, chunks: n, prompt_tokens: mid.promptTokens,
        recomputed: mid.recomputed, ttft_ms: median(ms), samples_ms: ms,
        breakdown_ms: { lookup: mid.ttft.lookupMs, load: mid.ttft.loadMs, recompute: mid.ttft.recomputeMs, first_token: mid.ttft.firstTokenMs },
        other_cpu: otherCores(cpu0, sampleCpu()),
      };
      res.points.push(p);
      console.log(
        `[${adapter}] ${res.model} ${alg} at ${p.context_tokens} tokens (${n} chunks): TTFT ${p.ttft_ms.toFixed(0)} ms ` +
          `(load ${p.breakdown_ms.load.toFixed(0)}, recompute ${p.breakdown_ms.recompute.toFixed(0)}, first token ${p.breakdown_ms.first_token.toFixed(0)}), ` +
          `recomputed ${p.recomputed}/${p.prompt_tokens}, ${ms.length} run${ms.length > 1 ? 's' : ''}`,
      );
      save();
    }
    if (stop) break;
  }
  res.complete = !stop;
  res.loadavg_end = loadavg()[0];
  save();
  for (const f of res.fits) console.log(`[${adapter}] ${res.model} ${f.algorithm}: TTFT ∝ N^${f.exponent.toFixed(2)} (R² ${f.r2.toFixed(3)}, ${f.points} points)`);
  s.close();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((e) => {
    console.error(e instanceof Error ? (e.stack ?? e.message) : e);
    process.exit(1);
  });
}
