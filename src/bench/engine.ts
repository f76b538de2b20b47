/**
 * npm run bench:engine [-- --json out.json] [--lengths 128,512,2048]
 *
 * Prefill throughput (tokens/s and achieved GFLOP/s, attention included) for
 * each bundled model at several lengths, decode tokens/s, and, in the same run
 * on the same adapter, the best GFLOP/s of a standalone matmul of comparable
 * shape over our matmul variants. Every figure carries the adapter's name.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { openModel } from '../node/session';
import { bestMatmul } from './matmul';
import { benchPrefillDecode } from './prefill';
import { KNOWN_MODELS } from '../eval/tokenizer';

const { values: a } = parseArgs({
  options: { json: { type: 'string' }, lengths: { type: 'string' }, models: { type: 'string' }, budget: { type: 'string', default: '120' } },
});
const wanted = a.models ? a.models.split(',') : Object.keys(KNOWN_MODELS);
const lengths = (a.lengths ?? '128,512,2048').split(',').map(Number);

const results: Record<string, unknown>[] = [];
for (const name of wanted) {
  const path = KNOWN_MODELS[name];
  if (!path || !existsSync(path)) {
    console.log(`${name}: not present, skipped (npm start, npm test or npm run fetch:models fetch it)`);
    continue;
  }
  const s = await openModel(path);
  const adapter = s.gpu.adapter.description;
  const c = s.model.config;
  const N = c.nHeads * c.headDim + 2 * c.nKvHeads * c.headDim;
  const mm = await bestMatmul(s.engine, 2048, c.hidden, N, s.engine.model!.dtype);
  console.log(`[${adapter}] ${name}: best standalone matmul [2048x${c.hidden}]·[${c.hidden}x${N}] = ${mm.gflops.toFixed(2)} GFLOP/s (${mm.variant})`);
  const rows = await benchPrefillDecode(s.engine, {
    lengths, budgetS: Number(a.budget), forced: !!a.lengths,
    log: (line) => console.log(`[${adapter}] ${name} ${line}`),
  });
  for (const r of rows) {
    results.push({ adapter, model: name, ...r, matmul_best_gflops: mm.gflops, ratio_to_matmul: r.gflops / mm.gflops });
    console.log(`[${adapter}] ${name} prefill ${r.tokens}: ${((r.gflops / mm.gflops) * 100).toFixed(0)}% of the standalone matmul`);
  }
  s.close();
}
if (a.json) writeFileSync(a.json, JSON.stringify({ results }, null, 1));
