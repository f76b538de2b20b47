/**
 * What the tiled matmuls' `shader-f16` fast path (HALF, kernels/matmul_half.wgsl) does to real models, on the
 * one adapter in reach that has `shader-f16`: Mesa's lavapipe (scripts/fetch-lavapipe.mjs; these tests skip and
 * say so without it, or without the GGUF files). The engine runs the GPU profile there (tiled prefill, packed
 * weights), and each prompt is prefilled and then decoded greedily twice on the one device: with HALF (the
 * default where the adapter has `shader-f16`) and with f32 math (Ops.half = false). Only the prefill's tiled
 * products differ; decode's GEMVs are the same kernels. Compared: the greedy tokens (equal), and the
 * log-softmax at the prompt's last position, max |Δ| over the range of the f32 run's (llamacpp-parity.test.ts
 * holds the f32 run itself to llama.cpp).
 *
 * Measured on lavapipe (Mesa 25.0.7), worst over the prompts: SmolLM2-135M-Instruct Q4_1 1.6e-3 of the range,
 * Gemma 3 270M Q4_K_M 1.1e-3 -> tolerance 2e-2 and 1.5e-2 (~10x). Every greedy token agrees, 12 of them a
 * prompt. For scale: llama.cpp's own quantized run differs from its F32 copy by 3-7% of the range. The two
 * runs must differ at all (HALF ran), and break apart when HALF's slices are summed wrongly (checked by hand).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { openModel } from '../../src/node/session';
import { argmax } from '../../src/generate/sampling';
import { LAVAPIPE_ICD } from '../../scripts/gpu-env.mjs';
import { logitRangeError } from '../helpers/compare';

process.env.LEGOKV_NODE_BACKEND = 'lavapipe';
const MODELS_DIR = join(import.meta.dirname, '../../.cache/models');

const CASES = [
  {
    name: 'SmolLM2-135M-Instruct Q4_1', file: 'SmolLM2-135M-Instruct.Q4_1.gguf', tolerance: 2e-2,
    prompts: [
      '<|im_start|>user\nWhat is the capital of France? Answer in one word.<|im_end|>\n<|im_start|>assistant\n',
      'The cat sat on the mat. The dog slept by the door. The bird sang in the tree. Then the cat',
    ],
  },
  {
    name: 'Gemma 3 270M Q4_K_M', file: 'gemma-3-270m-q4_k_m.gguf', tolerance: 1.5e-2,
    prompts: [
      '<start_of_turn>user\nWhat is the capital of France? Answer in one word.<end_of_turn>\n<start_of_turn>model\n',
      'The cat sat on the mat. The dog slept by the door. The bird sang in the tree. Then the cat',
    ],
  },
];
const NEW_TOKENS = 12;

for (const c of CASES) {
  test(`${c.name} on lavapipe: HALF prefill gives f32 math's greedy tokens, logits within ${c.tolerance} of the range`, async (t) => {
    const path = join(MODELS_DIR, c.file);
    if (!existsSync(LAVAPIPE_ICD)) return t.skip('lavapipe is not fetched (node scripts/fetch-lavapipe.mjs)');
    if (!existsSync(path)) return t.skip(`${path} is absent (npm run fetch:models)`);
    const s = await openModel(path, { kvDtype: 'f32', dequantize: false });
    try {
      assert.ok(s.engine.ops.shaderF16, 'the device has shader-f16');
      s.engine.ops.matmulProfile = 'gpu';
      const tok = s.model.tokenizer;
      const notes: string[] = [];
      for (const prompt of c.prompts) {
        const input = tok.encode(prompt, { addBos: true });
        assert.ok(input.length >= 16, `${input.length} tokens: the prefill takes the tiled kernels`);
        const run = async (half: boolean) => {
          s.engine.ops.half = half;
          const cache = s.engine.newCache(input.length + NEW_TOKENS);
          const first = (await s.engine.prefill(cache, input)).logits;
          let logits = first;
          const out: number[] = [];
          for (let i = 0; i < NEW_TOKENS; i++) {
            out.push(argmax(logits));
            logits = await s.engine.decode(cache, out[i]);
          }
          cache.destroy();
          return { first, out };
        };
        const f32 = await run(false);
        const half = await run(true);
        assert.deepEqual(half.out, f32.out, `greedy tokens of ${JSON.stringify(prompt.slice(0, 40))}`);
        const { err } = logitRangeError(half.first, f32.first);
        notes.push(`${input.length} tokens: ${err.toExponential(2)} of the range, "${tok.decode(f32.out)}"`);
        assert.ok(err > 0, 'the HALF run differs from f32 math at all (it ran)');
        assert.ok(err <= c.tolerance, `${err} of the range`);
      }
      t.diagnostic(notes.join('; '));
    } finally {
      s.engine.ops.half = undefined;
      s.close();
    }
  });
}
