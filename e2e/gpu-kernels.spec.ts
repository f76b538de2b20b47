/**
 * The kernels a real GPU runs, compiled by Chromium's own WGSL compiler (which users' browsers use, and the Node
 * parity tests do not) and run on its adapter: with the GPU profile forced (?debug), qa-demo compiles its sample
 * documents and answers with full recompute and legolink:16 exactly as the CPU profile's kernels answer. The GPU
 * profile runs shared-memory matmul tiles, attention_tiled from 32 query rows, attention_decode below, the
 * workgroup RMSNorm, fused decode through gemv_sg (the adapter has subgroups), and greedy decode recorded ahead
 * (Engine.greedySteps, with the attention map's scores); and a load on it times decode's kernel choices and prefill's
 * attention ways (attention_tiled_sg's lanes, the tile), keeps the fastest and says so.
 */
import { expect, test } from '@playwright/test';
import { setKernels } from './helpers';

test('the GPU profile\'s kernels in Chromium compile chunks and answer as the CPU profile\'s do', async ({ page }) => {
  test.setTimeout(480_000);
  await page.goto('/?debug');
  await expect(page.getByTestId('model-ready')).toContainText('qa-demo (bundled)');
  await page.getByRole('button', { name: 'Add sample documents for qa-demo' }).click();
  await expect(page.getByTestId('composer-item')).toHaveCount(5);
  await page.getByLabel('Answer tokens').fill('8');
  // Compiled once, with the CPU profile's kernels; full recompute and LegoLink's rows then prefill with each
  // profile's (over 32 rows: the tiled matmul and attention_tiled on the GPU profile).
  await page.getByRole('button', { name: 'Compile all chunks' }).click();
  await expect(page.getByTestId('compile-progress')).toContainText('Compiled 5 of 5 chunks');
  const answers: Record<string, string[]> = { full: [], 'legolink:16': [] };
  for (const profile of ['cpu', 'gpu'] as const) {
    const k = await setKernels(page, profile);
    expect(k.profile).toBe(profile);
    expect(k.fused).toBe(profile === 'gpu');
    if (profile === 'gpu') expect(k.gemv).toBe('gemv_sg');
    // And greedy decode as on a real GPU: steps recorded ahead, each token fed on the GPU, scores read behind it.
    expect(k.decodeAhead).toBe(profile === 'gpu' ? 16 : 1);
    // SwiftShader has no shader-f16: the tiled matmuls keep f32 math, and asking for f16 slices is refused, saying why.
    expect(k.half).toBe(false);
    for (const [algo, spec] of [['full', 'full'], ['legolink', 'legolink:16']] as const) {
      const cards = page.getByTestId('answer-card').filter({ has: page.getByRole('heading', { name: spec, exact: true }) });
      const before = await cards.count();
      await page.getByLabel('Linking algorithm').selectOption(algo);
      await page.getByRole('button', { name: `Ask (${spec})` }).click();
      await expect(cards).toHaveCount(before + 1);
      // A wide bound: on a fresh machine the GPU profile's first answer (its pipelines built cold by SwiftShader)
      // once took over a minute; the bound is for a hang, not for speed.
      for (let i = 0; i <= before; i++) await expect(cards.nth(i)).toContainText('done', { timeout: 180_000 });
      answers[spec] = await cards.getByTestId('answer-text').allTextContents();
    }
  }
  for (const [spec, texts] of Object.entries(answers)) {
    expect(texts).toHaveLength(2);
    expect(texts[0].length, spec).toBeGreaterThan(0);
    expect(texts[1], `${spec}: the GPU profile's answer`).toBe(texts[0]);
  }
  await expect(setKernels(page, 'gpu', null, true)).rejects.toThrow(/shader-f16 feature, which this adapter \(google \/ swiftshader\) does not offer/);

  // On the GPU profile a load times decode's kernel choices and keeps the fastest (Engine.tuneDecode), and the page
  // says which; CPU adapters are not tuned, and qa-demo's load on this one said nothing of it.
  await expect(page.getByTestId('decode-tuning')).toHaveCount(0);
  await expect(page.getByTestId('upload-tuning')).toHaveCount(0);
  await expect(page.getByTestId('prefill-tuning')).toHaveCount(0);
  await setKernels(page, 'gpu');
  await page.getByLabel('Bundled model').selectOption({ index: 1 });
  await page.getByRole('button', { name: 'Load bundled' }).click();
  await expect(page.getByTestId('model-ready')).toContainText('stories260K (bundled)', { timeout: 120_000 });
  // Which ways are timed follows from the way kept (coordinate descent, one choice at a time; see tune.ts): eight
  // always (the defaults; gemv without subgroups; unfused; lanes, grouped, grouped-keys and rows attention,
  // stories260K's heads grouping in twos; x staged), three more (2, 4 and 8 keys a thread) where attention_decode
  // stayed, alone or for a kv head's q heads, and one more (attention_combine launched instead of folded) where
  // decode stayed fused. Which way is fastest on SwiftShader depends on the host's timing, so the count is checked
  // against the way kept, not against a list. (stories260K's 512 positions never reach a long span: no long spans'
  // kernel is timed for it.)
  const way = String.raw`gemv(_sg)?(, 16-byte loads)?, (un)?fused, attention(_decode( for a kv head's q heads)?(, [248] keys a thread| \(lanes\))?|_grouped)?(, attention_combine launched)?(, x staged)?`;
  const tuning = new RegExp(String.raw`^Decode kernels, timed on this GPU \((\d+) ways in \d+\.\d s\): (${way}), \d+\.\d\d ms a token( \(the defaults\)|; the defaults \(gemv_sg, fused, attention_decode\) took \d+\.\d\d ms)$`);
  await expect(page.getByTestId('decode-tuning')).toHaveText(tuning);
  const [, ways, kept] = (await page.getByTestId('decode-tuning').textContent())!.match(tuning)!;
  const keysRounds = /attention_decode(?! \(lanes\))/.test(kept), fused = /, fused,/.test(kept);
  expect(Number(ways), kept).toBe(8 + (keysRounds ? 3 : 0) + (fused ? 1 : 0));
  // It also times how a link's host rows go up, both ways, and keeps the faster (Engine.tuneUpload).
  await expect(page.getByTestId('upload-tuning')).toHaveText(
    /^Uploads from host memory, timed on this GPU: (writeBuffer|mapped staging) \(\d+\.\d GB\/s by writeBuffer, \d+\.\d GB\/s by mapped staging\)$/,
  );
  // And prefill's attention, each way (one or two lanes a row group for stories260K's heads of 8, tiles of 16 or 8
  // keys) checked against the default's output on the adapter, then timed over its 512 positions (Engine.tunePrefill).
  await expect(page.getByTestId('prefill-tuning')).toHaveText(
    new RegExp(String.raw`^Prefill attention, timed on this GPU \(4 ways in \d+\.\d\d s\): attention_tiled(_sg, 2 lanes sharing 2 rows)?, (16|8) keys a tile, \d+ µs a layer for 512 rows over 512 keys( \(the default\)|; the default \(attention_tiled, 16 keys a tile\) took \d+ µs)$`),
  );
  await setKernels(page, null);
});
