/**
 * The Model section's catalogue (src/worker/model-catalogue.ts): each entry's
 * config.json (src/worker/catalogue/) is the real model's shape, checked by the
 * weight count it gives against the count its model card publishes; its
 * sizes come from the GPU plan; and the memory check the worker runs on a
 * Hub config before downloading weights gives, for the adapters we know,
 * the verdict stated here (which matrices are split over buffers, in how
 * many parts). No weights and no GPU are needed.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CATALOGUE, catalogueEntry, entrySize, verdictOn } from '../../src/worker/model-catalogue';
import { promptFor } from '../../src/ui/store';

/** The parameter counts the model cards publish. */
const PUBLISHED: Record<string, number> = {
  'HuggingFaceTB/SmolLM2-360M-Instruct': 361_821_120,
  'HuggingFaceTB/SmolLM2-1.7B-Instruct': 1_711_376_384,
  'Qwen/Qwen2.5-0.5B-Instruct': 494_032_768,
  'Qwen/Qwen2.5-1.5B-Instruct': 1_543_714_304,
  'unsloth/Llama-3.2-1B-Instruct': 1_235_814_400,
  'unsloth/gemma-3-1b-it': 999_885_952,
};

/** Buffer limits of the adapters this project has measured on (docs/RESULTS.md, docs/results/gpu-h100-*.json). */
const ADAPTERS = {
  swiftshader: { maxStorageBufferBindingSize: 2 ** 30, maxBufferSize: 2 ** 30 },
  llvmpipe: { maxStorageBufferBindingSize: 128 * 2 ** 20, maxBufferSize: 2 ** 31 },
  h100: { maxStorageBufferBindingSize: 2147483644, maxBufferSize: 2 ** 40 },
};

/** The embedding's parts on llvmpipe's 128 MiB binding (f16: vocab × hidden × 2 bytes); nothing is split elsewhere. */
const LLVMPIPE_EMBED_PARTS: Record<string, number> = {
  'HuggingFaceTB/SmolLM2-360M-Instruct': 1, // 49152 × 960: 90 MiB
  'HuggingFaceTB/SmolLM2-1.7B-Instruct': 2, // 49152 × 2048: 192 MiB
  'Qwen/Qwen2.5-0.5B-Instruct': 3, // 151936 × 896: 260 MiB
  'Qwen/Qwen2.5-1.5B-Instruct': 4, // 151936 × 1536: 445 MiB
  'unsloth/Llama-3.2-1B-Instruct': 4, // 128256 × 2048: 501 MiB
  'unsloth/gemma-3-1b-it': 5, // 262144 × 1152: 576 MiB
};

test('every entry: its config gives the published parameter count, and the sizes follow from it', () => {
  assert.deepEqual(CATALOGUE.map((e) => e.repo).sort(), Object.keys(PUBLISHED).sort());
  for (const e of CATALOGUE) {
    const s = entrySize(e);
    assert.equal(s.params, PUBLISHED[e.repo], e.repo);
    assert.equal(s.downloadBytes, 2 * s.params, `${e.repo}: BF16 safetensors`);
    assert.equal(s.weightDtype, 'f16', `${e.repo}: above 50M weights the app stores f16`);
    // f16 weights plus the f32 norm vectors, each buffer padded to 16 bytes: a little over two bytes a weight.
    assert.ok(s.weightBytes > 2 * s.params && s.weightBytes < 2 * s.params * 1.001, `${e.repo}: ${s.weightBytes}`);
    const c = e.config as Record<string, number>;
    const kvHeads = c.num_key_value_heads, headDim = c.head_dim ?? c.hidden_size / c.num_attention_heads;
    assert.equal(s.kvDtype, 'f16', `${e.repo}: above 50M weights the app keeps f16 keys and values`);
    assert.equal(s.kvBytesPerToken, c.num_hidden_layers * 2 * kvHeads * headDim * 2, `${e.repo}: f16 K and V per token`);
    assert.ok(e.chatTemplate && e.licence && e.source && e.prompt.framing.includes('{question}'));
  }
  // Gated originals are not listed; their public copies say whose weights they are.
  for (const e of CATALOGUE.filter((x) => x.repo.startsWith('unsloth/'))) assert.match(e.source, /is gated, and LegoKV sends no token/);
});

test('the memory check on the adapters we know: every entry fits; llvmpipe splits the embedding only', () => {
  for (const e of CATALOGUE) {
    for (const [name, limits] of Object.entries(ADAPTERS)) {
      const v = verdictOn(e, limits);
      assert.ok(v.fits, `${e.repo} on ${name}: ${v.fits ? '' : v.problems.join(' ')}`);
      const parts = LLVMPIPE_EMBED_PARTS[e.repo];
      const expected = name === 'llvmpipe' && parts > 1 ? [{ label: 'embed', parts }] : [];
      assert.deepEqual(v.split, expected, `${e.repo} on ${name}`);
    }
  }
});

test('the memory check refuses, naming the reason, where one token\'s logits exceed a binding', () => {
  const gemma = catalogueEntry('unsloth/gemma-3-1b-it')!;
  // 262144 logits of f32 are 1 MiB: an adapter binding less cannot hold one token's logits.
  const v = verdictOn(gemma, { maxStorageBufferBindingSize: 2 ** 20 - 16, maxBufferSize: 2 ** 30 });
  assert.equal(v.fits, false);
  assert.match(v.fits ? '' : v.problems.join(' '), /The logits of unsloth\/gemma-3-1b-it need 1\.0 MiB per token in one buffer/);
});

test('a loaded catalogue model gets its question framing, as a bundled model does', () => {
  const e = catalogueEntry('Qwen/Qwen2.5-0.5B-Instruct')!;
  assert.equal(promptFor([], 'Qwen/Qwen2.5-0.5B-Instruct'), e.prompt);
  assert.equal(promptFor([], 'someone/else'), undefined);
});
