/**
 * The parity check that decode attention for a kv head's group of q heads shares (attention-grouped.test.ts,
 * attention-grouped-keys.test.ts): against reference.ts's attention, f16 caches against a reference fed the same
 * rounded keys and values; 1 and 3 query rows (late, one seeing no key, one early), gapped positions, no window and
 * one of 70, f32 and f16 caches, each number of slices given; one key scoring far above the rest for head 1 of the
 * last kv group, past 2^128 in base 2 unless that head keeps its own max. Returns the largest difference as a share
 * of the largest output.
 */
import * as ref from '../../src/engine/reference';
import { keyBounds, type AttentionVariant, type KeysPerThread } from '../../src/engine/ops';
import { floatsToHalves, roundToHalf } from '../../src/engine/f16';
import { assertClose, harness, rand } from './gpu';

export interface GroupedCase {
  QG: number;
  NKV: number;
  HD: number;
  variant: AttentionVariant;
  keysPerThread?: KeysPerThread;
  /** Slice counts to run (undefined: the engine's own). */
  splits: (number | undefined)[];
  /** Relative bound on the difference from the reference. */
  bound: number;
  /** Seeds of the q rows, the keys and the values. */
  seeds: [number, number, number];
}

export async function groupedParity(c: GroupedCase): Promise<number> {
  const h = await harness();
  const { QG, NKV, HD } = c;
  const H = QG * NKV, n = 333, qStride = (H + 2 * NKV) * HD;
  const kpos = Int32Array.from({ length: n }, (_, j) => j + Math.floor(j / 5));
  let worst = 0;
  for (const T of [1, 3]) {
    const qpos = Int32Array.from([kpos[n - 1], -1, kpos[90]].slice(0, T));
    for (const window of [0, 70]) {
      for (const kvDtype of ['f32', 'f16'] as const) {
        const a = { T, n, H, NKV, HD, qStride, qOffset: 0, kpos, qpos, window, scale: 3 / Math.sqrt(HD), q: rand(T * qStride, c.seeds[0]), k: rand(n * NKV * HD, c.seeds[1]), v: rand(n * NKV * HD, c.seeds[2]) };
        const hot = 200, kv = NKV - 1, head = kv * QG + 1;
        for (let d = 0; d < HD; d++) a.k[(hot * NKV + kv) * HD + d] = 40 * a.q[head * HD + d];
        if (kvDtype === 'f16') { a.k = roundToHalf(a.k); a.v = roundToHalf(a.v); }
        const up = (x: Float32Array) => h.upload(kvDtype === 'f16' ? floatsToHalves(x) : x);
        const want = ref.attention(a);
        const out = h.empty(want.length * 4);
        const args = { q: h.upload(a.q), qStride, qOffset: 0, k: up(a.k), v: up(a.v), kvDtype, qpos: h.upload(qpos), kpos: h.upload(kpos),
          out, T, n, H, NKV, HD, window, scale: a.scale, bounds: h.upload(keyBounds(kpos, n, qpos, window)), variant: c.variant, keysPerThread: c.keysPerThread };
        for (const splits of c.splits) {
          h.ops.attention({ ...args, splits });
          const got = await h.readF32(out, want.length);
          const scale = want.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
          for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]) / scale);
          assertClose(got, want, 0, c.bound, `T=${T} window=${window} ${kvDtype}, ${splits ?? 'auto'} slices`);
        }
      }
    }
  }
  return worst;
}
