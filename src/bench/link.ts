/**
 * npm run bench:link [-- --context 4096 --chunks 8 --model <path>]
 *
 * TTFT of linking algorithms measured side by side on the same adapter: a
 * context of C tokens in equal chunks compiled ahead (as in EPIC's
 * synchronous workload), plus a short question, linked by each algorithm.
 * Prints the breakdown and the ratios full / legolink:16 and
 * cacheblend:0.15 / legolink:16, with the adapter's name.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openModel } from '../node/session';
import { compileChunk } from '../kvcompile/compile';
import { link } from '../kvlink/link';
import { parseAlgorithm } from '../kvlink/algorithms';
import type { LinkPart } from '../kvlink/layout';

const { values: a } = parseArgs({
  options: {
    model: { type: 'string', default: join(import.meta.dirname, '../../public/models/stories260K/stories260K.bin') },
    context: { type: 'string', default: '4096' }, chunks: { type: 'string', default: '8' },
    algorithms: { type: 'string', default: 'full,cacheblend:0.15,legolink:16,naive' }, json: { type: 'string' },
  },
});
const s = await openModel(a.model!);
const adapter = s.gpu.adapter.description;
const c = s.model.config;
const nChunks = Number(a.chunks);
const per = Math.floor(Number(a.context) / nChunks) - (c.bosId === null ? 0 : 1);
const ctx = { engine: s.engine, modelId: c.name, tokenizerId: c.name, bosId: c.bosId };
const chunks = [];
for (let i = 0; i < nChunks; i++) {
  chunks.push(await compileChunk(ctx, Array.from({ length: per }, (_, j) => 3 + ((i * 977 + j * 31) % (c.vocabSize - 3)))));
}
const parts: LinkPart[] = [...chunks.map((chunk) => ({ kind: 'cache' as const, chunk })), { kind: 'text', tokens: [5, 6, 7, 8, 9, 10, 11, 12] }];
const rows: Record<string, number | string | boolean | null>[] = [];
for (const spec of a.algorithms!.split(',')) {
  await link(s.engine, parts, parseAlgorithm(spec), { bosId: c.bosId }).then((r) => r.cache.destroy()); // warm
  const r = await link(s.engine, parts, parseAlgorithm(spec), { bosId: c.bosId });
  r.cache.destroy();
  const t = r.ttft;
  rows.push({ algorithm: spec, tokens: r.layout.tokens.length, recomputed: r.recomputed, ...t });
  console.log(
    `[${adapter}] ${c.name} ${spec}: TTFT ${t.totalMs.toFixed(0)} ms (load ${t.loadMs.toFixed(0)}, recompute ${t.recomputeMs.toFixed(0)}, ` +
      `first token ${t.firstTokenMs.toFixed(0)}${t.gpuMs === null ? '' : `; GPU busy ${t.gpuMs.toFixed(0)}, load/GPU overlap ${t.overlapMs!.toFixed(0)}`}), ` +
      `recomputed ${r.recomputed}/${r.layout.tokens.length} tokens`,
  );
}
const ttft = (spec: string) => rows.find((r) => r.algorithm === spec)?.totalMs as number | undefined;
const lego = ttft('legolink:16');
if (lego) {
  for (const other of ['full', 'cacheblend:0.15']) {
    const o = ttft(other);
    if (o) console.log(`[${adapter}] TTFT(${other}) / TTFT(legolink:16) = ${(o / lego).toFixed(2)} at ${a.context} tokens in ${nChunks} chunks`);
  }
}
if (a.json) writeFileSync(a.json, JSON.stringify({ adapter, model: c.name, context: Number(a.context), chunks: nChunks, results: rows }, null, 1));
s.close();
