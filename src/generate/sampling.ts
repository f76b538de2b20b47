/** Choosing the next token from logits: greedy, temperature and top-p (nucleus). */
export interface SamplingOptions {
  /** 0 means greedy (argmax, first index on ties, as llama2.c). */
  temperature: number;
  /** Nucleus mass in (0, 1]; 1 disables it. */
  topP?: number;
  seed?: number;
}

/** A small seeded generator (xorshift*), so sampled runs are reproducible. */
export function rng(seed = 42): () => number {
  let s = BigInt(seed) || 1n;
  return () => {
    s ^= s >> 12n;
    s ^= (s << 25n) & 0xffffffffffffffffn;
    s ^= s >> 27n;
    return Number(((s * 0x2545f4914f6cdd1dn) & 0xffffffffffffffffn) >> 40n) / 16777216;
  };
}

export function argmax(logits: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i] > logits[best]) best = i;
  return best;
}

export function sample(logits: Float32Array, opts: SamplingOptions, random: () => number): number {
  if (!(opts.temperature > 0)) return argmax(logits);
  const n = logits.length;
  let m = -Infinity;
  for (let i = 0; i < n; i++) m = Math.max(m, logits[i]);
  const p = new Float64Array(n);
  let sum = 0;
  for (let i = 0; i < n; i++) sum += p[i] = Math.exp((logits[i] - m) / opts.temperature);
  const topP = opts.topP ?? 1;
  let idx = Array.from({ length: n }, (_, i) => i);
  let mass = sum;
  if (topP < 1) {
    idx.sort((a, b) => p[b] - p[a]);
    let acc = 0;
    let cut = n;
    for (let i = 0; i < n; i++) {
      acc += p[idx[i]];
      if (acc >= topP * sum) {
        cut = i + 1;
        break;
      }
    }
    idx = idx.slice(0, cut);
    mass = acc;
  }
  let r = random() * mass;
  for (const i of idx) {
    r -= p[i];
    if (r <= 0) return i;
  }
  return idx[idx.length - 1];
}
