/**
 * GGUF parser, dequantizers and loader. Fixtures come from
 * scripts/fixtures/make_gguf_fixtures.py (llama.cpp's gguf-py writes the files
 * and computes the reference values with its own numpy dequantizers).
 *
 * Tolerances: the f32 path must be bit-exact (ggml's order of f32 operations);
 * the f16 path must equal numpy's round-to-nearest-even conversion of the
 * reference f32 values, bit for bit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import {
  parseGguf, plainValue, valueTypeName, type GgufArray, type GgufValue,
} from '../../src/engine/formats/gguf';
import { dequantizeF16, dequantizeF32 } from '../../src/engine/formats/gguf-quants';
import { f32ArrayToF16, floatToHalf as f32ToF16Bits, f16ToF32Table } from '../../src/engine/f16';
import { loadGguf } from '../../src/engine/formats/gguf-model';
import { bufferSource, ModelFormatError, type ByteSource } from '../../src/engine/formats/source';
import { UnsupportedModelError } from '../../src/engine/model/config';

const FIX = fileURLToPath(new URL('../fixtures/gguf/', import.meta.url));
const GEMMA = fileURLToPath(new URL('../../.cache/models/gemma-3-270m-q4_k_m.gguf', import.meta.url));
const bytesOf = (f: string) => new Uint8Array(readFileSync(FIX + f));

interface RefValue { type: string; itemType?: string; value: unknown }
interface RefTensor { name: string; type: string; dims: number[]; f32: number[]; f16bits: number[] }
const ref = JSON.parse(readFileSync(FIX + 'types.ref.json', 'utf8')) as { metadata: Record<string, RefValue>; tensors: RefTensor[] };

/** Our value in the reference's JSON form (64-bit integers as decimal strings). */
function refForm(v: GgufValue | GgufArray): RefValue {
  const str = (x: unknown) => (typeof x === 'bigint' ? x.toString() : x);
  if ('items' in v) {
    const items = v.type === 9 ? v.items.map(refForm) : Array.from(v.items as ArrayLike<unknown>, str);
    return { type: 'ARRAY', itemType: valueTypeName(v.type), value: items };
  }
  if (v.type === 9) return refForm(v.value);
  return { type: valueTypeName(v.type), value: str(v.value) };
}

interface CountingSource extends ByteSource {
  bytesRead: number;
  close(): Promise<void>;
}
/** A ByteSource over a real file that counts the bytes it reads. */
async function fileSource(path: string): Promise<CountingSource> {
  const fh = await open(path);
  const { size } = await fh.stat();
  const src: CountingSource = {
    name: path.split('/').pop()!,
    size,
    bytesRead: 0,
    async read(offset, length) {
      src.bytesRead += length;
      const b = new Uint8Array(length);
      await fh.read(b, 0, length, offset);
      return b;
    },
    close: () => fh.close(),
  };
  return src;
}

test('metadata: every value type, as gguf-py wrote it', async () => {
  const f = await parseGguf(bufferSource('types.gguf', bytesOf('types.gguf')));
  assert.equal(f.version, 3);
  assert.equal(f.alignment, 64);
  assert.equal(f.dataOffset % 64, 0);
  assert.ok(f.dataOffset >= f.headerBytes && f.dataOffset - f.headerBytes < 64);
  for (const [key, want] of Object.entries(ref.metadata)) {
    const got = f.metadata.get(key);
    assert.ok(got, `missing ${key}`);
    assert.deepEqual(refForm(got), want, key);
  }
  // Only the written keys (+ GGUFWriter's general.architecture/alignment) are present.
  assert.equal(f.metadata.size, Object.keys(ref.metadata).length);
  assert.deepEqual(plainValue(f.metadata.get('test.arr_nested')!), [[1, 2], [3]]);
});

test('tensors: shapes, and dequantized values equal to gguf-py (f32 exact, f16 bits exact)', async () => {
  const bytes = bytesOf('types.gguf');
  const f = await parseGguf(bufferSource('types.gguf', bytes));
  assert.deepEqual(f.tensors.map((t) => t.name), ref.tensors.map((t) => t.name));
  for (const want of ref.tensors) {
    const t = f.tensors.find((x) => x.name === want.name)!;
    assert.deepEqual(t.dims, want.dims, `${t.name} dims`);
    assert.equal(t.typeName, want.type);
    assert.equal(t.offset % 64, 0, `${t.name} is aligned`);
    const raw = bytes.subarray(t.offset, t.offset + t.nBytes);
    const f32 = dequantizeF32(t.type, raw, t.nElements, t.name);
    assert.deepEqual(Array.from(f32), want.f32, `${t.name} (${t.typeName}) f32`);
    const f16 = dequantizeF16(t.type, raw, t.nElements, t.name);
    assert.deepEqual(Array.from(f16), want.f16bits, `${t.name} (${t.typeName}) f16 bits`);
  }
});

test('f32 -> f16 conversion: rounding, subnormals, overflow, NaN; fast path == scalar path', () => {
  const cases: [number, number][] = [
    [0, 0], [-0, 0x8000], [1, 0x3c00], [-2, 0xc000], [65504, 0x7bff], [65519.99, 0x7bff], [65520, 0x7c00],
    [1e6, 0x7c00], [-Infinity, 0xfc00], [2 ** -24, 0x0001], [2 ** -25, 0], [3 * 2 ** -25, 0x0002],
    [2 ** -14, 0x0400], [2 ** -14 - 2 ** -25, 0x0400], [1 + 2 ** -11, 0x3c00], [1 + 3 * 2 ** -11, 0x3c02],
  ];
  for (const [x, h] of cases) assert.equal(f32ToF16Bits(x), h, `f16(${x})`);
  assert.equal(f32ToF16Bits(NaN) & 0x7c00, 0x7c00);
  assert.notEqual(f32ToF16Bits(NaN) & 0x3ff, 0);
  const table = f16ToF32Table();
  for (let h = 0; h < 0x7c00; h++) assert.equal(f32ToF16Bits(table[h]!), h); // every finite f16 round-trips
  const bits = new Uint32Array(200_000);
  let s = 12345;
  for (let i = 0; i < bits.length; i++) bits[i] = s = (Math.imul(s, 1103515245) + 12345) >>> 0;
  const src = new Float32Array(bits.buffer);
  const fast = new Uint16Array(src.length);
  f32ArrayToF16(src, fast);
  for (let i = 0; i < src.length; i++) {
    if (Number.isNaN(src[i])) continue;
    if (fast[i] !== f32ToF16Bits(src[i]!)) assert.fail(`bits ${bits[i]!.toString(16)}: ${fast[i]} vs ${f32ToF16Bits(src[i]!)}`);
  }
});

test('errors: bad magic, unsupported version, truncated header, data outside the file', async () => {
  const good = bytesOf('types.gguf');
  const patched = (at: number, vals: number[]) => { const b = good.slice(); b.set(vals, at); return b; };
  await assert.rejects(parseGguf(bufferSource('x.gguf', patched(0, [0x47, 0x47, 0x4d, 0x4c]))), (e: unknown) =>
    e instanceof ModelFormatError && /not a GGUF file: magic is "GGML"/.test(e.message));
  await assert.rejects(parseGguf(bufferSource('x.gguf', patched(4, [1, 0, 0, 0]))), /GGUF version 1 is not supported/);
  await assert.rejects(parseGguf(bufferSource('x.gguf', patched(4, [0, 0, 0, 3]))), /big-endian/);
  const v2 = await parseGguf(bufferSource('x.gguf', patched(4, [2, 0, 0, 0])));
  assert.equal(v2.version, 2);
  await assert.rejects(parseGguf(bufferSource('x.gguf', good.subarray(0, 10))), /truncated/);
  await assert.rejects(parseGguf(bufferSource('x.gguf', good.subarray(0, 300))), (e: unknown) =>
    e instanceof ModelFormatError && /x\.gguf is truncated: reading the GGUF metadata/.test(e.message));
  await assert.rejects(parseGguf(bufferSource('x.gguf', good.subarray(0, good.length - 40))), (e: unknown) =>
    e instanceof ModelFormatError && /data of tensor t\.cube .* lies outside the \d+-byte file/.test(e.message));
});

/** A hand-written GGUF (independent of gguf-py) with one string key and one 1-D tensor. */
function handMade(arch: string, ggmlType: number, version = 3): Uint8Array {
  const parts: number[] = [];
  const u32 = (v: number) => parts.push(v & 255, (v >> 8) & 255, (v >> 16) & 255, v >>> 24);
  const u64 = (v: number) => { u32(v); u32(0); };
  const str = (s: string) => { const b = new TextEncoder().encode(s); u64(b.length); parts.push(...b); };
  parts.push(0x47, 0x47, 0x55, 0x46);
  u32(version); u64(1); u64(1);
  str('general.architecture'); u32(8); str(arch);
  str('token_embd.weight'); u32(1); u64(256); u32(ggmlType); u64(0);
  while (parts.length % 32) parts.push(0);
  for (let i = 0; i < 1024; i++) parts.push(0);
  return new Uint8Array(parts);
}

test('errors: unknown ggml type, undequantizable type, unsupported architecture', async () => {
  await assert.rejects(parseGguf(bufferSource('h.gguf', handMade('llama', 99))), /tensor token_embd\.weight has unknown ggml type 99/);
  const iq = await parseGguf(bufferSource('h.gguf', handMade('llama', 16, 2)));
  assert.equal(iq.tensors[0]!.typeName, 'IQ2_XXS');
  await assert.rejects(loadGguf(bufferSource('h.gguf', handMade('llama', 16))), /ggml type IQ2_XXS, which LegoKV cannot dequantize/);
  assert.throws(() => dequantizeF32(16, new Uint8Array(66), 256), /IQ2_XXS cannot be dequantized/);
  await assert.rejects(loadGguf(bufferSource('h.gguf', handMade('phi3', 0))), (e: unknown) =>
    e instanceof UnsupportedModelError && /architecture "phi3" is not supported/.test(e.message));
});

test('loader: tiny gemma3 (Q8_0): config, names, shapes, dtypes', async () => {
  const bytes = bytesOf('tiny-gemma3.gguf');
  const m = await loadGguf(bufferSource('tiny-gemma3.gguf', bytes));
  const c = m.config;
  assert.equal(c.arch, 'gemma3');
  assert.equal(c.name, 'tiny gemma3');
  assert.deepEqual([c.hidden, c.intermediate, c.nLayers, c.nHeads, c.nKvHeads, c.headDim], [64, 96, 7, 2, 1, 32]);
  assert.deepEqual(c.layerKinds, ['local', 'local', 'local', 'local', 'local', 'global', 'local']);
  assert.equal(c.slidingWindow, 16);
  assert.equal(c.ropeTheta, 1e6);
  assert.equal(c.ropeLocalTheta, 10000);
  assert.equal(c.rmsEps, 1e-6);
  assert.equal(c.normPlusOne, false);
  assert.equal(c.ropeStyle, 'half');
  assert.equal(c.attnScale, 1 / Math.sqrt(32));
  assert.equal(c.embedScale, 8);
  assert.equal(c.activation, 'gelu_tanh');
  assert.ok(c.qkNorm && c.postNorms && !c.qkvBias && c.tiedEmbeddings);
  assert.equal(c.bosId, 2);
  assert.deepEqual(c.eosIds, [1, 5]); // <eos>, <end_of_turn>
  assert.equal(c.vocabSize, m.tokenizer.vocabSize);
  assert.equal(m.weights.has('lm_head'), false);
  assert.deepEqual(m.weights.get('embed')!.shape, [c.vocabSize, 64]);
  assert.deepEqual(m.weights.get('layers.0.wq')!.shape, [64, 64]);
  assert.deepEqual(m.weights.get('layers.0.wk')!.shape, [32, 64]);
  assert.deepEqual(m.weights.get('layers.0.w_down')!.shape, [64, 96]);
  assert.deepEqual(m.weights.get('layers.6.q_norm')!.shape, [32]);
  // Q8_0 matrices stay packed: the file's blocks, for the GPU to dequantize.
  assert.equal(m.weights.get('layers.0.wq')!.dtype, 'q8_0');
  assert.equal(m.weights.get('layers.0.post_ffn_norm')!.dtype, 'f32');
  assert.equal(m.weights.size, 2 + 7 * 13);
  const t = m.gguf.tensors.find((x) => x.name === 'blk.3.ffn_up.weight')!;
  assert.deepEqual(m.weights.get('layers.3.w_up')!.data, bytes.subarray(t.offset, t.offset + t.nBytes));
  // Dequantized on load when asked: the same values as dequantizing the GGUF tensor directly (row-major [out, in] = GGUF [in, out]).
  const f16 = await loadGguf(bufferSource('tiny-gemma3.gguf', bytes), { quant: 'dequantize' });
  assert.equal(f16.weights.get('layers.0.wq')!.dtype, 'f16');
  const direct = dequantizeF16(t.type, bytes.subarray(t.offset, t.offset + t.nBytes), t.nElements);
  assert.deepEqual(f16.weights.get('layers.3.w_up')!.data, direct);
  const f32 = await loadGguf(bufferSource('tiny-gemma3.gguf', bytes), { dtype: 'f32', quant: 'dequantize' });
  assert.equal(f32.weights.get('layers.3.w_up')!.dtype, 'f32');
  assert.equal(m.tokenizer.chatFormat, 'gemma');
  assert.equal(m.info.hasChatTemplate, true);
});

test('loader: tiny qwen2 (F16, biases, tied), llama (Q4_0, lm_head, linear rope), llama 3 rope_freqs', async () => {
  const q = await loadGguf(bufferSource('tiny-qwen2.gguf', bytesOf('tiny-qwen2.gguf')));
  assert.equal(q.config.arch, 'qwen2');
  assert.equal(q.config.ropeStyle, 'half');
  assert.equal(q.config.activation, 'silu');
  assert.ok(q.config.qkvBias && q.config.tiedEmbeddings && !q.config.qkNorm && !q.config.postNorms);
  assert.deepEqual(q.weights.get('layers.1.bk')!.shape, [32]);
  assert.equal(q.weights.get('layers.1.bk')!.dtype, 'f32');
  assert.deepEqual(q.config.layerKinds, ['global', 'global']);
  assert.equal(q.config.embedScale, 1);
  assert.equal(q.config.attnScale, 0.25);
  assert.equal(q.tokenizer.chatFormat, 'chatml');
  assert.deepEqual(q.config.eosIds, [0, 2]); // <|endoftext|> (eos), <|im_end|>

  const l = await loadGguf(bufferSource('tiny-llama.gguf', bytesOf('tiny-llama.gguf')));
  assert.equal(l.config.arch, 'llama');
  assert.equal(l.config.ropeStyle, 'interleaved');
  assert.equal(l.config.tiedEmbeddings, false);
  assert.deepEqual(l.weights.get('lm_head')!.shape, [l.config.vocabSize, 64]);
  assert.deepEqual(l.config.ropeScaling, { type: 'linear', factor: 4 });
  assert.equal(l.config.ropeLocalTheta, undefined);

  // Llama 3 scaling arrives as a rope_freqs tensor of per-frequency factors, not as metadata.
  const l3 = await loadGguf(bufferSource('tiny-llama3.gguf', bytesOf('tiny-llama3.gguf')));
  assert.deepEqual(l3.config.ropeScaling, {
    type: 'llama3', factor: 8, lowFreqFactor: 1, highFreqFactor: 4, originalMaxPositionEmbeddings: 8192,
  });
  assert.equal(l3.config.ropeTheta, 500000);
  assert.equal(l3.weights.has('rope_freqs'), false);
});

test('real Gemma 3 270M Q4_K_M: header read in ranges, config facts, tensors equal gguf-py', async (t) => {
  if (!existsSync(GEMMA)) return t.skip(`${GEMMA} is absent (run npm run fetch:models)`);
  const src = await fileSource(GEMMA);
  try {
    const f = await parseGguf(src);
    assert.ok(src.bytesRead < 2 * f.dataOffset, `header parse read ${src.bytesRead} bytes for a ${f.dataOffset}-byte header`);
    const gref = JSON.parse(readFileSync(FIX + 'gemma3-270m-ref.json', 'utf8')) as {
      tensors: { name: string; type: string; dims: number[]; head: number[]; tail: number[]; sum: number; absSum: number }[];
    };
    for (const want of gref.tensors) {
      const info = f.tensors.find((x) => x.name === want.name)!;
      assert.deepEqual(info.dims, want.dims);
      assert.equal(info.typeName, want.type);
      const y = dequantizeF32(info.type, await src.read(info.offset, info.nBytes), info.nElements, info.name);
      assert.deepEqual(Array.from(y.subarray(0, 64)), want.head, `${want.name} head`);
      assert.deepEqual(Array.from(y.subarray(y.length - 64)), want.tail, `${want.name} tail`);
      let sum = 0, abs = 0;
      for (const v of y) { sum += v; abs += Math.abs(v); }
      assert.ok(Math.abs(sum - want.sum) <= 1e-9 * want.absSum + 1e-9, `${want.name} sum ${sum} vs ${want.sum}`);
      assert.ok(Math.abs(abs - want.absSum) <= 1e-9 * want.absSum, `${want.name} |sum|`);
    }

    const t0 = performance.now();
    const m = await loadGguf(src);
    const ms = performance.now() - t0;
    t.diagnostic(`loadGguf (f16) of the 270M model took ${ms.toFixed(0)} ms`);
    const c = m.config;
    assert.deepEqual([c.vocabSize, c.hidden, c.intermediate, c.nLayers, c.nHeads, c.nKvHeads, c.headDim], [262144, 640, 2048, 18, 4, 1, 256]);
    assert.equal(c.normPlusOne, false);
    assert.equal(c.ropeStyle, 'half');
    assert.equal(c.attnScale, 1 / 16);
    assert.equal(c.embedScale, Math.sqrt(640));
    assert.equal(c.slidingWindow, 512);
    assert.deepEqual(c.layerKinds.flatMap((k, i) => (k === 'global' ? [i] : [])), [5, 11, 17]);
    assert.deepEqual([c.ropeTheta, c.ropeLocalTheta, c.rmsEps], [1e6, 10000, 1e-6]);
    assert.equal(c.tiedEmbeddings, true);
    assert.deepEqual(c.eosIds, [1, 106]);
    assert.equal(m.weights.size, 3 - 1 + 18 * 13);
    // Norms carry the +1 the converter adds (HF stores w, Gemma multiplies by 1 + w).
    const norm = m.weights.get('layers.0.attn_norm')!.data as Float32Array;
    assert.ok(norm.reduce((a, b) => a + b, 0) / norm.length > 1);
    assert.equal(m.info.finetune, undefined);
    assert.equal(m.info.hasChatTemplate, false);
  } finally {
    await src.close();
  }
});
