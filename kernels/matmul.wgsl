// y[t, n] = sum_k x[t, k] * w[n, k]  (+ b[n])  (+ r[t, n])
// x: [T, K] f32, w: [N, K] row-major (f32, or packed f16 when W_F16), y: [T, N]
// (or columns y0.. of a wider output; see matmul_io).
// Register tiling without barriers: each invocation owns TM rows x 4 columns
// and walks K four values at a time with vec4 loads. This is the variant CPU
// adapters (SwiftShader, llvmpipe) like; matmul_tiled.wgsl is for real GPUs.
// Packed quantized weights (W_Q) are decoded a 32-weight sub-block at a time.
#include "matmul_io"

// The rows and columns are named variables, not arrays: CPU compilers keep a
// small array indexed in a loop in memory (SwiftShader's GEMV ran 1.3-1.8x
// slower with them), where named values stay in registers. TM4 (TM = 4) adds
// rows 1-3; a row or column past the end is clamped for loads, never stored.
#if TM4
const TM: u32 = 4u;
#else
const TM: u32 = 1u;
#endif

// Row t's four sums of columns n0.. into y.
fn store4(t: u32, n0: u32, acc: vec4<f32>) {
  if (t >= p.T) { return; }
  for (var j = 0u; j < 4u; j++) {
    let n = n0 + j;
    if (n >= p.N) { return; }
    store_y(t, n, acc[j]);
  }
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let n0 = gid.x * 4u;
  let t0 = gid.y * TM;
  if (n0 >= p.N || t0 >= p.T) { return; }
  let w0 = n0 * p.K4;
  let w1 = min(n0 + 1u, p.N - 1u) * p.K4;
  let w2 = min(n0 + 2u, p.N - 1u) * p.K4;
  let w3 = min(n0 + 3u, p.N - 1u) * p.K4;
  let x0 = t0 * p.K4;
  var a0 = vec4<f32>();
#if TM4
  let x1 = min(t0 + 1u, p.T - 1u) * p.K4;
  let x2 = min(t0 + 2u, p.T - 1u) * p.K4;
  let x3 = min(t0 + 3u, p.T - 1u) * p.K4;
  var a1 = vec4<f32>();
  var a2 = vec4<f32>();
  var a3 = vec4<f32>();
#endif
#if W_Q
  // Packed blocks: the 4 columns' 32-weight sub-blocks (quant.wgsl's dq32), scales decoded once per sub-block.
  var q0: array<vec4<f32>, 8>;
  var q1: array<vec4<f32>, 8>;
  var q2: array<vec4<f32>, 8>;
  var q3: array<vec4<f32>, 8>;
  for (var sb = 0u; sb < p.K4 / 8u; sb++) {
    dq32(w0 / 8u + sb, p.sbase, &q0);
    dq32(w1 / 8u + sb, p.sbase, &q1);
    dq32(w2 / 8u + sb, p.sbase, &q2);
    dq32(w3 / 8u + sb, p.sbase, &q3);
    for (var j = 0u; j < 8u; j++) {
      let wm = mat4x4<f32>(q0[j], q1[j], q2[j], q3[j]);
      let k = sb * 8u + j;
#else
  for (var k = 0u; k < p.K4; k++) {
    {
      let wm = mat4x4<f32>(load_w(w0 + k), load_w(w1 + k), load_w(w2 + k), load_w(w3 + k));
#endif
      a0 += x[x0 + k] * wm;
#if TM4
      a1 += x[x1 + k] * wm;
      a2 += x[x2 + k] * wm;
      a3 += x[x3 + k] * wm;
#endif
    }
  }
  store4(t0, n0, a0);
#if TM4
  store4(t0 + 1u, n0, a1);
  store4(t0 + 2u, n0, a2);
  store4(t0 + 3u, n0, a3);
#endif
}
