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
// decoding its scales once: what gemv uses, a lane taking whole sub-blocks. With QW4 (gemv, for
// the types whose blocks lie on 16-byte boundaries) the includer binds the matrix as
// `qw4: array<vec4<u32>>` (and declares qw unbound), and dq32 loads 16 bytes at a time (every
// buffer is a whole number of 16 bytes: gpu-plan.ts's paddedBytes).

// Four 4-bit (or 8-bit) fields of a word's bytes, as u32 lanes.
fn bytes4(w: u32) -> vec4<u32> {
  return vec4<u32>(w, w >> 8u, w >> 16u, w >> 24u) & vec4<u32>(255u);
}

// The f16 scale of block b from the scale region.
fn q_scale(sbase: u32, b: u32) -> f32 {
#if QW4
  let i = sbase + b / 2u;
  return unpack2x16float(qw4[i / 4u][i & 3u])[b & 1u];
#else
  return unpack2x16float(qw[sbase + b / 2u])[b & 1u];
#endif
}

#if Q4_0
fn dq32(s: u32, sbase: u32, w: ptr<function, array<vec4<f32>, 8>>) {
  let d = q_scale(sbase, s);
#if QW4
  let q = qw4[s];
#endif
  for (var j = 0u; j < 4u; j++) {
#if QW4
    let u = q[j];
#else
    let u = qw[s * 4u + j];
#endif
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
#if QW4
  let q0 = qw4[2u * s];
  let q1 = qw4[2u * s + 1u];
  for (var j = 0u; j < 4u; j++) {
    (*w)[j] = d * int8x4(q0[j]);
    (*w)[j + 4u] = d * int8x4(q1[j]);
  }
#else
  for (var j = 0u; j < 8u; j++) { (*w)[j] = d * int8x4(qw[s * 8u + j]); }
#endif
}

fn dq4(i: u32, sbase: u32) -> vec4<f32> {
  let b = i >> 3u;
  return q_scale(sbase, b) * int8x4(qw[b * 8u + (i & 7u)]);
}
#endif

#if Q4_K
// (d·sc, dmin·m) of sub-block j (0..7) of a Q4_K block from its first four words h: d | dmin << 16, then
// the 12 bytes of 6-bit scales and mins.
fn k_scale_min(h: vec4<u32>, j: u32) -> vec2<f32> {
  let lo = k_byte(h, j);
  let hi = k_byte(h, j + 4u);
  var sc: u32;
  var mn: u32;
  if (j < 4u) {
    sc = lo & 63u;
    mn = hi & 63u;
  } else {
    sc = (hi & 15u) | ((k_byte(h, j - 4u) >> 6u) << 4u);
    mn = (hi >> 4u) | ((lo >> 6u) << 4u);
  }
  let dm = unpack2x16float(h.x);
  return vec2<f32>(dm.x * f32(sc), dm.y * f32(mn));
}

// Byte k of the 12 scale bytes in a block's first four words.
fn k_byte(h: vec4<u32>, k: u32) -> u32 {
  return (h[1u + k / 4u] >> (8u * (k & 3u))) & 255u;
}

// A block's first four words (at word `base`).
fn k_head(base: u32) -> vec4<u32> {
  return vec4<u32>(qw[base], qw[base + 1u], qw[base + 2u], qw[base + 3u]);
}

#if QW4
// With the matrix bound as vec4s (qw4: a block is 9 of them), a sub-block takes three loads: the block's
// scales, and the 32 bytes of its 64-weight group.
fn dq32(s: u32, sbase: u32, w: ptr<function, array<vec4<f32>, 8>>) {
  let b = (s >> 3u) * 9u;
  let j = s & 7u;
  let sm = k_scale_min(qw4[b], j);
  let sh = 4u * (j & 1u);
  let q0 = qw4[b + 1u + 2u * (j >> 1u)];
  let q1 = qw4[b + 2u + 2u * (j >> 1u)];
  for (var t = 0u; t < 4u; t++) {
    (*w)[t] = sm.x * vec4<f32>(bytes4((q0[t] >> sh) & 0x0F0F0F0Fu)) - sm.y;
    (*w)[t + 4u] = sm.x * vec4<f32>(bytes4((q1[t] >> sh) & 0x0F0F0F0Fu)) - sm.y;
  }
}
#else
fn dq32(s: u32, sbase: u32, w: ptr<function, array<vec4<f32>, 8>>) {
  let base = (s >> 3u) * 36u;
  let j = s & 7u;
  let sm = k_scale_min(k_head(base), j);
  let q0 = base + 4u + 8u * (j >> 1u);
  for (var t = 0u; t < 8u; t++) {
    (*w)[t] = sm.x * vec4<f32>(bytes4((qw[q0 + t] >> (4u * (j & 1u))) & 0x0F0F0F0Fu)) - sm.y;
  }
}
#endif

fn dq4(i: u32, sbase: u32) -> vec4<f32> {
  let b = i >> 6u;
  let v = i & 63u;
  let base = b * 36u;
  let g = v >> 4u;            // 64-weight group
  let hiNib = (v >> 3u) & 1u; // second 32 of the group: high nibbles
  let sm = k_scale_min(k_head(base), 2u * g + hiNib);
  let q = bytes4((qw[base + 4u + 8u * g + (v & 7u)] >> (4u * hiNib)) & 0x0F0F0F0Fu);
  return sm.x * vec4<f32>(q) - sm.y;
}
#endif

#if Q6_K
// Weights 4·l4 .. 4·l4 + 3 of quarter q of half h of the Q6_K block b (at word `base`), with its scale d.
fn k6(base: u32, d: f32, h: u32, q: u32, l4: u32) -> vec4<f32> {
  let s = 8u * h + (l4 >> 2u) + 2u * q;
  return k6_words(qw[base + 16u * h + 8u * (q & 1u) + l4], qw[base + 32u + 8u * h + l4], qw[base + 48u + s / 4u], d, q, s);
}

// The same from its words as loaded: ql's, qh's and the one holding int8 scale s.
fn k6_words(ql: u32, qh: u32, scw: u32, d: f32, q: u32, s: u32) -> vec4<f32> {
  let lo = (ql >> (4u * (q >> 1u))) & 0x0F0F0F0Fu;
  let hi = ((qh >> (2u * q)) & 0x03030303u) << 4u;
  let sc = (bitcast<i32>(scw) << (24u - 8u * (s & 3u))) >> 24u;
  return (d * f32(sc)) * (vec4<f32>(bytes4(lo | hi)) - 32.0);
}

#if QW4
// With the matrix bound as vec4s (qw4: a block is 13 of them), quarter q of half h takes five loads: its 32 low
// nibbles' words (two), its high bits' (two) and the block's 16 scales.
fn dq32(s: u32, sbase: u32, w: ptr<function, array<vec4<f32>, 8>>) {
  let b = (s >> 3u) * 13u;
  let d = q_scale(sbase, s >> 3u);
  let h = (s >> 2u) & 1u;
  let q = s & 3u;
  let lo = array<vec4<u32>, 2>(qw4[b + 4u * h + 2u * (q & 1u)], qw4[b + 4u * h + 2u * (q & 1u) + 1u]);
  let hi = array<vec4<u32>, 2>(qw4[b + 8u + 2u * h], qw4[b + 8u + 2u * h + 1u]);
  let scales = qw4[b + 12u];
  for (var t = 0u; t < 8u; t++) {
    let k = 8u * h + (t >> 2u) + 2u * q;
    (*w)[t] = k6_words(lo[t >> 2u][t & 3u], hi[t >> 2u][t & 3u], scales[k / 4u], d, q, k);
  }
}
#else
fn dq32(s: u32, sbase: u32, w: ptr<function, array<vec4<f32>, 8>>) {
  let b = s >> 3u;
  let d = q_scale(sbase, b);
  for (var t = 0u; t < 8u; t++) { (*w)[t] = k6(b * 52u, d, (s >> 2u) & 1u, s & 3u, t); }
}
#endif

fn dq4(i: u32, sbase: u32) -> vec4<f32> {
  let b = i >> 6u;
  let v = i & 63u;
  // Half v >> 5 (128 weights), quarter (v >> 3) & 3 within it (32 weights), weights 4(v & 7).. of the quarter.
  return k6(b * 52u, q_scale(sbase, b), v >> 5u, (v >> 3u) & 3u, v & 7u);
}
#endif
