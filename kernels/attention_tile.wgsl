// What attention_tiled.wgsl and attention_tiled_sg.wgsl share, after attention_io: a workgroup of WG invocations
// takes a block of BQ query rows of one head (each kernel sets BQ), walks the keys their ranges cover, and stages a
// tile of BK keys in workgroup memory at a time.

// Keys per tile, a multiple of 4: the host sizes it to the adapter's workgroup memory.
const BK: u32 = {{BK}}u;
const WG: u32 = 64u;
const LOADS: u32 = (BK * HD4 + WG - 1u) / WG;

// The tile: keys and values decoded to f32 (unpacked once, not once per row), and their positions.
var<workgroup> ks: array<vec4<f32>, BK * HD4>;
var<workgroup> vs: array<vec4<f32>, BK * HD4>;
var<workgroup> kps: array<vec4<i32>, BK / 4u>;

// Which of the four keys j..j+3 (tile slot c4) the row at position qp sees, within its key range [lo, hi).
fn seen4(j: u32, c4: u32, lo: u32, hi: u32, qp: i32) -> vec4<bool> {
  let jv = vec4<u32>(j) + vec4<u32>(0u, 1u, 2u, 3u);
  let kp = kps[c4];
  let qv = vec4<i32>(qp);
  var s = (jv >= vec4<u32>(lo)) & (jv < vec4<u32>(hi)) & (kp <= qv);
  if (p.window > 0u) { s = s & (qv - kp < vec4<i32>(i32(p.window))); }
  return s;
}

// Workgroup wid's block: its first row, key slice, head and kv head, the keys [first, last) it walks (block_keys),
// and whether it is one (the last row of workgroups of a 2-D dispatch may be past them: no keys). Numbered with the
// row block fastest, so the workgroups running together read the same keys of the same head. Uniform across the
// workgroup, as the tile loop's barriers need.
struct Block { t0: u32, split: u32, h: u32, kvh: u32, first: u32, last: u32, live: bool }
fn block_of(wid: vec3<u32>, nwg: vec3<u32>) -> Block {
  let blocks = (p.T + BQ - 1u) / BQ;
  let wg = wid.x + wid.y * nwg.x;
  let h = wg / (blocks * p.splits);
  let t0 = (wg % blocks) * BQ;
  let split = (wg / blocks) % p.splits;
  let live = wg < blocks * p.H * p.splits;
  var span = vec2<u32>(0u);
  if (live) { span = block_keys(t0, split); }
  return Block(t0, split, h, h / (p.H / p.NKV), span.x, span.y, live);
}

// The keys [first, last) the block from row t0 walks: the union of its rows' key ranges, cut to the cache and to
// slice `split`. The same loop in every invocation, so the tile loop it bounds is uniform (the barriers need that).
fn block_keys(t0: u32, split: u32) -> vec2<u32> {
  var first = 0xffffffffu;
  var last = 0u;
  let rows = min(BQ, p.T - t0);
  for (var r = 0u; r < rows; r++) {
    let b = bounds[t0 + r];
    first = min(first, b.x);
    last = max(last, b.y);
  }
  return key_slice(first, min(last, p.n), split);
}

// Invocation lid's share of staging keys [j0, j0 + BK) of kv head kvh, before the caller's barrier: consecutive
// invocations read consecutive vec4s of a key (coalesced). Keys past `last` repeat the last one; every row masks them.
fn stage_tile(j0: u32, last: u32, kvh: u32, lid: u32) {
  let kstride = p.NKV * HD4;
  for (var r = 0u; r < LOADS; r++) {
    let e = r * WG + lid;
    if (e < BK * HD4) {
      let g = min(j0 + e / HD4, last - 1u) * kstride + kvh * HD4 + e % HD4;
      ks[e] = load_k(g);
      vs[e] = load_v(g);
    }
  }
  if (lid < BK / 4u) {
    let j = vec4<u32>(j0 + 4u * lid) + vec4<u32>(0u, 1u, 2u, 3u);
    let c = min(j, vec4<u32>(last - 1u));
    kps[lid] = vec4<i32>(kpos[c.x], kpos[c.y], kpos[c.z], kpos[c.w]);
  }
}
