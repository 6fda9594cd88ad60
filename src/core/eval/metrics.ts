// Evaluation metrics, exactly docs/protocol.md §5, as pure functions over per-sample outcomes.
// With M tasks and N samples per task (c_ij coverage of task i sample j, tau_i its coverage target):
//   Pass@1 = (1/MN) sum_i sum_j 1[c_ij >= tau_i]    Pass@5 = (1/M) sum_i max_{j<5} 1[c_ij >= tau_i]
//   Cov@1  = (1/MN) sum_i sum_j c_ij                 Cov@5  = (1/M) sum_i max_{j<5} c_ij
// plus the sim-pass rate (fraction of samples whose best candidate simulated and yielded coverage).
// A task with fewer samples than N is averaged over the samples it has (each task weighs 1/M);
// Pass@5/Cov@5 use the first min(5, N) samples.
import { keyAbove } from '../sim/ranking.js';

/** One candidate (a round) or one sample's best candidate. */
export interface Outcome {
  /** Simulated and yielded coverage. */
  ok: boolean;
  /** Coverage in [0,1]; counts as 0 when not ok. */
  coverage: number;
  /** Met the task's coverage target / targets. */
  passed: boolean;
}

export interface Metrics {
  pass_at_1: number;
  pass_at_5: number;
  cov_at_1: number;
  cov_at_5: number;
  sim_pass: number;
  /** Tasks scored (M). */
  tasks: number;
  /** Samples scored (sum of N_i). */
  samples: number;
}

export const PASS_AT_K = 5;

const mean = (xs: number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
const cov = (o: Outcome): number => (o.ok ? Math.min(1, Math.max(0, o.coverage)) : 0);

/** Metrics over tasks, each a list of its samples' outcomes (in sample order). Tasks with no
 * samples are not scored. */
export function computeMetrics(tasks: Outcome[][], k = PASS_AT_K): Metrics {
  const scored = tasks.filter((s) => s.length > 0);
  if (!scored.length) return { pass_at_1: 0, pass_at_5: 0, cov_at_1: 0, cov_at_5: 0, sim_pass: 0, tasks: 0, samples: 0 };
  return {
    pass_at_1: mean(scored.map((s) => mean(s.map((o) => (o.passed ? 1 : 0))))),
    pass_at_5: mean(scored.map((s) => (s.slice(0, k).some((o) => o.passed) ? 1 : 0))),
    cov_at_1: mean(scored.map((s) => mean(s.map(cov)))),
    cov_at_5: mean(scored.map((s) => Math.max(...s.slice(0, k).map(cov)))),
    sim_pass: mean(scored.map((s) => mean(s.map((o) => (o.ok ? 1 : 0))))),
    tasks: scored.length,
    samples: scored.reduce((a, s) => a + s.length, 0),
  };
}

/** §5 ranking inside one run: (simulated ok and has coverage, passed, coverage), lexicographic.
 * True when a ranks strictly above b. */
export function ranksAbove(a: Outcome, b: Outcome | undefined): boolean {
  if (!b) return true;
  // The key of sim/ranking.ts's rankKey, from an outcome (its `passed` may include LLM4Cov targets).
  return keyAbove([a.ok ? 1 : 0, a.passed ? 1 : 0, cov(a)], [b.ok ? 1 : 0, b.passed ? 1 : 0, cov(b)]);
}

const NONE: Outcome = { ok: false, coverage: 0, passed: false };

/** The best candidate among the first k+1 rounds of a sample (rounds 0..k); a sample that stopped
 * early keeps its best. No rounds at all: a failed outcome. */
export function bestAfter(rounds: Outcome[], k: number): Outcome {
  let best: Outcome | undefined;
  for (const r of rounds.slice(0, k + 1)) if (ranksAbove(r, best)) best = r;
  return best ?? NONE;
}

export interface RoundPoint extends Omit<Metrics, 'tasks' | 'samples'> {
  /** Metrics when every sample keeps its best candidate of rounds 0..round. */
  round: number;
}

/** Per-round curves: for round = 0..maxRound, the metrics with each task/sample's best-so-far
 * candidate after that many refinement rounds. `tasks[i][j]` = the rounds of sample j of task i. */
export function roundCurve(tasks: Outcome[][][], maxRound: number, k = PASS_AT_K): RoundPoint[] {
  const out: RoundPoint[] = [];
  for (let r = 0; r <= maxRound; r++) {
    const m = computeMetrics(
      tasks.map((samples) => samples.map((rounds) => bestAfter(rounds, r))),
      k,
    );
    out.push({
      round: r,
      pass_at_1: m.pass_at_1,
      pass_at_5: m.pass_at_5,
      cov_at_1: m.cov_at_1,
      cov_at_5: m.cov_at_5,
      sim_pass: m.sim_pass,
    });
  }
  return out;
}

/** Histogram of coverages into `bins` equal bins over [0,1] (1.0 falls in the last bin). */
export function histogram(values: number[], bins = 10): number[] {
  const h = new Array<number>(bins).fill(0);
  for (const v of values) h[Math.min(bins - 1, Math.max(0, Math.floor(v * bins + 1e-9)))]++;
  return h;
}
