// The local backend's sampler against a direct (slow, obviously right) nucleus implementation.
import { describe, expect, it } from 'vitest';
import { sampleToken, seededRandom } from '../../src/core/llm/sampling.js';

/** The nucleus as the definition states it: sort by probability, keep the shortest prefix >= topP. */
function referenceNucleus(logits: number[], t: number, topP: number): Map<number, number> {
  const max = Math.max(...logits);
  const e = logits.map((l) => Math.exp((l - max) / t));
  const z = e.reduce((a, b) => a + b, 0);
  const order = e.map((p, i) => [p / z, i] as const).sort((a, b) => b[0] - a[0]);
  const keep: Array<readonly [number, number]> = [];
  let cum = 0;
  for (const x of order) {
    keep.push(x);
    cum += x[0];
    if (cum >= topP) break;
  }
  const mass = keep.reduce((a, x) => a + x[0], 0);
  return new Map(keep.map(([p, i]) => [i, p / mass]));
}

describe('sampleToken', () => {
  it('greedy at temperature 0 (first index on ties)', () => {
    expect(sampleToken([0.1, 3, 3, -1], 0, 0.8, Math.random)).toBe(1);
  });

  it('draws only from the nucleus, with its renormalized probabilities', () => {
    const rand = seededRandom(7);
    const logits = Array.from({ length: 50 }, (_, i) => Math.sin(i * 1.7) * 3);
    const ref = referenceNucleus(logits, 0.7, 0.8);
    const n = 40_000;
    const counts = new Map<number, number>();
    for (let k = 0; k < n; k++) {
      const tok = sampleToken(logits, 0.7, 0.8, rand);
      counts.set(tok, (counts.get(tok) ?? 0) + 1);
    }
    expect([...counts.keys()].every((t) => ref.has(t))).toBe(true);
    for (const [tok, p] of ref) expect(Math.abs((counts.get(tok) ?? 0) / n - p)).toBeLessThan(0.015);
    expect(ref.size).toBeLessThan(50); // the tail really is cut
  });

  it('top-p 1 keeps every token; a dominant token under small top-p is always chosen', () => {
    const rand = seededRandom(3);
    const seen = new Set<number>();
    for (let k = 0; k < 2000; k++) seen.add(sampleToken([0, 0, 0, 0], 1, 1, rand));
    expect(seen).toEqual(new Set([0, 1, 2, 3]));
    for (let k = 0; k < 100; k++) expect(sampleToken([5, 0, 0, 0], 1, 0.5, rand)).toBe(0);
  });

  it('the same seed gives the same tokens', () => {
    const logits = Array.from({ length: 1000 }, (_, i) => Math.cos(i));
    const a = seededRandom(42);
    const b = seededRandom(42);
    const xs = Array.from({ length: 20 }, () => sampleToken(logits, 0.7, 0.8, a));
    expect(Array.from({ length: 20 }, () => sampleToken(logits, 0.7, 0.8, b))).toEqual(xs);
    expect(new Set(xs).size).toBeGreaterThan(1);
  });
});
