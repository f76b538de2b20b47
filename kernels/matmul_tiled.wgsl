// y[t, n] = sum_k x[t, k] * w[n, k]  (+ b[n])  (+ r[t, n]), as matmul.wgsl,
// for real GPUs: a 16x16 workgroup computes a 64x64 output tile, staging
// 16-deep slices of x and w in workgroup memory (w decoded from packed f16
// on the way in), each invocation accumulating a 4x4 block in registers.
// With HALF (adapters with `shader-f16`, f16 or quantized weights; see
// matmul_half.wgsl) the slices are staged as f16 and multiplied in f16.
#if HALF
enable f16;
#endif
#include "matmul_io"
#include "matmul_half"

// xs[k][q] holds rows 4q..4q+3 of the tile at depth k; ws likewise for columns.
var<workgroup> xs: array<array<vec4<elem>, 16>, 16>;
var<workgroup> ws: array<array<vec4<elem>, 16>, 16>;

@compute @workgroup_size(16, 16, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let row0 = wid.y * 64u;
  let col0 = wid.x * 64u;
  let tid = lid.y * 16u + lid.x;
  // Loader role: one row (or column) of the tile and one vec4 of depth.
  let lr = tid / 4u;
  let lk = tid % 4u;
  let xrow = min(row0 + lr, p.T - 1u) * p.K4;
  let wrow = min(col0 + lr, p.N - 1u) * p.K4;
  var acc: array<vec4<f32>, 4>;
#if HALF
  var part: array<vec4<f16>, 4>;
  let sum = &part;
#else
  let sum = &acc;
#endif
  for (var k0 = 0u; k0 < p.K4; k0 += 4u) {
    let kq = k0 + lk;
    var xv = vec4<f32>(0.0);
    var wv = vec4<f32>(0.0);
    if (kq < p.K4) {
      xv = x[xrow + kq];
      wv = load_w(wrow + kq);
    }
    for (var c = 0u; c < 4u; c++) {
      xs[lk * 4u + c][lr / 4u][lr % 4u] = stage(xv[c]);
      ws[lk * 4u + c][lr / 4u][lr % 4u] = stage(wv[c]);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk++) {
      let a = xs[kk][lid.y];
      let bw = ws[kk][lid.x];
      (*sum)[0] += a.x * bw;
      (*sum)[1] += a.y * bw;
      (*sum)[2] += a.z * bw;
      (*sum)[3] += a.w * bw;
    }
#if HALF
    for (var i = 0u; i < 4u; i++) {
      acc[i] += vec4<f32>(part[i]);
      part[i] = vec4<f16>();
    }
#endif
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let t = row0 + lid.y * 4u + i;
    if (t >= p.T) { break; }
    for (var j = 0u; j < 4u; j++) {
      let n = col0 + lid.x * 4u + j;
      if (n >= p.N) { break; }
      store_y(t, n, acc[i][j]);
    }
  }
}
