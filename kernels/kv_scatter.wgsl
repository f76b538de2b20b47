// Writes T rows of width W (multiple of 4) from a strided source into rows
// of a destination cache: dst[idx[t] * W + c] = src[t * stride + offset + c].
// The destination is f32 or packed f16 (DST_F16); one invocation per 4 values.
// With PAIR, one launch fills two caches (a layer's keys and values): the
// second half of the invocations writes dst2 from the W values that follow
// at src[t * stride + offset + W + c], as in a fused q/k/v row.
#include "common"

struct Params { T: u32, W4: u32, stride: u32, offset: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> idx: array<u32>;
#if DST_F16
@group(0) @binding(3) var<storage, read_write> dst: array<vec2<u32>>;
#if PAIR
@group(0) @binding(4) var<storage, read_write> dst2: array<vec2<u32>>;
#endif
fn pack(v: vec4<f32>) -> vec2<u32> { return pack4h(v); }
#else
@group(0) @binding(3) var<storage, read_write> dst: array<vec4<f32>>;
#if PAIR
@group(0) @binding(4) var<storage, read_write> dst2: array<vec4<f32>>;
#endif
fn pack(v: vec4<f32>) -> vec4<f32> { return v; }
#endif

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let gi = flat_id(gid, nwg, 64u);
  let half = p.T * p.W4;
#if PAIR
  if (gi >= 2u * half) { return; }
  let second = gi >= half;
  let id = select(gi, gi - half, second);
#else
  if (gi >= half) { return; }
  let id = gi;
#endif
  let t = id / p.W4;
  let c = id % p.W4;
#if PAIR
  if (second) {
    dst2[idx[t] * p.W4 + c] = pack(src[(t * p.stride + p.offset) / 4u + p.W4 + c]);
    return;
  }
#endif
  dst[idx[t] * p.W4 + c] = pack(src[(t * p.stride + p.offset) / 4u + c]);
}
