// How gemv.wgsl reads its input x, pasted by `#include "gemv_x"`: as stored, or through a
// prologue that does the launch before the GEMV on the fly (decode on a GPU pays per launch,
// and these launches do almost no work):
//  NORM: x is RMSNorm's input. load_x gives x as stored, gain(k) the norm weight (w or 1 + w,
//    binding 6) to multiply it by, and every lane sums the squares of the raw x it reads: a
//    column's 32 lanes read all of row t between them, so where they meet to sum their dot
//    products they also have the row's sum of squares, and rms_scale turns it into 1/rms.
//  GLU: x is the gate/up projection [T, 2K] (gate in columns [0, K), up in [K, 2K)) and
//    load_x gives act(gate) * up (act.wgsl), so the GLU's output is never stored.
//  COMBINE: x is attention's key slices before attention_combine merges them (its part and ml:
//    part [T, heads, splits, K / heads] at binding 1, each slice's (max, sum) at binding 7).
//    Every workgroup first merges them into workgroup memory (stage_x, all invocations, before
//    anything else), and load_x reads x from there: the merge's launch folded into the output
//    projection. The slices' weights 2^(m_s - M) / sum_s l_s 2^(m_s - M) are worked out once
//    per (row, head, slice), as attention_combine's; a row that saw no key gets zeros.
//  STAGE (alone, or with NORM or GLU): each workgroup first works out its rows' x once, as stored
//    or as the prologue gives it (normed and gained, or act(gate) * up), into workgroup memory
//    (stage_x), vec4s [0, XK4) of each row (the rest, where the adapter's workgroup memory holds
//    less, on the fly as without STAGE); NORM's sums of squares meet there too, so each row's
//    1/rms is xscale[t]. Without it, every column's lanes read x from its buffer, and redo the
//    prologue, for each weight vec4 they read.
//  POST (with STAGE and NORM; Gemma 3's sandwich norms): x is the previous product's output, and
//    the norm's input is res + rmsnorm(x; pw) (binding 9 and 10, the same eps and 1 + w): stage_x
//    first works out each row's 1/rms of x (pscale), raw_x gives the sum, and the first workgroup
//    writes it to binding 11, the residual stream's next buffer. The post-norm's launch folded in.
// Otherwise gain is 1 and sq 0: the plain kernel, which the compiler sees through.
#if GLU
#include "act"
#endif
#if NORM
@group(0) @binding(6) var<storage, read> nw: array<vec4<f32>>;
#endif
#if POST
@group(0) @binding(9) var<storage, read> pres: array<vec4<f32>>;
@group(0) @binding(10) var<storage, read> pw: array<vec4<f32>>;
@group(0) @binding(11) var<storage, read_write> pout: array<vec4<f32>>;
var<workgroup> pscale: array<f32, TX>;
#endif

#if COMBINE
@group(0) @binding(7) var<storage, read> ml: array<vec2<f32>>;
var<workgroup> xs: array<vec4<f32>, {{XS}}>;
var<workgroup> wts: array<f32, {{WTS}}>;

// x merged from the slices into xs, by the workgroup's 256 invocations (li: this one's index).
fn stage_x(li: u32) {
  let S = p.splits;
  for (var i = li; i < TX * p.heads * S; i += 256u) {
    let first = i - i % S;
    var mx = -1.0e30;
    for (var s = 0u; s < S; s++) { mx = max(mx, ml[first + s].x); }
    var sum = 0.0;
    for (var s = 0u; s < S; s++) { sum += ml[first + s].y * exp2(ml[first + s].x - mx); }
    wts[i] = select(0.0, exp2(ml[i].x - mx) / sum, sum > 0.0);
  }
  workgroupBarrier();
  let hd4 = p.K4 / p.heads;
  for (var i = li; i < TX * p.K4; i += 256u) {
    let k = i % p.K4;
    let th = (i / p.K4) * p.heads + k / hd4;
    var o = vec4<f32>(0.0);
    for (var s = 0u; s < S; s++) { o += x[(th * S + s) * hd4 + k % hd4] * wts[th * S + s]; }
    xs[i] = o;
  }
  workgroupBarrier();
}
#endif

// Vec4 k of row t of the input as stored, GLU's act(gate) * up, or POST's residual plus post-norm.
fn raw_x(t: u32, k: u32) -> vec4<f32> {
#if POST
  let i = t * p.K4 + k;
  return pres[i] + x[i] * pscale[t] * (pw[k] + weight_add());
#else
#if GLU
  let base = 2u * t * p.K4 + k;
  return act4(x[base]) * x[base + p.K4];
#else
  return x[t * p.K4 + k];
#endif
#endif
}

#if NORM
// What the norms add to their weights: 1 for Gemma's (1 + w), else 0.
fn weight_add() -> f32 { return select(0.0, 1.0, p.plus_one != 0u); }
#endif

// The norm's weight for vec4 k (w or 1 + w), or 1.
fn norm_gain(k: u32) -> vec4<f32> {
#if NORM
  return nw[k] + weight_add();
#else
  return vec4<f32>(1.0);
#endif
}

#if STAGE
const XK4: u32 = {{XK4}}u;
var<workgroup> xs: array<vec4<f32>, TX * XK4>;
#if NORM
var<workgroup> red: array<f32, 256>;
var<workgroup> xscale: array<f32, TX>;

// The sum of the workgroup's 256 values v, in every invocation (li: this one's index); red is free again after.
fn workgroup_sum(li: u32, v: f32) -> f32 {
  red[li] = v;
  workgroupBarrier();
  for (var w = 128u; w > 0u; w >>= 1u) {
    if (li < w) { red[li] += red[li + w]; }
    workgroupBarrier();
  }
  let total = red[0];
  workgroupBarrier();
  return total;
}
#endif

// The rows' x into xs by the workgroup's 256 invocations (li: this one's index), and NORM's 1/rms of each row;
// with POST, `first` (the launch's first workgroup) also writes the rows it works out.
fn stage_x(li: u32, first: bool) {
  // NORM's squares need the whole row; GLU's x only what is kept.
#if NORM
  let kend = p.K4;
#else
  let kend = min(p.K4, XK4);
#endif
  for (var t = 0u; t < TX; t++) {
#if POST
    var ps = 0.0;
    for (var k = li; k < p.K4; k += 256u) {
      let v = x[t * p.K4 + k];
      ps += dot(v, v);
    }
    let pss = workgroup_sum(li, ps);
    if (li == 0u) { pscale[t] = rms_scale(pss); }
    workgroupBarrier();
#endif
    var ss = 0.0;
    for (var k = li; k < kend; k += 256u) {
      let v = raw_x(t, k);
#if POST
      if (first) { pout[t * p.K4 + k] = v; }
#endif
      ss += dot(v, v);
      if (k < XK4) { xs[t * XK4 + k] = v * norm_gain(k); }
    }
#if NORM
    let xss = workgroup_sum(li, ss);
    if (li == 0u) { xscale[t] = rms_scale(xss); }
    workgroupBarrier();
#endif
  }
  workgroupBarrier();
}
#endif

// Vec4 k of row t of the input (before the norm's gain, except where STAGE has applied it).
fn load_x(t: u32, k: u32) -> vec4<f32> {
#if COMBINE
  return xs[t * p.K4 + k];
#else
#if STAGE
  if (k < XK4) { return xs[t * XK4 + k]; }
  return raw_x(t, k) * norm_gain(k);
#else
  return raw_x(t, k);
#endif
#endif
}

// What vec4 k of every row is multiplied by before the dot product.
fn gain(k: u32) -> vec4<f32> {
#if STAGE
  return vec4<f32>(1.0);
#else
  return norm_gain(k);
#endif
}

// A lane's share of a row's sum of squares, from one vec4 it read (STAGE sums them in stage_x).
fn sq(v: vec4<f32>) -> f32 {
#if NORM
#if STAGE
  return 0.0;
#else
  return dot(v, v);
#endif
#else
  return 0.0;
#endif
}

#if NORM
// 1/rms of a row from its sum of squares: what its dot products are scaled by.
fn rms_scale(ss: f32) -> f32 {
  return inverseSqrt(ss / f32(4u * p.K4) + p.eps);
}
#endif
