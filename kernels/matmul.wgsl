// y[t, n] = sum_k x[t, k] * w[n, k]  (+ b[n])  (+ r[t, n])
// x: [T, K] f32, w: [N, K] row-major (f32, or packed f16 when W_F16), y: [T, N]
// (or columns y0.. of a wider output; see matmul_io).
// Register tiling without barriers: each invocation owns TM rows x 4 columns
// and walks K four values at a time with vec4 loads. This is the variant CPU
// adapters (SwiftShader, llvmpipe) like; matmul_tiled.wgsl is for real GPUs.
// Packed quantized weights (W_Q) are decoded a 32-weight sub-block at a time.
#include "matmul_io"

const TM: u32 = {{TM}}u;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let n0 = gid.x * 4u;
  let t0 = gid.y * TM;
  if (n0 >= p.N || t0 >= p.T) { return; }
  // Clamp out-of-range rows/columns for loads; they are never stored.
  var wrow: array<u32, 4>;
  for (var j = 0u; j < 4u; j++) { wrow[j] = min(n0 + j, p.N - 1u) * p.K4; }
  var xrow: array<u32, TM>;
  for (var i = 0u; i < TM; i++) { xrow[i] = min(t0 + i, p.T - 1u) * p.K4; }

  var acc: array<vec4<f32>, TM>;
#if W_Q
  // Packed blocks: the 4 columns' 32-weight sub-blocks (quant.wgsl's dq32), scales decoded once per sub-block.
  var w0: array<vec4<f32>, 8>;
  var w1: array<vec4<f32>, 8>;
  var w2: array<vec4<f32>, 8>;
  var w3: array<vec4<f32>, 8>;
  for (var sb = 0u; sb < p.K4 / 8u; sb++) {
    dq32(wrow[0] / 8u + sb, p.sbase, &w0);
    dq32(wrow[1] / 8u + sb, p.sbase, &w1);
    dq32(wrow[2] / 8u + sb, p.sbase, &w2);
    dq32(wrow[3] / 8u + sb, p.sbase, &w3);
    for (var j = 0u; j < 8u; j++) {
      let wm = mat4x4<f32>(w0[j], w1[j], w2[j], w3[j]);
      for (var i = 0u; i < TM; i++) {
        acc[i] += x[xrow[i] + sb * 8u + j] * wm;
      }
    }
  }
#else
  for (var k = 0u; k < p.K4; k++) {
    let wm = mat4x4<f32>(load_w(wrow[0] + k), load_w(wrow[1] + k), load_w(wrow[2] + k), load_w(wrow[3] + k));
    for (var i = 0u; i < TM; i++) {
      acc[i] += x[xrow[i] + k] * wm;
    }
  }
#endif

  for (var i = 0u; i < TM; i++) {
    let t = t0 + i;
    if (t >= p.T) { break; }
    for (var j = 0u; j < 4u; j++) {
      let n = n0 + j;
      if (n >= p.N) { break; }
#if Y_RANGE
      store_range(t, n, acc[i][j]);
#else
      y[t * p.N + n] = epilogue(t, n, acc[i][j]);
#endif
    }
  }
}
