// Writes T rows of width W (multiple of 4) from a strided source into rows
// of a destination cache: dst[idx[t] * W + c] = src[t * stride + offset + c].
// The destination is f32 or packed f16 (DST_F16); one invocation per 4 values.
// (A layer's new keys and values reach its cache through rope_scatter.wgsl;
// this writes the keys before RoPE that a compile captures.)
#include "common"

struct Params { T: u32, W4: u32, stride: u32, offset: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> idx: array<u32>;
#if DST_F16
@group(0) @binding(3) var<storage, read_write> dst: array<vec2<u32>>;
fn pack(v: vec4<f32>) -> vec2<u32> { return pack4h(v); }
#else
@group(0) @binding(3) var<storage, read_write> dst: array<vec4<f32>>;
fn pack(v: vec4<f32>) -> vec4<f32> { return v; }
#endif

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let id = flat_id(gid, nwg, 64u);
  if (id >= p.T * p.W4) { return; }
  let t = id / p.W4;
  let c = id % p.W4;
  dst[idx[t] * p.W4 + c] = pack(src[(t * p.stride + p.offset) / 4u + c]);
}
