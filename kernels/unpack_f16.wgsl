// Widens IEEE half floats to f32: dst[start + i] = the two halves packed in
// src[start + i] (low half first), for i < count u32 words. With PAIR, one
// launch does the same from src2 into dst2 (a layer's keys and values): the
// second half of the invocations. KVLink uploads rows kept as f16 on the host
// (KVStore's f16 blobs) this way, half the bytes of f32, and widens them here.
#include "common"

struct Params { start: u32, count: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec2<f32>>;
#if PAIR
@group(0) @binding(3) var<storage, read> src2: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst2: array<vec2<f32>>;
#endif

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let gi = flat_id(gid, nwg, 64u);
#if PAIR
  if (gi >= 2u * p.count) { return; }
  if (gi >= p.count) {
    let i = p.start + gi - p.count;
    dst2[i] = unpack2x16float(src2[i]);
    return;
  }
#else
  if (gi >= p.count) { return; }
#endif
  let i = p.start + gi;
  dst[i] = unpack2x16float(src[i]);
}
