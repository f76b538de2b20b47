// Causal attention by position id, for T query rows against n cached keys.
// q: head (t, h) at t * q_stride + q_offset + h * HD (already rotated).
// k, v: the layer's cache, [cap, NKV, HD] (f32, or packed f16 when KV_F16).
// Query t sees key j iff kpos[j] <= qpos[t] and, when window > 0,
// qpos[t] - kpos[j] < window. Keys are any rows of the cache, so the same
// kernel serves prefill, decode and selective recompute of scattered rows.
// GQA: query head h reads kv head h / (H / NKV).
// One invocation per (t, h) with an online softmax; out: [T, H * HD].
#include "common"

struct Params { T: u32, n: u32, H: u32, NKV: u32, q_stride: u32, q_offset: u32, window: u32, scale: f32 }

const HD4: u32 = {{HD4}}u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
#if KV_F16
@group(0) @binding(2) var<storage, read> kc: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read> vc: array<vec2<u32>>;
fn load_k(i: u32) -> vec4<f32> { return unpack4h(kc[i]); }
fn load_v(i: u32) -> vec4<f32> { return unpack4h(vc[i]); }
#else
@group(0) @binding(2) var<storage, read> kc: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> vc: array<vec4<f32>>;
fn load_k(i: u32) -> vec4<f32> { return kc[i]; }
fn load_v(i: u32) -> vec4<f32> { return vc[i]; }
#endif
@group(0) @binding(4) var<storage, read> qpos: array<i32>;
@group(0) @binding(5) var<storage, read> kpos: array<i32>;
@group(0) @binding(6) var<storage, read_write> out: array<vec4<f32>>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let id = flat_id(gid, nwg, 64u);
  if (id >= p.T * p.H) { return; }
  let t = id / p.H;
  let h = id % p.H;
  let kvh = h / (p.H / p.NKV);
  let qbase = (t * p.q_stride + p.q_offset) / 4u + h * HD4;
  var qv: array<vec4<f32>, HD4>;
  for (var i = 0u; i < HD4; i++) { qv[i] = q[qbase + i] * p.scale; }
  var acc: array<vec4<f32>, HD4>;
  var m = -3.0e38;
  var l = 0.0;
  let qp = qpos[t];
  let kstride = p.NKV * HD4;
  for (var j = 0u; j < p.n; j++) {
    let kp = kpos[j];
    if (kp > qp || (p.window > 0u && u32(qp - kp) >= p.window)) { continue; }
    let kb = j * kstride + kvh * HD4;
    var s = 0.0;
    for (var i = 0u; i < HD4; i++) { s += dot(qv[i], load_k(kb + i)); }
    if (s > m) {
      let corr = exp(m - s);
      l *= corr;
      for (var i = 0u; i < HD4; i++) { acc[i] *= corr; }
      m = s;
    }
    let e = exp(s - m);
    l += e;
    for (var i = 0u; i < HD4; i++) { acc[i] += e * load_v(kb + i); }
  }
  let inv = select(0.0, 1.0 / l, l > 0.0);
  let ob = (t * p.H + h) * HD4;
  for (var i = 0u; i < HD4; i++) { out[ob + i] = acc[i] * inv; }
}
