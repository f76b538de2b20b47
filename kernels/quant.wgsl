// Dequantization of packed ggml blocks in registers, pasted by `#include "quant"`
// into matmul_io (the matmul and GEMV kernels) and embed. The includer binds
// the packed matrix as `qw: array<u32>` and sets one type flag; dq4(i, sbase)
// returns weights 4i..4i+3 of the row-major [rows, cols] matrix as f32 (cols
// a multiple of the block size, so vec4 i lies in block i / (BS/4)).
//
// Layout (src/engine/quant.ts repacks GGUF blocks into it on upload; nb blocks):
//   Q4_1 (32 weights, 5 words), Q4_K (256 weights, 36 words): GGUF blocks as is.
//     Q4_1: w0 = d | m << 16 (f16), w1..w4 = qs: byte j = weight j (low nibble), j + 16 (high).
//     Q4_K: w0 = d | dmin << 16, w1..w3 = 12 bytes of 6-bit scales and mins (8 sub-blocks
//     of 32), w4..w35 = qs: 64-weight group g uses bytes 32g..32g+31, low nibbles for
//     sub-block 2g, high for 2g+1.
//   Q4_0, Q5_0, Q8_0, Q6_K: the block less its f16 scale d, QW words each, then at word
//   sbase = nb * QW the nb scales d, two per word (even block in the low half):
//     Q4_0 (QW 4): qs as Q4_1's.          Q5_0 (QW 5): w0 = qh (bit j: 5th bit of weight j), w1..w4 = qs.
//     Q8_0 (QW 8): 32 int8 weights.       Q6_K (QW 52): ql (128 bytes), qh (64), int8 scales (16),
//     each 128-weight half h: weight 32q + l from ql[64h + l + 32(q & 1)] (nibble q >> 1),
//     qh[32h + l] bits 2q..2q+1, scale[8h + l / 16 + 2q].
// Arithmetic as src/engine/formats/gguf-quants.ts (the reference): f32, d·q (Q4_0,
// Q5_0, Q8_0), d·q + m (Q4_1), (d·sc)·q − dmin·m (Q4_K), (d·sc)·(q − 32) (Q6_K).
// dq32(s, sbase, &w) gives weights 32s..32s+31 (one 32-weight sub-block) as 8 vec4s,
// decoding its scales once: what gemv uses, a lane taking whole sub-blocks.

// Four 4-bit (or 8-bit) fields of a word's bytes, as u32 lanes.
fn bytes4(w: u32) -> vec4<u32> {
  return vec4<u32>(w, w >> 8u, w >> 16u, w >> 24u) & vec4<u32>(255u);
}

// The f16 scale of block b from the scale region.
fn q_scale(sbase: u32, b: u32) -> f32 {
  return unpack2x16float(qw[sbase + b / 2u])[b & 1u];
}

#if Q4_0
fn dq32(s: u32, sbase: u32, w: ptr<function, array<vec4<f32>, 8>>) {
  let d = q_scale(sbase, s);
  for (var j = 0u; j < 4u; j++) {
    let u = qw[s * 4u + j];
    (*w)[j] = d * (vec4<f32>(bytes4(u & 0x0F0F0F0Fu)) - 8.0);
    (*w)[j + 4u] = d * (vec4<f32>(bytes4((u >> 4u) & 0x0F0F0F0Fu)) - 8.0);
  }
}

fn dq4(i: u32, sbase: u32) -> vec4<f32> {
  let b = i >> 3u;
  let v = i & 7u;
  let q = bytes4((qw[b * 4u + (v & 3u)] >> ((v >> 2u) * 4u)) & 0x0F0F0F0Fu);
  return q_scale(sbase, b) * (vec4<f32>(q) - 8.0);
}
#endif

#if Q4_1
fn dq32(s: u32, sbase: u32, w: ptr<function, array<vec4<f32>, 8>>) {
  let dm = unpack2x16float(qw[s * 5u]);
  for (var j = 0u; j < 4u; j++) {
    let u = qw[s * 5u + 1u + j];
    (*w)[j] = dm.x * vec4<f32>(bytes4(u & 0x0F0F0F0Fu)) + dm.y;
    (*w)[j + 4u] = dm.x * vec4<f32>(bytes4((u >> 4u) & 0x0F0F0F0Fu)) + dm.y;
  }
}

fn dq4(i: u32, sbase: u32) -> vec4<f32> {
  let b = i >> 3u;
  let v = i & 7u;
  let dm = unpack2x16float(qw[b * 5u]);
  let q = bytes4((qw[b * 5u + 1u + (v & 3u)] >> ((v >> 2u) * 4u)) & 0x0F0F0F0Fu);
  return dm.x * vec4<f32>(q) + dm.y;
}
#endif

#if Q5_0
// Four 5th bits (bits 0..3 of h) moved to bit 4 of each byte.
fn q5_high(h: u32) -> u32 {
  return ((h & 1u) | ((h & 2u) << 7u) | ((h & 4u) << 14u) | ((h & 8u) << 21u)) << 4u;
}

fn dq32(s: u32, sbase: u32, w: ptr<function, array<vec4<f32>, 8>>) {
  let d = q_scale(sbase, s);
  let qh = qw[s * 5u];
  for (var j = 0u; j < 4u; j++) {
    let u = qw[s * 5u + 1u + j];
    (*w)[j] = d * (vec4<f32>(bytes4((u & 0x0F0F0F0Fu) | q5_high(qh >> (4u * j)))) - 16.0);
    (*w)[j + 4u] = d * (vec4<f32>(bytes4(((u >> 4u) & 0x0F0F0F0Fu) | q5_high(qh >> (4u * j + 16u)))) - 16.0);
  }
}

fn dq4(i: u32, sbase: u32) -> vec4<f32> {
  let b = i >> 3u;
  let v = i & 7u;
  let lo = (qw[b * 5u + 1u + (v & 3u)] >> ((v >> 2u) * 4u)) & 0x0F0F0F0Fu;
  // Weights 4v..4v+3 take bits 4v..4v+3 of qh as their 5th bit.
  return q_scale(sbase, b) * (vec4<f32>(bytes4(lo | q5_high(qw[b * 5u] >> (4u * v)))) - 16.0);
}
#endif

#if Q8_0
fn int8x4(u: u32) -> vec4<f32> {
  return vec4<f32>((vec4<i32>(bitcast<i32>(u)) << vec4<u32>(24u, 16u, 8u, 0u)) >> vec4<u32>(24u));
}

fn dq32(s: u32, sbase: u32, w: ptr<function, array<vec4<f32>, 8>>) {
  let d = q_scale(sbase, s);
  for (var j = 0u; j < 8u; j++) { (*w)[j] = d * int8x4(qw[s * 8u + j]); }
}

fn dq4(i: u32, sbase: u32) -> vec4<f32> {
  let b = i >> 3u;
  return q_scale(sbase, b) * int8x4(qw[b * 8u + (i & 7u)]);
}
#endif

#if Q4_K
// Byte k of a Q4_K block's 12 scale bytes (words 1..3 of the block at word `base`).
fn k_scale_byte(base: u32, k: u32) -> u32 {
  return (qw[base + 1u + k / 4u] >> (8u * (k & 3u))) & 255u;
}

// (d·sc, dmin·m) of sub-block j (0..7) of the Q4_K block at word `base`.
fn k_scale_min(base: u32, j: u32) -> vec2<f32> {
  var sc: u32;
  var mn: u32;
  if (j < 4u) {
    sc = k_scale_byte(base, j) & 63u;
    mn = k_scale_byte(base, j + 4u) & 63u;
  } else {
    let e = k_scale_byte(base, j + 4u);
    sc = (e & 15u) | ((k_scale_byte(base, j - 4u) >> 6u) << 4u);
    mn = (e >> 4u) | ((k_scale_byte(base, j) >> 6u) << 4u);
  }
  let dm = unpack2x16float(qw[base]);
  return vec2<f32>(dm.x * f32(sc), dm.y * f32(mn));
}

fn dq32(s: u32, sbase: u32, w: ptr<function, array<vec4<f32>, 8>>) {
  let base = (s >> 3u) * 36u;
  let j = s & 7u;
  let sm = k_scale_min(base, j);
  let q0 = base + 4u + 8u * (j >> 1u);
  for (var t = 0u; t < 8u; t++) {
    (*w)[t] = sm.x * vec4<f32>(bytes4((qw[q0 + t] >> (4u * (j & 1u))) & 0x0F0F0F0Fu)) - sm.y;
  }
}

fn dq4(i: u32, sbase: u32) -> vec4<f32> {
  let b = i >> 6u;
  let v = i & 63u;
  let base = b * 36u;
  let g = v >> 4u;            // 64-weight group
  let hiNib = (v >> 3u) & 1u; // second 32 of the group: high nibbles
  let sm = k_scale_min(base, 2u * g + hiNib);
  let q = bytes4((qw[base + 4u + 8u * g + (v & 7u)] >> (4u * hiNib)) & 0x0F0F0F0Fu);
  return sm.x * vec4<f32>(q) - sm.y;
}
#endif

#if Q6_K
// Weights 4·l4 .. 4·l4 + 3 of quarter q of half h of the Q6_K block b (at word `base`), with its scale d.
fn k6(base: u32, d: f32, h: u32, q: u32, l4: u32) -> vec4<f32> {
  let lo = (qw[base + 16u * h + 8u * (q & 1u) + l4] >> (4u * (q >> 1u))) & 0x0F0F0F0Fu;
  let hi = ((qw[base + 32u + 8u * h + l4] >> (2u * q)) & 0x03030303u) << 4u;
  let s = 8u * h + (l4 >> 2u) + 2u * q;
  let sc = (bitcast<i32>(qw[base + 48u + s / 4u]) << (24u - 8u * (s & 3u))) >> 24u;
  return (d * f32(sc)) * (vec4<f32>(bytes4(lo | hi)) - 32.0);
}

fn dq32(s: u32, sbase: u32, w: ptr<function, array<vec4<f32>, 8>>) {
  let b = s >> 3u;
  let d = q_scale(sbase, b);
  for (var t = 0u; t < 8u; t++) { (*w)[t] = k6(b * 52u, d, (s >> 2u) & 1u, s & 3u, t); }
}

fn dq4(i: u32, sbase: u32) -> vec4<f32> {
  let b = i >> 6u;
  let v = i & 63u;
  // Half v >> 5 (128 weights), quarter (v >> 3) & 3 within it (32 weights), weights 4(v & 7).. of the quarter.
  return k6(b * 52u, q_scale(sbase, b), v >> 5u, (v >> 3u) & 3u, v & 7u);
}
#endif
