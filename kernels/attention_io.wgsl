// What attention.wgsl, attention_tiled.wgsl and attention_decode.wgsl share: their parameters and
// bindings (see attention.wgsl's header for the layouts), and key/value loads
// from an f32 or packed-f16 cache. STEP (attention_decode only): one decode step's
// row, whose position, key range and cache row come as parameters instead of
// qpos and bounds, and whose RoPE table (cs) takes qpos's binding; its key and
// value go into the cache, which is then written as well as read. QKNORM (with
// STEP): the q and k heads are RMS-normalised (Gemma 3's q/k norm) before RoPE.
#include "common"

struct Params {
  T: u32, n: u32, H: u32, NKV: u32, q_stride: u32, q_offset: u32, window: u32, scale: f32, splits: u32,
#if STEP
  qp: i32, row: u32, first: u32, last: u32,
#endif
#if QKNORM
  eps: f32, wadd: f32,
#endif
}

const HD4: u32 = {{HD4}}u;
const LOG2E: f32 = 1.4426950408889634;
const NEG: f32 = -1.0e30;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
#if KV_F16
#if STEP
@group(0) @binding(2) var<storage, read_write> kc: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> vc: array<vec2<u32>>;
#else
@group(0) @binding(2) var<storage, read> kc: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read> vc: array<vec2<u32>>;
#endif
fn load_k(i: u32) -> vec4<f32> { return unpack4h(kc[i]); }
fn load_v(i: u32) -> vec4<f32> { return unpack4h(vc[i]); }
fn pack_kv(v: vec4<f32>) -> vec2<u32> { return pack4h(v); }
#else
#if STEP
@group(0) @binding(2) var<storage, read_write> kc: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> vc: array<vec4<f32>>;
#else
@group(0) @binding(2) var<storage, read> kc: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> vc: array<vec4<f32>>;
#endif
fn load_k(i: u32) -> vec4<f32> { return kc[i]; }
fn load_v(i: u32) -> vec4<f32> { return vc[i]; }
fn pack_kv(v: vec4<f32>) -> vec4<f32> { return v; }
#endif
#if STEP
@group(0) @binding(4) var<storage, read> cs: array<vec2<f32>>;
// The step's key (rotated) and value, as the cache will hold them (attention_decode, attention_grouped).
var<workgroup> kn: array<vec4<f32>, HD4>;
var<workgroup> vn: array<vec4<f32>, HD4>;
fn as_cached(v: vec4<f32>) -> vec4<f32> {
#if KV_F16
  return unpack4h(pack4h(v));
#else
  return v;
#endif
}
#else
@group(0) @binding(4) var<storage, read> qpos: array<i32>;
@group(0) @binding(7) var<storage, read> bounds: array<vec2<u32>>;
#endif
@group(0) @binding(5) var<storage, read> kpos: array<i32>;
@group(0) @binding(6) var<storage, read_write> out: array<vec4<f32>>;
#if SPLIT
@group(0) @binding(8) var<storage, read_write> ml: array<vec2<f32>>;
#endif
// Slice `split` of p.splits of a row's key range [first, last), as attention_combine expects them: all of it unless
// the keys are split; the last slices may be short or empty.
fn key_slice(first: u32, last: u32, split: u32) -> vec2<u32> {
  if (last <= first || p.splits <= 1u) { return vec2<u32>(first, last); }
  let len = (last - first + p.splits - 1u) / p.splits;
  let f = min(last, first + split * len);
  return vec2<u32>(f, min(last, f + len));
}
// The slice `split` of its keys that a decode kernel's row t scans: the step's span (STEP) or the row's bounds,
// cut to the cache's p.n rows.
fn row_slice(t: u32, split: u32) -> vec2<u32> {
#if STEP
  return key_slice(p.first, min(p.last, p.n), split);
#else
  let b = bounds[t];
  return key_slice(b.x, min(b.y, p.n), split);
#endif
}
#if QKNORM
// The q norm's weights then the k norm's, HD4 vec4s each (added to wadd: 1 for Gemma's 1 + w).
@group(0) @binding(9) var<storage, read> qkn: array<vec4<f32>>;
#endif
