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
import { parseCommand } from '../cli/options';
import { modelOption, resolveModelPath } from '../eval/tokenizer';
import { SWEEP_ALGORITHMS } from '../kvlink/catalogue';
import { openModel } from '../node/session';
import { benchTtft, compileBenchChunks, ttftRatios } from './ttft';

const a = parseCommand({
  command: 'npm run bench:link',
  summary: 'TTFT of the linking algorithms side by side on this adapter: a context in equal chunks compiled ahead, plus a short question, linked by each algorithm.',
  options: {
    model: modelOption('stories260K'),
    context: { type: 'integer', default: 4096, min: 1, help: 'context tokens' },
    chunks: { type: 'integer', default: 8, min: 1, help: 'how many chunks the context is cut into' },
    algorithms: { type: 'algorithms', default: [...SWEEP_ALGORITHMS, 'naive'], help: 'the linking algorithms to time, comma-separated' },
    json: { type: 'string', arg: 'out.json', help: 'also write the figures as JSON' },
  },
});
const s = await openModel(resolveModelPath(a.model));
const adapter = s.gpu.adapter.description;
const c = s.model.config;
const chunks = a.chunks;
const compiled = await compileBenchChunks(s.engine, a.context, chunks);
const rows = await benchTtft(s.engine, compiled, { algorithms: a.algorithms, log: (l) => console.log(`[${adapter}] ${c.name} ${l}`) });
for (const [k, v] of Object.entries(ttftRatios(rows))) {
  if (k.startsWith('full/') || k.startsWith('cacheblend:0.15/')) console.log(`[${adapter}] TTFT(${k.replace('/', ') / TTFT(')}) = ${v.toFixed(2)} at ${a.context} tokens in ${chunks} chunks`);
}
if (a.json) writeFileSync(a.json, JSON.stringify({ adapter, model: c.name, context: Number(a.context), chunks, results: rows }, null, 1));
s.close();
