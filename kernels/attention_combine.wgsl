// Merges the key slices of a split attention (attention.wgsl with SPLIT):
// for query row t and head h, slice s left an unnormalised accumulator
// part[(t, h, s)] over its keys with running max m_s and sum l_s (base 2).
// out[t, h] = sum_s part_s * 2^(m_s - M) / sum_s l_s * 2^(m_s - M), M = max m_s;
// rows that saw no key at all get zeros, as unsplit attention gives them.
// One invocation per (t, h, vec4 of the head).
#include "common"

struct Params { T: u32, H: u32, splits: u32, HD4: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> ml: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let id = flat_id(gid, nwg, 64u);
  if (id >= p.T * p.H * p.HD4) { return; }
  let i = id % p.HD4;
  let th = id / p.HD4;
  let base = th * p.splits;
  var mx = -1.0e30;
  for (var s = 0u; s < p.splits; s++) { mx = max(mx, ml[base + s].x); }
  var sum = 0.0;
  var o = vec4<f32>(0.0);
  for (var s = 0u; s < p.splits; s++) {
    let w = exp2(ml[base + s].x - mx);
    sum += ml[base + s].y * w;
    o += part[(base + s) * p.HD4 + i] * w;
  }
  out[th * p.HD4 + i] = o * select(0.0, 1.0 / sum, sum > 0.0);
}
