/** The model panel's line on decode's kernels as timed at load (ui/tuning-text.ts), with and without a long spans' kernel. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeTuningText, prefillTuningText } from '../../src/ui/tuning-text';

const base = { chosen: 'gemv_sg, fused, attention_decode', msPerStep: 2.5, defaults: 'gemv_sg, fused, attention_decode', defaultMsPerStep: 2.5, ways: 9, ms: 1300, long: null };

test('the defaults kept, another way kept, a long spans’ kernel, a failure', () => {
  assert.equal(decodeTuningText(base), 'Decode kernels, timed on this GPU (9 ways in 1.3 s): gemv_sg, fused, attention_decode, 2.50 ms a token (the defaults)');
  assert.equal(
    decodeTuningText({ ...base, chosen: 'gemv_sg, fused, attention_decode, x staged', msPerStep: 2.25 }),
    'Decode kernels, timed on this GPU (9 ways in 1.3 s): gemv_sg, fused, attention_decode, x staged, 2.25 ms a token; the defaults (gemv_sg, fused, attention_decode) took 2.50 ms',
  );
  assert.equal(
    decodeTuningText({ ...base, long: { attention: 'attention_decode (lanes)', from: 1609, span: 8192, us: 21.4, shortUs: 63.8 } }),
    'Decode kernels, timed on this GPU (9 ways in 1.3 s): gemv_sg, fused, attention_decode, 2.50 ms a token (the defaults). ' +
      'From 1609 keys a token attends with attention_decode (lanes) (over 8192 keys: 21 µs a layer, against 64)',
  );
  assert.equal(
    decodeTuningText({ ...base, longError: 'out of memory' }),
    'Decode kernels, timed on this GPU (9 ways in 1.3 s): gemv_sg, fused, attention_decode, 2.50 ms a token (the defaults). ' +
      'Long spans keep that kernel (timing attention alone over them failed: out of memory)',
  );
  assert.equal(decodeTuningText({ error: 'device lost' }), 'Decode kernels: the defaults (timing them failed: device lost)');
});

test('prefill attention: the way kept and its µs a layer, the default\'s beside it where another was kept, ways refused with why; a failed timing says why', () => {
  const base = { chosen: 'attention_tiled_sg, 4 lanes sharing 4 rows, 8 keys a tile', us: 812.4, defaults: 'attention_tiled, 16 keys a tile', defaultUs: 1203.9, ways: 6, rows: 512, keys: 4096, ms: 61, refused: [] };
  assert.equal(
    prefillTuningText(base),
    'Prefill attention, timed on this GPU (6 ways in 0.06 s): attention_tiled_sg, 4 lanes sharing 4 rows, 8 keys a tile, 812 µs a layer for 512 rows over 4096 keys; ' +
      'the default (attention_tiled, 16 keys a tile) took 1204 µs',
  );
  assert.equal(
    prefillTuningText({ ...base, chosen: base.defaults, us: 1203.9, ways: 2 }),
    'Prefill attention, timed on this GPU (2 ways in 0.06 s): attention_tiled, 16 keys a tile, 1204 µs a layer for 512 rows over 4096 keys (the default)',
  );
  const refused = "attention_tiled_sg, 2 lanes sharing 2 rows, 16 keys a tile (its output differs from attention_tiled, 16 keys a tile's by 1.20e-1 of a largest 0.998 on this device)";
  assert.equal(
    prefillTuningText({ ...base, chosen: base.defaults, us: 1203.9, refused: [refused] }),
    `Prefill attention, timed on this GPU (6 ways in 0.06 s): attention_tiled, 16 keys a tile, 1204 µs a layer for 512 rows over 4096 keys (the default). Not used: ${refused}`,
  );
  assert.equal(prefillTuningText({ error: 'device lost' }), 'Prefill attention: the default way (timing the ways failed: device lost)');
});
