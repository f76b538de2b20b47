// y[t, n] = sum_k x[t, k] * w[n, k]  (+ b[n])  (+ r[t, n]) for a few rows t
// (TX of them: decode has one), as matmul.wgsl, for real GPUs. A matrix-vector
// product reads every weight once and does little else, so this kernel is
// built to stream w at memory bandwidth: a workgroup of 256 invocations owns
// 8 output columns n; the 32 invocations of a column walk its K/4 vec4s with
// a stride of 32, so neighbours read neighbouring memory, each keeping TX
// partial sums; the 32 partials of each (t, n) are summed in workgroup memory.
// Packed quantized weights (W_Q): a lane takes 32-weight sub-blocks instead of
// vec4s (quant.wgsl's dq32), so scales are decoded once per 32 weights.
#include "matmul_io"

const TX: u32 = {{TX}}u;
var<workgroup> part: array<f32, {{PARTS}}>;

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let col = li / 32u;
  let lane = li % 32u;
  let n = (wid.x + wid.y * nwg.x) * 8u + col;
  // Columns past N (the last workgroup) load a valid row and store nothing; no early return before the barrier.
  let wrow = min(n, p.N - 1u) * p.K4;
  var acc: array<f32, TX>;
#if W_Q
  // Packed blocks: a lane takes whole 32-weight sub-blocks (8 vec4s), decoding their scales once.
  var wv: array<vec4<f32>, 8>;
  for (var sb = lane; sb < p.K4 / 8u; sb += 32u) {
    dq32(wrow / 8u + sb, p.sbase, &wv);
    for (var t = 0u; t < TX; t++) {
      let x0 = t * p.K4 + sb * 8u;
      var a = 0.0;
      for (var j = 0u; j < 8u; j++) { a += dot(x[x0 + j], wv[j]); }
      acc[t] += a;
    }
  }
#else
  for (var k = lane; k < p.K4; k += 32u) {
    let wv = load_w(wrow + k);
    for (var t = 0u; t < TX; t++) { acc[t] += dot(x[t * p.K4 + k], wv); }
  }
#endif
  for (var t = 0u; t < TX; t++) { part[t * 256u + li] = acc[t]; }
  workgroupBarrier();
  // Invocation t of each column sums row t's 32 partials.
  if (lane < TX && n < p.N) {
    var s = 0.0;
    for (var i = 0u; i < 32u; i++) { s += part[lane * 256u + col * 32u + i]; }
#if Y_RANGE
    store_range(lane, n, s);
#else
    y[lane * p.N + n] = epilogue(lane, n, s);
#endif
  }
}
