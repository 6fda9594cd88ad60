// Prompt-lookup drafting for the ONNX engine's decode loop (llama.cpp has its own:
// node-llama-cpp's InputLookupTokenPredictor). A refinement reply mostly rewrites the testbench the
// prompt already holds, so the tokens after the latest occurrence of the reply's last few tokens
// are a good guess of what comes next. The guesses cost one batched forward pass; the loop keeps
// only those the sampler draws itself, so the output is the one plain decoding gives.

export interface LookupOptions {
  /** Longest and shortest n-gram matched (default 4 and 2). */
  maxNgram?: number;
  minNgram?: number;
  /** Most tokens proposed at once (default 8). */
  maxDraft?: number;
}

/**
 * Up to `maxDraft` tokens that followed an earlier occurrence of the sequence's last n tokens (the
 * longest n from maxNgram down to minNgram that occurs): the latest occurrence with a full draft
 * after it, else the one with the longest; [] when none occurs.
 */
export function lookupDraft(seq: readonly number[], o: LookupOptions = {}): number[] {
  const maxN = o.maxNgram ?? 4;
  const minN = o.minNgram ?? 2;
  const maxDraft = o.maxDraft ?? 8;
  const L = seq.length;
  for (let n = Math.min(maxN, L - 1); n >= minN; n--) {
    let best = -1;
    let bestLen = 0;
    for (let i = L - n - 1; i >= 0; i--) {
      let j = 0;
      while (j < n && seq[i + j] === seq[L - n + j]) j++;
      if (j < n) continue;
      const len = Math.min(maxDraft, L - (i + n));
      if (len > bestLen) [best, bestLen] = [i + n, len];
      if (len === maxDraft) break;
    }
    if (bestLen) return seq.slice(best, best + bestLen) as number[];
  }
  return [];
}
