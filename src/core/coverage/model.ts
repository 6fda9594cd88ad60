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
  /** Set on a point a waiver excludes: it is in the record (raw figures) but not in the scored
   * set, so lcov, the editor and the summary leave it out alike. */
  waived?: true;
}

/** The line a block point is shown at: the first line of the code it stands for (an `else` arm
 * Verilator reports at its `if` line is shown where the arm's code starts). Toggles: their line. */
export function displayLine(p: Pick<CoveragePoint, 'type' | 'line' | 'span'>): number {
  return p.type !== 'toggle' && p.span ? p.span[0] : p.line;
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
  /** The reachable ceiling, reported beside the scored figure and never in its place: the scored
   * point set (after waivers) without the points proven unreachable (dead under the parameters,
   * tied off or constant, unreachable under 2-state simulation). Absent where no source analysis
   * ran (backends without per-point data). */
  ceiling?: CoverageCeiling;
}

export interface CoverageCeiling {
  /** Figures over the scored points that can be reached: what the run reached of what it could. */
  figures: CoverageFigures;
  /** How many scored points were set aside, in all and by reason. */
  excluded: number;
  byReason: Record<Exclusion, number>;
}

/** Why a point no stimulus can cover is proven so (UncoveredReason's kinds but `not-hit`). */
export type Exclusion = 'dead-param' | 'unreachable-formal';

/**
 * Why an uncovered point was not covered. Every kind but `not-hit` comes from the formal engine
 * (sim/formal/reach.ts, coverage/formal.ts) on the elaborated design, under the assumptions its
 * detail states; the two exclusions are proofs, made only when certain:
 * - `dead-param`: elaboration under the run's parameters left no instance that runs the arm;
 * - `unreachable-formal`: a model checker's proof (PDR's inductive invariant) that no input
 *   sequence from reset reaches it;
 * - `witness`: reachable, and the formal engine found the inputs that reach it (not yet covered);
 * - `bounded`: the formal engine found no proof in time, and no input sequence of N cycles from
 *   reset reaches it (a bounded search: no claim, the point stays in the ceiling);
 * - `not-hit`: not decided (the engine did not run, or found neither proof nor witness); the
 *   stimulus did not get there.
 */
export interface UncoveredReason {
  kind: Exclusion | 'witness' | 'bounded' | 'not-hit';
  detail: string;
  enable?: string;
}

/** A reason found for an uncovered point (the formal engine's): any kind but `not-hit`. */
export type Proof = Omit<UncoveredReason, 'kind'> & { kind: Exclusion | 'witness' | 'bounded' };

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
  /** Why it is uncovered (set by analyzeCoverage on every point it lists). */
  reason?: UncoveredReason;
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

// ---- the formal engine's answers, as the result record carries them (coverage/formal.ts) ----

export interface Witness {
  /** The design's inputs and their widths (clocks included: their value per frame is free). */
  inputs: Array<[string, number]>;
  /** One entry per clock cycle from the initial state: the inputs' values in that cycle, in hex
   * (inputs may be wider than a JSON number holds); the first names every input, each later one
   * only those that change (an input it does not name keeps its value). */
  frames: Array<Record<string, string>>;
}

/** What the result record says about the engine's work on a run's design. */
export interface FormalSummary {
  engine: string;
  ok: boolean;
  message: string;
  /** Uncovered points of this run, by verdict. */
  proven: number;
  witnessed: number;
  notProven: number;
  seconds: { model: number; pdr: number };
  budget: { designS: number; pointS: number };
  assumptions: string[];
  /** The design's clock inputs as the engine saw them (a witness gives them no values to keep). */
  clocks?: string[];
  /** Witnesses of uncovered points (at most MAX_WITNESSES, shortest first): stimulus for the next
   * testbench (the generator replays them; a point counts only when a simulation covers it). */
  witnesses?: PointWitness[];
}

export interface PointWitness {
  file: string;
  line: number;
  label: string;
  witness: Witness;
}
