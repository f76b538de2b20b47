// LANES, shared by attention_decode.wgsl (LANES: one q head a workgroup) and
// attention_grouped.wgsl (a kv head's q heads a workgroup): each of a q head's
// 64 invocations walks keys first + lane, first + lane + 64, ... alone,
// scoring each with its value row read in the same breath, and keeps its own
// online softmax (max, sum, a head-wide accumulator in registers), so the
// loop has no barrier and a key costs one memory latency an invocation. The
// head's 64 states are then merged once, through workgroup memory.
// The including kernel declares, in workgroup memory: qs (its q heads, scaled
// by scale * log2 e), and for each invocation rmax and rsum (f32), red
// (LANES_C vec4s) and accs (a vec4); and the constant LANES_C, the vec4s of
// each accumulator merged at a time (a divisor of 64).

var<private> lane_acc: array<vec4<f32>, HD4>;
var<private> lane_m: f32 = NEG;
var<private> lane_l: f32 = 0.0;

// The walk over [first, last) for q head qs[qo .. qo + HD4) against kv head kvh, as invocation `lane` of its head.
fn lanes_walk(lane: u32, first: u32, last: u32, kvh: u32, qp: i32, qo: u32) {
  let kstride = p.NKV * HD4;
  for (var j = first + lane; j < last; j += 64u) {
    let kp = kpos[j];
    let kb = j * kstride + kvh * HD4;
    // The value row is loaded with the key, before the score decides its weight: one memory latency a key.
    var vv: array<vec4<f32>, HD4>;
    for (var c = 0u; c < HD4; c++) { vv[c] = load_v(kb + c); }
    var d = 0.0;
    for (var c = 0u; c < HD4; c++) { d += dot(qs[qo + c], load_k(kb + c)); }
#if STEP
    // The step's own row, which another workgroup writes into the cache: its key and value from workgroup memory.
    if (j == p.row) {
      d = 0.0;
      for (var c = 0u; c < HD4; c++) {
        d += dot(qs[qo + c], kn[c]);
        vv[c] = vn[c];
      }
    }
#endif
    var seen = kp <= qp;
    if (p.window > 0u) { seen = seen && qp - kp < i32(p.window); }
    // While this invocation has seen no key, its max is NEG and its accumulator and sum stay 0 whatever corr is.
    let mx = select(lane_m, max(lane_m, d), seen);
    let corr = exp2(lane_m - mx);
    let e = select(0.0, exp2(d - mx), seen);
    lane_l = lane_l * corr + e;
    lane_m = mx;
    for (var c = 0u; c < HD4; c++) { lane_acc[c] = lane_acc[c] * corr + e * vv[c]; }
  }
}

// The merge of a head's 64 walks (invocations base .. base + 63; this one is lid, lane lid - base) into its output
// row-head th, slice `split`: the head's max, each invocation's share of it (0 for one that saw no key while another
// did), the sum; then the accumulators, LANES_C vec4s at a time: invocation (g, dc) sums vec4 dc of the head's
// invocations LANES_C g .. LANES_C g + LANES_C - 1, then its first LANES_C invocations sum the 64 / LANES_C partial sums.
// Every invocation of the workgroup calls it (it holds barriers).
fn lanes_merge(lid: u32, base: u32, th: u32, split: u32) {
  let lane = lid - base;
  rmax[lid] = lane_m;
  workgroupBarrier();
  var mw = NEG;
  for (var c = 0u; c < 64u; c++) { mw = max(mw, rmax[base + c]); }
  let f = exp2(lane_m - mw);
  rsum[lid] = lane_l * f;
  workgroupBarrier();
  var lw = 0.0;
  for (var c = 0u; c < 64u; c++) { lw += rsum[base + c]; }
  let dc = lane % LANES_C;
  let g = lane / LANES_C;
  for (var c0 = 0u; c0 < HD4; c0 += LANES_C) {
    for (var c = 0u; c < LANES_C; c++) {
      if (c0 + c < HD4) { red[lid * LANES_C + c] = lane_acc[c0 + c] * f; }
    }
    workgroupBarrier();
    var s = vec4<f32>(0.0);
    for (var r = 0u; r < LANES_C; r++) { s += red[(base + g * LANES_C + r) * LANES_C + dc]; }
    accs[lid] = s;
    workgroupBarrier();
    if (lane < LANES_C && c0 + lane < HD4) {
      var total = vec4<f32>(0.0);
      for (var gg = 0u; gg < 64u / LANES_C; gg++) { total += accs[base + gg * LANES_C + lane]; }
#if SPLIT
      let slot = th * p.splits + split;
      if (c0 + lane == 0u) { ml[slot] = vec2<f32>(mw, lw); }
      out[slot * HD4 + c0 + lane] = total;
#else
      out[th * HD4 + c0 + lane] = total * select(0.0, 1.0 / lw, lw > 0.0);
#endif
    }
  }
}
