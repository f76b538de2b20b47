// Rotary position embedding, in place, on H heads of width HD per row:
// head (t, h) starts at t * stride + offset + h * HD.
// cs[t * HD/2 + i] = (cos, sin) of row t's angle for frequency i, computed on
// the host from each row's own position id, so rows may sit at any position.
// INTERLEAVED rotates pairs (2i, 2i+1) (llama2.c, GGUF llama); otherwise the
// pairs are (i, i + HD/2) (Hugging Face). One invocation per pair.
#include "common"

struct Params { T: u32, H: u32, HD: u32, stride: u32, offset: u32, _a: u32, _b: u32, _c: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<f32>;
@group(0) @binding(2) var<storage, read> cs: array<vec2<f32>>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let half = p.HD / 2u;
  let id = flat_id(gid, nwg, 64u);
  if (id >= p.T * p.H * half) { return; }
  let i = id % half;
  let th = id / half;
  let t = th / p.H;
  let h = th % p.H;
  let base = t * p.stride + p.offset + h * p.HD;
#if INTERLEAVED
  let ia = base + 2u * i;
  let ib = ia + 1u;
#else
  let ia = base + i;
  let ib = ia + half;
#endif
  let c = cs[t * half + i];
  let a = x[ia];
  let b = x[ib];
  x[ia] = a * c.x - b * c.y;
  x[ib] = a * c.y + b * c.x;
}
