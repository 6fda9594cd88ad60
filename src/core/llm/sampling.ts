// Temperature + nucleus (top-p) sampling over one row of logits, fast enough to run per token on a
// 151,936-entry Qwen3 vocabulary. transformers.js's own top-p warper sorts the whole vocabulary
// with a JavaScript comparator every token, which cost more than the model's forward pass at short
// contexts (bench/llm); here the only sort is a native Float32Array sort of the probabilities,
// used to find the nucleus threshold, and the draw is one linear scan.

/** Deterministic PRNG (mulberry32): the same seed gives the same tokens on every machine. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * One token drawn from softmax(logits / temperature), restricted to the smallest set of most
 * probable tokens whose probability reaches `topP` (ties at the threshold are all kept).
 * `temperature <= 0` is greedy (argmax, first on ties).
 */
export function sampleToken(logits: ArrayLike<number>, temperature: number, topP: number, random: () => number): number {
  const n = logits.length;
  if (n === 0) throw new RangeError('sampleToken: empty logits');
  let max = -Infinity;
  let argmax = 0;
  for (let i = 0; i < n; i++) {
    if (logits[i] > max) {
      max = logits[i];
      argmax = i;
    }
  }
  if (!(temperature > 0) || max === -Infinity) return argmax;
  const p = new Float32Array(n);
  const inv = 1 / temperature;
  let z = 0;
  for (let i = 0; i < n; i++) {
    const e = Math.exp((logits[i] - max) * inv);
    p[i] = e;
    z += e;
  }
  // Nucleus threshold: walk the probabilities from the largest down until they reach topP.
  let threshold = 0;
  if (topP < 1) {
    const sorted = Float32Array.from(p).sort();
    const need = Math.max(topP, 0) * z;
    let cum = 0;
    for (let i = n - 1; i >= 0; i--) {
      cum += sorted[i];
      threshold = sorted[i];
      if (cum >= need) break;
    }
  }
  let mass = 0;
  for (let i = 0; i < n; i++) if (p[i] >= threshold) mass += p[i];
  let u = random() * mass;
  let last = argmax;
  for (let i = 0; i < n; i++) {
    if (p[i] < threshold) continue;
    last = i;
    u -= p[i];
    if (u < 0) return i;
  }
  return last; // rounding: the last kept token
}
