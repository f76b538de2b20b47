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
// QG > 1 (GQA; rounds only): a workgroup takes a kv head's QG q heads (row,
// kv head, slice) instead of one q head: each key and value row is loaded once
// for the group and weighed for each of its heads, which keep their own
// online-softmax states, weights (pe) and accumulators. So the cache is read
// once a kv head, not once a q head, at any head width (attention_grouped's
// lanes hold heads of at most 64), and with a q/k norm folded into the step.
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
// q heads a workgroup: 1, or a kv head's group (rounds only).
const QG: u32 = {{QG}}u;

// Head g's vec4s at [g * HD4, (g + 1) * HD4), its weights at [g * KT, (g + 1) * KT), its invocations' maxima and
// sums at [g * WG, (g + 1) * WG).
var<workgroup> qs: array<vec4<f32>, QG * HD4>;
var<workgroup> pe: array<f32, QG * KT>;
var<workgroup> rmax: array<f32, QG * WG>;
var<workgroup> rsum: array<f32, QG * WG>;
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
  // Uniform across the workgroup: a workgroup past the last (row, head group, slice) returns as a whole.
  let units = p.H / QG;
  let id = wid.x + wid.y * nwg.x;
  if (id >= p.T * units * p.splits) { return; }
  let split = id % p.splits;
  let tu = id / p.splits;
  let t = tu / units;
  // This workgroup's q heads h0 .. h0 + QG - 1, all of kv head kvh.
  let h0 = (tu % units) * QG;
  let kvh = h0 / (p.H / p.NKV);
  let qbase = (t * p.q_stride + p.q_offset) / 4u;
#if STEP
  let qp = p.qp;
  // The q heads and the kv head's key as the row has them, then (QKNORM) normalised and rotated in place.
  if (lid < HD4) {
    for (var g = 0u; g < QG; g++) { qs[g * HD4 + lid] = q[qbase + (h0 + g) * HD4 + lid]; }
    kn[lid] = q[qbase + (p.H + kvh) * HD4 + lid];
  }
#if QKNORM
  // Each q head, then the key (g = QG), normalised as rmsnorm.wgsl would in place: its squares summed through
  // workgroup memory, then each vec4 scaled by its 1 / rms and its norm weight. rsum is free until the first round.
  workgroupBarrier();
  let hd = f32(4u * HD4);
  for (var g = 0u; g <= QG; g++) {
    if (lid < HD4) {
      var x = kn[lid];
      if (g < QG) { x = qs[g * HD4 + lid]; }
      rsum[lid] = dot(x, x);
    }
    workgroupBarrier();
    var ss = 0.0;
    for (var c = 0u; c < HD4; c++) { ss += rsum[c]; }
    // The next head rewrites rsum.
    workgroupBarrier();
    if (lid < HD4) {
      let f = inverseSqrt(ss / hd + p.eps);
      if (g < QG) { qs[g * HD4 + lid] = qs[g * HD4 + lid] * f * (qkn[lid] + p.wadd); }
      else { kn[lid] = kn[lid] * f * (qkn[HD4 + lid] + p.wadd); }
    }
  }
#endif
  workgroupBarrier();
  // Group lid of each q head and of the key, rotated in place (each pair of vec4s read and written by one
  // invocation); the value as it is.
  if (lid < HD4 / 2u) {
    let o = rope_groups(lid, 4u * HD4);
    let r = u32(qp) * 2u * HD4 + 4u * lid;
    for (var g = 0u; g < QG; g++) {
      let qr = rope_rotate(qs[g * HD4 + o.x], qs[g * HD4 + o.y], r);
      qs[g * HD4 + o.x] = qr[0] * (p.scale * LOG2E);
      qs[g * HD4 + o.y] = qr[1] * (p.scale * LOG2E);
    }
    let kr = rope_rotate(kn[o.x], kn[o.y], r);
    kn[o.x] = as_cached(kr[0]);
    kn[o.y] = as_cached(kr[1]);
  }
  if (lid < HD4) { vn[lid] = as_cached(q[qbase + (p.H + p.NKV + kvh) * HD4 + lid]); }
#else
  let qp = qpos[t];
  if (lid < HD4) {
    for (var g = 0u; g < QG; g++) { qs[g * HD4 + lid] = q[qbase + (h0 + g) * HD4 + lid] * (p.scale * LOG2E); }
  }
#endif
  let span = row_slice(t, split);
  let first = span.x;
  let last = span.y;
  let kstride = p.NKV * HD4;
  let g = lid / HD4;
  let i = lid % HD4;
  let vlane = g < G;
  var acc: array<vec4<f32>, QG>;
  var m: array<f32, QG>;
  var l: array<f32, QG>;
  for (var g = 0u; g < QG; g++) {
    acc[g] = vec4<f32>(0.0);
    m[g] = NEG;
    l[g] = 0.0;
  }
  workgroupBarrier();
#if STEP
  if (split == 0u && h0 % (p.H / p.NKV) == 0u && lid < HD4) {
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
  lanes_merge(lid, 0u, t * p.H + h0, split);
#else
  for (var j0 = first; j0 < last; j0 += KT) {
    // 1. This invocation's keys of the round, each scored for every q head. The key and its position are read
    //    together and the key scored whether seen or not (a key past the last reads the last), then masked: a
    //    branch on the position would make the key's loads wait for it, two memory latencies a round instead of one.
    var s: array<f32, QG * KPT>;
    var mine: array<f32, QG>;
    for (var g = 0u; g < QG; g++) { mine[g] = NEG; }
    for (var r = 0u; r < KPT; r++) {
      let j = j0 + lid + WG * r;
      let jc = min(j, last - 1u);
      let kp = kpos[jc];
      let kb = jc * kstride + kvh * HD4;
      var d: array<f32, QG>;
      for (var g = 0u; g < QG; g++) { d[g] = 0.0; }
      for (var c = 0u; c < HD4; c++) {
        let kv = load_k(kb + c);
        for (var g = 0u; g < QG; g++) { d[g] += dot(qs[g * HD4 + c], kv); }
      }
#if STEP
      if (jc == p.row) {
        for (var g = 0u; g < QG; g++) { d[g] = 0.0; }
        for (var c = 0u; c < HD4; c++) {
          for (var g = 0u; g < QG; g++) { d[g] += dot(qs[g * HD4 + c], kn[c]); }
        }
      }
#endif
      var seen = j < last && kp <= qp;
      if (p.window > 0u) { seen = seen && qp - kp < i32(p.window); }
      for (var g = 0u; g < QG; g++) {
        s[g * KPT + r] = select(NEG, d[g], seen);
        mine[g] = max(mine[g], s[g * KPT + r]);
      }
    }
    for (var g = 0u; g < QG; g++) { rmax[g * WG + lid] = mine[g]; }
    workgroupBarrier();
    // 2. Each head's round max, the same in every invocation; this invocation's weights and their sum.
    var mx: array<f32, QG>;
    for (var g = 0u; g < QG; g++) {
      mx[g] = m[g];
      for (var c = 0u; c < WG; c++) { mx[g] = max(mx[g], rmax[g * WG + c]); }
      var part = 0.0;
      for (var r = 0u; r < KPT; r++) {
        let e = select(0.0, exp2(s[g * KPT + r] - mx[g]), s[g * KPT + r] > NEG);
        pe[g * KT + lid + WG * r] = e;
        part += e;
      }
      rsum[g * WG + lid] = part;
    }
    workgroupBarrier();
    // While a head has seen no key, m = mx = NEG: corr is 1 and its acc and l stay 0.
    for (var g = 0u; g < QG; g++) {
      let corr = exp2(m[g] - mx[g]);
      var sum = 0.0;
      for (var c = 0u; c < WG; c++) { sum += rsum[g * WG + c]; }
      l[g] = l[g] * corr + sum;
      m[g] = mx[g];
      acc[g] *= corr;
    }
    // 3. Group g's keys of the round, up to the last (a hidden key weighs 0), four at a time: their four loads
    //    are issued together, written out rather than left to a compiler's unrolling, since a GPU stalls where a
    //    load's value is first used and a loop that adds each value as it comes holds one load in flight. (On
    //    the H100 a 64-key round took about 9 us with one slice over 32K keys, gpu-h100-13.json: about a memory
    //    latency for each of a group's 16 keys.) Each value is weighed for every q head.
    let count = min(KT, last - j0);
    if (vlane) {
      let vb = j0 * kstride + kvh * HD4 + i;
      var c = g;
      for (; c + 3u * G < count; c += 4u * G) {
        let v0 = value_at(j0 + c, vb + c * kstride, vnew);
        let v1 = value_at(j0 + c + G, vb + (c + G) * kstride, vnew);
        let v2 = value_at(j0 + c + 2u * G, vb + (c + 2u * G) * kstride, vnew);
        let v3 = value_at(j0 + c + 3u * G, vb + (c + 3u * G) * kstride, vnew);
        for (var hq = 0u; hq < QG; hq++) {
          let w = hq * KT + c;
          acc[hq] += (pe[w] * v0 + pe[w + G] * v1) + (pe[w + 2u * G] * v2 + pe[w + 3u * G] * v3);
        }
      }
      for (; c < count; c += G) {
        let v = value_at(j0 + c, vb + c * kstride, vnew);
        for (var hq = 0u; hq < QG; hq++) { acc[hq] += pe[hq * KT + c] * v; }
      }
    }
    // The next round overwrites pe, rmax and rsum.
    workgroupBarrier();
  }
  // Each head's G groups' accumulators summed through workgroup memory, a head at a time.
  for (var hq = 0u; hq < QG; hq++) {
    accs[lid] = acc[hq];
    workgroupBarrier();
    if (lid < HD4) {
      var total = vec4<f32>(0.0);
      for (var gg = 0u; gg < G; gg++) { total += accs[gg * HD4 + lid]; }
      let th = t * p.H + h0 + hq;
#if SPLIT
      let slot = th * p.splits + split;
      if (lid == 0u) { ml[slot] = vec2<f32>(m[hq], l[hq]); }
      out[slot * HD4 + lid] = total;
#else
      let inv = select(0.0, 1.0 / l[hq], l[hq] > 0.0);
      out[th * HD4 + lid] = total * inv;
#endif
    }
    // The next head rewrites accs.
    workgroupBarrier();
  }
#endif
}
