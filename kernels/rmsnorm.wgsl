// RMSNorm over rows of length D that sit at strided places in a buffer:
// row r = (t, g) starts at t * stride + offset + g * D, for t < T, g < G.
// G > 1 normalises each head of a fused q/k/v row (Gemma 3's q/k norm).
// out = x / sqrt(mean(x^2) + eps) * (w or 1 + w)  (+ res, when ADD_RESIDUAL),
// the D weights from w[w_offset]
// IN_PLACE writes back into x. One invocation per row, or with WG (real
// GPUs) a workgroup of 64 per row summing strided slices and reducing them in
// workgroup memory: one invocation walking a 2048-wide row alone, as decode's
// single row does, would leave a GPU idle for a millisecond.
#include "common"

struct Params { T: u32, G: u32, D: u32, stride: u32, offset: u32, eps: f32, plus_one: u32, out_stride: u32, w_offset: u32 }

@group(0) @binding(0) var<uniform> p: Params;
#if IN_PLACE
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
#else
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
#endif
@group(0) @binding(2) var<storage, read> w: array<f32>;
#if ADD_RESIDUAL
@group(0) @binding(4) var<storage, read> res: array<f32>;
#endif

// Sum of squares of row (t, g)'s elements first, first + step, ...
fn sum_squares(base: u32, first: u32, step: u32) -> f32 {
  var ss = 0.0;
  for (var i = first; i < p.D; i += step) {
    let v = x[base + i];
    ss += v * v;
  }
  return ss;
}

// Writes elements first, first + step, ... of row (t, g), scaled by `inv`.
fn write_row(t: u32, g: u32, base: u32, inv: f32, first: u32, step: u32) {
  let wadd = select(0.0, 1.0, p.plus_one != 0u);
#if IN_PLACE
  for (var i = first; i < p.D; i += step) {
    x[base + i] = x[base + i] * inv * (w[p.w_offset + i] + wadd);
  }
#else
  let obase = t * p.out_stride + g * p.D;
  for (var i = first; i < p.D; i += step) {
    var v = x[base + i] * inv * (w[p.w_offset + i] + wadd);
#if ADD_RESIDUAL
    v += res[obase + i];
#endif
    y[obase + i] = v;
  }
#endif
}

#if WG
var<workgroup> partial: array<f32, 64>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let row = wid.x + wid.y * nwg.x;
  // Uniform across the workgroup: every invocation of a surplus group returns, none reaches a barrier.
  if (row >= p.T * p.G) { return; }
  let t = row / p.G;
  let g = row % p.G;
  let base = t * p.stride + p.offset + g * p.D;
  partial[li] = sum_squares(base, li, 64u);
  workgroupBarrier();
  for (var half = 32u; half > 0u; half >>= 1u) {
    if (li < half) { partial[li] += partial[li + half]; }
    workgroupBarrier();
  }
  write_row(t, g, base, inverseSqrt(partial[0] / f32(p.D) + p.eps), li, 64u);
}
#else
@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let row = flat_id(gid, nwg, 64u);
  if (row >= p.T * p.G) { return; }
  let t = row / p.G;
  let g = row % p.G;
  let base = t * p.stride + p.offset + g * p.D;
  write_row(t, g, base, inverseSqrt(sum_squares(base, 0u, 1u) / f32(p.D) + p.eps), 0u, 1u);
}
#endif
