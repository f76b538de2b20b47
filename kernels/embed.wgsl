// Token embedding lookup: x[t, :] = table[tokens[t], :] * scale.
// table: [V, D] f32, packed f16 (E_F16), or packed ggml blocks (E_Q with a type
// flag; see quant.wgsl, sbase being where the binding's scale region starts);
// D is a multiple of 4.
// With ROW_RANGE, the binding holds rows [row0, row0 + rows) of the table: a
// table stored in row parts runs once per part, and each launch writes only
// the rows of x whose token is in its part.
#include "common"

struct Params { T: u32, D4: u32, V: u32, scale: f32, row0: u32, rows: u32, sbase: u32, _b: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> tokens: array<u32>;
#if E_Q
@group(0) @binding(2) var<storage, read> qw: array<u32>;
#include "quant"
fn load_e(i: u32) -> vec4<f32> { return dq4(i, p.sbase); }
#else
#if E_F16
@group(0) @binding(2) var<storage, read> table: array<vec2<u32>>;
fn load_e(i: u32) -> vec4<f32> { return unpack4h(table[i]); }
#else
@group(0) @binding(2) var<storage, read> table: array<vec4<f32>>;
fn load_e(i: u32) -> vec4<f32> { return table[i]; }
#endif
#endif
@group(0) @binding(3) var<storage, read_write> x: array<vec4<f32>>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let id = flat_id(gid, nwg, 64u);
  if (id >= p.T * p.D4) { return; }
  let t = id / p.D4;
  let c = id % p.D4;
  let tok = min(tokens[t], p.V - 1u);
#if ROW_RANGE
  if (tok < p.row0 || tok - p.row0 >= p.rows) { return; }
  x[id] = load_e((tok - p.row0) * p.D4 + c) * p.scale;
#else
  x[id] = load_e(tok * p.D4 + c) * p.scale;
#endif
}
