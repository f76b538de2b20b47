/**
 * stories260K through our engine against llama2.c itself: greedy output of
 * `npm run generate` must equal run.c's stdout byte for byte (fixtures from
 * the real run.c, see the fixture's "source"). Also the checkpoint loader's
 * errors on truncated or foreign files.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadLlama2c } from '../../src/engine/formats/llama2c';
import { bufferSource } from '../../src/engine/formats/source';
import { Llama2cTokenizer } from '../../src/engine/tokenizer/llama2c';
import { gpuEnv } from '../../scripts/gpu-env.mjs';

export const STORIES = join(import.meta.dirname, '../../../shared/models/stories260K');
const fixture = JSON.parse(readFileSync(join(import.meta.dirname, '../fixtures/llama2c/stories260K-greedy.json'), 'utf8'));

for (const c of fixture.cases as { prompt: string; steps: number; stdout: string }[]) {
  test(`generate matches llama2.c: ${JSON.stringify(c.prompt)} -n ${c.steps}`, () => {
    const out = execFileSync(
      process.execPath,
      ['--import', 'tsx', 'src/cli/generate.ts', '--model', join(STORIES, 'stories260K.bin'), '--prompt', c.prompt, '--steps', String(c.steps), '--temperature', '0'],
      { env: gpuEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    assert.equal(out.toString('latin1'), c.stdout);
  });
}

test('tokenizer: run.c encoding of a prompt (BOS, merged leading space)', async () => {
  const tok = await Llama2cTokenizer.load(bufferSource('tok512.bin', readFileSync(join(STORIES, 'tok512.bin'))), 512);
  // Ids printed by an instrumented run.c for this prompt.
  assert.deepEqual(tok.encode('Once upon a time'), [1, 403, 407, 261, 378]);
  assert.deepEqual(tok.encode(''), [1]);
  assert.equal(tok.decode(tok.encode('Once upon a time')), 'Once upon a time');
});

test('llama2.c loader: truncated, padded and foreign files give clear errors', async () => {
  const bytes = readFileSync(join(STORIES, 'stories260K.bin'));
  await assert.rejects(loadLlama2c(bufferSource('cut.bin', bytes.subarray(0, bytes.length - 100))), /cut\.bin is truncated/);
  const padded = new Uint8Array(bytes.length + 8);
  padded.set(bytes);
  await assert.rejects(loadLlama2c(bufferSource('pad.bin', padded)), /longer than its header says/);
  await assert.rejects(loadLlama2c(bufferSource('x.bin', new TextEncoder().encode('hello world, this is not a model at all'))), /does not look like a llama2\.c checkpoint/);
  const { config } = await loadLlama2c(bufferSource('stories260K.bin', bytes));
  assert.equal(config.hidden, 64);
  assert.equal(config.nKvHeads, 4);
  assert.equal(config.tiedEmbeddings, true);
});
