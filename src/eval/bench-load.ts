/**
 * npm run bench:load [-- --model stories260K --users 4 --context 2048 --rates 0.1,0.25,0.5,1,2
 *     --duration 40 --max-busy-s 60 --algorithms legolink:16,cacheblend:0.15 --max-new-tokens 8
 *     --out docs/results/load.json]
 *
 * EPIC Figure 8, on one engine: S simulated users, each with their own
 * documents (a needle-in-a-haystack context of --context tokens in 512-token
 * chunks) compiled once, send requests (their documents + their question)
 * with Poisson arrivals at a total rate λ over --duration seconds. One FIFO
 * queue feeds the engine, which serves one request at a time to its last
 * token (link, then greedy decoding), as LegoKV's worker does. Service
 * times are measured; idle gaps between arrivals are skipped on a virtual
 * clock (the engine has nothing to do then, so skipping changes no
 * measurement), which keeps low rates cheap. TTFT counts queueing: first
 * token time minus arrival. Serving a point stops after --max-busy-s of
 * engine time; requests still queued are counted as unserved. Throughput is
 * served requests (and generated tokens) per second of the run's span
 * (first arrival to last completion).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { parseCommand } from '../cli/options';
import { loadavg } from 'node:os';
import { commandLine, runHost } from './env';
import { otherCores, sampleCpu } from './host-cpu';
import { openModel } from '../node/session';
import { KVStore, MemoryBlobBackend, MemoryIndexBackend } from '../kvstore';
import { ContextCache } from '../api/context-cache';
import { Rng } from './rng';
import { needleCase } from './generators/needle';
import { caseMessages } from './prompt';
import { mean, quantile, stddev } from './stats';
import { modelOption, resolveModelPath } from './tokenizer';
import { writeJsonAtomic } from './runner';
import type { LoadPoint, LoadResults } from './result-files';
import { loadChart } from './charts';

/** Poisson arrivals at `rate` per second over `duration` seconds, each from a uniformly chosen user. */
export function poissonArrivals(rng: Rng, rate: number, duration: number, users: number): { t: number; user: number }[] {
  const out: { t: number; user: number }[] = [];
  for (let t = rng.exponential(rate); t < duration; t += rng.exponential(rate)) out.push({ t, user: rng.int(0, users - 1) });
  return out;
}

async function main() {
  const a = parseCommand({
    command: 'npm run bench:load',
    summary: 'EPIC Figure 8 on one engine: simulated users send requests (their documents + a question) with Poisson arrivals; mean TTFT with queueing and throughput per request rate; writes JSON and an SVG.',
    options: {
      model: modelOption('stories260K'),
      users: { type: 'integer', default: 4, min: 1, help: 'simulated users, each with their own documents' },
      context: { type: 'integer', default: 2048, min: 1, help: 'context tokens per user' },
      'chunk-tokens': { type: 'integer', default: 512, min: 1, help: 'tokens per chunk' },
      rates: { type: 'numbers', default: [0.1, 0.25, 0.5, 1, 2], min: 0, help: 'request rates (requests per second)' },
      duration: { type: 'number', default: 40, min: 0, help: 'seconds of arrivals per rate' },
      'max-busy-s': { type: 'number', default: 60, min: 0, help: 'engine seconds per rate before the rest is counted unserved' },
      algorithms: { type: 'algorithms', default: ['legolink:16', 'cacheblend:0.15'], help: 'the linking algorithms, comma-separated' },
      'max-new-tokens': { type: 'integer', default: 8, min: 1, help: 'answer length in tokens' },
      seed: { type: 'integer', default: 1, help: 'the arrivals\' and cases\' seed' },
      out: { type: 'string', default: 'docs/results/load.json', arg: 'file.json', help: 'where to write the results' },
      svg: { type: 'string', arg: 'file.svg', help: 'where to draw the chart (default: --out with .svg)' },
    },
  });
  const { users, context, duration, rates, algorithms, seed } = a;
  const chunkTokens = a['chunk-tokens'], maxBusyMs = a['max-busy-s'] * 1000, maxNew = a['max-new-tokens'];
  const path = resolveModelPath(a.model);
  const s = await openModel(path);
  const adapter = s.gpu.adapter.description;
  const tok = s.model.tokenizer;
  const store = new KVStore({ blobs: new MemoryBlobBackend(), index: new MemoryIndexBackend(), budgets: { ram: 4 * 2 ** 30, opfs: 16 * 2 ** 30 } });
  await store.open();
  const lego = new ContextCache(s.engine, { id: basename(path), config: s.model.config, tokenizer: tok, tokenizerId: basename(path) }, store);
  let stop = false;
  process.on('SIGINT', () => {
    if (!stop) console.error('\nStopping after the current request…');
    stop = true;
  });

  // Each user's own documents, compiled once (EPIC: each user compiles its chunks, then sends requests).
  const count = (t: string) => tok.encode(t, { addBos: false }).length;
  const userCases = Array.from({ length: users }, (_, u) =>
    needleCase(new Rng(`load:${seed}:user${u}`), context, (u + 0.5) / users, { chunkTokens, count, tokenizerName: basename(path) }, `user${u}`));
  const userIds: string[][] = [];
  for (const [u, c] of userCases.entries()) {
    const t0 = performance.now();
    userIds.push(await lego.compileContext(c.chunks));
    console.error(`[${adapter}] user ${u}: ${c.chunks.length} chunks compiled in ${(performance.now() - t0).toFixed(0)} ms`);
  }
  const request = async (algorithm: string, u: number) => {
    const t0 = performance.now();
    let first = 0, tokens = 0;
    for await (const ev of lego.chatCompletion({ messages: caseMessages(userIds[u], userCases[u]), algorithm, maxTokens: maxNew })) {
      if (ev.type === 'first-token') first = performance.now() - t0;
      if (ev.type === 'done') tokens = ev.tokens;
    }
    return { ttftMs: first, serviceMs: performance.now() - t0, tokens };
  };
  for (const alg of algorithms) for (let u = 0; u < users; u++) await request(alg, u); // warm pipelines and tiers

  const res: LoadResults = {
    kind: 'load', command: commandLine('bench:load'), adapter, model: basename(path), users, context_tokens: context, chunk_tokens: chunkTokens, duration_s: duration,
    max_busy_s: maxBusyMs / 1000, max_new_tokens: maxNew, seed, date: new Date().toISOString(), complete: false,
    ...runHost(), loadavg_end: null, points: [],
  };
  const save = () => {
    mkdirSync(dirname(a.out), { recursive: true });
    writeJsonAtomic(a.out, res);
    writeFileSync(a.svg ?? a.out.replace(/\.json$/, '.svg'), loadChart(res));
  };
  for (const alg of algorithms) {
    for (const rate of rates) {
      if (stop) break;
      const arrivals = poissonArrivals(new Rng(`load:${seed}:${rate}`), rate, duration, users);
      let clock = 0; // virtual seconds since the start
      let busy = 0;
      const ttft: number[] = [], service: number[] = [], queue: number[] = [], linkMs: number[] = [];
      let tokens = 0, served = 0, firstArrival = arrivals[0]?.t ?? 0;
      const cpu0 = sampleCpu();
      for (const r of arrivals) {
        if (stop || busy >= maxBusyMs) break;
        clock = Math.max(clock, r.t);
        const wait = (clock - r.t) * 1000;
        const x = await request(alg, r.user);
        busy += x.serviceMs;
        queue.push(wait);
        ttft.push(wait + x.ttftMs);
        linkMs.push(x.ttftMs);
        service.push(x.serviceMs);
        clock += x.serviceMs / 1000;
        tokens += x.tokens;
        served++;
      }
      const span = Math.max(1e-9, clock - firstArrival);
      const p: LoadPoint = {
        algorithm: alg, rate, arrivals: arrivals.length, served, unserved: arrivals.length - served,
        ttft_ms_mean: mean(ttft), ttft_ms_std: stddev(ttft), ttft_ms_p50: quantile(ttft, 0.5), ttft_ms_p95: quantile(ttft, 0.95),
        service_ttft_ms_mean: mean(linkMs), queue_ms_mean: mean(queue), service_ms_mean: mean(service),
        throughput_rps: served / span, throughput_tokens_per_s: tokens / span, span_s: span, busy_s: busy / 1000,
        other_cpu: otherCores(cpu0, sampleCpu()),
      };
      res.points.push(p);
      console.log(
        `[${adapter}] ${res.model} ${alg} at ${rate} req/s: ${served}/${arrivals.length} served, TTFT mean ${p.ttft_ms_mean.toFixed(0)} ms ` +
          `(p95 ${p.ttft_ms_p95.toFixed(0)}, queueing ${p.queue_ms_mean.toFixed(0)}, link ${p.service_ttft_ms_mean.toFixed(0)}), ` +
          `${p.throughput_rps.toFixed(2)} req/s, ${p.throughput_tokens_per_s.toFixed(1)} tok/s`,
      );
      save();
    }
  }
  res.complete = !stop;
  res.loadavg_end = loadavg()[0];
  save();
  s.close();
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().catch((e) => {
    console.error(e instanceof Error ? (e.stack ?? e.message) : e);
    process.exit(1);
  });
}
