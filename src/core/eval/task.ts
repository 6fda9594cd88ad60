// The one task type every evaluation suite is adapted onto, and the per-sample records the runner
// produces. Suites (VerilogEval folders, CVDP JSONL, LLM4Cov records) only build EvalTasks; the
// runner, the metrics and the reports know nothing else.
import type { CovSummaryRow, SimResult } from '../sim/result.js';
import { meetsTarget, overallCoverage } from '../sim/ranking.js';
import { DEFAULT_COVERAGE_TARGET, DEFAULT_INSTANCE } from '../vocabulary/defaults.js';

/** An LLM4Cov coverage target (`targets: [{inst_name, metric, target_percentage}]`). */
export interface CovTarget {
  inst_name: string;
  /** A `cov_info.summary` column: `Overall Average`, `Block`, `Toggle`, ... */
  metric: string;
  /** Percent, 0..100. */
  target_percentage: number;
}

export interface EvalTask {
  id: string;
  /** Absolute paths of the DUT files (materialized under the output folder for JSONL suites). */
  designFiles: string[];
  /** Absolute paths of specification files shown to a model after the RTL. */
  specFiles: string[];
  /** DUT top module; empty when the suite does not say (introspection then chooses). */
  top: string;
  /** DUT instance name the testbench must use. */
  instance: string;
  /** The coverage target on overall coverage, percent (PROTOCOL §5's tau, as a percent). */
  coverageTarget: number;
  /** The task's own instruction for a model; default: the reference wording (PROTOCOL §1). */
  instruction?: string;
  /** Path of the suite's reference testbench. */
  reference?: string;
  /** Text appended to the reference testbench (VerilogEval: the TopModule it compares against). */
  referenceSuffix?: string;
  /** LLM4Cov-style targets; when present, a sample passes only when every applicable one is met. */
  targets?: CovTarget[];
  /** Why the task cannot be evaluated (malformed record, missing file, ...). */
  error?: string;
}

export type EvalFormat = 'verilog-eval' | 'cvdp' | 'llm4cov';

export interface EvalSuite {
  name: string;
  path: string;
  format: EvalFormat;
  tasks: EvalTask[];
  /** Records that are not tasks of this family (e.g. CVDP categories other than cid012). */
  skipped: Array<{ id: string; reason: string }>;
}

export interface TokenCount {
  prompt: number;
  completion: number;
}

/** One generation + simulation inside a sample. */
export interface RoundRecord {
  round: number;
  /** Simulator status, or `unparsable` when a model reply held no testbench. */
  status: string;
  /** Overall coverage in [0,1]; null when the candidate did not run or yielded no coverage. */
  coverage: number | null;
  passed: boolean;
  reward: number;
  tokens: TokenCount;
  sim_s: number;
  model_s: number;
}

export interface SampleRecord {
  sample: number;
  seed: number;
  /** Coverage of the best candidate (0 when none ran): c_ij of PROTOCOL §5. */
  coverage: number;
  passed: boolean;
  /** Whether the best candidate simulated and yielded coverage. */
  sim_ok: boolean;
  status: string;
  reward: number;
  best_round: number | null;
  rounds: RoundRecord[];
  tokens: TokenCount;
  wall_s: number;
  /** File name of the best testbench under the output folder's `testbenches/`, when one exists. */
  testbench?: string;
  /** Set when the sample itself failed outside the testbench (model server down, ...). */
  error?: string;
}

export interface TaskRecord {
  id: string;
  top: string;
  instance: string;
  /** The task's coverage target, percent. */
  coverage_target: number;
  samples: SampleRecord[];
  error?: string;
}

function rowFor(summary: CovSummaryRow[], name: string, top: string): CovSummaryRow | undefined {
  return summary.find((r) => r.name === name && (name !== top || r.level === 0)) ?? summary.find((r) => r.name === name);
}

/**
 * Whether a result passes the task (PROTOCOL §5): c >= tau; with LLM4Cov targets, every target
 * is met (the DUT instance is the top row; a non-Overall metric the report lacks is skipped).
 */
export function passes(
  task: Pick<EvalTask, 'coverageTarget' | 'targets' | 'top' | 'instance'>,
  result: SimResult | null,
  top = task.top,
): boolean {
  const c = overallCoverage(result);
  if (c === null || !result) return false;
  if (!task.targets?.length) return meetsTarget(c, task.coverageTarget);
  const summary = result.cov_info?.summary ?? [];
  for (const t of task.targets) {
    const inst = t.inst_name === task.instance ? top : t.inst_name;
    let row = rowFor(summary, inst, top);
    if (!row && inst === top) row = summary.find((r) => r.level === 0);
    // A target on an instance the report lacks fails (the reference harness asserts on it).
    if (!row) return false;
    if (t.metric !== 'Overall Average') {
      const v = (row as unknown as Record<string, unknown>)[t.metric];
      if (v === undefined || v === null) continue;
    }
    const v = inst === top && t.metric === 'Overall Average' ? c : (row as unknown as Record<string, unknown>)[t.metric];
    if (typeof v !== 'number' || !meetsTarget(v, t.target_percentage)) return false;
  }
  return true;
}

/** A task with nothing read yet: the suite readers fill it in (or set its error). */
export function emptyTask(id: string): EvalTask {
  return { id, designFiles: [], specFiles: [], top: '', instance: DEFAULT_INSTANCE, coverageTarget: DEFAULT_COVERAGE_TARGET };
}

/** The coverage target (percent) a set of targets implies for the headline figure (Overall Average
 * of the DUT). */
export function coverageTargetFromTargets(targets: CovTarget[], instance: string, top: string): number {
  const t = targets.find((x) => x.metric === 'Overall Average' && (x.inst_name === instance || x.inst_name === top));
  return t ? t.target_percentage : DEFAULT_COVERAGE_TARGET;
}
