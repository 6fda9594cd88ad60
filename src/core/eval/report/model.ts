// The evaluation report's shape (schema_version 1): the runner (core/run/evaluation.ts) fills it, the
// JSON/Markdown/HTML writers beside this file read it, and `chorus eval compare` (eval/compare.ts)
// reads it back.
import type { SamplingParams } from '../../vocabulary/types.js';
import type { SimLimits } from '../../vocabulary/types.js';
import type { ScoreMode } from '../../vocabulary/types.js';
import type { HistoryMode } from '../../vocabulary/types.js';
import type { EvalSuite, TaskRecord } from '../task.js';
import type { Metrics, RoundPoint } from '../metrics.js';

export type ProgressEvent =
  | { type: 'start'; units: number; tasks: number; workers: number }
  | { type: 'sample'; task: string; sample: number; cached: boolean; done: number; units: number; coverage: number; passed: boolean }
  | { type: 'task'; task: TaskRecord; done: number; tasks: number };

export const REPORT_SCHEMA_VERSION = 1;

/** The suite's metrics (Pass@k, Cov@k, sim pass over the tasks scored without errors) and the run's costs. */
export interface AggregateRecord extends Metrics {
  /** Tasks that could not be evaluated (listed with reasons in tasks[].error). */
  errors: number;
  tokens: { prompt: number; completion: number; total: number };
  wall_s: number;
  /** Summed over samples (several run at once, so these exceed wall_s). */
  sim_s: number;
  model_s: number;
  /** Candidates simulated in this run (cached samples excluded) and per minute of wall time. */
  candidates: number;
  candidates_per_min: number;
  /** Samples taken from the cache (--resume). */
  cached_samples: number;
  /** Histogram of sample coverages, 10 bins over [0,1]. */
  coverage_histogram: number[];
}

export interface EvalReport {
  schema_version: number;
  suite: { name: string; path: string; format: string; tasks_in_suite: number; tasks_selected: number; skipped: EvalSuite['skipped'] };
  row: { kind: 'builtin' | 'reference' | 'model'; label: string; model?: Record<string, unknown> };
  config: {
    samples: number;
    rounds: number;
    workers: number;
    seed: number;
    history: HistoryMode | null;
    sampling: Partial<SamplingParams> | null;
    simulator: { name: string; version: string };
    limits: Partial<SimLimits>;
    /** How every candidate was scored (sim/result.ts ScoreMode): `paper` unless --score legal. */
    score: ScoreMode;
    resume: boolean;
  };
  aggregate: AggregateRecord;
  per_round: RoundPoint[];
  tasks: TaskRecord[];
  complete: boolean;
  started_at: string;
  finished_at: string;
}
