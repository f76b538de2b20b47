// RoPE and the KV-cache write in one launch, after the q/k/v matmul: in each
// fused q/k/v row t (stride floats apart), the q and k heads are rotated in
// place with row cs_rows[t] of cs (cs[r * HD/2 + i] = (cos, sin) of row r's
// angle for frequency i: the model's table by position, kept on the GPU, with
// cs_rows[t] = the row's position; or a table of the pass's own rows, with
// cs_rows[t] = t), and the row's rotated k heads and its v heads go into cache
// row idx[t] of dk and dv (f32 or packed f16, DST_F16), as kv_scatter.wgsl
// writes rows. Heads are numbered q (H), then k (NKV), then v (NKV);
// v heads are only copied. One invocation per 4 pairs of a head (a group of
// rope_pairs.wgsl), so it writes whole groups of 4 values (one vec2<u32> of an
// f16 cache). HD is a multiple of 8.
#include "common"

struct Params { T: u32, H: u32, NKV: u32, HD: u32, stride: u32, _a: u32, _b: u32, _c: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read_write> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> cs: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read> idx: array<u32>;
@group(0) @binding(6) var<storage, read> cs_rows: array<u32>;
#include "rope_pairs"
#if DST_F16
@group(0) @binding(4) var<storage, read_write> dk: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read_write> dv: array<vec2<u32>>;
fn pack(v: vec4<f32>) -> vec2<u32> { return pack4h(v); }
#else
@group(0) @binding(4) var<storage, read_write> dk: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> dv: array<vec4<f32>>;
fn pack(v: vec4<f32>) -> vec4<f32> { return v; }
#endif

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let G = p.HD / 8u;
  let heads = p.H + 2u * p.NKV;
  let id = flat_id(gid, nwg, 64u);
  if (id >= p.T * heads * G) { return; }
  let g = id % G;
  let h = (id / G) % heads;
  let t = id / (G * heads);
  let half = p.HD / 2u;
  let hb = (t * p.stride + h * p.HD) / 4u;
  // The invocation's group: two vec4s within the head.
  let o = rope_groups(g, p.HD);
  let oa = o.x;
  let ob = o.y;
  var a = x[hb + oa];
  var b = x[hb + ob];
  if (h < p.H + p.NKV) {
    let rot = rope_rotate(a, b, cs_rows[t] * half + 4u * g);
    a = rot[0];
    b = rot[1];
    x[hb + oa] = a;
    x[hb + ob] = b;
  }
  if (h < p.H) { return; }
  // A k or v head of the row: into its cache row.
  let kv = h - p.H;
  let vh = select(kv, kv - p.NKV, kv >= p.NKV);
  let db = (idx[t] * p.NKV * p.HD + vh * p.HD) / 4u;
  if (kv < p.NKV) {
    dk[db + oa] = pack(a);
    dk[db + ob] = pack(b);
  } else {
    dv[db + oa] = pack(a);
    dv[db + ob] = pack(b);
  }
}
