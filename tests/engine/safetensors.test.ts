import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { bufferSource, ModelFormatError, type ByteSource } from '../../src/engine/formats/source';
import {
  bf16ToF32, openSafetensorsFile, openSafetensorsFolder, readSafetensorsHeader,
  type FolderFiles,
} from '../../src/engine/formats/safetensors';
import { nodeFolderFiles } from '../../src/node/files';
import { halfToFloat } from '../../src/engine/f16';

interface RawTensor { name: string; dtype: string; shape: number[]; bytes: Uint8Array }

/** Serializes tensors as safetensors; `headerPad` shifts the data to odd (unaligned) offsets. */
function makeSafetensors(tensors: RawTensor[], opts: { metadata?: Record<string, string>; headerPad?: number } = {}) {
  const header: Record<string, unknown> = {};
  if (opts.metadata) header.__metadata__ = opts.metadata;
  let off = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [off, off + t.bytes.length] };
    off += t.bytes.length;
  }
  const json = new TextEncoder().encode(JSON.stringify(header) + ' '.repeat(opts.headerPad ?? 0));
  const out = new Uint8Array(8 + json.length + off);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  let p = 8 + json.length;
  for (const t of tensors) {
    out.set(t.bytes, p);
    p += t.bytes.length;
  }
  return out;
}

const u8 = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
const f32 = (...v: number[]) => u8(new Float32Array(v));
const u16 = (...v: number[]) => u8(new Uint16Array(v));

function folder(files: Record<string, Uint8Array>): FolderFiles {
  return { get: async (n) => (files[n] ? bufferSource(n, files[n]) : undefined) };
}

async function rejectsWith(p: Promise<unknown>, cls: Function, ...parts: (string | RegExp)[]) {
  await assert.rejects(p, (e: Error) => {
    assert.ok(e instanceof cls, `expected ${cls.name}, got ${e.name}: ${e.message}`);
    for (const part of parts) {
      if (typeof part === 'string') assert.ok(e.message.includes(part), `"${e.message}" lacks "${part}"`);
      else assert.match(e.message, part);
    }
    return true;
  });
}

test('header: names, dtypes, shapes, byte ranges and metadata', async () => {
  const bytes = makeSafetensors(
    [
      { name: 'a', dtype: 'F32', shape: [2, 3], bytes: f32(1, 2, 3, 4, 5, 6) },
      { name: 'b', dtype: 'F16', shape: [2], bytes: u16(0x3c00, 0x4000) },
      { name: 'c', dtype: 'I64', shape: [1], bytes: new Uint8Array(8) },
    ],
    { metadata: { format: 'pt' } },
  );
  const { tensors, metadata } = await readSafetensorsHeader(bufferSource('x.safetensors', bytes));
  assert.deepEqual(metadata, { format: 'pt' });
  assert.deepEqual([...tensors.keys()], ['a', 'b', 'c']);
  const a = tensors.get('a')!;
  assert.equal(a.dtype, 'F32');
  assert.deepEqual(a.shape, [2, 3]);
  assert.equal(a.byteLength, 24);
  const headerLen = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  assert.equal(a.offset, 8 + headerLen);
  assert.equal(tensors.get('b')!.offset, 8 + headerLen + 24);
});

test('F32 is kept exactly, also from unaligned offsets', async () => {
  const vals = [0, -0, 1.5, -3.25, 1e-40, 3.4028234663852886e38, Infinity];
  for (const headerPad of [0, 1, 3]) {
    const bytes = makeSafetensors([
      { name: 'pad', dtype: 'U8', shape: [1], bytes: new Uint8Array([7]) },
      { name: 'x', dtype: 'F32', shape: [vals.length], bytes: f32(...vals) },
    ], { headerPad });
    const t = await (await openSafetensorsFile(bufferSource('f.safetensors', bytes))).load('x');
    assert.equal(t.dtype, 'f32');
    assert.ok(t.data instanceof Float32Array);
    assert.deepEqual([...t.data].map((v) => (Object.is(v, -0) ? '-0' : v)), vals.map((v) => (Object.is(v, -0) ? '-0' : Math.fround(v))));
    // The tensor owns its buffer (does not alias the whole file).
    assert.equal(t.data.buffer.byteLength, vals.length * 4);
  }
});

test('BF16 widens to f32 exactly, including edge cases', async () => {
  const cases: [number, number][] = [
    [0x3f80, 1], [0xc040, -3], [0x3f81, 1.0078125], [0x0000, 0], [0x7f7f, 3.3895313892515355e38],
    [0x7f80, Infinity], [0xff80, -Infinity], [0x0001, 2 ** -133], [0x0080, 2 ** -126], [0x4049, 3.140625],
  ];
  const bits = [...cases.map(([b]) => b), 0x8000, 0x7fc0, 0xffc1];
  const bytes = makeSafetensors([{ name: 'w', dtype: 'BF16', shape: [bits.length], bytes: u16(...bits) }], { headerPad: 1 });
  const t = await (await openSafetensorsFile(bufferSource('b.safetensors', bytes))).load('w');
  assert.equal(t.dtype, 'f32');
  const d = t.data as Float32Array;
  cases.forEach(([b, v], i) => assert.equal(d[i], v, `bf16 0x${b.toString(16)}`));
  assert.ok(Object.is(d[cases.length], -0), 'bf16 0x8000 is -0');
  assert.ok(Number.isNaN(d[cases.length + 1]) && Number.isNaN(d[cases.length + 2]), 'NaNs stay NaN');
  assert.deepEqual([...bf16ToF32(new Uint16Array([0xbf80]))], [-1]);
});

test('F16 stays as f16 bit patterns', async () => {
  const bits = [0x3c00, 0xc000, 0x7bff, 0x0001, 0x0400, 0x7c00, 0xfc00, 0x8000, 0x7e00, 0x3555];
  const bytes = makeSafetensors([{ name: 'h', dtype: 'F16', shape: [2, 5], bytes: u16(...bits) }], { headerPad: 3 });
  const t = await (await openSafetensorsFile(bufferSource('h.safetensors', bytes))).load('h');
  assert.equal(t.dtype, 'f16');
  assert.ok(t.data instanceof Uint16Array);
  assert.deepEqual([...t.data], bits);
  assert.deepEqual(t.shape, [2, 5]);
  // The reference decoder used by diagnostics agrees with IEEE half precision.
  const expect = [1, -2, 65504, 2 ** -24, 2 ** -14, Infinity, -Infinity, -0, NaN, 0.333251953125];
  bits.forEach((b, i) => assert.ok(Object.is(halfToFloat(b), expect[i]), `f16 0x${b.toString(16)}`));
});

test('truncated files are reported as such', async () => {
  const good = makeSafetensors([{ name: 'x', dtype: 'F32', shape: [4], bytes: f32(1, 2, 3, 4) }]);
  await rejectsWith(openSafetensorsFile(bufferSource('tiny.safetensors', good.subarray(0, 5))), ModelFormatError, 'tiny.safetensors', 'truncated');
  await rejectsWith(openSafetensorsFile(bufferSource('hdr.safetensors', good.subarray(0, 20))), ModelFormatError, 'hdr.safetensors', 'truncated', 'header');
  await rejectsWith(
    openSafetensorsFile(bufferSource('data.safetensors', good.subarray(0, good.length - 4))),
    ModelFormatError, 'data.safetensors', '"x"', 'outside the file',
  );
});

test('bad header JSON and inconsistent entries', async () => {
  const json = new TextEncoder().encode('{"x": {"dtype": "F32", ');
  const broken = new Uint8Array(8 + json.length);
  new DataView(broken.buffer).setBigUint64(0, BigInt(json.length), true);
  broken.set(json, 8);
  await rejectsWith(openSafetensorsFile(bufferSource('j.safetensors', broken)), ModelFormatError, 'j.safetensors', 'invalid JSON');

  const wrongSize = makeSafetensors([{ name: 'x', dtype: 'F32', shape: [3], bytes: f32(1, 2, 3, 4) }]);
  await rejectsWith(openSafetensorsFile(bufferSource('s.safetensors', wrongSize)), ModelFormatError, '"x"', 'needs 12 bytes', 'spans 16');
  const noDtype = makeSafetensors([{ name: 'y', dtype: undefined as unknown as string, shape: [1], bytes: f32(1) }]);
  await rejectsWith(openSafetensorsFile(bufferSource('d.safetensors', noDtype)), ModelFormatError, '"y"', 'no dtype');
});

test('unsupported dtypes name the dtype and the tensor, and only fail that tensor', async () => {
  const bytes = makeSafetensors([
    { name: 'ok', dtype: 'F32', shape: [1], bytes: f32(2) },
    { name: 'model.position_ids', dtype: 'I64', shape: [2], bytes: new Uint8Array(16) },
    { name: 'weird', dtype: 'Q7', shape: [3], bytes: new Uint8Array(5) },
  ]);
  const store = await openSafetensorsFile(bufferSource('q.safetensors', bytes));
  assert.deepEqual([...(await store.load('ok')).data], [2]);
  await rejectsWith(store.load('model.position_ids'), ModelFormatError, 'I64', 'model.position_ids', 'q.safetensors');
  await rejectsWith(store.load('weird'), ModelFormatError, 'Q7', '"weird"');
  await rejectsWith(store.load('absent'), ModelFormatError, 'absent');
});

test('sharded checkpoints load through model.safetensors.index.json', async () => {
  const s1 = makeSafetensors([{ name: 'a', dtype: 'F32', shape: [2], bytes: f32(1, 2) }]);
  const s2 = makeSafetensors([
    { name: 'b', dtype: 'BF16', shape: [1], bytes: u16(0x4000) },
    { name: 'c', dtype: 'F16', shape: [1], bytes: u16(0x3c00) },
  ]);
  const index = new TextEncoder().encode(JSON.stringify({
    metadata: { total_size: 12 },
    weight_map: { a: 'm-1.safetensors', b: 'm-2.safetensors', c: 'm-2.safetensors' },
  }));
  const files = { 'model.safetensors.index.json': index, 'm-1.safetensors': s1, 'm-2.safetensors': s2 };
  const store = await openSafetensorsFolder(folder(files));
  assert.deepEqual([...store.tensors.keys()].sort(), ['a', 'b', 'c']);
  assert.deepEqual([...(await store.load('a')).data], [1, 2]);
  assert.deepEqual([...(await store.load('b')).data], [2]);
  assert.equal((await store.load('c')).dtype, 'f16');
  assert.equal(store.tensors.get('b')!.source.name, 'm-2.safetensors');

  const { 'm-2.safetensors': _, ...withoutShard } = files;
  await rejectsWith(openSafetensorsFolder(folder(withoutShard)), ModelFormatError, 'Missing shard', 'm-2.safetensors');

  const lying = new TextEncoder().encode(JSON.stringify({ weight_map: { a: 'm-1.safetensors', z: 'm-1.safetensors' } }));
  await rejectsWith(openSafetensorsFolder(folder({ ...files, 'model.safetensors.index.json': lying })), ModelFormatError, '"z"', 'm-1.safetensors');
  await rejectsWith(openSafetensorsFolder(folder({ 'model.safetensors.index.json': new TextEncoder().encode('{') })), ModelFormatError, 'not valid JSON');
  await rejectsWith(openSafetensorsFolder(folder({})), ModelFormatError, 'model.safetensors');
  // Without an index, model.safetensors is used.
  const single = await openSafetensorsFolder(folder({ 'model.safetensors': s1 }));
  assert.deepEqual([...single.tensors.keys()], ['a']);
});

test('real sharded BF16 fixture: every value is a widened bf16', async () => {
  const dir = fileURLToPath(new URL('../fixtures/hf/llama3-smollm/', import.meta.url));
  const store = await openSafetensorsFolder(nodeFolderFiles(dir));
  const shards = new Set([...store.tensors.values()].map((t) => t.source.name));
  assert.deepEqual([...shards].sort(), ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors']);
  const embed = await store.load('model.embed_tokens.weight');
  assert.deepEqual(embed.shape, [49152, 32]);
  assert.equal(embed.dtype, 'f32');
  const bits = new Uint32Array((embed.data as Float32Array).buffer);
  let nonzero = 0;
  for (let i = 0; i < bits.length; i++) {
    assert.equal(bits[i] & 0xffff, 0);
    if (bits[i] !== 0) nonzero++;
  }
  assert.ok(nonzero > bits.length * 0.99);
});

test('nodeFolderFiles: missing names and escapes give undefined; reads are range-checked', async () => {
  const dir = fileURLToPath(new URL('../fixtures/hf/qwen2/', import.meta.url));
  const files = nodeFolderFiles(dir);
  assert.equal(await files.get('nope.json'), undefined);
  assert.equal(await files.get('../gemma3/config.json'), undefined);
  const src = (await files.get('config.json')) as ByteSource;
  assert.equal(JSON.parse(new TextDecoder().decode(await src.read(0, src.size))).model_type, 'qwen2');
  await rejectsWith(src.read(src.size - 2, 4), ModelFormatError, 'truncated');
});
