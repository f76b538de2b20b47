// Shared declarations of matmul.wgsl and matmul_tiled.wgsl, pasted by
// `#include "matmul_io"`: y[t, n] = sum_k x[t, k] * w[n, k] (+ b[n]) (+ r[t, n]),
// x: [T, K] f32 read as vec4, w: [N, K] f32 or packed f16 (W_F16).
// y is [T, ldy] and this launch fills its columns [y0, y0 + N): a matrix
// stored in row parts runs once per part, each writing its own columns
// (ldy = N, y0 = 0 for a whole matrix). Bias and residual are indexed like y.
#include "common"

struct Params { T: u32, N: u32, K4: u32, ldy: u32, y0: u32, _a: u32, _b: u32, _c: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
#if W_F16
@group(0) @binding(2) var<storage, read> w: array<vec2<u32>>;
fn load_w(i: u32) -> vec4<f32> { return unpack4h(w[i]); }
#else
@group(0) @binding(2) var<storage, read> w: array<vec4<f32>>;
fn load_w(i: u32) -> vec4<f32> { return w[i]; }
#endif
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
#if BIAS
@group(0) @binding(4) var<storage, read> b: array<f32>;
#endif
#if RESIDUAL
@group(0) @binding(5) var<storage, read> r: array<f32>;
#endif

// Stores output (t, n) of this launch from its accumulated dot product.
fn store_y(t: u32, n: u32, acc: f32) {
  let col = p.y0 + n;
  let i = t * p.ldy + col;
  var v = acc;
#if BIAS
  v += b[col];
#endif
#if RESIDUAL
  v += r[i];
#endif
  y[i] = v;
}
