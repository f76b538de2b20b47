import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { UnsupportedModelError, type ModelConfig } from '../../src/engine/model/config';
import { bufferSource, ModelFormatError } from '../../src/engine/formats/source';
import { hfConfigToModelConfig, loadHfFolder, type FolderFiles } from '../../src/engine/formats/hf';
import { openSafetensorsFolder } from '../../src/engine/formats/safetensors';
import { nodeFolderFiles } from '../../src/node/files';

const fixture = (m: string) => fileURLToPath(new URL(`../fixtures/hf/${m}/`, import.meta.url));
const readJsonFile = (m: string, f: string) => JSON.parse(readFileSync(fixture(m) + f, 'utf8'));
const enc = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));

/** The fixture folder with some files replaced (or removed, with null). */
function overlay(m: string, over: Record<string, Uint8Array | null>): FolderFiles {
  const base = nodeFolderFiles(fixture(m));
  return {
    async get(n) {
      if (n in over) return over[n] ? bufferSource(n, over[n]!) : undefined;
      return base.get(n);
    },
  };
}

/** Rewrites the JSON header of a safetensors file, keeping its data section. */
function rewriteHeader(bytes: Uint8Array, fn: (h: Record<string, any>) => Record<string, any>): Uint8Array {
  const len = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + len)));
  const json = new TextEncoder().encode(JSON.stringify(fn(header)));
  const data = bytes.subarray(8 + len);
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}
const fileBytes = (m: string, f: string) => new Uint8Array(readFileSync(fixture(m) + f));

async function rejectsWith(p: Promise<unknown>, cls: Function, ...parts: string[]) {
  await assert.rejects(p, (e: Error) => {
    assert.ok(e instanceof cls, `expected ${cls.name}, got ${e.name}: ${e.message}`);
    for (const part of parts) assert.ok(e.message.includes(part), `"${e.message}" lacks "${part}"`);
    return true;
  });
}

const base = {
  ropeStyle: 'half', qkNorm: false, postNorms: false, normPlusOne: false, activation: 'silu', embedScale: 1,
  slidingWindow: 0,
} as const;

const LLAMA3: ModelConfig = {
  ...base, arch: 'llama', name: 'LlamaForCausalLM', vocabSize: 49152, hidden: 32, intermediate: 64, nLayers: 2,
  nHeads: 4, nKvHeads: 2, headDim: 8, rmsEps: 1e-5, ropeTheta: 500000,
  ropeScaling: { type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 256 },
  qkvBias: false, attnScale: 8 ** -0.5, layerKinds: ['global', 'global'], tiedEmbeddings: true,
  maxPositions: 2048, bosId: 1, eosIds: [2],
};
const QWEN2: ModelConfig = {
  ...base, arch: 'qwen2', name: 'Qwen2ForCausalLM', vocabSize: 512, hidden: 64, intermediate: 96, nLayers: 2,
  nHeads: 4, nKvHeads: 2, headDim: 16, rmsEps: 1e-6, ropeTheta: 1e6, qkvBias: true, attnScale: 0.25,
  layerKinds: ['global', 'global'], tiedEmbeddings: false, maxPositions: 4096, bosId: null, eosIds: [3, 4],
};
const GEMMA3: ModelConfig = {
  ...base, arch: 'gemma3', name: 'Gemma3ForCausalLM', vocabSize: 512, hidden: 64, intermediate: 96, nLayers: 6,
  nHeads: 4, nKvHeads: 1, headDim: 32, rmsEps: 1e-6, normPlusOne: true, ropeTheta: 1e6, ropeLocalTheta: 1e4,
  ropeScaling: { type: 'linear', factor: 8 }, qkvBias: false, qkNorm: true, postNorms: true,
  activation: 'gelu_tanh', embedScale: 8, attnScale: 24 ** -0.5,
  layerKinds: ['local', 'local', 'local', 'local', 'local', 'global'], slidingWindow: 8, tiedEmbeddings: true,
  maxPositions: 4096, bosId: 2, eosIds: [1, 106],
};

const layerSet = (n: number, names: string[]) => Array.from({ length: n }, (_, i) => names.map((t) => `layers.${i}.${t}`)).flat();
const CORE = ['attn_norm', 'wq', 'wk', 'wv', 'wo', 'ffn_norm', 'w_gate', 'w_up', 'w_down'];

test('llama3-smollm fixture (BF16, sharded) maps to the expected config and weights', async () => {
  const { config, weights } = await loadHfFolder(nodeFolderFiles(fixture('llama3-smollm')));
  assert.deepEqual(config, LLAMA3);
  assert.deepEqual([...weights.keys()].sort(), ['embed', 'final_norm', ...layerSet(2, CORE)].sort());
  for (const t of weights.values()) assert.equal(t.dtype, 'f32');
  assert.deepEqual(weights.get('embed')!.shape, [49152, 32]);
  assert.deepEqual(weights.get('layers.1.wk')!.shape, [16, 32]);
  assert.deepEqual(weights.get('layers.1.w_down')!.shape, [32, 64]);
});

test('qwen2 fixture (F32) has biases and an untied lm_head', async () => {
  const { config, weights } = await loadHfFolder(nodeFolderFiles(fixture('qwen2')));
  assert.deepEqual(config, QWEN2);
  assert.deepEqual(
    [...weights.keys()].sort(),
    ['embed', 'final_norm', 'lm_head', ...layerSet(2, [...CORE, 'bq', 'bk', 'bv'])].sort(),
  );
  assert.deepEqual(weights.get('layers.0.bk')!.shape, [32]);
  assert.ok([...weights.get('layers.0.bq')!.data].some((v) => v !== 0));
});

test('gemma3 fixture (F16) maps sandwich norms, q/k norms and layer kinds', async () => {
  const files = nodeFolderFiles(fixture('gemma3'));
  const { config, weights } = await loadHfFolder(files);
  assert.deepEqual(config, GEMMA3);
  const names = [...CORE, 'q_norm', 'k_norm', 'post_attn_norm', 'post_ffn_norm'];
  assert.deepEqual([...weights.keys()].sort(), ['embed', 'final_norm', ...layerSet(6, names)].sort());
  for (const t of weights.values()) assert.equal(t.dtype, 'f16');
  assert.deepEqual(weights.get('layers.2.q_norm')!.shape, [32]);
  assert.deepEqual(weights.get('layers.2.wq')!.shape, [128, 64]);
  assert.deepEqual(weights.get('layers.2.wo')!.shape, [64, 128]);

  // Gemma's post_attention_layernorm is the post-attention norm; pre_feedforward is the FFN norm.
  const store = await openSafetensorsFolder(files);
  const raw = async (n: string) => [...(await store.load(`model.layers.3.${n}.weight`)).data];
  assert.deepEqual([...weights.get('layers.3.post_attn_norm')!.data], await raw('post_attention_layernorm'));
  assert.deepEqual([...weights.get('layers.3.ffn_norm')!.data], await raw('pre_feedforward_layernorm'));
  assert.deepEqual([...weights.get('layers.3.post_ffn_norm')!.data], await raw('post_feedforward_layernorm'));
  assert.notDeepEqual(await raw('post_attention_layernorm'), await raw('pre_feedforward_layernorm'));
});

test('llama post_attention_layernorm is the FFN norm', async () => {
  const files = nodeFolderFiles(fixture('llama3-smollm'));
  const { weights } = await loadHfFolder(files);
  const store = await openSafetensorsFolder(files);
  const raw = [...(await store.load('model.layers.1.post_attention_layernorm.weight')).data];
  assert.deepEqual([...weights.get('layers.1.ffn_norm')!.data], raw);
});

test('transformers v4 config dialect gives the same configs', () => {
  const strip = (c: Record<string, any>) => {
    const { rope_parameters: _, layer_types: __, ...rest } = c;
    return rest;
  };
  const llama = { ...strip(readJsonFile('llama3-smollm', 'config.json')), rope_theta: 500000,
    rope_scaling: { factor: 8, high_freq_factor: 4, low_freq_factor: 1, original_max_position_embeddings: 256, rope_type: 'llama3' } };
  assert.deepEqual(hfConfigToModelConfig(llama, { hasQkvBias: false, hasLmHead: false }), LLAMA3);
  const qwen = { ...strip(readJsonFile('qwen2', 'config.json')), rope_theta: 1e6, rope_scaling: null, sliding_window: 32768 };
  assert.deepEqual(hfConfigToModelConfig(qwen, { hasQkvBias: true, hasLmHead: true }), QWEN2);
  const gemma = { ...strip(readJsonFile('gemma3', 'config.json')), rope_theta: 1e6, rope_local_base_freq: 1e4,
    rope_scaling: { rope_type: 'linear', factor: 8 }, sliding_window_pattern: 6 };
  delete (gemma as Record<string, unknown>)._sliding_window_pattern;
  assert.deepEqual(hfConfigToModelConfig(gemma, { hasQkvBias: false, hasLmHead: false }), GEMMA3);
  // Older configs name the scaling type "type"; eos may be a single id.
  const old = { ...llama, rope_scaling: { ...llama.rope_scaling, rope_type: undefined, type: 'llama3' }, eos_token_id: 7 };
  assert.deepEqual(hfConfigToModelConfig(old).eosIds, [7]);
  assert.deepEqual(hfConfigToModelConfig(old).ropeScaling, LLAMA3.ropeScaling);
});

test('Hub-style v4 configs: SmolLM2-135M and a Gemma 3 270M-like text model', () => {
  const smol = hfConfigToModelConfig({
    architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_size: 576, intermediate_size: 1536,
    num_attention_heads: 9, num_hidden_layers: 30, num_key_value_heads: 3, hidden_act: 'silu',
    max_position_embeddings: 8192, rms_norm_eps: 1e-5, rope_scaling: null, rope_theta: 100000,
    tie_word_embeddings: true, vocab_size: 49152, bos_token_id: 1, eos_token_id: 2, attention_bias: false,
  }, { hasQkvBias: false, hasLmHead: false });
  assert.equal(smol.headDim, 64);
  assert.equal(smol.ropeScaling, undefined);
  assert.equal(smol.attnScale, 1 / 8);
  assert.deepEqual([smol.nKvHeads, smol.ropeTheta, smol.tiedEmbeddings, smol.maxPositions], [3, 100000, true, 8192]);

  const gemma = hfConfigToModelConfig({
    architectures: ['Gemma3ForCausalLM'], model_type: 'gemma3_text', head_dim: 256, hidden_size: 640,
    intermediate_size: 2048, num_attention_heads: 4, num_hidden_layers: 18, num_key_value_heads: 1,
    query_pre_attn_scalar: 256, rope_local_base_freq: 10000, rope_scaling: null, rope_theta: 1000000,
    sliding_window: 512, sliding_window_pattern: 6, vocab_size: 262144, max_position_embeddings: 32768,
  });
  assert.deepEqual(gemma.layerKinds.map((k) => (k === 'global' ? 'G' : 'L')).join(''), 'LLLLLGLLLLLGLLLLLG');
  assert.deepEqual([gemma.ropeTheta, gemma.ropeLocalTheta, gemma.ropeScaling], [1e6, 1e4, undefined]);
  assert.deepEqual([gemma.attnScale, gemma.embedScale, gemma.slidingWindow], [1 / 16, Math.sqrt(640), 512]);
  assert.deepEqual([gemma.bosId, gemma.eosIds, gemma.tiedEmbeddings, gemma.rmsEps], [2, [1], true, 1e-6]);
});

test('without tie_word_embeddings, the presence of lm_head decides', () => {
  const { tie_word_embeddings: _, ...qwen } = readJsonFile('qwen2', 'config.json');
  assert.equal(hfConfigToModelConfig(qwen, { hasQkvBias: true, hasLmHead: true }).tiedEmbeddings, false);
  assert.equal(hfConfigToModelConfig(qwen, { hasQkvBias: true, hasLmHead: false }).tiedEmbeddings, true);
  assert.equal(hfConfigToModelConfig({ ...qwen, tie_word_embeddings: true }, { hasQkvBias: true, hasLmHead: true }).tiedEmbeddings, true);
});

test('multimodal gemma3 checkpoints: text config and language_model weights', async () => {
  const text = readJsonFile('gemma3', 'config.json');
  const { eos_token_id, bos_token_id, ...textNoIds } = text;
  const config = {
    model_type: 'gemma3', architectures: ['Gemma3ForConditionalGeneration'], eos_token_id, bos_token_id,
    text_config: { ...textNoIds, model_type: 'gemma3_text' }, vision_config: { model_type: 'siglip_vision_model' },
  };
  for (const prefix of ['language_model.model.', 'model.language_model.']) {
    const st = rewriteHeader(fileBytes('gemma3', 'model.safetensors'), (h) => {
      const out: Record<string, any> = {};
      for (const [k, v] of Object.entries(h)) out[k.startsWith('model.') ? prefix + k.slice(6) : k] = v;
      out['vision_tower.vision_model.post_layernorm.weight'] = h['model.norm.weight'];
      return out;
    });
    const { config: c, weights } = await loadHfFolder(
      overlay('gemma3', { 'config.json': enc(config), 'model.safetensors': st }),
    );
    assert.deepEqual(c, { ...GEMMA3, name: 'Gemma3ForConditionalGeneration' });
    assert.equal(weights.size, 2 + 6 * 13);
  }
});

test('unsupported model types are named', async () => {
  await rejectsWith(
    loadHfFolder(overlay('qwen2', { 'config.json': enc({ model_type: 'mamba', hidden_size: 64 }) })),
    UnsupportedModelError, '"mamba"',
  );
  assert.throws(() => hfConfigToModelConfig({ hidden_size: 1 }), UnsupportedModelError);
  const yarn = { ...readJsonFile('qwen2', 'config.json'), rope_parameters: { rope_type: 'yarn', rope_theta: 1e6, factor: 4 } };
  assert.throws(() => hfConfigToModelConfig(yarn), (e: Error) => e instanceof UnsupportedModelError && e.message.includes('"yarn"'));
  const gelu = { ...readJsonFile('llama3-smollm', 'config.json'), hidden_act: 'gelu' };
  assert.throws(() => hfConfigToModelConfig(gelu), (e: Error) => e instanceof UnsupportedModelError && e.message.includes('gelu'));
  const capped = { ...readJsonFile('gemma3', 'config.json'), final_logit_softcapping: 30 };
  assert.throws(() => hfConfigToModelConfig(capped), UnsupportedModelError);
});

test('a missing tensor is reported by canonical and HF name', async () => {
  const st = rewriteHeader(fileBytes('gemma3', 'model.safetensors'), (h) => {
    delete h['model.layers.3.self_attn.k_norm.weight'];
    return h;
  });
  await rejectsWith(
    loadHfFolder(overlay('gemma3', { 'model.safetensors': st })),
    ModelFormatError, 'missing layers.3.k_norm', 'model.layers.3.self_attn.k_norm.weight',
  );
  // An explicitly untied model without lm_head misses lm_head.
  const untied = { ...readJsonFile('llama3-smollm', 'config.json'), tie_word_embeddings: false };
  await rejectsWith(
    loadHfFolder(overlay('llama3-smollm', { 'config.json': enc(untied) })),
    ModelFormatError, 'missing lm_head',
  );
});

test('shape mismatches and unknown tensors are named', async () => {
  const wrong = { ...readJsonFile('qwen2', 'config.json'), intermediate_size: 100 };
  await rejectsWith(
    loadHfFolder(overlay('qwen2', { 'config.json': enc(wrong) })),
    ModelFormatError, 'layers.0.w_gate (model.layers.0.mlp.gate_proj.weight) has shape [96, 64], expected [100, 64]',
  );
  const st = rewriteHeader(fileBytes('qwen2', 'model.safetensors'), (h) => {
    h['model.layers.1.self_attn.o_proj.bias'] = h['model.norm.weight'];
    return h;
  });
  await rejectsWith(
    loadHfFolder(overlay('qwen2', { 'model.safetensors': st })),
    UnsupportedModelError, 'model.layers.1.self_attn.o_proj.bias',
  );
  await rejectsWith(loadHfFolder(overlay('qwen2', { 'config.json': null })), ModelFormatError, 'config.json');
});

test('reference fixtures are self-consistent', async () => {
  for (const m of ['llama3-smollm', 'qwen2', 'gemma3']) {
    const ref = readJsonFile(m, 'reference.json');
    const cfg = hfConfigToModelConfig(readJsonFile(m, 'config.json'));
    assert.equal(ref.model, m);
    for (const c of ref.cases) {
      const [T, V] = c.shape;
      assert.equal(V, cfg.vocabSize);
      assert.equal(c.tokens.length, T);
      assert.equal(c.positions.length, T);
      assert.ok(c.positions.every((p: number, i: number) => i === 0 || p > c.positions[i - 1]));
      assert.ok(c.tokens.every((t: number) => Number.isInteger(t) && t >= 0 && t < V));
      assert.equal(statSync(fixture(m) + c.logits).size, T * V * 4);
    }
  }
});
