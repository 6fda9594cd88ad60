// `chorus eval compare` (paper §5.2): several rows' report.json files side by side. Pure: reports
// in, a Comparison out (the writers are report/compare.ts). Besides each row's figures it gives
// - the ORACLE UNION: per task, the row that did best on it by the protocol's per-task figure
//   (Pass@1 of the task = the fraction of its samples that passed, then Cov@1 = their mean
//   coverage), and the suite metrics (§5, metrics.ts) computed over the tasks with each task's
//   samples taken from its best row. It is what a router that always picked the right row for the
//   task would score: an upper bound on combining the rows, not a row anyone ran;
// - COMPLEMENTARITY: for each pair of rows, the tasks solved (some sample passed) by one only, by
//   both, by neither, and the tasks exactly one row solves.
// Rows must cover the same tasks (or `intersect`) under the same protocol settings (or `force`).
import { DEFAULT_SCORE } from '../vocabulary/defaults.js';
import type { EvalReport } from './report/model.js';
import type { TaskRecord } from './task.js';
import { computeMetrics, type Outcome } from './metrics.js';

export class CompareError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CompareError';
  }
}

export interface CompareInput {
  label: string;
  report: EvalReport;
}

export interface CompareOptions {
  /** Compare the tasks every report holds (and list the others) instead of refusing. */
  intersect?: boolean;
  /** Compare reports whose protocol settings differ (the differences become warnings). */
  force?: boolean;
}

export interface Figures {
  pass_at_1: number;
  pass_at_5: number;
  cov_at_1: number;
  cov_at_5: number;
  /** Tasks scored. */
  tasks: number;
}

export interface RowFigures extends Figures {
  label: string;
  path?: string;
}

/** One row on one task. */
export interface TaskCell {
  /** Fraction of the task's samples that passed (null: the task errored in this row / no samples). */
  pass_at_1: number | null;
  cov_at_1: number | null;
  /** Best coverage among the samples (0 when none). */
  best_coverage: number;
  /** Some sample passed. */
  passed: boolean;
}

export interface TaskComparison {
  id: string;
  /** In row order. */
  cells: TaskCell[];
  /** Labels of the rows with a passing sample. */
  passing: string[];
  /** Label of the task's best row (the union's pick); null when no row scored it. */
  best: string | null;
}

export interface PairCount {
  a: string;
  b: string;
  a_only: number;
  b_only: number;
  both: number;
  neither: number;
}

export interface Comparison {
  rows: RowFigures[];
  union: Figures & { /** Tasks the union took from each row (label -> count). */ picks: Record<string, number> };
  pairs: PairCount[];
  /** Tasks exactly one row solves, with that row. */
  solved_by_one: Array<{ id: string; row: string }>;
  tasks: TaskComparison[];
  /** With `intersect`: the tasks left out, per report. */
  dropped: Array<{ label: string; tasks: string[] }>;
  /** With `force`: the protocol differences accepted. */
  warnings: string[];
  suite: { name: string; format: string };
}

const outcomes = (t: TaskRecord | undefined): Outcome[] =>
  t && !t.error ? t.samples.map((s) => ({ ok: s.sim_ok, coverage: s.coverage, passed: s.passed })) : [];

function cell(t: TaskRecord | undefined): TaskCell {
  const os = outcomes(t);
  if (!os.length) return { pass_at_1: null, cov_at_1: null, best_coverage: 0, passed: false };
  const m = computeMetrics([os]);
  return {
    pass_at_1: m.pass_at_1,
    cov_at_1: m.cov_at_1,
    best_coverage: Math.max(...os.map((o) => (o.ok ? o.coverage : 0))),
    passed: os.some((o) => o.passed),
  };
}

/** The protocol settings two rows must share, as label -> printable value. The base seed
 * (config.settings.seed) is not one: rows may differ in it by design (one generator under several seeds is
 * a comparison of its own, and its oracle union the best of those seeds per task). */
function settings(r: EvalReport): Record<string, string | null> {
  return {
    suite: r.suite.name,
    'suite format': r.suite.format,
    samples: String(r.config.settings.samples),
    rounds: String(r.config.settings.rounds),
    // Only model rows have a history mode; a built-in or reference row (null) matches any.
    history: r.config.settings.history,
    simulator: `${r.config.simulator.name} ${r.config.simulator.version}`,
    score: r.config.settings.score ?? DEFAULT_SCORE,
  };
}

/** Row labels that tell rows apart: a label several rows share gets each row's seed when the seeds
 * differ (the same generator or model at several seeds), then a counter if still shared. */
function uniqueLabels(inputs: CompareInput[]): string[] {
  const count = (ls: string[], l: string): number => ls.filter((x) => x === l).length;
  const base = inputs.map((i) => i.label);
  const withSeed = inputs.map((i, k) =>
    count(base, i.label) > 1 && new Set(inputs.filter((j) => j.label === i.label).map((j) => j.report.config.settings.seed)).size > 1
      ? `${base[k]} (seed ${i.report.config.settings.seed})`
      : base[k],
  );
  const seen = new Map<string, number>();
  return withSeed.map((l) => {
    const n = (seen.get(l) ?? 0) + 1;
    seen.set(l, n);
    return n === 1 ? l : `${l} (${n})`;
  });
}

export function compareReports(inputs: CompareInput[], opts: CompareOptions = {}): Comparison {
  if (inputs.length < 2) throw new CompareError('compare needs at least two reports');
  const labels = uniqueLabels(inputs);

  // Protocol settings: every report against the first.
  const base = settings(inputs[0].report);
  const diffs: string[] = [];
  inputs.slice(1).forEach((inp, k) => {
    const s = settings(inp.report);
    for (const key of Object.keys(base)) {
      const a = base[key];
      const b = s[key];
      if (key === 'history' && (a === null || b === null)) continue;
      if (a !== b) diffs.push(`${key}: ${labels[0]} has ${a}, ${labels[k + 1]} has ${b}`);
    }
  });
  if (diffs.length && !opts.force)
    throw new CompareError(`the reports were run under different settings (${diffs.join('; ')}); --force compares them anyway`);

  // Task sets.
  const sets = inputs.map((i) => new Set(i.report.tasks.map((t) => t.id)));
  const all = [...new Set(inputs.flatMap((i) => i.report.tasks.map((t) => t.id)))];
  const common = all.filter((id) => sets.every((s) => s.has(id)));
  const missing = inputs.map((_, k) => ({ label: labels[k], tasks: all.filter((id) => !sets[k].has(id)) })).filter((m) => m.tasks.length);
  if (missing.length && !opts.intersect) {
    const show = (ids: string[]): string => (ids.length > 5 ? `${ids.slice(0, 5).join(', ')} and ${ids.length - 5} more` : ids.join(', '));
    throw new CompareError(
      `the reports cover different tasks (${missing.map((m) => `${m.label} lacks ${show(m.tasks)}`).join('; ')}); --intersect compares the common ones`,
    );
  }
  if (!common.length) throw new CompareError('the reports have no task in common');
  const dropped = inputs
    .map((inp, k) => ({ label: labels[k], tasks: inp.report.tasks.map((t) => t.id).filter((id) => !common.includes(id)) }))
    .filter((d) => d.tasks.length);

  common.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const byId = inputs.map((i) => new Map(i.report.tasks.map((t) => [t.id, t])));

  // Each row's figures: its report's aggregate; when tasks were dropped, recomputed (the same §5
  // formulas) over the tasks compared, so every row and the union stand on the same tasks.
  const rows: RowFigures[] = inputs.map((inp, k) => {
    const a = inp.report.aggregate;
    if (!dropped.length)
      return {
        label: labels[k],
        pass_at_1: a.pass_at_1,
        pass_at_5: a.pass_at_5,
        cov_at_1: a.cov_at_1,
        cov_at_5: a.cov_at_5,
        tasks: a.tasks,
      };
    const m = computeMetrics(common.map((id) => outcomes(byId[k].get(id))));
    return { label: labels[k], pass_at_1: m.pass_at_1, pass_at_5: m.pass_at_5, cov_at_1: m.cov_at_1, cov_at_5: m.cov_at_5, tasks: m.tasks };
  });

  const picks: Record<string, number> = Object.fromEntries(labels.map((l) => [l, 0]));
  const unionSamples: Outcome[][] = [];
  const tasks: TaskComparison[] = common.map((id) => {
    const cells = byId.map((m) => cell(m.get(id)));
    let best = -1;
    cells.forEach((c, k) => {
      if (c.pass_at_1 === null) return;
      const b = best < 0 ? null : cells[best];
      if (!b || c.pass_at_1 > b.pass_at_1! || (c.pass_at_1 === b.pass_at_1 && c.cov_at_1! > b.cov_at_1!)) best = k;
    });
    if (best >= 0) {
      picks[labels[best]]++;
      unionSamples.push(outcomes(byId[best].get(id)));
    }
    return { id, cells, passing: labels.filter((_, k) => cells[k].passed), best: best >= 0 ? labels[best] : null };
  });
  const u = computeMetrics(unionSamples);

  const pairs: PairCount[] = [];
  for (let i = 0; i < labels.length; i++)
    for (let j = i + 1; j < labels.length; j++) {
      const p: PairCount = { a: labels[i], b: labels[j], a_only: 0, b_only: 0, both: 0, neither: 0 };
      for (const t of tasks) {
        const x = t.cells[i].passed;
        const y = t.cells[j].passed;
        if (x && y) p.both++;
        else if (x) p.a_only++;
        else if (y) p.b_only++;
        else p.neither++;
      }
      pairs.push(p);
    }

  return {
    rows,
    union: { pass_at_1: u.pass_at_1, pass_at_5: u.pass_at_5, cov_at_1: u.cov_at_1, cov_at_5: u.cov_at_5, tasks: u.tasks, picks },
    pairs,
    solved_by_one: tasks.filter((t) => t.passing.length === 1).map((t) => ({ id: t.id, row: t.passing[0] })),
    tasks,
    dropped,
    warnings: diffs,
    suite: { name: inputs[0].report.suite.name, format: inputs[0].report.suite.format },
  };
}
