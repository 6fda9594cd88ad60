// docs/protocol.md §5 metrics on hand-computed cases.
import { describe, expect, it } from 'vitest';
import { bestAfter, computeMetrics, histogram, ranksAbove, roundCurve, type Outcome } from '../../src/core/eval/metrics.js';
import { passes } from '../../src/core/eval/task.js';
import type { SimResult } from '../../src/core/sim/result.js';

/** Outcomes from coverages against a threshold (null = the candidate did not run). */
const samples = (tau: number, covs: Array<number | null>): Outcome[] =>
  covs.map((c) => ({ ok: c !== null, coverage: c ?? 0, passed: c !== null && c >= tau }));

describe('eval metrics (PROTOCOL §5)', () => {
  it('the worked example: M = 3 tasks, N = 5 samples, thresholds 0.9 / 1.0 / 0.9', () => {
    // Task A (tau 0.90): 0.95 0.80 0.92 0.50 fail   -> passes 1 0 1 0 0, sum c = 3.17, max 0.95
    // Task B (tau 1.00): 1.00 0.99 1.00 1.00 0.70   -> passes 1 0 1 1 0, sum c = 4.69, max 1.00
    // Task C (tau 0.90): 0.50 0.60 0.70 0.80 0.89   -> passes 0 0 0 0 0, sum c = 3.49, max 0.89
    const m = computeMetrics([
      samples(0.9, [0.95, 0.8, 0.92, 0.5, null]),
      samples(1, [1, 0.99, 1, 1, 0.7]),
      samples(0.9, [0.5, 0.6, 0.7, 0.8, 0.89]),
    ]);
    expect(m.pass_at_1).toBeCloseTo(5 / 15, 12); // (2 + 3 + 0) / (3 * 5)
    expect(m.pass_at_5).toBeCloseTo(2 / 3, 12); // A and B have a passing sample, C none
    expect(m.cov_at_1).toBeCloseTo((3.17 + 4.69 + 3.49) / 15, 12); // = 0.756666...
    expect(m.cov_at_5).toBeCloseTo((0.95 + 1 + 0.89) / 3, 12); // = 0.946666...
    expect(m.sim_pass).toBeCloseTo(14 / 15, 12); // one sample of A did not run
    expect(m.tasks).toBe(3);
    expect(m.samples).toBe(15);
  });

  it('a threshold is met at equality; a failed run counts as coverage 0 whatever it reported', () => {
    const m = computeMetrics([
      [
        { ok: true, coverage: 0.9, passed: true },
        { ok: false, coverage: 0.7, passed: false },
      ],
    ]);
    expect(m.pass_at_1).toBe(0.5);
    expect(m.cov_at_1).toBeCloseTo(0.45, 12);
    expect(m.cov_at_5).toBeCloseTo(0.9, 12);
  });

  it('Pass@5 and Cov@5 look only at the first 5 samples', () => {
    const m = computeMetrics([samples(1, [0, 0, 0, 0, 0, 1, 1])]);
    expect(m.pass_at_1).toBeCloseTo(2 / 7, 12);
    expect(m.pass_at_5).toBe(0);
    expect(m.cov_at_5).toBe(0);
    expect(m.cov_at_1).toBeCloseTo(2 / 7, 12);
  });

  it('with 1 sample Pass@5 equals Pass@1; tasks without samples are not scored', () => {
    const m = computeMetrics([samples(0.5, [0.6]), samples(0.5, [0.4]), []]);
    expect(m.pass_at_1).toBe(0.5);
    expect(m.pass_at_5).toBe(0.5);
    expect(m.tasks).toBe(2);
    expect(computeMetrics([])).toMatchObject({ pass_at_1: 0, tasks: 0 });
  });

  it('ranking inside a sample: ran ok, then passed, then coverage', () => {
    const fail: Outcome = { ok: false, coverage: 0, passed: false };
    const low: Outcome = { ok: true, coverage: 0.4, passed: false };
    const hi: Outcome = { ok: true, coverage: 0.8, passed: false };
    const passed: Outcome = { ok: true, coverage: 0.7, passed: true }; // e.g. targets met
    expect(ranksAbove(low, fail)).toBe(true);
    expect(ranksAbove(hi, low)).toBe(true);
    expect(ranksAbove(passed, hi)).toBe(true);
    expect(ranksAbove(low, low)).toBe(false);
    expect(bestAfter([low, fail, hi], 0)).toBe(low);
    expect(bestAfter([low, fail, hi], 1)).toBe(low);
    expect(bestAfter([low, fail, hi], 2)).toBe(hi);
    expect(bestAfter([], 3)).toEqual({ ok: false, coverage: 0, passed: false });
  });

  it('per-round curve: best so far after rounds 0..N; a sample that stopped early keeps its best', () => {
    const o = (c: number | null, tau = 1): Outcome => ({ ok: c !== null, coverage: c ?? 0, passed: c !== null && c >= tau });
    // Task 1: sample 0 fails, then 0.6, then 1.0 (stops); sample 1 reaches 1.0 at once (stops).
    // Task 2: one sample: 0.5, 0.4, 0.9, 0.7 (tau 0.8).
    const tasks = [[[o(null), o(0.6), o(1)], [o(1)]], [[o(0.5, 0.8), o(0.4, 0.8), o(0.9, 0.8), o(0.7, 0.8)]]];
    const c = roundCurve(tasks, 3);
    expect(c.map((p) => p.round)).toEqual([0, 1, 2, 3]);
    // round 0: task1 mean pass (0+1)/2 = 0.5, task2 0 -> 0.25; cov: task1 (0+1)/2=0.5, task2 0.5 -> 0.5
    expect(c[0]).toMatchObject({ pass_at_1: 0.25, pass_at_5: 0.5, cov_at_1: 0.5, cov_at_5: 0.75, sim_pass: 0.75 });
    // round 1: task1 (0.6, 1) -> pass 0.5, cov 0.8; task2 best 0.5 -> pass 0, cov 0.5
    expect(c[1].pass_at_1).toBeCloseTo(0.25, 12);
    expect(c[1].cov_at_1).toBeCloseTo(0.65, 12);
    expect(c[1].sim_pass).toBe(1);
    // round 2: task1 both 1.0; task2 0.9 passes -> everything passes
    expect(c[2]).toMatchObject({ pass_at_1: 1, pass_at_5: 1 });
    expect(c[2].cov_at_1).toBeCloseTo((1 + 0.9) / 2, 12);
    // round 3: the 0.7 candidate does not replace the 0.9 best
    expect(c[3]).toEqual({ ...c[2], round: 3 });
  });

  it('coverage histogram: 10 bins, 1.0 in the last, 0.1 in the second', () => {
    expect(histogram([0, 0.05, 0.1, 0.55, 0.999, 1, 1])).toEqual([2, 1, 0, 0, 0, 1, 0, 0, 0, 3]);
  });
});

describe('pass rule with LLM4Cov targets', () => {
  const row = (name: string, level: number, overall: number | null, block: number | null, fsm: number | null = null) => ({
    name,
    level,
    'Overall Average': overall,
    'Overall Covered': null,
    'Code Average': null,
    'Code Covered': null,
    'Fsm Average': fsm,
    'Fsm Covered': null,
    'Functional Average': null,
    'Functional Covered': null,
    Toggle: null,
    Block: block,
    Assertion: null,
  });
  const result = (overall: number, rows: ReturnType<typeof row>[]): SimResult =>
    ({
      status: 'success',
      coverage: { waived: { overall } },
      cov_info: { summary: rows, detail: '', runtime_sec: 0 },
    }) as unknown as SimResult;

  it('coverage target only: c >= tau', () => {
    const t = { coverageTarget: 90, top: 'm', instance: 'uut' };
    expect(passes(t, result(0.9, []))).toBe(true);
    expect(passes(t, result(0.89, []))).toBe(false);
    expect(passes(t, null)).toBe(false);
    expect(passes(t, { status: 'xrun_failed', coverage: null } as unknown as SimResult)).toBe(false);
  });

  it('targets: the DUT instance is the top row; a missing non-Overall metric is skipped; sub-instances by name', () => {
    const t = {
      coverageTarget: 90,
      top: 'top_m',
      instance: 'dut',
      targets: [
        { inst_name: 'dut', metric: 'Overall Average', target_percentage: 90 },
        { inst_name: 'dut', metric: 'Fsm Average', target_percentage: 100 }, // null in the report: skipped
        { inst_name: 'u_sub', metric: 'Block', target_percentage: 80 },
      ],
    };
    expect(passes(t, result(0.95, [row('top_m', 0, 0.95, 1), row('u_sub', 1, 0.9, 0.85)]))).toBe(true);
    expect(passes(t, result(0.95, [row('top_m', 0, 0.95, 1), row('u_sub', 1, 0.9, 0.75)]))).toBe(false);
    expect(passes(t, result(0.85, [row('top_m', 0, 0.85, 1), row('u_sub', 1, 0.9, 0.85)]))).toBe(false);
    expect(passes(t, result(0.95, [row('top_m', 0, 0.95, 1)]))).toBe(false); // a target on an instance the report lacks fails
  });
});
