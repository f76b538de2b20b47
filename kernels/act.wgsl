// The gated FFN's activation on four values, pasted by `#include "act"` into glu.wgsl and
// gemv_x.wgsl (the down projection's GLU prologue), so both compute it the same way:
// SiLU, or tanh-approximate GELU with GELU_TANH.

fn act4(x: vec4<f32>) -> vec4<f32> {
#if GELU_TANH
  // Clamped: a tanh computed from exponentials can give NaN for large arguments; tanh(±15) is ±1 in f32.
  let u = clamp(0.7978845608028654 * (x + 0.044715 * x * x * x), vec4<f32>(-15.0), vec4<f32>(15.0));
  return 0.5 * x * (1.0 + tanh(u));
#else
  return x / (1.0 + exp(-x));
#endif
}
