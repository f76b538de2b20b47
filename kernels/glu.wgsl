// Gated FFN activation on the fused gate/up projection:
// gu: [T, 2I] holding gate in columns [0, I) and up in [I, 2I);
// out[t, i] = act(gate) * up, act = SiLU, or tanh-approximate GELU (GELU_TANH).
#include "common"
#include "act"

struct Params { T: u32, I: u32, _a: u32, _b: u32 }

@group(0) @binding(0) var<uniform> p: Params;
@group(0) @binding(1) var<storage, read> gu: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let id = flat_id(gid, nwg, 64u);
  if (id >= p.T * p.I) { return; }
  let t = id / p.I;
  let i = id % p.I;
  let base = t * 2u * p.I;
  out[id] = act4(vec4<f32>(gu[base + i])).x * gu[base + p.I + i];
}
