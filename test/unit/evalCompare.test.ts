// `chorus eval compare` (issue 30): the oracle union, complementarity counts, refusing reports that
// differ in tasks or settings (and --intersect / --force), the writers, the command line.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { CompareError, compareReports } from '../../src/core/eval/compare.js';
import { renderComparisonHtml, renderComparisonMarkdown, writeComparison } from '../../src/core/eval/report/compare.js';
import { computeMetrics } from '../../src/core/eval/metrics.js';
import { REPORT_SCHEMA_VERSION, type EvalReport } from '../../src/core/eval/report/model.js';
import type { SampleRecord, TaskRecord } from '../../src/core/eval/task.js';
import { scratchDir } from '../helpers.js';

/** Per task: its samples as [coverage, passed]. */
type Spec = Record<string, Array<[number, boolean]>>;

function sample(j: number, coverage: number, passed: boolean): SampleRecord {
  return {
    sample: j,
    seed: j + 1,
    coverage,
    passed,
    sim_ok: true,
    status: 'success',
    reward: coverage,
    best_round: 0,
    rounds: [],
    tokens: { prompt: 0, completion: 0 },
    wall_s: 0,
  };
}

function report(label: string, spec: Spec, config: Partial<EvalReport['config']> = {}): EvalReport {
  const tasks: TaskRecord[] = Object.entries(spec).map(([id, ss]) => ({
    id,
    top: 'top',
    instance: 'uut',
    threshold: 0.9,
    samples: ss.map(([c, p], j) => sample(j, c, p)),
  }));
  const m = computeMetrics(tasks.map((t) => t.samples.map((s) => ({ ok: s.sim_ok, coverage: s.coverage, passed: s.passed }))));
  return {
    schema_version: REPORT_SCHEMA_VERSION,
    suite: {
      name: 'toy',
      path: '/suite/toy',
      format: 'verilog-eval',
      tasks_in_suite: tasks.length,
      tasks_selected: tasks.length,
      skipped: [],
    },
    row: { kind: 'model', label },
    config: {
      samples: 2,
      rounds: 3,
      workers: 1,
      seed: 1,
      history: 'markov',
      sampling: {},
      simulator: { name: 'verilator', version: '5.030' },
      limits: {},
      score: 'paper',
      resume: false,
      ...config,
    },
    aggregate: {
      ...m,
      errors: 0,
      tokens: { prompt: 0, completion: 0, total: 0 },
      wall_s: 1,
      sim_s: 0,
      model_s: 0,
      candidates: 0,
      candidates_per_min: 0,
      cached_samples: 0,
      coverage_histogram: new Array(10).fill(0),
    },
    per_round: [],
    tasks,
    complete: true,
    started_at: '2026-01-01T00:00:00.000Z',
    finished_at: '2026-01-01T00:00:01.000Z',
  };
}

// Row A passes t1 always, t2 half the time; row B passes t2 always and t3 half the time.
const A = report('A', {
  t1: [
    [1, true],
    [1, true],
  ],
  t2: [
    [0.95, true],
    [0.5, false],
  ],
  t3: [
    [0.2, false],
    [0.4, false],
  ],
  t4: [
    [0.1, false],
    [0.1, false],
  ],
});
const B = report('B', {
  t1: [
    [0.6, false],
    [0.8, false],
  ],
  t2: [
    [0.92, true],
    [0.91, true],
  ],
  t3: [
    [0.9, true],
    [0.3, false],
  ],
  t4: [
    [0.3, false],
    [0.1, false],
  ],
});

describe('compareReports', () => {
  it('two rows: row figures, the oracle union, pairwise counts', () => {
    const c = compareReports([
      { label: 'A', report: A },
      { label: 'B', report: B },
    ]);
    expect(c.rows.map((r) => r.pass_at_1)).toEqual([A.aggregate.pass_at_1, B.aggregate.pass_at_1]);
    expect(c.rows[0].pass_at_1).toBeCloseTo((1 + 0.5 + 0 + 0) / 4);
    // Union picks: t1 A (1 > 0), t2 B (1 > 0.5), t3 B (0.5 > 0), t4 B (tie 0 on Pass@1, Cov@1 0.2 > 0.1).
    expect(c.tasks.map((t) => t.best)).toEqual(['A', 'B', 'B', 'B']);
    expect(c.union.picks).toEqual({ A: 1, B: 3 });
    expect(c.union.pass_at_1).toBeCloseTo((1 + 1 + 0.5 + 0) / 4);
    expect(c.union.pass_at_5).toBeCloseTo(3 / 4);
    expect(c.union.cov_at_1).toBeCloseTo((1 + 0.915 + 0.6 + 0.2) / 4);
    expect(c.union.cov_at_5).toBeCloseTo((1 + 0.92 + 0.9 + 0.3) / 4);
    expect(c.pairs).toEqual([{ a: 'A', b: 'B', a_only: 1, b_only: 1, both: 1, neither: 1 }]);
    expect(c.solved_by_one).toEqual([
      { id: 't1', row: 'A' },
      { id: 't3', row: 'B' },
    ]);
    expect(c.tasks[0].cells[1]).toEqual({ pass_at_1: 0, cov_at_1: 0.7, best_coverage: 0.8, passed: false });
    expect(c.tasks[1].passing).toEqual(['A', 'B']);
  });

  it('three rows: the union takes each task from its best row', () => {
    const C = report('C', {
      t1: [
        [0.1, false],
        [0.1, false],
      ],
      t2: [
        [0.1, false],
        [0.1, false],
      ],
      t3: [
        [0.1, false],
        [0.1, false],
      ],
      t4: [
        [0.95, true],
        [0.97, true],
      ],
    });
    const c = compareReports([
      { label: 'A', report: A },
      { label: 'B', report: B },
      { label: 'C', report: C },
    ]);
    expect(c.tasks.map((t) => t.best)).toEqual(['A', 'B', 'B', 'C']);
    expect(c.union.pass_at_1).toBeCloseTo((1 + 1 + 0.5 + 1) / 4);
    expect(c.union.pass_at_5).toBe(1);
    expect(c.pairs.map((p) => [p.a, p.b, p.a_only, p.b_only, p.both, p.neither])).toEqual([
      ['A', 'B', 1, 1, 1, 1],
      ['A', 'C', 2, 1, 0, 1],
      ['B', 'C', 2, 1, 0, 1],
    ]);
    expect(c.solved_by_one.map((s) => `${s.id}:${s.row}`)).toEqual(['t1:A', 't3:B', 't4:C']);
  });

  it('refuses different settings, naming each; --force lists them as warnings', () => {
    const other = report(
      'B',
      { t1: [[1, true]], t2: [[1, true]], t3: [[1, true]], t4: [[1, true]] },
      {
        rounds: 0,
        simulator: { name: 'icarus', version: '12' },
      },
    );
    const run = () =>
      compareReports([
        { label: 'A', report: A },
        { label: 'B', report: other },
      ]);
    expect(run).toThrow(CompareError);
    expect(run).toThrow(/rounds: A has 3, B has 0; simulator: A has verilator 5.030, B has icarus 12/);
    const c = compareReports(
      [
        { label: 'A', report: A },
        { label: 'B', report: other },
      ],
      { force: true },
    );
    expect(c.warnings).toHaveLength(2);
    // A row without a history mode (built-in, reference) matches any.
    expect(() =>
      compareReports([
        { label: 'A', report: A },
        { label: 'B', report: { ...B, config: { ...B.config, history: null } } },
      ]),
    ).not.toThrow();
  });

  it('refuses reports over different tasks; --intersect compares the common ones', () => {
    const fewer = report('B', { t1: [[1, true]], t2: [[0.1, false]], t9: [[1, true]] }, { samples: 2 });
    const run = () =>
      compareReports([
        { label: 'A', report: A },
        { label: 'B', report: fewer },
      ]);
    expect(run).toThrow(/A lacks t9; B lacks t3, t4/);
    const c = compareReports(
      [
        { label: 'A', report: A },
        { label: 'B', report: fewer },
      ],
      { intersect: true },
    );
    expect(c.tasks.map((t) => t.id)).toEqual(['t1', 't2']);
    expect(c.dropped).toEqual([
      { label: 'A', tasks: ['t3', 't4'] },
      { label: 'B', tasks: ['t9'] },
    ]);
    // Row figures recomputed over the common tasks.
    expect(c.rows[0].pass_at_1).toBeCloseTo((1 + 0.5) / 2);
    expect(c.rows[1].pass_at_1).toBeCloseTo(0.5);
    expect(c.rows[0].tasks).toBe(2);
  });

  it('writes compare.json, .md and a script-free .html with escaped labels', () => {
    const c = compareReports([
      { label: '<A&>', report: A },
      { label: 'B', report: B },
    ]);
    const dir = scratchDir();
    const paths = writeComparison(c, dir);
    expect(JSON.parse(readFileSync(paths.json, 'utf8')).union.picks).toEqual({ '<A&>': 1, B: 3 });
    expect(renderComparisonMarkdown(c)).toContain('| **oracle union** | 62.5% |');
    const html = renderComparisonHtml(c);
    expect(html).not.toMatch(/<script/i);
    expect(html).toContain('&lt;A&amp;&gt;');
    expect(html).not.toContain('<A&>');
    expect(html).toContain('<svg');
  });
});

describe('chorus eval compare', () => {
  const cli = resolve(import.meta.dirname, '..', '..', 'dist', 'cli.js');
  const run = (args: string[], cwd: string) => execa(process.execPath, [cli, 'eval', 'compare', ...args], { cwd, reject: false });

  it('compares two report folders; one line and exit 2 for a mismatch or a missing report', async () => {
    const dir = scratchDir();
    for (const [name, r] of [
      ['a', A],
      ['b', B],
    ] as const) {
      mkdirSync(join(dir, name));
      writeFileSync(join(dir, name, 'report.json'), JSON.stringify(r));
    }
    const ok = await run(['a', 'b/report.json', '--out', 'cmp'], dir);
    expect(ok.exitCode).toBe(0);
    expect(ok.stdout).toMatch(/oracle union\s+Pass@1\s+62\.5%/);
    expect(ok.stdout).toContain('A vs B: 1 only A, 1 only B, 1 both, 1 neither');
    expect(readFileSync(join(dir, 'cmp', 'compare.html'), 'utf8')).toContain('<svg');

    writeFileSync(join(dir, 'c.json'), JSON.stringify({ ...B, config: { ...B.config, samples: 5 } }));
    const bad = await run(['a', 'c.json', '--out', 'cmp'], dir);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr.trim().split('\n')).toHaveLength(1);
    expect(bad.stderr).toMatch(/^chorus eval compare: .*samples: A has 2, B has 5/);
    expect((await run(['a', 'c.json', '--force', '--out', 'cmp'], dir)).exitCode).toBe(0);

    const missing = await run(['a', 'nowhere'], dir);
    expect(missing.exitCode).toBe(2);
    expect(missing.stderr).toContain('no report at nowhere');
    expect((await run(['--help'], dir)).stdout).toContain('--intersect');
  });
});
