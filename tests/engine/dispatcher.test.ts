/**
 * The kernel library's pipelines (gpu/kernels.ts): found again by their defines, in any order, and a new one for
 * any define that differs. The dispatcher's bind groups (gpu/dispatcher.ts): a step that repeats its dispatches slot for slot makes none
 * after its first time, and whatever changes at a slot (the buffer, its range, the pipeline) makes a launch bind
 * what it names, never what the slot had before: each probe launch adds its parameter to the values it binds, and
 * every buffer is read back. Fails with the per-slot reuse comparing too little (checked by hand: the buffer
 * alone, not its offset; the pipeline left out). And readMany's ranges, back in one submission (fails with each
 * range taken from the start of its staging buffer).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { harness } from '../helpers/gpu';
import { KernelLibrary } from '../../src/engine/gpu/kernels';
import { launchName } from '../../src/bench/profile';

const h = await harness();
const d = h.ops.d;
const dev = h.gpu.device;

const probeCode = (op: string) => `struct P { add: f32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) g: vec3<u32>) { if (g.x < arrayLength(&x)) { x[g.x] = x[g.x] ${op} p.add; } }`;
const PROBE = probeCode('+');
const probe = (op: string) => dev.createComputePipeline({ layout: 'auto', compute: { module: dev.createShaderModule({ code: probeCode(op) }), entryPoint: 'main' } });
const add = probe('+'), mul = probe('*');
const peek = dev.createComputePipeline({ layout: 'auto', compute: { entryPoint: 'main', module: dev.createShaderModule({ code: `struct P { add: f32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@compute @workgroup_size(1, 1, 1)
fn main() { _ = x[0] + p.add; }` }) } });
const buffer = () => h.upload(new Float32Array(128));
const values = async (b: GPUBuffer) => new Float32Array(await d.read(b, 0, b.size));

/** Counts createBindGroup calls while `fn` runs. */
function counting(fn: () => void): number {
  const real = dev.createBindGroup.bind(dev);
  let made = 0;
  dev.createBindGroup = (desc: GPUBindGroupDescriptor) => (made++, real(desc));
  try {
    fn();
  } finally {
    dev.createBindGroup = real;
  }
  return made;
}

test('a repeated step reuses its bind groups; a changed buffer, range or pipeline at a slot binds what it names', async () => {
  const a = buffer(), b = buffer(), c = buffer();
  // Slot 0: a, whole; slot 1: b's first half; slot 2: b's second half (64 floats each).
  const step = (second: GPUBuffer, first = a, pipe = add) => {
    d.run(pipe, [{ f32: 1 }], { 1: first }, [2, 1, 1]);
    d.run(add, [{ f32: 10 }], { 1: { buffer: second, offset: 0, size: 256 } }, [1, 1, 1]);
    d.run(add, [{ f32: 100 }], { 1: { buffer: second, offset: 256, size: 256 } }, [1, 1, 1]);
    d.flush();
  };
  assert.equal(counting(() => step(b)), 3, 'the first step makes its three');
  assert.equal(counting(() => { for (let i = 0; i < 4; i++) step(b); }), 0, 'repeated steps make none');
  assert.deepEqual([...new Set(await values(a))], [5]);
  const got = await values(b);
  assert.deepEqual([...new Set(got.subarray(0, 64))], [50]);
  assert.deepEqual([...new Set(got.subarray(64))], [500]);

  // Another buffer at slots 1 and 2: the launches write c, and b is left as it was.
  assert.equal(counting(() => step(c)), 2);
  const gc = await values(c);
  assert.deepEqual([[...new Set(gc.subarray(0, 64))], [...new Set(gc.subarray(64))]], [[10], [100]]);
  assert.deepEqual([...new Set((await values(b)).subarray(0, 64))], [50]);
  // Back to b: its bind groups are found again by key, none made.
  assert.equal(counting(() => step(b)), 0);
  assert.deepEqual([...new Set((await values(b)).subarray(0, 64))], [60]);

  // The same buffer at another range of it, at the same slot: the launch writes that range.
  d.run(add, [{ f32: 1 }], { 1: a }, [2, 1, 1]);
  d.run(add, [{ f32: 1000 }], { 1: { buffer: b, offset: 256, size: 256 } }, [1, 1, 1]);
  d.flush();
  const gb = await values(b);
  assert.deepEqual([[...new Set(gb.subarray(0, 64))], [...new Set(gb.subarray(64))]], [[60], [1600]]);

  // Another pipeline at slot 0, the same binding: it runs (7 × 3, not 7 + 3).
  assert.deepEqual([...new Set(await values(a))], [8]);
  d.run(mul, [{ f32: 3 }], { 1: a }, [2, 1, 1]);
  d.flush();
  assert.deepEqual([...new Set(await values(a))], [24]);
  // A pipeline whose layout binds the same slot another way (read-only): a bind group of its own, or WebGPU
  // rejects the launch.
  d.run(peek, [{ f32: 0 }], { 1: a }, [1, 1, 1]);
  d.flush();
  d.check();
  // Another buffer at slot 0 with the step otherwise the same: slot 0 now binds c whole.
  step(b, c);
  const gc2 = await values(c);
  assert.deepEqual([[...new Set(gc2.subarray(0, 64))], [...new Set(gc2.subarray(64))]], [[11], [101]]);
  assert.deepEqual([...new Set(await values(a))], [24]);
  d.check();
});

test('a tape replays its launches in their slots with the tagged words patched, submits where the recording did, and is refused from another slot or arena', async () => {
  // x[i] += f32(p.add) * p.scale: an integer word to tag, a float word to keep.
  const tagged = dev.createComputePipeline({ layout: 'auto', compute: { entryPoint: 'main', module: dev.createShaderModule({ code: `struct P { add: u32, scale: f32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) g: vec3<u32>) { if (g.x < arrayLength(&x)) { x[g.x] = x[g.x] + f32(p.add) * p.scale; } }` }) } });
  const a = buffer(), b = buffer();
  const launches: string[] = [];
  d.onLaunch = (_p, _bg, groups, words) => launches.push(`${groups.join(',')}: ${Array.from(d.lastWords(words)).join(',')}`);
  try {
    d.flush();
    const submits0 = d.submits;
    d.startTape();
    d.run(tagged, [{ u32: 1, tag: 0 }, { f32: 1 }], { 1: a }, [2, 1, 1]);
    d.flush();
    d.run(tagged, [{ u32: 2, tag: 1 }, { f32: 10 }], { 1: b }, [1, 1, 1]);
    const tape = d.endTape()!;
    d.flush();
    assert.equal(d.submits - submits0, 2);
    assert.deepEqual(tape.segments.map((s) => [s.slot0, s.launches.length, s.flush]), [[0, 1, true], [0, 1, false]], 'two segments, the first submitted');
    assert.deepEqual([[...new Set(await values(a))], [...new Set((await values(b)).subarray(0, 64))]], [[1], [20]]);

    const recorded = launches.splice(0);
    const r0 = d.replayed, s0 = d.submits;
    assert.ok(d.replay(tape, [5, 7]));
    assert.equal(d.replayed - r0, 2);
    assert.equal(d.submits - s0, 1, 'submitted after its first segment, as the recording was');
    d.flush();
    assert.deepEqual([[...new Set(await values(a))], [...new Set((await values(b)).subarray(0, 64))]], [[6], [90]], 'the tagged words took 5 and 7');
    const replayed = launches.splice(0);
    assert.deepEqual(replayed, recorded.map((l, i) => l.replace(/^([\d,]+: )\d+/, `$1${[5, 7][i]}`)), 'the same launches, the tagged word patched');

    // From another slot: refused, nothing issued.
    d.run(tagged, [{ u32: 0 }, { f32: 0 }], { 1: a }, [1, 1, 1]);
    assert.equal(d.replay(tape, [1, 1]), false);
    d.flush();
    // Recorded while the arena grew (its bind groups bind the old one): no tape.
    d.startTape();
    for (let i = 0; i < 300; i++) d.run(tagged, [{ u32: 0 }, { f32: 0 }], { 1: a }, [1, 1, 1]);
    assert.equal(d.endTape(), null);
    d.flush();
    // A tape from before the arena grew: refused.
    assert.equal(d.replay(tape, [1, 1]), false);
    assert.deepEqual([...new Set(await values(a))], [6]);
    d.check();
  } finally {
    d.onLaunch = undefined;
  }
});

test('a kernel\'s pipeline is found again by its defines, in any order; any define that differs builds another', () => {
  const lib = new KernelLibrary(dev, { k: '#if A\nconst a = {{N}}u;\n#endif\n@compute @workgroup_size(1) fn main() {}' });
  let made = 0;
  const real = dev.createComputePipeline.bind(dev);
  dev.createComputePipeline = (desc: GPUComputePipelineDescriptor) => (made++, real(desc));
  try {
    const p = lib.pipeline('k', { A: true, N: 3 });
    assert.equal(lib.pipeline('k', { N: 3, A: true }), p);
    assert.equal(made, 1);
    const others = [lib.pipeline('k', { A: true, N: 4 }), lib.pipeline('k', { A: false, N: 3 }), lib.pipeline('k', { A: true, N: 3, B: false }), lib.pipeline('k', { A: true, N: '3' })];
    assert.equal(new Set([p, ...others]).size, 5);
    assert.equal(made, 5);
    assert.equal(lib.pipeline('k', { A: true, N: 3, B: false }), others[2]);
    assert.equal(made, 5);
    // Fewer defines than a pipeline built before, the same values otherwise: another.
    const more = lib.pipeline('k', { A: true, N: 5, B: false });
    assert.notEqual(lib.pipeline('k', { A: true, N: 5 }), more);
    assert.equal(made, 7);
  } finally {
    dev.createComputePipeline = real;
  }
});

test('timed launch by launch, each launch kind is its pipeline and its workgroups: the decode profile parts GEMVs by shape', async () => {
  // Pipelines labelled as the kernel library labels them: the kernel, then its defines.
  const labelled = (label: string) => dev.createComputePipeline({ label, layout: 'auto', compute: { module: dev.createShaderModule({ code: PROBE }), entryPoint: 'main' } });
  const on = labelled('probe|SCALE=true|BIAS=false'), off = labelled('probe|SCALE=false|BIAS=false');
  const x = buffer();
  // The same pipeline at two workgroup counts, and one built with other defines: three kinds, their dispatches counted.
  assert.ok(d.startGpuTimer(true), 'SwiftShader has timestamp queries');
  d.run(on, [{ f32: 1 }], { 1: x }, [1, 1, 1]);
  d.run(on, [{ f32: 1 }], { 1: x }, [1, 1, 1]);
  d.run(on, [{ f32: 1 }], { 1: x }, [2, 1, 1]);
  d.run(off, [{ f32: 1 }], { 1: x }, [1, 1, 1]);
  await d.stopGpuTimer();
  const kinds = [...d.gpuTimeByKernel()].map(([label, t]) => [launchName(label), t.passes]).sort();
  assert.deepEqual(kinds, [['probe SCALE · 1 workgroups', 2], ['probe SCALE · 2 workgroups', 1], ['probe · 1 workgroups', 1]]);
  // Every launch ran: four over the first 64 values, the two-workgroup one over all 128.
  const got = await values(x);
  assert.deepEqual([...new Set(got.slice(0, 64))], [4]);
  assert.deepEqual([...new Set(got.slice(64))], [1]);
  assert.equal(launchName('gemv|TX=1|NORM=true|GLU=false#384'), 'gemv TX=1 NORM · 384 workgroups');
});

test('readMany: every range back as read would give it, in one submission, over staging buffers of at most 64 MiB', async () => {
  // 40 and 30 MiB cannot share a 64 MiB staging buffer; 80 MiB takes one alone; the small ranges sit between them.
  const MiB = 2 ** 20;
  const sizes = [40 * MiB, 30 * MiB, 12, 80 * MiB, 4];
  const bufs = sizes.map((n, i) => h.upload(Uint32Array.from({ length: n / 4 + 3 }, (_, j) => i * 1e8 + j)));
  const ranges = sizes.map((size, i) => ({ src: bufs[i], offset: 8, size }));
  const submits = d.submits;
  const got = await d.readMany(ranges);
  assert.equal(d.submits - submits, 1, 'one submission for every range');
  for (const [i, r] of ranges.entries()) {
    const u = new Uint32Array(got[i]);
    assert.equal(u.length, r.size / 4);
    assert.deepEqual([u[0], u[u.length - 1]], [i * 1e8 + 2, i * 1e8 + 2 + u.length - 1], `range ${i}`);
  }
  assert.deepEqual(new Uint32Array(got[2]), new Uint32Array(await d.read(bufs[2], 8, 12)));
  for (const b of bufs) b.destroy();
});
