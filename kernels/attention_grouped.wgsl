// Decode attention for a kv head's group of q heads (GQA), heads of at most
// 64: attention_decode's LANES (read its header) with the group in one
// workgroup. A workgroup of 64 * QG invocations takes one (row, kv head,
// slice) and the QG = H / NKV q heads that share the kv head: invocation
// (hq, lane) walks keys first + lane, first + lane + 64, ... for q head hq
// alone, with its own online softmax (attention_lanes.wgsl's walk).
// The QG invocations that take a key read its key and value rows at about
// the same time on the same GPU core, so the cache is fetched from memory
// once for the group rather than once a q head, as separate workgroups do
// unless a cache holds it between them. At the end each head's 64 states are
// merged through workgroup memory (attention_lanes.wgsl's merge).
// Same bindings, masks, bounds, slices, f16 KV and outputs as attention.wgsl
// (read its header; the slices' layout is attention_decode's). STEP as
// attention_decode's (a decode step's one row with rope_scatter's work
// folded in): each workgroup rotates its q heads, and its kv head's key,
// into workgroup memory; the kv head's slice-0 workgroup writes the key and
// value into the cache row. No QKNORM.
// Workgroups are numbered (slice fastest, then kv head, then row).
#include "attention_io"
#include "attention_lanes"
#if STEP
#include "rope_pairs"
#endif

const WG: u32 = 64u;
const QG: u32 = {{QG}}u;
// Vec4s of each accumulator merged at a time: workgroup memory holds QG * WG * LANES_C of them.
const LANES_C: u32 = 2u;

var<workgroup> qs: array<vec4<f32>, QG * HD4>;
var<workgroup> rmax: array<f32, QG * WG>;
var<workgroup> rsum: array<f32, QG * WG>;
var<workgroup> red: array<vec4<f32>, QG * WG * LANES_C>;
var<workgroup> accs: array<vec4<f32>, QG * WG>;

@compute @workgroup_size({{WGS}}, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  // Uniform across the workgroup: a workgroup past the last (row, kv head, slice) returns as a whole.
  let id = wid.x + wid.y * nwg.x;
  if (id >= p.T * p.NKV * p.splits) { return; }
  let split = id % p.splits;
  let tk = id / p.splits;
  let t = tk / p.NKV;
  let kvh = tk % p.NKV;
  let hq = lid / WG;
  let lane = lid % WG;
  let h = kvh * QG + hq;
  let th = t * p.H + h;
  let qo = hq * HD4;
  let qbase = (t * p.q_stride + p.q_offset) / 4u;
#if STEP
  let qp = p.qp;
  // Group `lane` of q head h, and (head 0's invocations) of the kv head's key, rotated; the value as it is.
  if (lane < HD4 / 2u) {
    let o = rope_groups(lane, 4u * HD4);
    let r = u32(qp) * 2u * HD4 + 4u * lane;
    let qh = qbase + h * HD4;
    let qr = rope_rotate(q[qh + o.x], q[qh + o.y], r);
    qs[qo + o.x] = qr[0] * (p.scale * LOG2E);
    qs[qo + o.y] = qr[1] * (p.scale * LOG2E);
    if (hq == 0u) {
      let kh = qbase + (p.H + kvh) * HD4;
      let kr = rope_rotate(q[kh + o.x], q[kh + o.y], r);
      kn[o.x] = as_cached(kr[0]);
      kn[o.y] = as_cached(kr[1]);
    }
  }
  if (hq == 0u && lane < HD4) { vn[lane] = as_cached(q[qbase + (p.H + p.NKV + kvh) * HD4 + lane]); }
#else
  if (lane < HD4) { qs[qo + lane] = q[qbase + h * HD4 + lane] * (p.scale * LOG2E); }
  let qp = qpos[t];
#endif
  let span = row_slice(t, split);
  let first = span.x;
  let last = span.y;
  workgroupBarrier();
#if STEP
  // The kv head's slice-0 workgroup writes the step's key and value into its cache row; no workgroup reads that
  // row from the cache (the walk takes it from kn and vn), so no ordering is needed.
  if (split == 0u && hq == 0u && lane < HD4) {
    let at = p.row * p.NKV * HD4 + kvh * HD4 + lane;
    kc[at] = pack_kv(kn[lane]);
    vc[at] = pack_kv(vn[lane]);
  }
#endif
  lanes_walk(lane, first, last, kvh, qp, qo);
  lanes_merge(lid, hq * WG, th, split);
}
