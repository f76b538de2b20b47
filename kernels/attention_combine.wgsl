// Merges the key slices of a split attention (attention.wgsl, attention_tiled.wgsl
// or attention_decode.wgsl with SPLIT): for query row t and head h, slice s left an
// unnormalised accumulator part[(t, h, s)] over its keys with running max m_s and
// sum l_s (base 2).
// out[t, h] = sum_s part_s * 2^(m_s - M) / sum_s l_s * 2^(m_s - M), M = max m_s;
// rows that saw no key at all get zeros, as unsplit attention gives them.
// A workgroup of 64 per (t, h), so that no invocation walks the slices alone
// (a walk of 128 slices is 256 memory latencies in a row: on the H100 about
// 0.4 us a slice, gpu-h100-13.json's decode slices at 32K keys):
//   1. invocation lid reads (m, l) of slices lid, lid + 64, ...; the 64 maxima
//      and then the 64 sums of l_s * 2^(m_s - M) meet in workgroup memory, and
//      each slice's weight 2^(m_s - M) is kept there too;
//   2. the invocations split the head as G = 64 / HD4 groups of HD4 (as
//      attention_decode's values): invocation (g, i) adds vec4 i of slices
//      g, g + G, ..., four slices' loads issued together;
//   3. the G groups' sums meet in workgroup memory, and HD4 invocations write.
// Slices beyond SMAX are weighed on the fly instead of from workgroup memory.
#include "common"

struct Params { T: u32, H: u32, splits: u32, pad: u32 }

const HD4: u32 = {{HD4}}u;
const WG: u32 = 64u;
// Value groups, each a whole head of HD4 invocations (one where HD4 > 64).
const G: u32 = max(1u, WG / HD4);
// Slices whose weights workgroup memory keeps.
const SMAX: u32 = 512u;

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> part: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> ml: array<vec2<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;

var<workgroup> red: array<f32, WG>;
var<workgroup> wts: array<f32, SMAX>;
var<workgroup> accs: array<vec4<f32>, WG>;

// The sum (or max) of red[0..64), the same in every invocation: red is read after a barrier, written before the next.
fn red_max() -> f32 {
  var a = red[0];
  for (var c = 1u; c < WG; c++) { a = max(a, red[c]); }
  return a;
}
fn red_sum() -> f32 {
  var a = 0.0;
  for (var c = 0u; c < WG; c++) { a += red[c]; }
  return a;
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  // Uniform across the workgroup: one past the last (t, h) returns as a whole.
  let th = wid.x + wid.y * nwg.x;
  if (th >= p.T * p.H) { return; }
  let base = th * p.splits;

  // 1. The largest max, then each slice's weight and the weighted sum of the l's.
  var mine = -1.0e30;
  for (var s = lid; s < p.splits; s += WG) { mine = max(mine, ml[base + s].x); }
  red[lid] = mine;
  workgroupBarrier();
  let mx = red_max();
  workgroupBarrier();
  var part_l = 0.0;
  for (var s = lid; s < p.splits; s += WG) {
    let e = ml[base + s];
    let w = exp2(e.x - mx);
    if (s < SMAX) { wts[s] = w; }
    part_l += e.y * w;
  }
  red[lid] = part_l;
  workgroupBarrier();
  let sum = red_sum();

  // 2. Group g's slices. A head wider than the workgroup (HD4 > 64) has one group, each invocation some vec4s of it.
  if (HD4 > WG) {
    for (var i = lid; i < HD4; i += WG) { out[th * HD4 + i] = walk(base, i, 0u, 1u, mx) * select(0.0, 1.0 / sum, sum > 0.0); }
    return;
  }
  let g = lid / HD4;
  var acc = vec4<f32>(0.0);
  if (g < G) { acc = walk(base, lid % HD4, g, G, mx); }

  // 3. The groups' sums.
  accs[lid] = acc;
  workgroupBarrier();
  if (lid >= HD4) { return; }
  var total = vec4<f32>(0.0);
  for (var gg = 0u; gg < G; gg++) { total += accs[gg * HD4 + lid]; }
  out[th * HD4 + lid] = total * select(0.0, 1.0 / sum, sum > 0.0);
}

// Vec4 i of slices s0, s0 + step, ... weighed and summed, four slices' loads issued together.
fn walk(base: u32, i: u32, s0: u32, step: u32, mx: f32) -> vec4<f32> {
  var acc = vec4<f32>(0.0);
  var s = s0;
  for (; s + 3u * step < p.splits; s += 4u * step) {
    let a0 = part[(base + s) * HD4 + i];
    let a1 = part[(base + s + step) * HD4 + i];
    let a2 = part[(base + s + 2u * step) * HD4 + i];
    let a3 = part[(base + s + 3u * step) * HD4 + i];
    acc += (weight(base, s, mx) * a0 + weight(base, s + step, mx) * a1) + (weight(base, s + 2u * step, mx) * a2 + weight(base, s + 3u * step, mx) * a3);
  }
  for (; s < p.splits; s += step) { acc += weight(base, s, mx) * part[(base + s) * HD4 + i]; }
  return acc;
}

// Slice s's weight: from workgroup memory, or past SMAX from its max again.
fn weight(base: u32, s: u32, mx: f32) -> f32 {
  if (s < SMAX) { return wts[s]; }
  return exp2(ml[base + s].x - mx);
}
