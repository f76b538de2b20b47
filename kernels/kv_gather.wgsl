// Places cached rows into a working cache in one launch (RowWriter): from a
// slab of KVStore's GPU tier, where chunks share buffers, with no copy, or
// from the staging buffer host rows were written into. For t in [t0, t0 + T),
// source row src_rows[t] of the source's keys and values goes to cache row
// idx[t], the key rotated by RoPE with row cs_rows[t] of cs on the way (chunks
// keep keys before RoPE), the value as it is. cs is the model's table by
// position, kept on the GPU from link to link (cs_rows[t] = the row's
// position), or a table of the placement's own rows (cs_rows[t] = t). Sources and destinations are f32 or packed f16 (SRC_F16,
// DST_F16); the arithmetic is rope_scatter.wgsl's, in f32.
// W = kvDim (heads of HD, HD a multiple of 8): one invocation per 4 values
// of a row, writing 4 keys and 4 values. INTERLEAVED rotates pairs (2i,
// 2i+1), both in the invocation's own 4; otherwise the pairs are (i,
// i + HD/2) and the invocation also reads the 4 values at its partners.
#include "common"

struct Params { T: u32, W4: u32, HD: u32, t0: u32 }

@group(0) @binding(0) var<uniform> p: Params;
#if SRC_F16
@group(0) @binding(1) var<storage, read> sk: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> sv: array<vec2<u32>>;
fn load_k(i: u32) -> vec4<f32> { return unpack4h(sk[i]); }
fn load_v(i: u32) -> vec4<f32> { return unpack4h(sv[i]); }
#else
@group(0) @binding(1) var<storage, read> sk: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> sv: array<vec4<f32>>;
fn load_k(i: u32) -> vec4<f32> { return sk[i]; }
fn load_v(i: u32) -> vec4<f32> { return sv[i]; }
#endif
@group(0) @binding(3) var<storage, read> src_rows: array<u32>;
@group(0) @binding(4) var<storage, read> idx: array<u32>;
@group(0) @binding(5) var<storage, read> cs: array<vec2<f32>>;
@group(0) @binding(8) var<storage, read> cs_rows: array<u32>;
#if DST_F16
@group(0) @binding(6) var<storage, read_write> dk: array<vec2<u32>>;
@group(0) @binding(7) var<storage, read_write> dv: array<vec2<u32>>;
fn pack(v: vec4<f32>) -> vec2<u32> { return pack4h(v); }
#else
@group(0) @binding(6) var<storage, read_write> dk: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> dv: array<vec4<f32>>;
fn pack(v: vec4<f32>) -> vec4<f32> { return v; }
#endif

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let id = flat_id(gid, nwg, 64u);
  if (id >= p.T * p.W4) { return; }
  let t = p.t0 + id / p.W4;
  let c = id % p.W4;
  let s = src_rows[t] * p.W4;
  let d = idx[t] * p.W4 + c;
  let half = p.HD / 2u;
  // This invocation's 4 values: i..i+3 within head h.
  let i = (4u * c) % p.HD;
  let crow = cs_rows[t] * half;
  let x = load_k(s + c);
  var y: vec4<f32>;
#if INTERLEAVED
  // Pairs (x, y) and (z, w): frequencies i/2 and i/2 + 1.
  let c0 = cs[crow + i / 2u];
  let c1 = cs[crow + i / 2u + 1u];
  y = vec4<f32>(x.x * c0.x - x.y * c0.y, x.x * c0.y + x.y * c0.x, x.z * c1.x - x.w * c1.y, x.z * c1.y + x.w * c1.x);
#else
  let first = i < half;
  // The partners' 4 values, half a head away; frequencies f..f+3.
  let o = select(c - half / 4u, c + half / 4u, first);
  let z = load_k(s + o);
  let f = select(i - half, i, first);
  let r = crow + f;
  let e0 = cs[r];
  let e1 = cs[r + 1u];
  let e2 = cs[r + 2u];
  let e3 = cs[r + 3u];
  let cv = vec4<f32>(e0.x, e1.x, e2.x, e3.x);
  let sv4 = vec4<f32>(e0.y, e1.y, e2.y, e3.y);
  // a = the first of each pair, b = the second: y_first = a c - b s, y_second = a s + b c.
  if (first) {
    y = x * cv - z * sv4;
  } else {
    y = z * sv4 + x * cv;
  }
#endif
  dk[d] = pack(y);
  dv[d] = pack(load_v(s + c));
}
