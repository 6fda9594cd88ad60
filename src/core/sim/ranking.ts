// Ranking of candidates inside one run (docs/protocol.md §5): simulated ok, legal (no design
// assertion fired), has coverage, target passed, overall coverage — lexicographic. One definition for the agent, the built-in generator
// and the evaluator.
import type { SimResult } from './result.js';
import { COVERAGE_TOLERANCE, DEFAULT_COVERAGE_TARGET } from '../vocabulary/defaults.js';

/** Overall coverage (after waivers) as a fraction, or null when the run produced none. */
export function overallCoverage(r: SimResult | null | undefined): number | null {
  return r?.status === 'success' ? (r.coverage?.waived.overall ?? null) : null;
}

/** "Passed": coverage `c` (a fraction) reaches the coverage target (a percent, the run setting
 * `coverageTarget`). The one definition (agent, generator, evaluator, reward service). */
export function meetsTarget(c: number | null | undefined, coverageTarget: number): boolean {
  return c !== null && c !== undefined && c >= coverageTarget / 100 - COVERAGE_TOLERANCE;
}

/**
 * The rank of a run: simulated without error, broke none of the design's assertions, has
 * coverage, target passed, overall coverage. The second key is the product's rule on top of the
 * protocol's four (a fired assertion is a failed run in every score mode, sim/assertions.ts
 * runFailure): coverage reached by breaking the design's own checks never outranks a legal run,
 * however much higher. A design without assertions ranks exactly as the protocol says.
 */
export function rankKey(r: SimResult | null, coverageTarget = DEFAULT_COVERAGE_TARGET): [number, number, number, number, number] {
  if (!r) return [0, 0, 0, 0, -1];
  const c = overallCoverage(r);
  const legal = r.dutAssertions?.length ? 0 : 1;
  return [r.status === 'success' ? 1 : 0, legal, c !== null ? 1 : 0, meetsTarget(c, coverageTarget) ? 1 : 0, c ?? 0];
}

/** Lexicographic comparison of two rank keys: true when `ka` is strictly above `kb`. */
export function keyAbove(ka: readonly number[], kb: readonly number[]): boolean {
  for (let i = 0; i < ka.length; i++) if (ka[i] !== kb[i]) return ka[i] > kb[i];
  return false;
}

/** A run stopped by the user (Ctrl-C, Cancel) before it finished: it measured nothing, so it is
 * never a best round, and nothing is written for it. */
export function cancelledRun(r: SimResult | null | undefined): boolean {
  return r?.status === 'exception' && r.err_msg === 'cancelled';
}

/** True when `a` ranks strictly above `b` (a missing `b` ranks below anything but a cancelled run). */
export function better(a: SimResult | null, b: SimResult | null | undefined, coverageTarget = DEFAULT_COVERAGE_TARGET): boolean {
  if (cancelledRun(a)) return false;
  if (b === undefined) return true;
  return keyAbove(rankKey(a, coverageTarget), rankKey(b, coverageTarget));
}
