// y[t, n] = sum_k x[t, k] * w[n, k]  (+ b[n])  (+ r[t, n]) for a few rows t
// (TX of them: decode has one), as matmul.wgsl, for real GPUs. A matrix-vector
// product reads every weight once and does little else, so this kernel is
// built to stream w at memory bandwidth: a workgroup of 256 invocations owns
// COLS output columns n; the lanes of a column walk its K/4 vec4s with a
// stride of their count, so neighbours read neighbouring memory, each keeping
// TX partial sums (partials below), which are then summed:
//  - by default, 32 lanes a column (COLS = 8) and the sums in workgroup memory;
//  - with SG (adapters with `subgroups`), a subgroup a column: each subgroup
//    claims the workgroup's columns one at a time from a counter in workgroup
//    memory and sums with subgroupAdd, so no barrier and no workgroup array.
//    It assumes nothing of how invocations map to subgroups or of their size:
//    a lane's rank and the lane count come from subgroupExclusiveAdd and
//    subgroupAdd of 1, and a column is subgroup-uniform by construction
//    (subgroupBroadcastFirst). The engine sets COLS = 256 / the adapter's
//    smallest subgroup size (8 to 64), so every subgroup has a column. A GPU runs a
//    workgroup's subgroups side by side, so each claims about one column; SwiftShader
//    runs them one after another between barriers, so its first subgroup claims them
//    all (100x slower than the register kernel there: CPU adapters never pick it).
// Packed quantized weights (W_Q): a lane takes 32-weight sub-blocks instead of
// vec4s (quant.wgsl's dq32), two a pass, so scales are decoded once per 32 weights. Packed f16
// weights with W8: a lane takes pairs of vec4s, 16 bytes a load instead of 8.
// NORM, GLU and COMBINE read x through a prologue (gemv_x.wgsl): decode's RMSNorm, GLU
// and attention_combine launches folded into the GEMV that consumes their output; with
// STAGE, x (normed, or GLU's) is worked out once a workgroup into workgroup memory; POST also
// folds in the sandwich norm before the norm (gemv_x.wgsl).
#if SG
enable subgroups;
// A column's loop ends where its subgroup's claim runs out: uniform within the subgroup, which is all
// subgroupAdd needs, though the analysis (which reasons per workgroup) cannot see it.
diagnostic(off, subgroup_uniformity);
#endif
#include "matmul_io"
#include "gemv_x"

const TX: u32 = {{TX}}u;

// The partial sums of the lane that takes vec4s (or, W_Q, 32-weight sub-blocks) first, first + step, ...
// of the column whose weights start at vec4 wrow: acc[t] for row t of x, ss[t] its sum of squares (NORM).
fn partials(wrow: u32, first: u32, step: u32, acc: ptr<function, array<f32, TX>>, ss: ptr<function, array<f32, TX>>) {
#if W_Q
  // Two of the lane's sub-blocks a pass (first, first + step, ...), both decoded before either is used, so both
  // sub-blocks' loads can be in flight together, as the f16 path's four vec4s below; added in the same order.
  let nsb = p.K4 / 8u;
  var wv: array<vec4<f32>, 8>;
  var wv2: array<vec4<f32>, 8>;
  var sb = first;
  for (; sb + step < nsb; sb += 2u * step) {
    dq32(wrow / 8u + sb, p.sbase, &wv);
    dq32(wrow / 8u + sb + step, p.sbase, &wv2);
    add_sub(sb, &wv, acc, ss);
    add_sub(sb + step, &wv2, acc, ss);
  }
  if (sb < nsb) {
    dq32(wrow / 8u + sb, p.sbase, &wv);
    add_sub(sb, &wv, acc, ss);
  }
#else
#if W8
  // f16 weights 16 bytes a load (W8, K a multiple of 8): the lane takes pairs of vec4s first, first + step, ... (vec4s
  // 2o and 2o + 1), four loads in flight as below, so twice the bytes in flight for the same lanes and loads.
  let row8 = wrow / 2u;
  let K8 = p.K4 / 2u;
  var o = first;
  for (; o + 3u * step < K8; o += 4u * step) {
    let w0 = load_w8(row8 + o);
    let w1 = load_w8(row8 + o + step);
    let w2 = load_w8(row8 + o + 2u * step);
    let w3 = load_w8(row8 + o + 3u * step);
    add_vec4(2u * o, w0[0], acc, ss);
    add_vec4(2u * o + 1u, w0[1], acc, ss);
    add_vec4(2u * (o + step), w1[0], acc, ss);
    add_vec4(2u * (o + step) + 1u, w1[1], acc, ss);
    add_vec4(2u * (o + 2u * step), w2[0], acc, ss);
    add_vec4(2u * (o + 2u * step) + 1u, w2[1], acc, ss);
    add_vec4(2u * (o + 3u * step), w3[0], acc, ss);
    add_vec4(2u * (o + 3u * step) + 1u, w3[1], acc, ss);
  }
  for (; o < K8; o += step) {
    let wv = load_w8(row8 + o);
    add_vec4(2u * o, wv[0], acc, ss);
    add_vec4(2u * o + 1u, wv[1], acc, ss);
  }
#else
  // Four of the lane's weight vec4s a pass, their loads issued before any is used: a GPU stalls where a load's
  // value is first used, so a loop that uses each as it comes keeps one load a lane in flight, and a GEMV of few
  // columns (Llama-1B's attention output: 256 workgroups) has too few lanes for that to fill the memory pipe.
  var k = first;
  for (; k + 3u * step < p.K4; k += 4u * step) {
    let w0 = load_w(wrow + k);
    let w1 = load_w(wrow + k + step);
    let w2 = load_w(wrow + k + 2u * step);
    let w3 = load_w(wrow + k + 3u * step);
    add_vec4(k, w0, acc, ss);
    add_vec4(k + step, w1, acc, ss);
    add_vec4(k + 2u * step, w2, acc, ss);
    add_vec4(k + 3u * step, w3, acc, ss);
  }
  for (; k < p.K4; k += step) { add_vec4(k, load_w(wrow + k), acc, ss); }
#endif
#endif
}

#if W_Q
// Sub-block sb of a column (decoded: wv) into every row's partial sums, a sub-block's sum at a time.
fn add_sub(sb: u32, wv: ptr<function, array<vec4<f32>, 8>>, acc: ptr<function, array<f32, TX>>, ss: ptr<function, array<f32, TX>>) {
  for (var t = 0u; t < TX; t++) {
    var a = 0.0;
    for (var j = 0u; j < 8u; j++) {
      let xv = load_x(t, sb * 8u + j);
      (*ss)[t] += sq(xv);
      a += dot(xv * gain(sb * 8u + j), (*wv)[j]);
    }
    (*acc)[t] += a;
  }
}
#endif

// Weight vec4 k of a column (loaded) into every row's partial sums.
fn add_vec4(k: u32, w: vec4<f32>, acc: ptr<function, array<f32, TX>>, ss: ptr<function, array<f32, TX>>) {
  let wv = w * gain(k);
  for (var t = 0u; t < TX; t++) {
    let xv = load_x(t, k);
    (*ss)[t] += sq(xv);
    (*acc)[t] += dot(xv, wv);
  }
}

#if SG
const COLS: u32 = {{COLS}}u;
var<workgroup> next_col: atomic<u32>;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
#if COMBINE
  stage_x(li);
#endif
#if STAGE
  stage_x(li, wid.x + wid.y * nwg.x == 0u);
#endif
  let lanes = subgroupAdd(1u);
  let rank = subgroupExclusiveAdd(1u);
  let col0 = (wid.x + wid.y * nwg.x) * COLS;
  loop {
    var c = 0u;
    if (subgroupElect()) { c = atomicAdd(&next_col, 1u); }
    c = subgroupBroadcastFirst(c);
    let n = col0 + c;
    if (c >= COLS || n >= p.N) { break; }
    // Zeroed explicitly: each column this subgroup claims starts its sums afresh (SwiftShader kept an
    // uninitialised declaration's values from the previous iteration).
    var acc = array<f32, TX>();
    var ss = array<f32, TX>();
    partials(n * p.K4, rank, lanes, &acc, &ss);
    var sums = array<f32, TX>();
    for (var t = 0u; t < TX; t++) {
      sums[t] = subgroupAdd(acc[t]);
#if NORM
#if STAGE
      sums[t] *= xscale[t];
#else
      sums[t] *= rms_scale(subgroupAdd(ss[t]));
#endif
#endif
    }
    for (var t = rank; t < TX; t += lanes) { store_y(t, n, sums[t]); }
  }
}
#else
var<workgroup> part: array<f32, {{PARTS}}>;
#if NORM
#if STAGE
#else
// The lanes' sums of squares, reduced like part (STAGE has each row's 1/rms already).
var<workgroup> sq_part: array<f32, {{PARTS}}>;
#endif
#endif

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
#if COMBINE
  stage_x(li);
#endif
#if STAGE
  stage_x(li, wid.x + wid.y * nwg.x == 0u);
#endif
  let col = li / 32u;
  let lane = li % 32u;
  let n = (wid.x + wid.y * nwg.x) * 8u + col;
  // Columns past N (the last workgroup) load a valid row and store nothing; no early return before the barrier.
  var acc: array<f32, TX>;
  var ss: array<f32, TX>;
  partials(min(n, p.N - 1u) * p.K4, lane, 32u, &acc, &ss);
  for (var t = 0u; t < TX; t++) { part[t * 256u + li] = acc[t]; }
#if NORM
#if STAGE
#else
  for (var t = 0u; t < TX; t++) { sq_part[t * 256u + li] = ss[t]; }
#endif
#endif
  workgroupBarrier();
  // Invocation t of each column sums row t's 32 partials.
  if (lane < TX && n < p.N) {
    var s = 0.0;
    for (var i = 0u; i < 32u; i++) { s += part[lane * 256u + col * 32u + i]; }
#if NORM
#if STAGE
    s *= xscale[lane];
#else
    var s2 = 0.0;
    for (var i = 0u; i < 32u; i++) { s2 += sq_part[lane * 256u + col * 32u + i]; }
    s *= rms_scale(s2);
#endif
#endif
    store_y(lane, n, s);
  }
}
#endif
