// The words every layer and front end shares: the limits of a candidate, a model's sampling, how a
// run is scored, what history the model sees. Types and closed lists only, no behaviour, no imports:
// the bottom of src/core (test/unit/layers.test.ts), so the settings schema, the defaults, the
// engine and the front ends can all name them without an upward import.

/** Limits of one candidate's build and simulation. */
export interface SimLimits {
  /** Wall-clock limit for the simulation run, seconds (build time is bounded separately). */
  timeoutS: number;
  /** Simulated-time limit in ns; null for none. */
  simTimeLimitNs: number | null;
  /** Cap on captured simulator output and on any file the testbench writes. */
  outputLimitBytes: number;
  /** Address-space limit for the simulation executable, MiB; null for none. */
  memoryLimitMb: number | null;
  /** Wall-clock limit for compiling the candidate, seconds. */
  buildTimeoutS: number;
  /** Address-space limit for every compile step of the candidate (preprocessor, Verilator front
   * end, C++ compile and link), MiB; null for none. The examples peak at 174 MiB (cc1plus). */
  buildMemoryLimitMb: number | null;
  /** Cap on the bytes the simulation adds to its run directory in all (outputLimitBytes caps each
   * file); null for none. */
  runDirLimitBytes: number | null;
}

/** Sampling settings (docs/protocol.md §4 defaults). */
export interface SamplingParams {
  temperature: number;
  topP: number;
  maxNewTokens: number;
  /** Seed for reproducible sampling where the backend supports it. */
  seed?: number;
}

/** How a run is scored. `paper`: CHORUS eq. 1 as published (R = 1 + c whenever the testbench ran),
 * byte-compatible with docs/protocol.md; `legal`: a run whose stimulus broke the DUT's own
 * assertions is a failed run (reward 0), so coverage reached by illegal stimulus earns nothing. */
export const SCORE_MODES = ['paper', 'legal'] as const;
export type ScoreMode = (typeof SCORE_MODES)[number];

/** What the model sees in a refinement round: `markov`, the best candidate so far and its feedback
 * (the paper's protocol); `full`, the whole conversation. */
export const HISTORY_MODES = ['markov', 'full'] as const;
export type HistoryMode = (typeof HISTORY_MODES)[number];

/** The formal engine's time limits (the settings formalBudget and formalPointBudget). */
export interface FormalBudget {
  /** Seconds for all the points of one design together (ABC's -T). */
  designS: number;
  /** Seconds for one point (ABC's -H). */
  pointS: number;
}
