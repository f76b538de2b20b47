// Greedy sampling on the GPU: the index of the largest of each row's V
// logits, first index on ties (as llama2.c's argmax and sampling.ts's), so
// decode reads back 4 bytes a token instead of V floats.
// x: [R, V] f32. out: [R] u32.
// One workgroup of 256 per row: each invocation walks a strided slice, then
// a tree in workgroup memory keeps the larger value (the smaller index when
// equal). Rows holding NaN may pick another index than the CPU would.

struct Params { R: u32, V: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

const WG: u32 = 256u;
var<workgroup> best_v: array<f32, WG>;
var<workgroup> best_i: array<u32, WG>;

const NONE: u32 = 0xffffffffu;

// Whether (va, ia) beats (vb, ib); an empty slice (index NONE) beats nothing.
fn beats(va: f32, ia: u32, vb: f32, ib: u32) -> bool {
  return ia != NONE && (ib == NONE || va > vb || (va == vb && ia < ib));
}

@compute @workgroup_size(256, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) li: u32) {
  let row = wid.x;
  if (row >= p.R) { return; }
  let base = row * p.V;
  var v = 0.0;
  var i = NONE;
  for (var j = li; j < p.V; j += WG) {
    let xj = x[base + j];
    // Strictly greater: a slice's first maximum is kept.
    if (i == NONE || xj > v) {
      v = xj;
      i = j;
    }
  }
  best_v[li] = v;
  best_i[li] = i;
  workgroupBarrier();
  for (var half = WG / 2u; half > 0u; half >>= 1u) {
    if (li < half && beats(best_v[li + half], best_i[li + half], best_v[li], best_i[li])) {
      best_v[li] = best_v[li + half];
      best_i[li] = best_i[li + half];
    }
    workgroupBarrier();
  }
  if (li == 0u) { out[row] = best_i[0]; }
}
