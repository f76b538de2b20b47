// Shared declarations of matmul.wgsl, matmul_tiled.wgsl, matmul_tiled128.wgsl and gemv.wgsl, pasted by
// `#include "matmul_io"`: y[t, n] = sum_k x[t, k] * w[n, k] (+ b[n]) (+ r[t, n]),
// x: [T, K] f32 read as vec4, w: [N, K] f32, packed f16 (W_F16; gemv's W8 reads it 16 bytes a load), or packed ggml
// blocks (W_Q with a type flag, dequantized in registers by quant.wgsl; sbase is
// where the buffer's scale region starts).
// With Y_RANGE, y is [T, ldy] and this launch fills its columns [y0, y0 + N):
// a matrix stored in row parts runs once per part, each writing its own
// columns (store_y), bias and residual indexed like y. Without it (a
// whole matrix), y is [T, N] and the kernels store exactly as they always did.
#include "common"

// eps and plus_one: gemv's NORM prologue (gemv_x.wgsl), as rmsnorm.wgsl's; heads and splits its COMBINE's.
struct Params { T: u32, N: u32, K4: u32, ldy: u32, y0: u32, sbase: u32, eps: f32, plus_one: u32, heads: u32, splits: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
#if W_Q
#if QW4
// gemv reads the blocks 16 bytes at a time (quant.wgsl's dq32); qw, which it leaves unread, is
// declared for the rest of quant.wgsl only, so it is no binding of gemv's.
@group(0) @binding(2) var<storage, read> qw4: array<vec4<u32>>;
@group(0) @binding(8) var<storage, read> qw: array<u32>;
#else
@group(0) @binding(2) var<storage, read> qw: array<u32>;
#endif
#include "quant"
fn load_w(i: u32) -> vec4<f32> { return dq4(i, p.sbase); }
#else
#if W_F16
#if W8
// gemv's wide loads: 16 bytes (8 halves) a load, vec4s 2i and 2i + 1 of the weights.
@group(0) @binding(2) var<storage, read> w: array<vec4<u32>>;
fn load_w8(i: u32) -> array<vec4<f32>, 2> {
  let v = w[i];
  return array<vec4<f32>, 2>(unpack4h(v.xy), unpack4h(v.zw));
}
#else
@group(0) @binding(2) var<storage, read> w: array<vec2<u32>>;
fn load_w(i: u32) -> vec4<f32> { return unpack4h(w[i]); }
#endif
#else
@group(0) @binding(2) var<storage, read> w: array<vec4<f32>>;
fn load_w(i: u32) -> vec4<f32> { return w[i]; }
#endif
#endif
@group(0) @binding(3) var<storage, read_write> y: array<f32>;
#if BIAS
@group(0) @binding(4) var<storage, read> b: array<f32>;
#endif
#if RESIDUAL
@group(0) @binding(5) var<storage, read> r: array<f32>;
#endif

// Stores output (t, n) from its accumulated dot product, bias and residual added: into y[t, n] of a whole
// matrix, or with Y_RANGE into column y0 + n of the wider y.
fn store_y(t: u32, n: u32, acc: f32) {
#if Y_RANGE
  let col = p.y0 + n;
  let i = t * p.ldy + col;
#else
  let col = n;
  let i = t * p.N + n;
#endif
  var v = acc;
#if BIAS
  v += b[col];
#endif
#if RESIDUAL
  v += r[i];
#endif
  y[i] = v;
}
