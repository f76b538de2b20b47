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
import { benchTtft, compileBenchChunks, ttftRatios } from './ttft';

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
const chunks = Number(a.chunks);
const compiled = await compileBenchChunks(s.engine, Number(a.context), chunks);
const rows = await benchTtft(s.engine, compiled, { algorithms: a.algorithms!.split(','), log: (l) => console.log(`[${adapter}] ${c.name} ${l}`) });
for (const [k, v] of Object.entries(ttftRatios(rows))) {
  if (k.startsWith('full/') || k.startsWith('cacheblend:0.15/')) console.log(`[${adapter}] TTFT(${k.replace('/', ') / TTFT(')}) = ${v.toFixed(2)} at ${a.context} tokens in ${chunks} chunks`);
}
if (a.json) writeFileSync(a.json, JSON.stringify({ adapter, model: c.name, context: Number(a.context), chunks, results: rows }, null, 1));
s.close();
