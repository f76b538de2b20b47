// Shared declarations, pasted into a kernel by `#include "common"`.
// Packed f16 storage: two IEEE halves in one u32, low half first, so a
// vec2<u32> holds four consecutive values. Computation is always f32.

fn unpack4h(v: vec2<u32>) -> vec4<f32> {
  return vec4<f32>(unpack2x16float(v.x), unpack2x16float(v.y));
}

fn pack4h(v: vec4<f32>) -> vec2<u32> {
  return vec2<u32>(pack2x16float(v.xy), pack2x16float(v.zw));
}

// Flattens a 2-D dispatch (x up to 65535 workgroups) back into one index.
fn flat_id(gid: vec3<u32>, nwg: vec3<u32>, wg_size: u32) -> u32 {
  return gid.x + gid.y * nwg.x * wg_size;
}
