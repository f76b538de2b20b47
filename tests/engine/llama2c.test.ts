/**
 * stories260K through our engine against llama2.c itself: greedy output of
 * `npm run generate` must equal run.c's stdout byte for byte (fixtures from
 * the real run.c, see the fixture's "source"). Also the checkpoint loader's
 * errors on truncated or foreign files.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadLlama2c } from '../../src/engine/formats/llama2c';
import { bufferSource } from '../../src/engine/formats/source';
import { Llama2cTokenizer } from '../../src/engine/tokenizer/llama2c';
import { gpuEnv } from '../../scripts/gpu-env.mjs';
import { cliArgs } from '../helpers/cli';

export const STORIES = join(import.meta.dirname, '../../public/models/stories260K');
const fixture = JSON.parse(readFileSync(join(import.meta.dirname, '../fixtures/llama2c/stories260K-greedy.json'), 'utf8'));

for (const c of fixture.cases as { prompt: string; steps: number; stdout: string }[]) {
  test(`generate matches llama2.c: ${JSON.stringify(c.prompt)} -n ${c.steps}`, () => {
    const out = execFileSync(
      process.execPath,
      [...cliArgs('generate'), '--model', join(STORIES, 'stories260K.bin'), '--prompt', c.prompt, '--steps', String(c.steps), '--temperature', '0'],
      { env: gpuEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    assert.equal(out.toString('latin1'), c.stdout);
  });
}

// The same kernels on Dawn's OpenGL ES backend (Mesa llvmpipe where there is no GPU, compatibility feature level).
test('generate matches llama2.c on the OpenGL ES backend (LEGOKV_NODE_BACKEND=opengles)', () => {
  const c = fixture.cases[0] as { prompt: string; steps: number; stdout: string };
  const r = spawnSync(
    process.execPath,
    [...cliArgs('generate'), '--model', join(STORIES, 'stories260K.bin'), '--prompt', c.prompt, '--steps', String(c.steps), '--temperature', '0'],
    { env: gpuEnv({ ...process.env, LEGOKV_NODE_BACKEND: 'opengles' }), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  assert.equal(r.status, 0, r.stderr.toString());
  assert.match(r.stderr.toString(), /^\[OpenGL/m, 'the adapter named on stderr is an OpenGL ES one');
  assert.equal(r.stdout.toString('latin1'), c.stdout);
});

test('LEGOKV_NODE_BACKEND rejects an unknown backend by name', () => {
  const r = spawnSync(process.execPath, [...cliArgs('generate'), '--model', join(STORIES, 'stories260K.bin'), '--steps', '2'], {
    env: gpuEnv({ ...process.env, LEGOKV_NODE_BACKEND: 'metal' }), stdio: ['ignore', 'pipe', 'pipe'],
  });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr.toString(), /LEGOKV_NODE_BACKEND must be vulkan, opengles, lavapipe, not "metal"/);
});

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

test('tokenizer: the heap-based merge equals run.c\'s rescan-every-pair rule, with a few lookups a character on long text', async () => {
  const tok = await Llama2cTokenizer.load(bufferSource('tok512.bin', readFileSync(join(STORIES, 'tok512.bin'))), 512);
  const t = tok as unknown as { pieces: Uint8Array[]; scores: Float32Array; ids: Map<string, number> };
  const latin1 = (b: Uint8Array) => String.fromCharCode(...b);
  // run.c's loop, verbatim in spirit: rescan all pairs, merge the best (leftmost on ties), repeat.
  const slow = (text: string) => {
    const utf8 = new TextEncoder().encode(text);
    const toks = [t.ids.get(' ')!];
    for (let i = 0; i < utf8.length; ) {
      let j = i + 1;
      while (j < utf8.length && (utf8[j] & 0xc0) === 0x80 && j - i < 4) j++;
      const id = t.ids.get(latin1(utf8.subarray(i, j)));
      if (id !== undefined) toks.push(id);
      else for (let b = i; b < j; b++) toks.push(utf8[b] + 3);
      i = j;
    }
    for (;;) {
      let best = -1e10, at = -1, bestId = -1;
      for (let i = 0; i + 1 < toks.length; i++) {
        const id = t.ids.get(latin1(t.pieces[toks[i]]) + latin1(t.pieces[toks[i + 1]]));
        if (id !== undefined && t.scores[id] > best) [best, at, bestId] = [t.scores[id], i, id];
      }
      if (at < 0) return [1, ...toks];
      toks.splice(at, 2, bestId);
    }
  };
  const texts = [
    'Lily and Tom went to the park. They saw a big dog!',
    'aaaaaaaaaaaaaaaaaaaaaaaa bbbbbbbb   the the the thethe',
    'Zoë’s café — 3.14 × 2 = 6.28; naïve “quotes” 🎉',
  ];
  for (const s of texts) assert.deepEqual(tok.encode(s), slow(s), s);
  // O(n log n), not run.c's O(n²): counted in vocabulary lookups, the merge loop's unit of work, not timed. Each
  // character and each adjacent pair is looked up once, and each merge looks up its two new pairs: under 4 a character
  // (3.44 on this text, 74,398 lookups for 21,600 characters; the count is exact, the same on every machine).
  const lookups = (encode: (s: string) => unknown, text: string) => {
    const get = t.ids.get;
    let n = 0;
    t.ids.get = (k: string) => (n++, get.call(t.ids, k));
    try {
      encode(text);
    } finally {
      t.ids.get = get;
    }
    return n;
  };
  const long = 'Once upon a time, there was a little girl named Lily. '.repeat(400);
  const fast = lookups((s) => tok.encode(s), long);
  assert.ok(fast <= 4 * long.length, `${fast} lookups for ${long.length} characters`);
  // The bound can fail: run.c's rescan takes about 1,000 a character on a tenth of the text.
  const tenth = long.slice(0, long.length / 10);
  assert.ok(lookups(slow, tenth) > 4 * tenth.length);
});
