/**
 * npm run generate -- --model <file or folder> --prompt "<text>" --steps <n> --temperature 0
 *
 * Runs the same engine and WGSL kernels as the app, in Node. Prints the
 * prompt followed by the generated text on stdout and timing on stderr. For
 * llama2.c checkpoints it behaves like `run <model> -z <tok> -t 0 -n <steps>
 * -i <prompt>`: --steps counts positions including the prompt, output stops
 * when the model emits BOS, and pieces print exactly as run.c prints them.
 */
import { writeFileSync } from 'node:fs';
import { existing, parseCommand } from './options';
import { openModel } from '../node/session';
import { decodeTokens } from '../generate/generate';
import { Llama2cTokenizer, describeSplit } from '../engine';

const a = parseCommand({
  command: 'npm run generate',
  summary: 'Runs a model on the app\'s engine and WGSL kernels in Node: prints the prompt and the generated text on stdout, timings on stderr (llama2.c checkpoints behave like run.c).',
  options: {
    model: { type: 'string', required: true, arg: 'file|folder', check: existing, help: 'a llama2.c .bin, a .gguf file or a Hugging Face folder' },
    prompt: { type: 'string', default: '', arg: 'text', help: 'the prompt' },
    steps: { type: 'integer', default: 256, min: 0, help: 'positions, the prompt included (0: the model\'s context)' },
    temperature: { type: 'number', default: 0, min: 0, help: 'sampling temperature (0: greedy)' },
    'top-p': { type: 'number', default: 0.9, min: 0, max: 1, help: 'nucleus sampling' },
    seed: { type: 'integer', default: 42, help: 'sampling seed' },
    tokenizer: { type: 'string', arg: 'file', check: existing, help: 'a llama2.c tokenizer .bin (default: next to the model)' },
    'dump-logits': { type: 'string', arg: 'file.json', help: 'write every prompt row\'s logits' },
    positions: { type: 'numbers', min: 0, help: 'a position id per prompt token' },
    dtype: { type: 'string', choices: ['f32', 'f16'], help: 'weight storage (default: f32 for small models, f16 above 50M weights)' },
    'kv-dtype': { type: 'string', choices: ['f32', 'f16'], help: 'KV cache storage (default as the app: f32 for small models, f16 above 50M weights)' },
    chat: { type: 'boolean', help: 'wrap the prompt in the model\'s chat template' },
  },
});
// Without --dtype, the engine's rule: f32 for small models, packed f16 above 50M weights.
const dtype = a.dtype as 'f32' | 'f16' | undefined;
const t0 = performance.now();
const s = await openModel(a.model, { tokenizer: a.tokenizer, weightDtype: dtype, kvDtype: a['kv-dtype'] as 'f32' | 'f16' | undefined });
const t1 = performance.now();
const { engine, model } = s;
// Matrices larger than one buffer may be (a large vocabulary on a 128 MiB binding limit) are stored in parts.
const split = describeSplit(engine.model!.plan);
if (split) console.error(`[${s.gpu.adapter.description}] ${split}`);
const tok = model.tokenizer;
const text = a.chat && tok.applyChatTemplate ? tok.applyChatTemplate([{ role: 'user', content: a.prompt }], { addGenerationPrompt: true }) : a.prompt;
const prompt = tok.encode(text, { addBos: true });
let steps = a.steps;
if (!(steps > 0) || steps > model.config.maxPositions) steps = model.config.maxPositions;
const positions = a.positions;
if (positions && positions.length !== prompt.length) {
  console.error(`--positions has ${positions.length} ids but the prompt has ${prompt.length} tokens`);
  process.exit(2);
}

const out = (bytes: Uint8Array | string) => process.stdout.write(bytes);
const llama2c = tok instanceof Llama2cTokenizer ? tok : null;
// The prompt first, as run.c echoes it.
if (llama2c) for (let i = 1; i < prompt.length; i++) out(llama2c.pieceBytes(prompt[i - 1], prompt[i]));
else out(text);

const cache = engine.newCache(Math.min(steps + 8, 4096));
const pre = await engine.prefill(cache, prompt, positions, { logits: a['dump-logits'] ? 'all' : 'last' });
const t2 = performance.now();
const V = model.config.vocabSize;
if (a['dump-logits']) {
  const rows = Array.from({ length: prompt.length }, (_, i) => Array.from(pre.logits.subarray(i * V, (i + 1) * V)));
  writeFileSync(a['dump-logits'], JSON.stringify({ tokens: prompt, positions: Array.from(cache.positions.subarray(0, prompt.length)), logits: rows }));
}
let logits = pre.logits.subarray(pre.logits.length - V);
const sampling = { temperature: a.temperature, topP: a['top-p'], seed: a.seed };
const generated: number[] = [];
let prev = prompt[prompt.length - 1];
// The one decode loop (src/generate), as the worker and ContextCache use it.
for await (const next of decodeTokens(engine, cache, logits, { maxNewTokens: steps - prompt.length + 1, sampling, stopIds: model.config.eosIds })) {
  generated.push(next);
  if (llama2c) out(llama2c.pieceBytes(prev, next));
  else out(tok.decode(generated).slice(tok.decode(generated.slice(0, -1)).length));
  prev = next;
}
out('\n');
const t3 = performance.now();
console.error(
  `[${s.gpu.adapter.description}] load ${(t1 - t0).toFixed(0)} ms, prefill ${prompt.length} tokens ${(t2 - t1).toFixed(0)} ms, ` +
    `decode ${generated.length} tokens ${(t3 - t2).toFixed(0)} ms (${((generated.length / (t3 - t2)) * 1000).toFixed(1)} tok/s)`,
);
s.close();
