// The coverage model: points restricted to the DUT, the single figure c of docs/protocol.md §5, and
// the breakdown. Simulator backends produce CoveragePoint[]; everything else reads this module.

/**
 * Kinds newer Verilators gained, reported as extra rows and never scored (c must mean the same on
 * every version): `expr`, expression coverage (--coverage-expr); `cond`, the two arms of each
 * `?:` (current releases count them as branch points, 5.006 has none).
 */
export type PointType = 'line' | 'branch' | 'toggle' | 'user' | 'expr' | 'cond';

export interface CoveragePoint {
  type: PointType;
  /** Source file as the simulator reported it (absolute for DUT files). */
  file: string;
  line: number;
  column: number;
  /** First and last line of the code the point stands for (an `else` arm lives below its `if`). */
  span?: [number, number];
  /** Module that owns the point. */
  module: string;
  /** Instance path, e.g. `tb.uut.u_fifo`. */
  hier: string;
  /** Branch arm (`if`, `else`, `case`...), block kind, signal bit (`count[3]`) or cover label. */
  label: string;
  count: number;
}

/** A point is covered when it was hit; a toggle point only when the bit moved both ways (>= 2). */
export function isCovered(p: CoveragePoint): boolean {
  return p.type === 'toggle' ? p.count >= 2 : p.count >= 1;
}

export interface Tally {
  covered: number;
  total: number;
}

export interface CoverageFigures {
  /** c in [0,1]: mean(block, toggle), or whichever exists; null when the DUT has no points. */
  overall: number | null;
  /** Pooled covered/total over block and toggle points (IMC's "Overall Covered"). */
  overallCovered: number | null;
  block: number | null;
  toggle: number | null;
  line: number | null;
  branch: number | null;
  user: number | null;
  /** Expression coverage where the simulator has it (null elsewhere): an extra row, not part of c. */
  expr: number | null;
  /** `?:` arms where the simulator counts them (null elsewhere): an extra row, not part of c. */
  cond: number | null;
  tallies: Record<PointType | 'block', Tally>;
}

export interface CoverageBreakdown {
  /** Figures after waivers: the number that is scored. */
  waived: CoverageFigures;
  /** Figures on every point, before waivers. */
  raw: CoverageFigures;
  /** Points excluded by the waiver file. */
  waivedPoints: number;
}

export interface UncoveredPoint {
  type: PointType;
  file: string;
  line: number;
  label: string;
  hier: string;
  count: number;
  /** Lines of the code the point stands for, when known. */
  span?: [number, number];
  /** The first source line of that code, trimmed, for feedback and decorations. */
  source?: string;
}

export function tally(points: CoveragePoint[], types: PointType[]): Tally {
  let covered = 0;
  let total = 0;
  for (const p of points) {
    if (!types.includes(p.type)) continue;
    total += 1;
    if (isCovered(p)) covered += 1;
  }
  return { covered, total };
}

function ratio(t: Tally): number | null {
  return t.total === 0 ? null : t.covered / t.total;
}

/**
 * docs/protocol.md §5: IMC's Overall Average for the DUT = mean(Block, Toggle). Verilator's line and
 * branch points stand in for IMC's blocks; a toggle counts only when the bit moved both ways.
 */
export function figures(points: CoveragePoint[]): CoverageFigures {
  const line = tally(points, ['line']);
  const branch = tally(points, ['branch']);
  const block = tally(points, ['line', 'branch']);
  const toggle = tally(points, ['toggle']);
  const user = tally(points, ['user']);
  const expr = tally(points, ['expr']);
  const cond = tally(points, ['cond']);
  const b = ratio(block);
  const t = ratio(toggle);
  const parts = [b, t].filter((x): x is number => x !== null);
  const overall = parts.length === 0 ? null : parts.reduce((a, x) => a + x, 0) / parts.length;
  const pooled: Tally = { covered: block.covered + toggle.covered, total: block.total + toggle.total };
  return {
    overall,
    overallCovered: ratio(pooled),
    block: b,
    toggle: t,
    line: ratio(line),
    branch: ratio(branch),
    user: ratio(user),
    expr: ratio(expr),
    cond: ratio(cond),
    tallies: { line, branch, block, toggle, user, expr, cond },
  };
}

/** One row of the per-instance summary, LLM4Cov field names; numbers are fractions in [0,1] or null. */
export interface CovSummaryRow {
  name: string;
  level: number;
  'Overall Average': number | null;
  'Overall Covered': number | null;
  'Code Average': number | null;
  'Code Covered': number | null;
  'Fsm Average': number | null;
  'Fsm Covered': number | null;
  'Functional Average': number | null;
  'Functional Covered': number | null;
  Toggle: number | null;
  Block: number | null;
  Assertion: number | null;
}
