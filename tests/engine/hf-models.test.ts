/**
 * Whole-model parity with Hugging Face transformers: tiny random-weight
 * Llama (llama3 RoPE scaling, BF16, sharded), Qwen2 (q/k/v bias, untied, F32)
 * and Gemma 3 (sandwich norms, q/k norm, GeGLU, sliding window with two RoPE
 * bases, query_pre_attn_scalar, F16), with logits recorded by transformers
 * in f32 (scripts/fixtures/make_hf_fixtures.py). Cases cover contiguous and
 * non-contiguous position ids and, for Gemma 3, a sequence longer than its
 * sliding window. Tolerance: max |Δlogit| ≤ 1e-5 of the reference logits'
 * range with f32 KV, about 10x the error measured on SwiftShader (at most
 * 8.2e-7 of the range, Qwen2 with gapped positions; 3.6e-7 to 8.2e-7 over
 * all cases); 1e-2 with f16 KV storage, which rounds K and V to 11 bits
 * (measured at most 6.5e-4). The split GPU-profile forward and the host
 * reference (tests/helpers/reference-model.ts) are held to 1e-5 too (measured
 * at most 8.7e-7 and 8.9e-7, on SwiftShader and lavapipe).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Engine } from '../../src/engine/engine';
import { loadHfFolder } from '../../src/engine/formats/hf';
import { nodeFolderFiles } from '../../src/node/files';
import { loadKernelSources } from '../../src/node/gpu';
import { referenceForward } from '../helpers/reference-model';
import { assertWithinRange, harness } from '../helpers/gpu';

const FIX = join(import.meta.dirname, '../fixtures/hf');

interface Case { name: string; tokens: number[]; positions: number[]; logits: string; shape: [number, number] }

for (const name of ['llama3-smollm', 'qwen2', 'gemma3']) {
  const dir = join(FIX, name);
  const ref = JSON.parse(readFileSync(join(dir, 'reference.json'), 'utf8')) as { cases: Case[] };
  for (const kvDtype of ['f32', 'f16'] as const) {
    test(`${name}: logits match transformers (${kvDtype} KV)`, async (t) => {
      const h = await harness();
      const m = await loadHfFolder(nodeFolderFiles(dir), { name });
      const engine = Engine.create(h.gpu, loadKernelSources());
      await engine.load(m.config, m.weights, { weightDtype: 'f32', kvDtype });
      try {
        for (const c of ref.cases) {
          const want = new Float32Array(readFileSync(join(dir, c.logits)).buffer.slice(0));
          assert.equal(want.length, c.shape[0] * c.shape[1]);
          const cache = engine.newCache(8);
          const got = (await engine.prefill(cache, c.tokens, c.positions, { logits: 'all' })).logits;
          cache.destroy();
          const err = assertWithinRange(got, want, kvDtype === 'f32' ? 1e-5 : 1e-2, `${name}/${c.name}, ${kvDtype} KV`);
          t.diagnostic(`${c.name}: max |Δlogit| / range = ${err.toExponential(2)}`);
        }
      } finally {
        engine.destroy();
      }
    });
  }
  // Matrices larger than one buffer may be are stored in row parts (GpuModel, gpu-plan.ts): with a buffer limit
  // forced down to 2.5 rows of logits, the embedding and LM head (and, for the 64-wide models, q/k/v, gate/up and
  // down) are split, and logits come in blocks of two rows. On CPU adapters every output is the same computation:
  // equal bits. On a GPU the matmul variant follows each part's size (gemv, 64- or 128-row tiles), which changes
  // only the summation order: there the two agree within 1e-6 of the logit range (f32 rounding). So on a CPU
  // adapter forced to fuse (LEGOKV_FUSE=on), whose logit blocks then take gemv's norm prologue.
  test(`${name}: weights split into row parts give the unsplit logits`, async (t) => {
    const h = await harness();
    const m = await loadHfFolder(nodeFolderFiles(dir), { name });
    const bufferLimit = Math.ceil((2.5 * m.config.vocabSize * 4) / 16) * 16;
    const whole = Engine.create(h.gpu, loadKernelSources());
    const split = Engine.create(h.gpu, loadKernelSources());
    try {
      await whole.load(m.config, m.weights, { weightDtype: 'f32' });
      const gm = await split.load(m.config, m.weights, { weightDtype: 'f32', bufferLimit });
      assert.equal(whole.model!.embed.parts.length, 1);
      assert.ok(gm.embed.parts.length > 1 && gm.lmHead.parts.length > 1);
      assert.equal(gm.lmHead === gm.embed, m.config.tiedEmbeddings);
      const layerParts = gm.layers[0].wqkv.parts.length + gm.layers[0].wGateUp.parts.length + gm.layers[0].wDown.parts.length;
      t.diagnostic(`limit ${bufferLimit} bytes: embed in ${gm.embed.parts.length} parts, lm_head in ${gm.lmHead.parts.length}, layer 0's wqkv + w_gate_up + w_down in ${layerParts}`);
      if (m.config.hidden === 64) assert.ok(layerParts > 3, 'layer matrices split too');
      assert.ok(gm.allocated.every((b) => b.bytes <= bufferLimit));
      for (const c of ref.cases) {
        const want = new Float32Array(readFileSync(join(dir, c.logits)).buffer.slice(0));
        const run = async (e: Engine) => {
          const cache = e.newCache(8);
          const r = (await e.prefill(cache, c.tokens, c.positions, { logits: 'all' })).logits;
          cache.destroy();
          return r;
        };
        const got = await run(split);
        const unsplit = await run(whole);
        const sameKernels = h.gpu.profile === 'cpu' && !split.ops.fuses(2);
        if (sameKernels) assert.deepEqual(got, unsplit, `${name}/${c.name}: split and unsplit logits differ`);
        else {
          assertWithinRange(got, unsplit, 1e-6, `${name}/${c.name}: split against unsplit`);
        }
        const err = assertWithinRange(got, want, 1e-5, `${name}/${c.name}: split against transformers`);
        t.diagnostic(`${c.name}: ${sameKernels ? 'equal bits to unsplit' : 'within 1e-6 of the range of unsplit'}; max |Δlogit| / range against transformers ${err.toExponential(2)}`);
      }
    } finally {
      whole.destroy();
      split.destroy();
    }
  });

  test(`${name}: the host reference model agrees with transformers too`, async () => {
    const m = await loadHfFolder(nodeFolderFiles(dir), { name });
    const c = ref.cases[ref.cases.length - 1];
    const want = new Float32Array(readFileSync(join(dir, c.logits)).buffer.slice(0));
    assertWithinRange(referenceForward(m.config, m.weights, c.tokens, c.positions), want, 1e-5, `host reference ${name}/${c.name}`);
  });
}
