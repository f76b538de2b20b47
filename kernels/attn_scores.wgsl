// Raw attention scores for inspection (the attention-sink maps):
// s[r, j] = scale * q(rows[r], head) · k(j, head's kv head) for j < n, and
// MASKED (-3e38: WGSL has no infinity literal) where the causal/window mask
// hides key j from that query; readers map it to -Infinity.
// Same q and cache layouts as attention.wgsl; out: [R, n].
#include "common"

struct Params { R: u32, n: u32, H: u32, NKV: u32, q_stride: u32, q_offset: u32, window: u32, scale: f32, head: u32, _a: u32, _b: u32, _c: u32 }

const HD4: u32 = {{HD4}}u;
const MASKED: f32 = -3.0e38;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
#if KV_F16
@group(0) @binding(2) var<storage, read> kc: array<vec2<u32>>;
fn load_k(i: u32) -> vec4<f32> { return unpack4h(kc[i]); }
#else
@group(0) @binding(2) var<storage, read> kc: array<vec4<f32>>;
fn load_k(i: u32) -> vec4<f32> { return kc[i]; }
#endif
@group(0) @binding(3) var<storage, read> rows: array<u32>;
@group(0) @binding(4) var<storage, read> qpos: array<i32>;
@group(0) @binding(5) var<storage, read> kpos: array<i32>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let id = flat_id(gid, nwg, 64u);
  if (id >= p.R * p.n) { return; }
  let r = id / p.n;
  let j = id % p.n;
  let t = rows[r];
  let qp = qpos[t];
  let kp = kpos[j];
  if (kp > qp || (p.window > 0u && u32(qp - kp) >= p.window)) {
    out[id] = MASKED;
    return;
  }
  let kvh = p.head / (p.H / p.NKV);
  let qb = (t * p.q_stride + p.q_offset) / 4u + p.head * HD4;
  let kb = j * p.NKV * HD4 + kvh * HD4;
  var s = 0.0;
  for (var i = 0u; i < HD4; i++) { s += dot(q[qb + i], load_k(kb + i)); }
  out[id] = s * p.scale;
}
