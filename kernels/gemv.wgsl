// y[t, n] = sum_k x[t, k] * w[n, k]  (+ b[n])  (+ r[t, n]) for a few rows t
// (TX of them: decode has one), as matmul.wgsl, for real GPUs. A matrix-vector
// product reads every weight once and does little else, so this kernel is
// built to stream w at memory bandwidth: a workgroup of 256 invocations owns
// 8 output columns n; the 32 invocations of a column walk its K/4 vec4s with
// a stride of 32, so neighbours read neighbouring memory, each keeping TX
// partial sums; the 32 partials of each (t, n) are summed in workgroup memory.
// Packed quantized weights (W_Q): a lane takes 32-weight sub-blocks instead of
// vec4s (quant.wgsl's dq32), so scales are decoded once per 32 weights.
// NORM and GLU read x through a prologue (gemv_x.wgsl): decode's RMSNorm and GLU
// launches folded into the GEMV that consumes their output.
#include "matmul_io"
#include "gemv_x"

const TX: u32 = {{TX}}u;
var<workgroup> part: array<f32, {{PARTS}}>;
#if NORM
// The lanes' sums of squares, reduced like part.
var<workgroup> sq_part: array<f32, {{PARTS}}>;
#endif

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let col = li / 32u;
  let lane = li % 32u;
  let n = (wid.x + wid.y * nwg.x) * 8u + col;
  // Columns past N (the last workgroup) load a valid row and store nothing; no early return before the barrier.
  let wrow = min(n, p.N - 1u) * p.K4;
  var acc: array<f32, TX>;
  var ss: array<f32, TX>;
#if W_Q
  // Packed blocks: a lane takes whole 32-weight sub-blocks (8 vec4s), decoding their scales once.
  var wv: array<vec4<f32>, 8>;
  for (var sb = lane; sb < p.K4 / 8u; sb += 32u) {
    dq32(wrow / 8u + sb, p.sbase, &wv);
    for (var t = 0u; t < TX; t++) {
      var a = 0.0;
      for (var j = 0u; j < 8u; j++) {
        let xv = load_x(t, sb * 8u + j);
        ss[t] += sq(xv);
        a += dot(xv * gain(sb * 8u + j), wv[j]);
      }
      acc[t] += a;
    }
  }
#else
  for (var k = lane; k < p.K4; k += 32u) {
    let wv = load_w(wrow + k) * gain(k);
    for (var t = 0u; t < TX; t++) {
      let xv = load_x(t, k);
      ss[t] += sq(xv);
      acc[t] += dot(xv, wv);
    }
  }
#endif
  for (var t = 0u; t < TX; t++) { part[t * 256u + li] = acc[t]; }
#if NORM
  for (var t = 0u; t < TX; t++) { sq_part[t * 256u + li] = ss[t]; }
#endif
  workgroupBarrier();
  // Invocation t of each column sums row t's 32 partials.
  if (lane < TX && n < p.N) {
    var s = 0.0;
    for (var i = 0u; i < 32u; i++) { s += part[lane * 256u + col * 32u + i]; }
#if NORM
    var s2 = 0.0;
    for (var i = 0u; i < 32u; i++) { s2 += sq_part[lane * 256u + col * 32u + i]; }
    s *= rms_scale(s2);
#endif
#if Y_RANGE
    store_range(lane, n, s);
#else
    y[lane * p.N + n] = epilogue(lane, n, s);
#endif
  }
}
