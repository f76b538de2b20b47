import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createHfTokenizer, loadHfTokenizer } from '../../src/engine/tokenizer/hf';
import { nodeFolderFiles } from '../../src/node/files';
import { loadHfModel } from '../../src/engine/formats/hf';

const dir = fileURLToPath(new URL('../fixtures/hf/llama3-smollm/', import.meta.url));
const readJson = (f: string) => JSON.parse(readFileSync(dir + f, 'utf8'));
const ref = readJson('tokenizer_reference.json') as {
  text: string;
  ids: number[];
  texts: { text: string; ids: number[]; decoded: string; decoded_skip_special: string }[];
  chats: { messages: { role: 'system' | 'user' | 'assistant'; content: string }[]; add_generation_prompt: boolean; rendered: string; ids: number[] }[];
};

test('SmolLM2 tokenizer: special ids and vocabulary', async () => {
  const tok = await loadHfTokenizer(nodeFolderFiles(dir));
  assert.equal(tok.vocabSize, 49152);
  assert.equal(tok.bosId, 1);
  assert.deepEqual(tok.eosIds, [2]);
  assert.equal(tok.usesBos, false, 'SmolLM2 does not prepend BOS');
});

test('encode matches the Python tokenizer on the recorded texts', async () => {
  const tok = await loadHfTokenizer(nodeFolderFiles(dir));
  assert.deepEqual(tok.encode(ref.text), ref.ids);
  assert.ok(ref.texts.length >= 5);
  for (const t of ref.texts) {
    assert.deepEqual(tok.encode(t.text), t.ids, JSON.stringify(t.text));
    // addBos is a no-op for a model whose tokenizer does not use BOS.
    assert.deepEqual(tok.encode(t.text, { addBos: true }), t.ids);
  }
});

test('decode matches the Python tokenizer, skipping specials by default', async () => {
  const tok = await loadHfTokenizer(nodeFolderFiles(dir));
  for (const t of ref.texts) {
    assert.equal(tok.decode(t.ids, { skipSpecial: false }), t.decoded);
    assert.equal(tok.decode(t.ids), t.decoded_skip_special);
  }
  // The empty sequence (the attention map decodes a token after an empty context) is the empty string.
  assert.equal(tok.decode([]), '');
  assert.equal(tok.decode([], { skipSpecial: false }), '');
});

test('chat template renders like Python and its ids match', async () => {
  const tok = await loadHfTokenizer(nodeFolderFiles(dir));
  assert.ok(tok.applyChatTemplate, 'the SmolLM2 tokenizer has a chat template');
  assert.equal(ref.chats.length, 2);
  for (const c of ref.chats) {
    const rendered = tok.applyChatTemplate!(c.messages, { addGenerationPrompt: c.add_generation_prompt });
    assert.equal(rendered, c.rendered);
    assert.deepEqual(tok.encode(rendered), c.ids);
  }
  // The default is no generation prompt, as in transformers.
  const plain = tok.applyChatTemplate!(ref.chats[0].messages);
  assert.ok(!plain.endsWith('<|im_start|>assistant\n'));
});

test('built from JSON objects alone; no template means no applyChatTemplate; BOS post-processors are detected', async () => {
  const json = readJson('tokenizer.json');
  const { chat_template: _, ...config } = readJson('tokenizer_config.json');
  const noTemplate = await createHfTokenizer(json, config, { eosIds: [2, 0] });
  assert.equal(noTemplate.applyChatTemplate, undefined);
  assert.deepEqual(noTemplate.eosIds, [2, 0]);

  const withBos = {
    ...json,
    post_processor: {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<|im_start|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [{ Sequence: { id: 'A', type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }],
      special_tokens: { '<|im_start|>': { id: '<|im_start|>', ids: [1], tokens: ['<|im_start|>'] } },
    },
  };
  const bosTok = await createHfTokenizer(withBos, config);
  assert.equal(bosTok.usesBos, true);
  assert.deepEqual(bosTok.encode(ref.text), ref.ids);
  assert.deepEqual(bosTok.encode(ref.text, { addBos: true }), [1, ...ref.ids]);
});

test('loadHfModel returns config, weights and a tokenizer that knows the model eos ids', async () => {
  const { config, weights, tokenizer } = await loadHfModel(nodeFolderFiles(dir));
  assert.equal(config.vocabSize, tokenizer.vocabSize);
  assert.ok(weights.has('embed'));
  assert.deepEqual(tokenizer.eosIds, [2]);
});
