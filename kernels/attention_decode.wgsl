// Attention as attention.wgsl computes it (same bindings, masks, GQA, f16
// KV, bounds, splits; read its header), for few query rows against many keys
// on real GPUs: decode. attention.wgsl gives a row and head one invocation,
// which walks every key alone, so a decode step has as many invocations as
// heads (times slices) and each of them a long serial loop. Here a
// workgroup of 64 invocations takes one (row, head, slice) and walks its keys
// in rounds of KT = 64 * KPT keys:
//   1. each invocation scores KPT keys of the round (q.k, masked by position,
//      window and the row's bounds): key lid + 64 r for r < KPT, into
//      workgroup memory, and its own largest score;
//   2. every invocation reads the 64 largest back for the round's max, and
//      turns its own scores into weights exp2(score - max), and the 64 sums
//      of weights back for the round's sum, so all of them keep the same
//      online-softmax state (max, sum; base-2 exponentials);
//   3. the 64 invocations split the value rows as G = 64 / HD4 groups of HD4:
//      invocation (g, i) adds vec4 i of the round's keys g, g + G, ..., so
//      neighbouring invocations read neighbouring memory of the same row.
// Three barriers a round: more keys an invocation (KPT > 1) means fewer
// rounds and more loads in flight between barriers. Each phase issues its
// memory loads together (a key with its position, values four at a time):
// a round's time is its memory latencies, not its bandwidth.
// At the end the G groups' accumulators are summed through workgroup memory.
// Workgroups are numbered (slice fastest, then head, then row).
// STEP (a decode step's one row, T = 1; see attention_io.wgsl): the launch also
// does rope_scatter.wgsl's work for the row, so a layer has one launch fewer.
// q is then the row's q/k/v before RoPE: each workgroup rotates its q head and
// its kv head's key (cs row p.qp) into workgroup memory, with the value; the
// cache row p.row is read from there, and one workgroup per kv head (the group's
// first head, slice 0) writes the key and value into it for later steps. No
// other workgroup reads that row from the cache, so no ordering is needed. An
// f16 cache gets them rounded to f16 as rope_scatter would store them, so the
// step computes exactly what rope_scatter then attention_decode compute. With
// QKNORM each workgroup also RMS-normalises its q head and key first (Gemma 3),
// the work of the two rmsnorm.wgsl launches that would precede rope_scatter.
// LANES (heads of at most 64) drops the rounds: each invocation walks keys
// first + lid, first + lid + 64, ... alone with its own online softmax, so a
// key costs one memory latency an invocation, not a round's three barriers
// and serial reductions (about 9 us a 64-key round on the H100); the
// workgroup's 64 states are merged once at the end (attention_lanes.wgsl,
// which attention_grouped.wgsl shares).
#include "attention_io"
#if LANES
#include "attention_lanes"
#endif
#if STEP
#include "rope_pairs"
#endif

const WG: u32 = 64u;
const KPT: u32 = {{KPT}}u;
const KT: u32 = WG * KPT;
// Value groups: each covers a whole head with HD4 invocations (HD4 <= 64).
const G: u32 = WG / HD4;

var<workgroup> qs: array<vec4<f32>, HD4>;
var<workgroup> pe: array<f32, KT>;
var<workgroup> rmax: array<f32, WG>;
var<workgroup> rsum: array<f32, WG>;
var<workgroup> accs: array<vec4<f32>, WG>;
#if LANES
// The merge's staging (attention_lanes.wgsl): 8 vec4s of each invocation's accumulator at a time.
const LANES_C: u32 = 8u;
var<workgroup> red: array<vec4<f32>, WG * LANES_C>;
#endif
#if STEP
// Value vec4 `at` of cache row j, the step's own row from vn (vnew).
fn value_at(j: u32, at: u32, vnew: vec4<f32>) -> vec4<f32> { return select(load_v(at), vnew, j == p.row); }
#else
fn value_at(j: u32, at: u32, vnew: vec4<f32>) -> vec4<f32> { return load_v(at); }
#endif

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
  let qbase = (t * p.q_stride + p.q_offset) / 4u;
#if STEP
  let qp = p.qp;
  let qh = qbase + h * HD4;
  let kh = qbase + (p.H + kvh) * HD4;
#if QKNORM
  // The q head and the key normalised first, as rmsnorm.wgsl would in place: their squares summed through
  // workgroup memory, then each vec4 scaled by the row's 1 / rms and its norm weight. rmax and rsum are free
  // until the first round.
  if (lid < HD4) {
    let a = q[qh + lid];
    let b = q[kh + lid];
    qs[lid] = a;
    kn[lid] = b;
    rmax[lid] = dot(a, a);
    rsum[lid] = dot(b, b);
  }
  workgroupBarrier();
  var qss = 0.0;
  var kss = 0.0;
  for (var c = 0u; c < HD4; c++) {
    qss += rmax[c];
    kss += rsum[c];
  }
  let hd = f32(4u * HD4);
  if (lid < HD4) {
    qs[lid] = qs[lid] * inverseSqrt(qss / hd + p.eps) * (qkn[lid] + p.wadd);
    kn[lid] = kn[lid] * inverseSqrt(kss / hd + p.eps) * (qkn[HD4 + lid] + p.wadd);
  }
  workgroupBarrier();
#endif
  // Group lid of the q head and of the kv head's key, rotated; the value as it is.
  if (lid < HD4 / 2u) {
    let o = rope_groups(lid, 4u * HD4);
    let r = u32(qp) * 2u * HD4 + 4u * lid;
#if QKNORM
    let qr = rope_rotate(qs[o.x], qs[o.y], r);
    let kr = rope_rotate(kn[o.x], kn[o.y], r);
#else
    let qr = rope_rotate(q[qh + o.x], q[qh + o.y], r);
    let kr = rope_rotate(q[kh + o.x], q[kh + o.y], r);
#endif
    qs[o.x] = qr[0] * (p.scale * LOG2E);
    qs[o.y] = qr[1] * (p.scale * LOG2E);
    kn[o.x] = as_cached(kr[0]);
    kn[o.y] = as_cached(kr[1]);
  }
  if (lid < HD4) { vn[lid] = as_cached(q[qbase + (p.H + p.NKV + kvh) * HD4 + lid]); }
  var first = p.first;
  var last = min(p.last, p.n);
#else
  let qp = qpos[t];
  if (lid < HD4) {
    qs[lid] = q[qbase + h * HD4 + lid] * (p.scale * LOG2E);
  }
  let b = bounds[t];
  var first = b.x;
  var last = min(b.y, p.n);
#endif
  let span = key_slice(first, last, split);
  first = span.x;
  last = span.y;
  let kstride = p.NKV * HD4;
  let g = lid / HD4;
  let i = lid % HD4;
  let vlane = g < G;
  var acc = vec4<f32>(0.0);
  var m = NEG;
  var l = 0.0;
  workgroupBarrier();
#if STEP
  if (split == 0u && h % (p.H / p.NKV) == 0u && lid < HD4) {
    let at = p.row * kstride + kvh * HD4 + lid;
    kc[at] = pack_kv(kn[lid]);
    vc[at] = pack_kv(vn[lid]);
  }
  let vnew = vn[i];
#else
  let vnew = vec4<f32>(0.0);
#endif
#if LANES
  lanes_walk(lid, first, last, kvh, qp, 0u);
  lanes_merge(lid, 0u, th, split);
#else
  for (var j0 = first; j0 < last; j0 += KT) {
    // 1. This invocation's keys of the round. The key and its position are read together and the key scored
    //    whether seen or not (a key past the last reads the last), then masked: a branch on the position would
    //    make the key's loads wait for it, two memory latencies a round instead of one.
    var s: array<f32, KPT>;
    var mine = NEG;
    for (var r = 0u; r < KPT; r++) {
      let j = j0 + lid + WG * r;
      let jc = min(j, last - 1u);
      let kp = kpos[jc];
      let kb = jc * kstride + kvh * HD4;
      var d = 0.0;
      for (var c = 0u; c < HD4; c++) { d += dot(qs[c], load_k(kb + c)); }
#if STEP
      if (jc == p.row) {
        d = 0.0;
        for (var c = 0u; c < HD4; c++) { d += dot(qs[c], kn[c]); }
      }
#endif
      var seen = j < last && kp <= qp;
      if (p.window > 0u) { seen = seen && qp - kp < i32(p.window); }
      s[r] = select(NEG, d, seen);
      mine = max(mine, s[r]);
    }
    rmax[lid] = mine;
    workgroupBarrier();
    // 2. The round's max, the same in every invocation; this invocation's weights and their sum.
    var mx = m;
    for (var c = 0u; c < WG; c++) { mx = max(mx, rmax[c]); }
    var part = 0.0;
    for (var r = 0u; r < KPT; r++) {
      let e = select(0.0, exp2(s[r] - mx), s[r] > NEG);
      pe[lid + WG * r] = e;
      part += e;
    }
    rsum[lid] = part;
    workgroupBarrier();
    // While no key has been seen, m = mx = NEG: corr is 1 and acc and l stay 0.
    let corr = exp2(m - mx);
    var sum = 0.0;
    for (var c = 0u; c < WG; c++) { sum += rsum[c]; }
    l = l * corr + sum;
    m = mx;
    // 3. Group g's keys of the round, up to the last (a hidden key weighs 0), four at a time: their four loads
    //    are issued together, written out rather than left to a compiler's unrolling, since a GPU stalls where a
    //    load's value is first used and a loop that adds each value as it comes holds one load in flight. (On
    //    the H100 a 64-key round took about 9 us with one slice over 32K keys, gpu-h100-13.json: about a memory
    //    latency for each of a group's 16 keys.)
    acc *= corr;
    let count = min(KT, last - j0);
    if (vlane) {
      let vb = j0 * kstride + kvh * HD4 + i;
      var c = g;
      for (; c + 3u * G < count; c += 4u * G) {
        let v0 = value_at(j0 + c, vb + c * kstride, vnew);
        let v1 = value_at(j0 + c + G, vb + (c + G) * kstride, vnew);
        let v2 = value_at(j0 + c + 2u * G, vb + (c + 2u * G) * kstride, vnew);
        let v3 = value_at(j0 + c + 3u * G, vb + (c + 3u * G) * kstride, vnew);
        acc += (pe[c] * v0 + pe[c + G] * v1) + (pe[c + 2u * G] * v2 + pe[c + 3u * G] * v3);
      }
      for (; c < count; c += G) { acc += pe[c] * value_at(j0 + c, vb + c * kstride, vnew); }
    }
    // The next round overwrites pe, rmax and rsum.
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
#endif
}
