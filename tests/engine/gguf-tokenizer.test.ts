/**
 * The GGUF-embedded tokenizers: SentencePiece-style ("llama") and byte-level
 * BPE ("gpt2") on hand-checked synthetic vocabularies, then the real Gemma 3
 * vocabulary against Google's SentencePiece and the real SmolLM2 vocabulary
 * against Hugging Face `tokenizers` (reference ids recorded by
 * scripts/fixtures/make_gemma_tokenizer_ref.py and make_bpe_tokenizer_ref.py).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parseGguf } from '../../src/engine/formats/gguf';
import { createGgufTokenizer, tokenizerSpecFromGguf, type GgufTokenizerSpec } from '../../src/engine/tokenizer/gguf';

const FIX = fileURLToPath(new URL('../fixtures/gguf/', import.meta.url));
const GEMMA = fileURLToPath(new URL('../../.cache/models/gemma-3-270m-q4_k_m.gguf', import.meta.url));
// SmolLM2's vocabulary and merges come from its GGUF (the same ones as its Hugging Face tokenizer.json, which
// scripts/fixtures/make_bpe_tokenizer_ref.py read to record the reference ids), fetched like Gemma's.
const SMOLLM = fileURLToPath(new URL('../../.cache/models/SmolLM2-135M-Instruct.Q4_1.gguf', import.meta.url));

async function ggufMetadata(path: string) {
  const fh = await open(path);
  try {
    const { size } = await fh.stat();
    return (await parseGguf({ name: path, size, async read(o, n) { const b = new Uint8Array(n); await fh.read(b, 0, n, o); return b; } })).metadata;
  } finally {
    await fh.close();
  }
}

// id: piece (type, score). Types: 1 normal, 2 unknown, 3 control, 4 user-defined, 6 byte.
const SPM: [string, number, number][] = [
  ['<unk>', 2, 0], ['<s>', 3, 0], ['</s>', 3, 0], ['<0x0A>', 6, 0], ['<0xC3>', 6, 0], ['<0xA9>', 6, 0],
  ['<br>', 4, 0], ['▁', 1, -1], ['a', 1, -2], ['b', 1, -3], ['c', 1, -4], ['ab', 1, -5], ['bc', 1, -0.5],
  ['abc', 1, -6], ['▁a', 1, -7], ['aa', 1, -8], ['h', 1, -9], ['i', 1, -10], ['▁hi', 1, -11],
];
const spmSpec = (over: Partial<GgufTokenizerSpec> = {}): GgufTokenizerSpec => ({
  model: 'llama', tokens: SPM.map((t) => t[0]), tokenTypes: SPM.map((t) => t[1]), scores: SPM.map((t) => t[2]),
  bosId: 1, eosId: 2, unkId: 0, addBos: true, addSpacePrefix: true, ...over,
});

test('SPM: best-score merging, leftmost ties, byte fallback, unk, specials', () => {
  const tok = createGgufTokenizer(spmSpec());
  assert.equal(tok.vocabSize, SPM.length);
  // "▁abc": bc (-0.5) merges first, then a+bc -> abc; "▁a" (-7) is then stale.
  assert.deepEqual(tok.encode('abc'), [7, 13]);
  assert.deepEqual(tok.encode('ab'), [7, 11]);
  // "▁aaa": ▁a (-7) beats aa (-8); the remaining "aa" pair merges next.
  assert.deepEqual(tok.encode('aaa'), [14, 15]);
  // "▁hi" is in the vocab but unreachable: neither "▁h" nor "hi" is a piece.
  assert.deepEqual(tok.encode('hi'), [7, 16, 17]);
  assert.deepEqual(tok.encode('é'), [7, 4, 5]); // U+00E9 -> <0xC3><0xA9>
  assert.deepEqual(tok.encode('a\nb'), [14, 3, 9]);
  assert.deepEqual(tok.encode('z'), [7, 0]); // no piece, no byte token -> <unk>
  assert.deepEqual(tok.encode('<s>ab'), [1, 7, 11]); // as in llama.cpp, text after a special token gets "▁" too
  assert.deepEqual(tok.encode('<s>ab', { parseSpecial: false }), [7, 0, 0, 0, 11]);
  assert.deepEqual(tok.encode('a<br>b', { parseSpecial: false }), [14, 6, 7, 9]); // user-defined always match
  assert.deepEqual(tok.encode('ab', { addBos: true }), [1, 7, 11]);
  assert.deepEqual(tok.encode(''), []);
  assert.equal(tok.decode([1, 14, 6, 9, 4, 5, 2]), 'a<br>bé');
  assert.equal(tok.decode([1, 14, 6, 9], { skipSpecial: false }), '<s> a<br>b');
  assert.deepEqual(tok.eosIds, [2]);
  assert.equal(tok.applyChatTemplate, undefined);

  const noPrefix = createGgufTokenizer(spmSpec({ addSpacePrefix: false, addBos: false }));
  assert.deepEqual(noPrefix.encode('aaa'), [15, 8]); // aa/aa tie at -8: leftmost wins
  assert.deepEqual(noPrefix.encode(' a b'), [14, 7, 9]);
  assert.deepEqual(noPrefix.encode('ab', { addBos: true }), [11]); // the model does not use BOS
  assert.equal(noPrefix.decode([14, 7, 9]), ' a b');
});

const BPE_TOKENS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>', 'h', 'i', 'Ġ', 'hi', 'Ġh', 'Ġhi', '1', '2', '3', '4', '12', '123', 'Ċ', "'", 's', "'s", 'Ã', '©'];
const bpeSpec = (pre: string, chatTemplate?: string): GgufTokenizerSpec => ({
  model: 'gpt2', tokens: BPE_TOKENS, tokenTypes: BPE_TOKENS.map((_, i) => (i < 3 ? 3 : 1)),
  merges: ['h i', 'Ġ h', 'Ġh i', '1 2', '12 3', "' s"], pre, bosId: 0, eosId: 2, addBos: false, addSpacePrefix: false,
  chatTemplate,
});

test('BPE: merge ranks, pre-tokenizer regexes, byte mapping, specials', () => {
  const gpt2 = createGgufTokenizer(bpeSpec('gpt-2'));
  // " hi" -> Ġ h i: "h i" (rank 0) beats "Ġ h" (rank 1), and "Ġ hi" is no merge, so Ġhi is never formed.
  assert.deepEqual(gpt2.encode('hi hi'), [6, 5, 6]);
  assert.deepEqual(gpt2.encode('1234'), [14, 12]);
  assert.deepEqual(gpt2.encode("'s"), [18]);
  assert.deepEqual(gpt2.encode('é'), [19, 20]); // bytes C3 A9 map to 'Ã' '©'
  assert.deepEqual(gpt2.encode('\n'), [15]); // byte 0A maps to 'Ċ'
  assert.deepEqual(gpt2.encode('<|im_start|>hi<|im_end|>'), [1, 6, 2]);
  assert.equal(gpt2.decode([1, 6, 5, 6, 19, 20, 15, 2]), 'hi hié\n');
  assert.equal(gpt2.decode([1, 6, 2], { skipSpecial: false }), '<|im_start|>hi<|im_end|>');
  assert.equal(gpt2.preTokenizerName, 'gpt2');

  const llama3 = createGgufTokenizer(bpeSpec('llama-bpe'));
  assert.deepEqual(llama3.encode('hi hi'), [6, 8]); // ignore_merges: a whole word in the vocab is one token
  assert.deepEqual(llama3.encode('1234'), [14, 12]); // digits in groups of up to three
  const qwen2 = createGgufTokenizer(bpeSpec('qwen2'));
  assert.deepEqual(qwen2.encode('1234'), [9, 10, 11, 12]); // single digits
  assert.deepEqual(qwen2.encode('hi hi'), [6, 5, 6]);
  assert.deepEqual(qwen2.eosIds, [2, 0]); // eos <|im_end|>, plus <|endoftext|>
});

test('chat formats: Gemma turns, ChatML with the template default system prompt, none', () => {
  const gemma = createGgufTokenizer(spmSpec({ chatTemplate: "{{ bos_token }}...<start_of_turn>user\n..." }));
  assert.equal(gemma.chatFormat, 'gemma');
  const msgs = [
    { role: 'system' as const, content: 'Be brief.' },
    { role: 'user' as const, content: ' Hi ' },
    { role: 'assistant' as const, content: 'Hello!' },
    { role: 'user' as const, content: 'Bye' },
  ];
  assert.equal(
    gemma.applyChatTemplate!(msgs),
    '<start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n' +
      '<start_of_turn>user\nBye<end_of_turn>\n<start_of_turn>model\n',
  );
  assert.equal(gemma.applyChatTemplate!([{ role: 'user', content: 'x' }], { addGenerationPrompt: false }), '<start_of_turn>user\nx<end_of_turn>\n');

  const tpl = "{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{% endif %}";
  const chatml = createGgufTokenizer(bpeSpec('qwen2', tpl));
  assert.equal(chatml.chatFormat, 'chatml');
  assert.equal(
    chatml.applyChatTemplate!([{ role: 'user', content: 'Hi' }]),
    '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
  );
  assert.equal(
    chatml.applyChatTemplate!(msgs.slice(0, 2), { addGenerationPrompt: false }),
    '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n Hi <|im_end|>\n',
  );
  const plain = createGgufTokenizer(bpeSpec('qwen2', '{{ messages | tojson }}'));
  assert.equal(plain.chatFormat, null);
  assert.equal(plain.applyChatTemplate, undefined);
});

test('real Gemma 3 vocabulary: ids equal SentencePiece', async (t) => {
  if (!existsSync(GEMMA)) return t.skip(`${GEMMA} is absent (run npm run fetch:models)`);
  const tok = createGgufTokenizer(tokenizerSpecFromGguf(await ggufMetadata(GEMMA)));
  const ref = JSON.parse(readFileSync(FIX + 'gemma3-270m-ref.json', 'utf8')) as { cases: { text: string; ids: number[] }[] };
  assert.ok(ref.cases.length > 100);
  for (const c of ref.cases) {
    assert.deepEqual(tok.encode(c.text, { parseSpecial: false }), c.ids, JSON.stringify(c.text));
    if (!c.text.includes('\u2581')) assert.equal(tok.decode(c.ids), c.text);
  }
  assert.deepEqual(tok.encode('Hello world', { addBos: true }), [2, 9259, 1902]);
  assert.deepEqual(tok.encode('<start_of_turn>user\nHi<end_of_turn>'), [105, 2364, 107, 10979, 106]);
  assert.equal(tok.bosId, 2);
  assert.deepEqual(tok.eosIds, [1, 106]);
  assert.equal(tok.applyChatTemplate, undefined); // the base model's GGUF has no chat template
});

test('real SmolLM2 vocabulary: byte-level BPE ids equal Hugging Face tokenizers', async (t) => {
  if (!existsSync(SMOLLM)) return t.skip(`${SMOLLM} is absent (run npm run fetch:models)`);
  const { tokens, tokenTypes: types, merges } = tokenizerSpecFromGguf(await ggufMetadata(SMOLLM));
  assert.ok(tokens.length === 49152 && merges && merges.length > 48000, `${tokens.length} tokens, ${merges?.length} merges`);
  const ref = JSON.parse(readFileSync(FIX + 'smollm2-bpe-ref.json', 'utf8')) as { variants: Record<string, { text: string; ids: number[] }[]> };
  for (const [variant, pre] of [['smollm', 'smollm'], ['llama3', 'llama-bpe'], ['qwen2', 'qwen2']] as const) {
    const tok = createGgufTokenizer({
      model: 'gpt2', tokens, tokenTypes: types, merges, pre, bosId: 1, eosId: 2, addBos: false, addSpacePrefix: false,
    });
    for (const c of ref.variants[variant]!) {
      assert.deepEqual(tok.encode(c.text), c.ids, `${variant}: ${JSON.stringify(c.text)}`);
      assert.equal(tok.decode(c.ids, { skipSpecial: false }), c.text);
    }
  }
});
