// Attention as attention.wgsl computes it (same bindings, masks, GQA, f16
// KV, bounds, splits; read its header), tiled for real GPUs in the manner of
// FlashAttention: a workgroup takes BQ = 64 query rows of one head, one row
// per invocation, and walks the union of the rows' key bounds in tiles of BK
// keys that the workgroup stages in workgroup memory together. Every key and
// value is then read from global memory once per 64 rows instead of once per
// row, which is what bounds attention.wgsl when many rows face many keys.
// Each invocation keeps its row's query, accumulator and online-softmax state
// (max, sum; base-2 exponentials) in registers and updates them once a tile,
// four keys at a time. Keys outside a row's own bounds, or hidden from it by
// position or window, are masked per row; a row with no visible key in a
// tile skips it.
// SPLIT: the workgroup walks only its slice of the union of its rows' bounds
// and writes partials for attention_combine.wgsl, as attention.wgsl does.
// Workgroups are numbered with the row block fastest, so those running
// together read the same keys of the same head.
#include "attention_io"
#include "attention_tile"

// A row an invocation.
const BQ: u32 = WG;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  // Everything up to the tile loop is uniform across the workgroup (the barriers need that), except the row's own state.
  let b = block_of(wid, nwg);
  if (!b.live) { return; }

  // This invocation's row; a row past T keeps an empty range and so never computes.
  let live = b.t0 + lid < p.T;
  let t = min(b.t0 + lid, p.T - 1u);
  let qp = qpos[t];
  let rb = bounds[t];
  let lo = max(rb.x, b.first);
  let hi = select(0u, min(rb.y, b.last), live);
  var qv: array<vec4<f32>, HD4>;
  let qbase = (t * p.q_stride + p.q_offset) / 4u + b.h * HD4;
  for (var i = 0u; i < HD4; i++) { qv[i] = q[qbase + i] * (p.scale * LOG2E); }
  var acc: array<vec4<f32>, HD4>;
  var m = NEG;
  var l = 0.0;

  for (var j0 = b.first; j0 < b.last; j0 += BK) {
    stage_tile(j0, b.last, b.kvh, lid);
    workgroupBarrier();

    // Rows whose range misses the tile, or that no key of it reaches by position or window, skip it.
    var kmin = kps[0];
    var kmax = kps[0];
    for (var c4 = 1u; c4 < BK / 4u; c4++) {
      kmin = min(kmin, kps[c4]);
      kmax = max(kmax, kps[c4]);
    }
    let klo = min(min(kmin.x, kmin.y), min(kmin.z, kmin.w));
    let khi = max(max(kmax.x, kmax.y), max(kmax.z, kmax.w));
    let reach = klo <= qp && (p.window == 0u || qp - khi < i32(p.window));
    if (reach && max(lo, j0) < min(hi, j0 + BK)) {
      var s: array<vec4<f32>, BK / 4u>;
      var mx = m;
      for (var c4 = 0u; c4 < BK / 4u; c4++) {
        let kb = 4u * c4 * HD4;
        var d = vec4<f32>(0.0);
        for (var i = 0u; i < HD4; i++) {
          let qi = qv[i];
          d += vec4<f32>(dot(qi, ks[kb + i]), dot(qi, ks[kb + HD4 + i]), dot(qi, ks[kb + 2u * HD4 + i]), dot(qi, ks[kb + 3u * HD4 + i]));
        }
        d = select(vec4<f32>(NEG), d, seen4(j0 + 4u * c4, c4, lo, hi, qp));
        s[c4] = d;
        mx = max(mx, max(max(d.x, d.y), max(d.z, d.w)));
      }
      // One rescale a tile; masked keys weigh 0 even while nothing is seen yet (mx still NEG).
      let corr = exp2(m - mx);
      l *= corr;
      for (var i = 0u; i < HD4; i++) { acc[i] *= corr; }
      for (var c4 = 0u; c4 < BK / 4u; c4++) {
        let e = select(vec4<f32>(0.0), exp2(s[c4] - vec4<f32>(mx)), seen4(j0 + 4u * c4, c4, lo, hi, qp));
        l += (e.x + e.y) + (e.z + e.w);
        let vb = 4u * c4 * HD4;
        for (var i = 0u; i < HD4; i++) {
          acc[i] += e.x * vs[vb + i] + e.y * vs[vb + HD4 + i] + e.z * vs[vb + 2u * HD4 + i] + e.w * vs[vb + 3u * HD4 + i];
        }
      }
      m = mx;
    }
    workgroupBarrier();
  }

  if (!live) { return; }
#if SPLIT
  let slot = (t * p.H + b.h) * p.splits + b.split;
  ml[slot] = vec2<f32>(m, l);
  for (var i = 0u; i < HD4; i++) { out[slot * HD4 + i] = acc[i]; }
#else
  let inv = select(0.0, 1.0 / l, l > 0.0);
  let ob = (t * p.H + b.h) * HD4;
  for (var i = 0u; i < HD4; i++) { out[ob + i] = acc[i] * inv; }
#endif
}
