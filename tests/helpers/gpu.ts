/** Shared set-up for tests that run kernels in Node on the `webgpu` package. */
import { after } from 'node:test';
import assert from 'node:assert/strict';
import { createNodeGpu, loadKernelSources, type NodeGpu } from '../../src/node/gpu';
import { KernelLibrary } from '../../src/engine/gpu/kernels';
import { Dispatcher } from '../../src/engine/gpu/dispatcher';
import { Ops, type WeightDType } from '../../src/engine/ops';
import { dequantizeF32 } from '../../src/engine/formats/gguf-quants';
import { noiseBlocks, QUANT, repackForGpu } from '../../src/engine/quant';
import { floatsToHalves, roundToHalf } from '../../src/engine/f16';
import { appendFileSync } from 'node:fs';
import { maxDiffOverRange } from './compare';
import { PARITY_LOG_ENV, type BoundRecord } from '../../src/bench/run-tests';

export interface Harness {
  gpu: NodeGpu;
  /** Uncaptured WebGPU errors not yet checked. */
  errors: string[];
  ops: Ops;
  upload(data: ArrayBufferView, extraUsage?: number): GPUBuffer;
  empty(bytes: number): GPUBuffer;
  readF32(buf: GPUBuffer, count: number): Promise<Float32Array>;
}

let shared: Promise<Harness> | null = null;

// Registered at import (file level): a hook registered inside a test would run when that test ends.
after(async () => {
  if (!shared) return;
  const h = await shared;
  h.gpu.release();
  // Any WebGPU validation error during the file's tests fails it, even where no test read a buffer.
  assert.deepEqual(h.errors, [], 'WebGPU validation errors during the tests');
});

/** One device per test file, released when the file's tests end. */
export function harness(): Promise<Harness> {
  if (!shared) {
    shared = (async () => {
      const gpu = await createNodeGpu();
      const errors: string[] = [];
      gpu.device.addEventListener('uncapturederror', (e) => errors.push((e as GPUUncapturedErrorEvent).error.message));
      const ops = new Ops(new KernelLibrary(gpu.device, loadKernelSources()), new Dispatcher(gpu.device));
      const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
      const h: Harness = {
        gpu,
        errors,
        ops,
        upload(data, extra = 0) {
          const size = Math.max(16, Math.ceil(data.byteLength / 16) * 16);
          const b = gpu.device.createBuffer({ size, usage: usage | extra, mappedAtCreation: true });
          new Uint8Array(b.getMappedRange()).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
          b.unmap();
          return b;
        },
        empty(bytes) {
          return gpu.device.createBuffer({ size: Math.max(16, Math.ceil(bytes / 16) * 16), usage });
        },
        async readF32(buf, count) {
          assert.deepEqual(errors.splice(0), [], 'WebGPU validation errors');
          return new Float32Array(await ops.d.read(buf, 0, count * 4));
        },
      };
      return h;
    })();
  }
  return shared;
}

/** Deterministic uniform values in [-scale, scale). */
export function rand(n: number, seed: number, scale = 1): Float32Array {
  let s = seed >>> 0 || 1;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s ^= s << 13; s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5; s >>>= 0;
    out[i] = ((s / 4294967296) * 2 - 1) * scale;
  }
  return out;
}

/**
 * A random [rows, cols] weight matrix stored as `dtype` on the harness's device: its GPU buffer (f32, packed f16,
 * or ggml blocks repacked as GpuModel uploads them), and the f32 values the kernels compute with.
 */
export function weightMatrix(h: Harness, dtype: WeightDType, rows: number, cols: number, seed: number) {
  if (dtype === 'f32' || dtype === 'f16') {
    const w = dtype === 'f16' ? roundToHalf(rand(rows * cols, seed)) : rand(rows * cols, seed);
    return { buffer: h.upload(dtype === 'f16' ? floatsToHalves(w) : w), values: w };
  }
  const nb = (rows * cols) / QUANT[dtype].block;
  const bytes = noiseBlocks(dtype, nb, seed, 1);
  return { buffer: h.upload(repackForGpu(dtype, bytes, nb)), values: dequantizeF32(QUANT[dtype].ggml, bytes, rows * cols) };
}

/**
 * Asserts max |a - b| <= atol + rtol * max|b|, and reports the worst element; where PARITY_LOG_ENV names a file (the
 * kit's parity stage), it records the comparison there too, failed or not.
 */
export function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>, atol: number, rtol = 0, what = '') {
  assert.equal(actual.length, expected.length, `${what}: length`);
  let maxRef = 0;
  for (let i = 0; i < expected.length; i++) if (Number.isFinite(expected[i])) maxRef = Math.max(maxRef, Math.abs(expected[i]));
  const tol = atol + rtol * maxRef;
  let worst = 0;
  let at = -1;
  for (let i = 0; i < expected.length; i++) {
    const e = expected[i];
    const a = actual[i];
    if (e === a) continue;
    const d = Math.abs(a - e);
    if (Number.isNaN(d)) {
      worst = Infinity;
      at = i;
      break;
    }
    if (d > worst) {
      worst = d;
      at = i;
    }
  }
  const log = process.env[PARITY_LOG_ENV];
  if (log) {
    const r: BoundRecord = { file: process.argv[1], what, atol, rtol, diff: worst, ref: maxRef };
    appendFileSync(log, `${JSON.stringify(r)}\n`);
  }
  assert.ok(worst <= tol, `${what}: max |Δ| = ${worst} at ${at} (got ${actual[at]}, want ${expected[at]}) exceeds ${tol}`);
}

/**
 * Asserts max |got - want| <= frac * the range of want (maxDiffOverRange: whole models' logits, whose scale is their
 * spread, not their largest magnitude), records the comparison as assertClose does (its scale the range), and
 * returns max |Δ| / range for the test's diagnostics.
 */
export function assertWithinRange(got: ArrayLike<number>, want: ArrayLike<number>, frac: number, what: string): number {
  assert.equal(got.length, want.length, `${what}: length`);
  const { d, range } = maxDiffOverRange(got, want);
  const diff = Number.isNaN(d) ? Infinity : d;
  const log = process.env[PARITY_LOG_ENV];
  if (log) {
    const r: BoundRecord = { file: process.argv[1], what, atol: 0, rtol: frac, diff: Number.isFinite(diff) ? diff : null, ref: range, scale: 'range' };
    appendFileSync(log, `${JSON.stringify(r)}\n`);
  }
  assert.ok(diff <= frac * range, `${what}: max |Δlogit| ${diff.toExponential(2)} > ${(frac * range).toExponential(2)} (${frac} of a range of ${range.toFixed(2)})`);
  return diff / range;
}

/** The largest difference from `want`, relative to `want`'s largest magnitude (the parity tests' error measure). */
export function relErr(got: ArrayLike<number>, want: ArrayLike<number>): number {
  let d = 0, m = 0;
  for (let i = 0; i < want.length; i++) {
    d = Math.max(d, Math.abs(got[i] - want[i]));
    m = Math.max(m, Math.abs(want[i]));
  }
  return d / m;
}
