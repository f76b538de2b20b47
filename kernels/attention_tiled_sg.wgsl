// attention_tiled.wgsl's FlashAttention-style walk (same bindings, masks,
// GQA, f16 KV, bounds, splits, tiles of BK keys staged in workgroup memory
// for a block of query rows of one head; read its header), with a row's head
// shared out over R subgroup lanes: each key is read from workgroup memory
// once for G = R rows instead of once a row, or (G = 1, for wide heads) a
// lane holds a quarter or half of one row's query and accumulator.
//
// attention_tiled gives an invocation a row and the whole head: for every
// key it reads the key's HD4 vec4s and then the value's from workgroup memory
// for 4 multiply-adds each, and a GPU's workgroup-memory reads, not its
// arithmetic, bound it. Here R neighbouring lanes of a subgroup (a row group)
// hold G rows together, each lane a 1/R share of every row's head: vec4s
// i * R + part (interleaved, so that the group's lanes read neighbouring
// vec4s, in different banks). A lane reads its share of a key once and uses
// it for the G rows, so with G = R a key costs HD4 / R reads for R rows, 4R
// multiply-adds a read. The lanes' partial scores (four keys at a time)
// meet by subgroupShuffleXor; added in the same pairs in every lane, they
// agree bit for bit, so the group's lanes keep the same online-softmax
// state (max, sum; base-2 exponentials). Each lane accumulates its share of
// the G rows' outputs and writes it.
//
// With G = R the registers an invocation keeps are attention_tiled's: HD4
// vec4s of query and HD4 of accumulator (R rows x HD4 / R), and R x BK
// scores, and a block is 64 rows. With G = 1 they are HD4 / R of each and BK
// scores: a head of 256, whose 128 vec4s spill an invocation's registers,
// keeps 32 (R = 4); a block is then 64 / R rows, each key read once a row.
// Every tile in the block's key range is scored for every row, hidden keys
// masked (no row skips a tile on its own: the group's shuffles go together).
//
// Row groups: R consecutive subgroup lanes, R dividing the adapter's smallest
// subgroup and 64. Which lanes share a subgroup is not tied to the
// invocation index, so each group takes its slot in the block (its rows
// t0 + G * slot + a, a < G) from a workgroup counter, by its first lane.
enable subgroups;
// The shuffles' loops run alike in every invocation; the analysis cannot see that the subgroup values they read
// (this lane's part and slot) keep them uniform.
diagnostic(off, subgroup_uniformity);
#include "attention_io"
#include "attention_tile"

// Lanes of a row group, the rows it holds (R, or 1), the vec4s of a head each lane holds, and the rows of a block.
const R: u32 = {{R}}u;
const G: u32 = {{G}}u;
const HDP: u32 = HD4 / R;
const C4: u32 = BK / 4u;
const BQ: u32 = WG / R * G;

// Hands each row group its slot in the block.
var<workgroup> next_slot: atomic<u32>;

// The sum of the group's lanes' partials, the same in each of its lanes.
fn group_sum(d: vec4<f32>) -> vec4<f32> {
  var s = d + subgroupShuffleXor(d, 1u);
#if R4
  s += subgroupShuffleXor(s, 2u);
#endif
  return s;
}

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_invocation_id) sgi: u32) {
  let b = block_of(wid, nwg);
  if (!b.live) { return; }

  // This lane's group and share: the group's first lane draws its slot, and the group reads it from that lane.
  if (lid == 0u) { atomicStore(&next_slot, 0u); }
  workgroupBarrier();
  let part = sgi % R;
  var drawn = 0u;
  if (part == 0u) { drawn = atomicAdd(&next_slot, 1u); }
  let slot = subgroupShuffle(drawn, sgi - part);

  // The group's G rows; a row past T keeps an empty range, so every key is hidden from it, and writes nothing.
  var qp: array<i32, G>;
  var lo: array<u32, G>;
  var hi: array<u32, G>;
  var qv: array<vec4<f32>, G * HDP>;
  var acc: array<vec4<f32>, G * HDP>;
  var m: array<f32, G>;
  var l: array<f32, G>;
  for (var a = 0u; a < G; a++) {
    let tt = b.t0 + slot * G + a;
    let t = min(tt, p.T - 1u);
    qp[a] = qpos[t];
    let rb = bounds[t];
    lo[a] = max(rb.x, b.first);
    hi[a] = select(0u, min(rb.y, b.last), tt < p.T);
    let qbase = (t * p.q_stride + p.q_offset) / 4u + b.h * HD4;
    for (var i = 0u; i < HDP; i++) {
      qv[a * HDP + i] = q[qbase + i * R + part] * (p.scale * LOG2E);
      acc[a * HDP + i] = vec4<f32>(0.0);
    }
    m[a] = NEG;
    l[a] = 0.0;
  }

  for (var j0 = b.first; j0 < b.last; j0 += BK) {
    stage_tile(j0, b.last, b.kvh, lid);
    workgroupBarrier();

    // Scores of four keys at a time for the G rows: this lane's share of each key read once, then the group's sum.
    var s: array<vec4<f32>, G * C4>;
    var mx: array<f32, G>;
    for (var a = 0u; a < G; a++) { mx[a] = m[a]; }
    for (var c4 = 0u; c4 < C4; c4++) {
      let kb = 4u * c4 * HD4;
      // Zeroed explicitly for every four keys (SwiftShader kept the last four's sums in a bare declaration).
      var d = array<vec4<f32>, G>();
      for (var i = 0u; i < HDP; i++) {
        let j = i * R + part;
        let k0 = ks[kb + j];
        let k1 = ks[kb + HD4 + j];
        let k2 = ks[kb + 2u * HD4 + j];
        let k3 = ks[kb + 3u * HD4 + j];
        for (var a = 0u; a < G; a++) {
          let qi = qv[a * HDP + i];
          d[a] += vec4<f32>(dot(qi, k0), dot(qi, k1), dot(qi, k2), dot(qi, k3));
        }
      }
      for (var a = 0u; a < G; a++) {
        let sc = select(vec4<f32>(NEG), group_sum(d[a]), seen4(j0 + 4u * c4, c4, lo[a], hi[a], qp[a]));
        s[a * C4 + c4] = sc;
        mx[a] = max(mx[a], max(max(sc.x, sc.y), max(sc.z, sc.w)));
      }
    }
    // One rescale a tile per row; hidden keys (scored NEG) weigh 0, even while a row has seen nothing (mx NEG).
    for (var a = 0u; a < G; a++) {
      let corr = exp2(m[a] - mx[a]);
      l[a] *= corr;
      for (var i = 0u; i < HDP; i++) { acc[a * HDP + i] *= corr; }
      m[a] = mx[a];
    }
    for (var c4 = 0u; c4 < C4; c4++) {
      var e: array<vec4<f32>, G>;
      for (var a = 0u; a < G; a++) {
        let sc = s[a * C4 + c4];
        e[a] = select(vec4<f32>(0.0), exp2(sc - vec4<f32>(m[a])), sc > vec4<f32>(NEG));
        l[a] += (e[a].x + e[a].y) + (e[a].z + e[a].w);
      }
      let vb = 4u * c4 * HD4;
      for (var i = 0u; i < HDP; i++) {
        let j = i * R + part;
        let v0 = vs[vb + j];
        let v1 = vs[vb + HD4 + j];
        let v2 = vs[vb + 2u * HD4 + j];
        let v3 = vs[vb + 3u * HD4 + j];
        for (var a = 0u; a < G; a++) {
          let w = e[a];
          acc[a * HDP + i] += w.x * v0 + w.y * v1 + w.z * v2 + w.w * v3;
        }
      }
    }
    workgroupBarrier();
  }

  for (var a = 0u; a < G; a++) {
    let t = b.t0 + slot * G + a;
    if (t >= p.T) { break; }
#if SPLIT
    let o = (t * p.H + b.h) * p.splits + b.split;
    if (part == 0u) { ml[o] = vec2<f32>(m[a], l[a]); }
    for (var i = 0u; i < HDP; i++) { out[o * HD4 + i * R + part] = acc[a * HDP + i]; }
#else
    let inv = select(0.0, 1.0 / l[a], l[a] > 0.0);
    let ob = (t * p.H + b.h) * HD4;
    for (var i = 0u; i < HDP; i++) { out[ob + i * R + part] = acc[a * HDP + i] * inv; }
#endif
  }
}
