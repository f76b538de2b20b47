// Attention as attention.wgsl computes it (same bindings, masks, GQA, f16
// KV, bounds, splits; read its header), for few query rows against many keys
// on real GPUs: decode. attention.wgsl gives a row and head one invocation,
// which walks every key alone, so a decode step has as many invocations as
// heads (times slices) and each of them a long serial loop. Here a
// workgroup of 64 invocations takes one (row, head, slice) and walks its keys
// in tiles of 64:
//   1. each invocation scores one key of the tile (q.k, masked by position,
//      window and the row's bounds) into workgroup memory;
//   2. every invocation reads the tile's 64 scores back for their max, and
//      the 64 weights exp2(score - max) for their sum, so all of them keep
//      the same online-softmax state (max, sum; base-2 exponentials);
//   3. the 64 invocations split the value rows as G = 64 / HD4 groups of HD4:
//      invocation (g, i) adds vec4 i of the tile's keys g, g + G, ..., so
//      neighbouring invocations read neighbouring memory of the same row.
// At the end the G groups' accumulators are summed through workgroup memory.
// Workgroups are numbered (slice fastest, then head, then row).
#include "attention_io"

const WG: u32 = 64u;
// Value groups: each covers a whole head with HD4 invocations (HD4 <= 64).
const G: u32 = WG / HD4;

var<workgroup> qs: array<vec4<f32>, HD4>;
var<workgroup> sc: array<f32, WG>;
var<workgroup> pe: array<f32, WG>;
var<workgroup> accs: array<vec4<f32>, WG>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  // Uniform across the workgroup: a workgroup past the last (row, head, slice) returns as a whole.
  let id = wid.x + wid.y * nwg.x;
  if (id >= p.T * p.H * p.splits) { return; }
  let split = id % p.splits;
  let th = id / p.splits;
  let t = th / p.H;
  let h = th % p.H;
  let kvh = h / (p.H / p.NKV);
  let qp = qpos[t];

  if (lid < HD4) {
    qs[lid] = q[(t * p.q_stride + p.q_offset) / 4u + h * HD4 + lid] * (p.scale * LOG2E);
  }
  let b = bounds[t];
  var first = b.x;
  var last = min(b.y, p.n);
  if (last > first && p.splits > 1u) {
    let len = (last - first + p.splits - 1u) / p.splits;
    first = min(last, first + split * len);
    last = min(last, first + len);
  }
  let kstride = p.NKV * HD4;
  let g = lid / HD4;
  let i = lid % HD4;
  let vlane = g < G;
  var acc = vec4<f32>(0.0);
  var m = NEG;
  var l = 0.0;
  workgroupBarrier();
  for (var j0 = first; j0 < last; j0 += WG) {
    // 1. This invocation's key.
    let j = j0 + lid;
    var s = NEG;
    if (j < last) {
      let kp = kpos[j];
      var seen = kp <= qp;
      if (p.window > 0u) { seen = seen && qp - kp < i32(p.window); }
      if (seen) {
        let kb = j * kstride + kvh * HD4;
        var d = 0.0;
        for (var c = 0u; c < HD4; c++) { d += dot(qs[c], load_k(kb + c)); }
        s = d;
      }
    }
    sc[lid] = s;
    workgroupBarrier();
    // 2. The tile's max, the same in every invocation; each invocation's own weight.
    var mx = m;
    for (var c = 0u; c < WG; c++) { mx = max(mx, sc[c]); }
    pe[lid] = select(0.0, exp2(s - mx), s > NEG);
    workgroupBarrier();
    // While no key has been seen, m = mx = NEG: corr is 1 and acc and l stay 0.
    let corr = exp2(m - mx);
    var sum = 0.0;
    for (var c = 0u; c < WG; c++) { sum += pe[c]; }
    l = l * corr + sum;
    m = mx;
    // 3. Group g's keys of the tile, with no branch on the weight (the H100 ran it as fast as with one that skipped
    //    weights of 0: gpu-h100-13.json); a hidden key weighs 0, a key past the last reads the last row.
    acc *= corr;
    if (vlane) {
      for (var c = g; c < WG; c += G) {
        acc += pe[c] * load_v(min(j0 + c, last - 1u) * kstride + kvh * HD4 + i);
      }
    }
    // The next tile overwrites sc and pe.
    workgroupBarrier();
  }
  accs[lid] = acc;
  workgroupBarrier();
  if (lid >= HD4) { return; }
  var total = vec4<f32>(0.0);
  for (var gg = 0u; gg < G; gg++) { total += accs[gg * HD4 + lid]; }
#if SPLIT
  let slot = th * p.splits + split;
  if (lid == 0u) { ml[slot] = vec2<f32>(m, l); }
  out[slot * HD4 + lid] = total;
#else
  let inv = select(0.0, 1.0 / l, l > 0.0);
  out[th * HD4 + lid] = total * inv;
#endif
}
