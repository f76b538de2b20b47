// y[t, n] = sum_k x[t, k] * w[n, k]  (+ b[n])  (+ r[t, n]), as matmul.wgsl,
// for real GPUs and large products: a 16x16 workgroup computes a 128x128
// output tile, each invocation an 8x8 block in registers (rows 4y..4y+3 and
// 64+4y..64+4y+3, columns likewise), from 16-deep slices of x and w staged in
// workgroup memory (w decoded from packed f16 on the way in). Four times the
// work of matmul_tiled.wgsl's 64x64 tile per shared-memory load. HALF: as
// matmul_tiled.wgsl (matmul_half.wgsl).
#if HALF
enable f16;
#endif
#include "matmul_io"
#include "matmul_half"

// xs[k][q] holds rows 4q..4q+3 of the tile at depth k; ws likewise for columns.
var<workgroup> xs: array<array<vec4<elem>, 32>, 16>;
var<workgroup> ws: array<array<vec4<elem>, 32>, 16>;

@compute @workgroup_size(16, 16, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let row0 = wid.y * 128u;
  let col0 = wid.x * 128u;
  let tid = lid.y * 16u + lid.x;
  // Loader role: rows (and columns) lr and lr + 64 of the tile, one vec4 of depth each.
  let lr = tid / 4u;
  let lk = tid % 4u;
  let xrow0 = min(row0 + lr, p.T - 1u) * p.K4;
  let xrow1 = min(row0 + lr + 64u, p.T - 1u) * p.K4;
  let wrow0 = min(col0 + lr, p.N - 1u) * p.K4;
  let wrow1 = min(col0 + lr + 64u, p.N - 1u) * p.K4;
  var acc: array<vec4<f32>, 16>;
#if HALF
  var part: array<vec4<f16>, 16>;
  let sum = &part;
#else
  let sum = &acc;
#endif
  for (var k0 = 0u; k0 < p.K4; k0 += 4u) {
    let kq = k0 + lk;
    var x0 = vec4<f32>(0.0);
    var x1 = vec4<f32>(0.0);
    var w0 = vec4<f32>(0.0);
    var w1 = vec4<f32>(0.0);
    if (kq < p.K4) {
      x0 = x[xrow0 + kq];
      x1 = x[xrow1 + kq];
      w0 = load_w(wrow0 + kq);
      w1 = load_w(wrow1 + kq);
    }
    for (var c = 0u; c < 4u; c++) {
      xs[lk * 4u + c][lr / 4u][lr % 4u] = stage(x0[c]);
      xs[lk * 4u + c][16u + lr / 4u][lr % 4u] = stage(x1[c]);
      ws[lk * 4u + c][lr / 4u][lr % 4u] = stage(w0[c]);
      ws[lk * 4u + c][16u + lr / 4u][lr % 4u] = stage(w1[c]);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk++) {
      let a0 = xs[kk][lid.y];
      let a1 = xs[kk][lid.y + 16u];
      let b0 = ws[kk][lid.x];
      let b1 = ws[kk][lid.x + 16u];
      for (var i = 0u; i < 4u; i++) {
        (*sum)[2u * i] += a0[i] * b0;
        (*sum)[2u * i + 1u] += a0[i] * b1;
        (*sum)[8u + 2u * i] += a1[i] * b0;
        (*sum)[8u + 2u * i + 1u] += a1[i] * b1;
      }
    }
#if HALF
    for (var i = 0u; i < 16u; i++) {
      acc[i] += vec4<f32>(part[i]);
      part[i] = vec4<f16>();
    }
#endif
    workgroupBarrier();
  }
  for (var h = 0u; h < 2u; h++) {
    for (var i = 0u; i < 4u; i++) {
      let t = row0 + h * 64u + lid.y * 4u + i;
      if (t >= p.T) { break; }
      for (var g = 0u; g < 2u; g++) {
        let v = acc[h * 8u + 2u * i + g];
        for (var j = 0u; j < 4u; j++) {
          let n = col0 + g * 64u + lid.x * 4u + j;
          if (n >= p.N) { break; }
          store_y(t, n, v[j]);
        }
      }
    }
  }
}
