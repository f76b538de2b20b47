// RoPE on a head in groups of 8 values, as rope_scatter.wgsl and attention_decode.wgsl's STEP
// rotate q and k heads, pasted by `#include "rope_pairs"` after a `cs` binding
// (array<vec2<f32>>: cs[r * HD/2 + i] = (cos, sin) of row r's angle for frequency i).
// Group g of a head (g < HD/8) is two vec4s of it, at rope_groups(g, HD): with INTERLEAVED the
// pairs (2i, 2i+1) of its 8 consecutive values; otherwise values 4g..4g+3 and their partners
// HD/2 away. Both hold frequencies 4g..4g+3, whose (cos, sin) start at cs[r] for r = row * HD/2 + 4g.

// The vec4 offsets within a head of group g's two vec4s.
fn rope_groups(g: u32, hd: u32) -> vec2<u32> {
#if INTERLEAVED
  return vec2<u32>(2u * g, 2u * g + 1u);
#else
  return vec2<u32>(g, hd / 8u + g);
#endif
}

// The group's two vec4s rotated by the (cos, sin) pairs cs[r..r+3].
fn rope_rotate(a: vec4<f32>, b: vec4<f32>, r: u32) -> array<vec4<f32>, 2> {
  let c0 = cs[r];
  let c1 = cs[r + 1u];
  let c2 = cs[r + 2u];
  let c3 = cs[r + 3u];
#if INTERLEAVED
  // a holds the pairs of frequencies 4g and 4g + 1, b those of 4g + 2 and 4g + 3.
  return array<vec4<f32>, 2>(
    vec4<f32>(a.x * c0.x - a.y * c0.y, a.x * c0.y + a.y * c0.x, a.z * c1.x - a.w * c1.y, a.z * c1.y + a.w * c1.x),
    vec4<f32>(b.x * c2.x - b.y * c2.y, b.x * c2.y + b.y * c2.x, b.z * c3.x - b.w * c3.y, b.z * c3.y + b.w * c3.x));
#else
  // a holds the first of the pairs of frequencies 4g..4g+3, b their second.
  let cv = vec4<f32>(c0.x, c1.x, c2.x, c3.x);
  let sv = vec4<f32>(c0.y, c1.y, c2.y, c3.y);
  return array<vec4<f32>, 2>(a * cv - b * sv, a * sv + b * cv);
#endif
}
