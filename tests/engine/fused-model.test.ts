/**
 * Decode with the fused launches (Ops.fuse: RMSNorm folded into the q/k/v, gate/up and LM-head GEMVs, the GLU
 * into the down GEMV) on the tiny Hugging Face models of hf-models.test.ts, Llama (tied embeddings), Qwen2
 * (q/k/v bias) and Gemma 3 ((1 + w) norms, q/k norm, sandwich norms, GeGLU, sliding window): a 3-token prefill
 * (gemv on 3 rows; 8 on Llama, see prefillRows) then one decode step per remaining token, forced fused and forced unfused, each held to the
 * logits transformers recorded, with hf-models' tolerance (1e-5 of their range; measured on SwiftShader: at most
 * 1.2e-6 fused, 1.0e-6 unfused, both Qwen2's). Fails with the fusion broken (checked by hand: the norm's scale
 * left out). Also counts the launches of a decode step: fusing saves three a layer (two
 * norms and the GLU) and the final norm's. A third way attends with attention_decode, which a fused step then
 * gives rope_scatter's work too (AttentionArgs.step): one launch fewer a layer again (three on Gemma 3, whose q/k
 * norms it also takes), the same logits; and again with a kv head's q heads in one workgroup (attention_decode's
 * 'grouped-keys': all three models group their heads, Gemma 3 four to its one kv head). A fifth
 * works out the GEMVs' normed and GLU x once a workgroup in workgroup memory (Ops.stageX; Qwen2 and Gemma 3): the
 * same logits, and on Gemma 3 two launches fewer a layer (its sandwich norms folded into the next norm's GEMV).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Engine } from '../../src/engine/engine';
import { loadHfFolder } from '../../src/engine/formats/hf';
import { nodeFolderFiles } from '../../src/node/files';
import { loadKernelSources } from '../../src/node/gpu';
import { assertWithinRange, harness } from '../helpers/gpu';

const FIX = join(import.meta.dirname, '../fixtures/hf');
/**
 * Rows prefilled before the decode steps: 3, so the prefill takes gemv on 3 rows, except on llama3-smollm, whose
 * 49152-token LM head takes SwiftShader 1.3-1.8 s a fused step (gemv's thousands of 256-invocation workgroups, which
 * CPU adapters never pick): its 8 rows go through matmul, and its gapped case decodes on keys from both sides of its gaps.
 */
const prefillRows = (name: string) => (name === 'llama3-smollm' ? 8 : 3);

interface Case { name: string; tokens: number[]; positions: number[]; logits: string; shape: [number, number] }

for (const name of ['llama3-smollm', 'qwen2', 'gemma3']) {
  test(`${name}: decode fused and unfused both match transformers; fusing saves 3 launches a layer + 1, and the RoPE step in attention_decode 1 more (3 with a q/k norm)`, async (t) => {
    const dir = join(FIX, name);
    const ref = JSON.parse(readFileSync(join(dir, 'reference.json'), 'utf8')) as { cases: Case[] };
    const PREFILL = prefillRows(name);
    const h = await harness();
    const m = await loadHfFolder(nodeFolderFiles(dir), { name });
    const engine = Engine.create(h.gpu, loadKernelSources());
    await engine.load(m.config, m.weights, { weightDtype: 'f32' });
    const launches: Record<string, number> = {};
    try {
      // Staged on Qwen2 (bias) and Gemma 3 ((1 + w) norms, GeGLU): Llama's plain norms and SiLU are fused-kernels.test's.
      const ways = name === 'llama3-smollm' ? (['fused', 'unfused', 'fused step', 'fused step, grouped'] as const) : (['fused', 'unfused', 'fused step', 'fused step, grouped', 'fused, x staged'] as const);
      for (const way of ways) {
        const fuse = way !== 'unfused';
        engine.ops.fuse = fuse;
        engine.ops.attentionVariant = way === 'fused step' ? 'keys' : way === 'fused step, grouped' ? 'grouped-keys' : undefined;
        engine.ops.stageX = way === 'fused, x staged';
        let worst = 0;
        for (const c of ref.cases) {
          const want = new Float32Array(readFileSync(join(dir, c.logits)).buffer.slice(0));
          const V = c.shape[1];
          const cache = engine.newCache(c.tokens.length + 1);
          const check = (got: Float32Array, row: number) => {
            worst = Math.max(worst, assertWithinRange(got, want.subarray(row * V, (row + 1) * V), 1e-5, `${c.name} row ${row}, ${way}`));
          };
          check((await engine.prefill(cache, c.tokens.slice(0, PREFILL), c.positions.slice(0, PREFILL))).logits, PREFILL - 1);
          for (let i = PREFILL; i < c.tokens.length; i++) {
            const before = engine.ops.d.count;
            check(await engine.decode(cache, c.tokens[i], c.positions[i]), i);
            launches[way] = engine.ops.d.count - before;
          }
          cache.destroy();
        }
        t.diagnostic(`${way}: max |Δlogit| / range ${worst.toExponential(2)}, ${launches[way]} launches a decode step`);
      }
    } finally {
      engine.destroy();
    }
    assert.equal(launches.unfused - launches.fused, 3 * m.config.nLayers + 1);
    // Gemma 3's step also takes its q and k norms: two launches more a layer.
    const stepSaves = m.config.qkNorm ? 3 : 1;
    assert.equal(launches.fused - launches['fused step'], stepSaves * m.config.nLayers, `rope_scatter${m.config.qkNorm ? ' and the q/k norms' : ''} folded into every layer's attention`);
    assert.equal(launches['fused step, grouped'], launches['fused step'], 'a kv head\'s q heads a workgroup fold the same step');
    // Staged, Gemma 3's sandwich norms fold into the GEMV of the norm after each (PostNorm): two launches a layer.
    if (name !== 'llama3-smollm') assert.equal(launches.fused - launches['fused, x staged'], m.config.postNorms ? 2 * m.config.nLayers : 0, 'staging x saves the sandwich norms\' launches alone');
  });
}
