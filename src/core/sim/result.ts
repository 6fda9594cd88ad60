// The engine's result record: the LLM4Cov EDA schema (docs/protocol.md §6), so results can be compared
// with the published harness and an Xcelium/IMC site can plug in, plus CHORUS's own fields.
import type { FormalSummary } from '../coverage/formal.js';
import { safeDeep } from '../util/untrusted.js';
import type { Diagnostic, SimStage } from '../design/diagnostic.js';
import type { CoverageBreakdown, CoveragePoint, CovSummaryRow, UncoveredPoint } from '../coverage/model.js';

/** LLM4Cov statuses, plus `timeout` (wall-clock or simulated-time limit), `rejected` (safety check) and
 * `integrity_failed` (the run tried to forge what is scored: a tampered report channel, coverage
 * points naming files outside the design; never rewarded). A run that `legal` scoring fails for
 * breaking the DUT's assertions is `xrun_failed` at stage `run` (a simulation that failed, as the
 * model's feedback, the ranking and the reward already know it), not a status of its own.
 * The one list: request schemas, metrics labels and reports iterate it. */
export const SIM_STATUSES = [
  'success',
  'xrun_failed',
  'imc_merge_failed',
  'imc_report_summary_failed',
  'exception',
  'timeout',
  'rejected',
  'integrity_failed',
] as const;
export type SimStatus = (typeof SIM_STATUSES)[number];

// The message types sit with the design layer, which reports diagnostics of its own (introspection).
export type { Diagnostic, Severity, SimStage } from '../design/diagnostic.js';

/** One row of the per-instance summary: defined with the coverage model (coverage/report.ts builds it). */
export type { CovSummaryRow } from '../coverage/model.js';

export interface CovInfo {
  summary: CovSummaryRow[];
  /** Coverage report text (IMC-style table plus uncovered lines) for model feedback. */
  detail: string;
  runtime_sec: number;
}

export interface StageTimings {
  check?: number;
  lint?: number;
  build?: number;
  run?: number;
  coverage?: number;
  /** The formal engine on the design's points (cached per design: ~0 after its first run). */
  formal?: number;
  total: number;
}

/** Which protections were active for this run: said in every result, not assumed. */
export interface Protection {
  scratchDir: string | null;
  staticCheck: boolean;
  jail: 'bubblewrap' | 'none';
  jailReason?: string;
  /**
   * What stops the testbench reading files outside the run and design directories:
   * `jail` - the static check refuses literal paths outside them, and the jail shows the
   *   preprocessor, the front end, the compiler and the simulation nothing else (paths built at
   *   run time included);
   * `static` - no jail: the static check alone, which then also refuses every path built at run time;
   * `none` - nothing (a backend that runs the user's own flow on the host).
   */
  reads: 'jail' | 'static' | 'none';
  /** What the jail held, when there was one. */
  sandbox?: SandboxInfo;
  wallClockLimitS: number;
  simTimeLimitNs: number | null;
  outputLimitBytes: number;
  memoryLimitMb: number | null;
}

export interface SandboxInfo {
  /** Steps run inside bubblewrap. */
  steps: Array<'preprocess' | 'front-end' | 'c++' | 'run'>;
  /** What the simulation saw of the file system. */
  filesystem: string;
  /** Environment variables the simulation got (everything else was cleared; bubblewrap sets PWD). */
  environment: string[];
  /** `none`: no /proc at all (its own PID namespace too): nothing reaches /proc/self/mem or the
   * descriptors the harness reports on. */
  proc: 'none';
  network: 'none';
  /** `unprivileged`: uid 65534 in a user namespace; `no-capabilities`: the caller's uid with every capability dropped (no user namespaces). */
  user: 'unprivileged' | 'no-capabilities';
}

export interface SimResult {
  // --- LLM4Cov EDA schema ---
  returncode: number;
  status: SimStatus;
  err_msg: string;
  cov_info: CovInfo | null;
  // --- CHORUS fields ---
  /** R = 1 + c when the testbench ran and yielded coverage, else 0 (CHORUS eq. 1). */
  reward: number;
  stage: SimStage;
  coverage: CoverageBreakdown | null;
  uncovered: UncoveredPoint[];
  diagnostics: Diagnostic[];
  timings: StageTimings;
  simulator: { name: string; version: string };
  protection: Protection;
  /** The testbench's top module and the DUT top module. */
  tbTop: string | null;
  dutTop: string;
  /** Simulation stdout+stderr, bounded. */
  log: string;
  /** How the candidate was built: against the cached DUT library, or flat (DUT and testbench
   * verilated together), with the reason when the library could not be used. */
  /** How the model was built; `sharedUnit`: scored in a group, its C++ compiled in one unit with
   * this many members' models (the group's shared work; its result is its own). */
  build?: { mode: 'dut-library' | 'flat'; fallbackReason?: string; sharedUnit?: number };
  /** Absolute path of the coverage database, when the run was kept (keepRunDir). */
  coverageFile?: string;
  /** The DUT's coverage points the figure was computed from (waived ones included, as lcov wants
   * them), when the request set
   * `wantPoints` and the backend has per-point data (Verilator; IMC's summary has none). */
  points?: CoveragePoint[];
  /** Present when the DUT's logic did not settle in the simulator: the looping signals, the
   * workarounds tried in vain, and the one the run was measured with (null: nothing worked). */
  settle?: { loop: string[]; tried: string[]; workaround: string | null };
  /** The design's assertions the stimulus broke, one entry per site in a design file, ordered by
   * first failure (absent: none; the testbench's own $error checks are never here). */
  dutAssertions?: DutAssertion[];
  /** The formal engine's verdicts on the run's uncovered block points (present when it ran:
   * SimRequest.formal): proofs, witnesses, what was not decided, its time and assumptions. */
  formal?: FormalSummary;
}

/** A DUT assertion that failed during the run: an immediate or concurrent assertion, a
 * `unique`/`priority` violation, or a $error/$fatal written in a design file. The stimulus broke
 * the design's own input rules. Site, count and times come from the harness report (a channel the
 * testbench cannot write); the message is the first log line printed at that site (display only). */
export interface DutAssertion {
  file: string;
  line: number;
  kind: 'assertion' | 'unique' | 'priority' | 'error' | 'fatal';
  message: string;
  count: number;
  /** Simulation times of the first and last failure, as the log prints them (e.g. `125 ns`). */
  firstTime: string;
  lastTime: string;
}

export function rewardFor(status: SimStatus, overall: number | null): number {
  return status === 'success' && overall !== null ? 1 + overall : 0;
}

/**
 * A result record whose every text field (err_msg, log, diagnostics' messages, suggestions and
 * files, uncovered points' source and labels, the coverage report, settle, build notes, paths and
 * names) is safe to show: safeDeep over the record. The backends return their records through it,
 * and so does the remote scorer for what another machine answered.
 */
export function safeResult<R extends SimResult>(r: R): R {
  return safeDeep(r);
}
