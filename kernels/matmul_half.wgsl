// What the tiled matmuls (matmul_tiled.wgsl, matmul_tiled128.wgsl) stage in
// workgroup memory, pasted by `#include "matmul_half"` after matmul_io.
// Without HALF: f32, as loaded. With HALF (adapters with `shader-f16`; the
// engine uses it for f16 and quantized weights only): f16, which halves the
// workgroup memory a slice takes and lets a GPU multiply two halves at once.
//  - x is rounded to f16 after clamping to its largest finite value (65504), so
//    an outlier saturates instead of turning the sum infinite;
//  - w is already f16 (packed f16), or a block scale times a small integer
//    (quantized), rounded to f16;
//  - the products of one 16-deep slice are summed in f16, and the slices'
//    sums in f32, so rounding never grows with K (reference.ts, matmulHalf).
// A slice's f16 sum overflows past 65504: the engine keeps f32 math for the
// down projection, whose inputs (the GLU's output) carry LLMs' massive
// activations (tests/engine/half-model.test.ts measures the margins).
#if HALF
alias elem = f16;
fn stage(v: f32) -> f16 { return f16(clamp(v, -65504.0, 65504.0)); }
#else
alias elem = f32;
fn stage(v: f32) -> f32 { return v; }
#endif
