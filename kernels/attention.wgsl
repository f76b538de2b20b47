// Causal attention by position id, for T query rows against n cached keys.
// q: head (t, h) at t * q_stride + q_offset + h * HD (already rotated).
// k, v: the layer's cache, [cap, NKV, HD] (f32, or packed f16 when KV_F16).
// Query t sees key j iff kpos[j] <= qpos[t] and, when window > 0,
// qpos[t] - kpos[j] < window. Keys are any rows of the cache, so the same
// kernel serves prefill, decode and selective recompute of scattered rows.
// GQA: query head h reads kv head h / (H / NKV).
// bounds[t] = [first, last) cache rows that can be visible to query t (the
// host narrows it when cache positions are sorted; the mask still decides).
//
// One invocation per (group of TQ consecutive query rows, head), walking the
// keys four at a time; the online-softmax state (max, sum) of the TQ rows
// sits in the lanes of a vec4. Base-2 exponentials.
// out: [T, H * HD].
// SPLIT (flash-decoding, for real GPUs when few query rows face many keys):
// each (row group, head) has `splits` invocations, each over its own slice of
// the key range, writing its unnormalised accumulator to out[(t, h, s)] and
// its (max, sum) to ml; attention_combine.wgsl merges the slices.
#include "attention_io"

const TQ: u32 = {{TQ}}u;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
  let id = flat_id(gid, nwg, 64u);
  let groups = (p.T + TQ - 1u) / TQ;
  if (id >= groups * p.H * p.splits) { return; }
  let split = id % p.splits;
  let gh = id / p.splits;
  let t0 = (gh / p.H) * TQ;
  let h = gh % p.H;
  let kvh = h / (p.H / p.NKV);

  var qv: array<vec4<f32>, TQ * HD4>;
  var qp = vec4<i32>(qpos[t0]);
  var live = vec4<bool>(false);
  var first = 0xffffffffu;
  var last = 0u;
  for (var r = 0u; r < TQ; r++) {
    let t = min(t0 + r, p.T - 1u);
    live[r] = t0 + r < p.T;
    qp[r] = qpos[t];
    let b = bounds[t];
    first = min(first, b.x);
    last = max(last, b.y);
    let qbase = (t * p.q_stride + p.q_offset) / 4u + h * HD4;
    for (var i = 0u; i < HD4; i++) { qv[r * HD4 + i] = q[qbase + i] * (p.scale * LOG2E); }
  }
  last = min(last, p.n);
  // This invocation's slice of [first, last): all of it unless the keys are split.
  let span = key_slice(first, last, split);
  first = span.x;
  last = span.y;

  var acc: array<vec4<f32>, TQ * HD4>;
  var m = vec4<f32>(NEG);
  var l = vec4<f32>(0.0);
  let win = vec4<i32>(i32(p.window));
  let kstride = p.NKV * HD4;
  // Blocks of 4 keys x TQ queries: one max, one rescale and a vec4 exp2 per
  // row per block, like a register tile of a matmul.
  for (var j0 = first; j0 < last; j0 += 4u) {
    var kb: array<u32, 4>;
    var kp = vec4<i32>(0);
    for (var c = 0u; c < 4u; c++) {
      let j = min(j0 + c, last - 1u);
      kb[c] = j * kstride + kvh * HD4;
      kp[c] = kpos[j];
    }
    let inb = vec4<u32>(j0) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(last);
    // Skip blocks no row can see (before the window, or after every query).
    let qlo = min(min(qp.x, qp.y), min(qp.z, qp.w));
    let qhi = max(max(qp.x, qp.y), max(qp.z, qp.w));
    let klo = min(min(kp.x, kp.y), min(kp.z, kp.w));
    let khi = max(max(kp.x, kp.y), max(kp.z, kp.w));
    if (klo > qhi || (p.window > 0u && qlo - khi >= win.x)) { continue; }
    var e: array<vec4<f32>, TQ>;
    var corr = vec4<f32>(1.0);
    for (var r = 0u; r < TQ; r++) {
      let qr = vec4<i32>(qp[r]);
      var seen = inb & (kp <= qr) & vec4<bool>(live[r]);
      if (p.window > 0u) { seen = seen & (qr - kp < win); }
      var s = vec4<f32>(0.0);
      for (var i = 0u; i < HD4; i++) {
        let qi = qv[r * HD4 + i];
        s += vec4<f32>(dot(qi, load_k(kb[0] + i)), dot(qi, load_k(kb[1] + i)), dot(qi, load_k(kb[2] + i)), dot(qi, load_k(kb[3] + i)));
      }
      s = select(vec4<f32>(NEG), s, seen);
      let mx = max(m[r], max(max(s.x, s.y), max(s.z, s.w)));
      corr[r] = exp2(m[r] - mx);
      e[r] = select(vec4<f32>(0.0), exp2(s - vec4<f32>(mx)), seen);
      l[r] = l[r] * corr[r] + (e[r].x + e[r].y) + (e[r].z + e[r].w);
      m[r] = mx;
    }
    for (var i = 0u; i < HD4; i++) {
      let v0 = load_v(kb[0] + i);
      let v1 = load_v(kb[1] + i);
      let v2 = load_v(kb[2] + i);
      let v3 = load_v(kb[3] + i);
      for (var r = 0u; r < TQ; r++) {
        let er = e[r];
        acc[r * HD4 + i] = acc[r * HD4 + i] * corr[r] + er.x * v0 + er.y * v1 + er.z * v2 + er.w * v3;
      }
    }
  }
  for (var r = 0u; r < TQ; r++) {
    if (!live[r]) { break; }
#if SPLIT
    let slot = ((t0 + r) * p.H + h) * p.splits + split;
    ml[slot] = vec2<f32>(m[r], l[r]);
    for (var i = 0u; i < HD4; i++) { out[slot * HD4 + i] = acc[r * HD4 + i]; }
#else
    let inv = select(0.0, 1.0 / l[r], l[r] > 0.0);
    let ob = ((t0 + r) * p.H + h) * HD4;
    for (var i = 0u; i < HD4; i++) { out[ob + i] = acc[r * HD4 + i] * inv; }
#endif
  }
}
