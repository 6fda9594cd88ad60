// The evaluation report's shape (schema_version 2, REPORT_SCHEMA_VERSION): the runner (core/run/evaluation.ts) fills it, the
// JSON/Markdown/HTML writers beside this file read it, and `chorus eval compare` (eval/compare.ts)
// reads it back.
import type { SimLimits } from '../../vocabulary/types.js';
import type { EvalSettingName, SettingValue } from '../../vocabulary/settings.js';
import type { EvalSuite, TaskRecord } from '../task.js';
import type { Metrics, RoundPoint } from '../metrics.js';

export type ProgressEvent =
  | { type: 'start'; units: number; tasks: number; workers: number }
  | { type: 'sample'; task: string; sample: number; cached: boolean; done: number; units: number; coverage: number; passed: boolean }
  | { type: 'task'; task: TaskRecord; done: number; tasks: number };

/** 2: tasks[].coverage_target in percent (1: `threshold`, a fraction) and config.settings, the run
 * settings by their names (1: samples, rounds, seed, history, sampling and score beside the rest). */
export const REPORT_SCHEMA_VERSION = 2;

/** Each run setting eval takes (src/core/vocabulary/settings.ts), by its name, as the run had it;
 * null where the row has no use for it (history and sampling without a model). */
export type EvalSettings = { [N in EvalSettingName]: SettingValue<N> | null };

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
    settings: EvalSettings;
    workers: number;
    /** The simulator that ran (the `simulator` setting names it; this says its version too). */
    simulator: { name: string; version: string };
    limits: Partial<SimLimits>;
    resume: boolean;
  };
  aggregate: AggregateRecord;
  per_round: RoundPoint[];
  tasks: TaskRecord[];
  complete: boolean;
  started_at: string;
  finished_at: string;
}
