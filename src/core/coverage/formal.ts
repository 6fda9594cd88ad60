// The formal engine's answers (sim/formal/reach.ts runs it) as coverage reasons: a proof takes an
// uncovered point out of the reachable ceiling (`unreachable-formal`, or `dead-param` when
// elaboration under the run's parameters removed it), a witness marks it reachable (`witness`), a
// bounded search that found nothing says so (`bounded`, no claim). The scored figure never changes.
import { isCovered, type CoveragePoint, type FormalSummary, type PointWitness, type Proof } from './model.js';
import { withReasons, type DutCoverage } from './analyze.js';
import type { FormalBudget } from '../vocabulary/types.js';
import type { Witness } from './model.js';

export type { FormalSummary, PointWitness, Witness } from './model.js';

/** How the engine names itself in reports. */
export const ENGINE = 'Yosys (read_slang) + ABC pdr';

/** The kinds of block point the engine judges: statement arms Verilator names by their line. */
const JUDGED = new Set(['if', 'elsif', 'else', 'case']);
/** A toggle bit the engine judges: Verilator's name for it is the SystemVerilog expression of the
 * bit (`v[4]`, `mem[0][3]`, `s.f[0]`); names through generate scopes or escaped are not judged. */
const TOGGLE_SIGNAL = /^[A-Za-z_][\w$]*(?:\[\d+\]|\.[A-Za-z_][\w$]*)*$/;

export type FormalVerdict = 'unreachable' | 'witness' | 'not-proven';

export interface FormalPointResult {
  verdict: FormalVerdict;
  /** For a proof: by the model checker, or by elaboration (no instance runs the arm). */
  how?: 'pdr' | 'elaboration';
  /** For a proof by elaboration: the `-G NAME=value` under which the arm runs, when its condition
   * tests one parameter of the top. */
  enable?: string;
  /** How it was decided, or why it was not. */
  why: string;
  /** For a witness: the cycle (from 0) in which the point's arm runs. */
  frame?: number | null;
  /** Not proven: the cycles from reset a bounded search covered without reaching it. */
  bound?: number;
}

export interface FormalReport {
  /** False when the engine could not read the design (every point is then not proven). */
  ok: boolean;
  message: string;
  engine: string;
  /** What the proofs assume of the simulation (printed with every claim). */
  assumptions: string[];
  clocks: Array<{ name: string; edge: string }>;
  /** Several clocks: proofs stand, witnesses are not given (they would need each clock's timing). */
  multiClock: boolean;
  /** Keyed by pointKey(). */
  points: Record<string, FormalPointResult>;
  witnesses: Record<string, Witness>;
  seconds: { model: number; pdr: number };
  budget: FormalBudget;
}

/** A point's key for the engine: one statement arm or signal bit, whichever instance reports it. */
export function pointKey(p: Pick<CoveragePoint, 'file' | 'line' | 'label'>): string {
  return `${p.file}:${p.line}:${p.label}`;
}

/** True for the points the engine can judge. */
export function judged(p: CoveragePoint): boolean {
  if (p.type === 'toggle') return TOGGLE_SIGNAL.test(p.label);
  return (p.type === 'line' || p.type === 'branch') && JUDGED.has(p.label);
}

const MAX_WITNESSES = 16;

/** The points of a design the engine is asked about: every judged point, covered or not, so one
 * answer (cached by design) serves every run of it, whatever each run covered. */
export function formalQuestion(cov: DutCoverage): CoveragePoint[] {
  return cov.points.filter((p) => !p.waived && judged(p));
}

/** The report's verdicts entered in `cov` (its ceiling and uncovered reasons), and the summary. */
export function applyFormal(cov: DutCoverage, report: FormalReport): FormalSummary {
  const secs = report.seconds.model + report.seconds.pdr;
  const assumes = report.assumptions.length ? `; assumes ${report.assumptions.join(', ')}` : '';
  const extra = new Map<CoveragePoint, Proof>();
  let proven = 0;
  let witnessed = 0;
  let notProven = 0;
  const witnesses = new Map<string, { point: PointWitness; toggle: boolean }>();
  for (const p of cov.points) {
    if (p.waived || isCovered(p) || !judged(p)) continue;
    const v = report.points[pointKey(p)];
    if (!v) continue;
    if (v.verdict === 'unreachable') {
      proven++;
      // Elaboration's proof holds whatever the simulation does: it needs no assumption.
      extra.set(
        p,
        v.how === 'elaboration'
          ? { kind: 'dead-param', detail: v.why, ...(v.enable ? { enable: v.enable } : {}) }
          : { kind: 'unreachable-formal', detail: `${v.why} on the elaborated design (${secs.toFixed(1)} s for the design)${assumes}` },
      );
    } else if (v.verdict === 'witness') {
      witnessed++;
      const at = typeof v.frame === 'number' ? ` in cycle ${v.frame} from reset` : '';
      const detail = p.type === 'toggle' ? `the formal engine: ${v.why}${v.frame ? at : ''}` : `the formal engine found inputs that reach it${at}`;
      extra.set(p, { kind: 'witness', detail });
      const w = report.witnesses[pointKey(p)];
      if (w) witnesses.set(pointKey(p), { point: { file: p.file, line: p.line, label: p.label, witness: w }, toggle: p.type === 'toggle' });
    } else {
      notProven++;
      if (typeof v.bound === 'number')
        extra.set(p, { kind: 'bounded', detail: `not reached in ${v.bound} cycles from reset by the formal engine's bounded search (BMC); not proven, so it stays in the ceiling` });
    }
  }
  withReasons(cov, extra);
  return {
    engine: report.engine,
    ok: report.ok,
    message: report.message,
    proven,
    witnessed,
    notProven,
    seconds: report.seconds,
    budget: report.budget,
    assumptions: report.assumptions,
    ...(report.clocks.length ? { clocks: report.clocks.map((c) => c.name) } : {}),
    ...(witnesses.size
      ? {
          // Arms first (a toggle is often set on the way to one), then the shortest.
          witnesses: [...witnesses.values()]
            .sort((a, b) => Number(a.toggle) - Number(b.toggle) || a.point.witness.frames.length - b.point.witness.frames.length)
            .slice(0, MAX_WITNESSES)
            .map((w) => w.point),
        }
      : {}),
  };
}

/** The summary of an engine that did not run (not installed, failed to start): every point not proven. */
export function notRun(message: string, budget: { designS: number; pointS: number }): FormalSummary {
  return {
    engine: ENGINE,
    ok: false,
    message,
    proven: 0,
    witnessed: 0,
    notProven: 0,
    seconds: { model: 0, pdr: 0 },
    budget,
    assumptions: [],
  };
}
