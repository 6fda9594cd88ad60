// Every default a person could want to change, in one place: the CLI's option defaults, the editor's
// setting fallbacks, the engine's own fallbacks and the reward service read them from here.
//
// This module has no value imports (test/unit/layers.test.ts checks it), so every layer of src/core
// may read it without an upward dependency, and the extension host reads it for its settings
// without bundling the engine (the worker process runs that).
import type { SimLimits } from './types.js';
import type { FormalBudget, ScoreMode, SamplingParams } from './types.js';

/** The DUT's instance name in a testbench when neither the user nor the task names one. */
export const DEFAULT_INSTANCE = 'uut';

/** Refinement rounds after the first generation when the caller names none: 4 attempts in all.
 * "Rounds" means this everywhere (CLI, editor, eval, agent loop); the built-in generator counts
 * its attempts (rounds + 1). */
export const DEFAULT_ROUNDS = 3;

/** How runs are scored when nothing says otherwise: CHORUS eq. 1 as published (types.ts SCORE_MODES). */
export const DEFAULT_SCORE: ScoreMode = 'paper';

/** Coverage target, percent of the overall figure, when none is given: stop only at 100%. The
 * target is a percent everywhere (the run setting `coverageTarget`); coverage itself is a fraction. */
export const DEFAULT_COVERAGE_TARGET = 100;

/** Coverage is a ratio of counts computed in floating point: a target met up to this much is met.
 * The one pass/target tolerance (ranking, eval targets, reward service). */
export const COVERAGE_TOLERANCE = 1e-9;

/** The built-in generator stops after this many attempts in a row without a coverage gain. */
export const DEFAULT_PATIENCE = 3;

/** Independent samples per design for `chorus generate`, and per task for `chorus eval` (Pass@5 needs 5). */
export const DEFAULT_GENERATE_SAMPLES = 1;
export const DEFAULT_EVAL_SAMPLES = 5;

/** Base seed of every run that takes one (generator, sampling, eval's per-sample seeds). */
export const DEFAULT_SEED = 1;

/** Limits of one candidate's build and simulation (wall clock, simulated time, output, memory). */
export const DEFAULT_LIMITS: SimLimits = {
  timeoutS: 60,
  simTimeLimitNs: 1e9,
  outputLimitBytes: 4 * 1024 * 1024,
  memoryLimitMb: 4096,
  buildTimeoutS: 300,
  buildMemoryLimitMb: 4096,
  runDirLimitBytes: 64 * 1024 * 1024,
};

/** Sampling of a model reply (the checkpoints' recommended Qwen3 settings; 16k new tokens leaves room
 * for the thinking block before the testbench). */
export const DEFAULT_SAMPLING: SamplingParams = { temperature: 0.7, topP: 0.8, maxNewTokens: 16_384 };

/** The reward service (`chorus serve`): where it listens, how much work it queues, how long it
 * drains on SIGTERM, the largest per-request timeout and request body it accepts. */
export const DEFAULT_SERVICE = {
  port: 8080,
  host: '127.0.0.1',
  queueLimit: 64,
  graceS: 30,
  maxTimeoutS: 300,
  bodyLimitMiB: 8,
  /** Seconds a client has to send a whole request (chorus serve --client-timeout). */
  slowClientTimeoutS: 10,
  /** Readiness (/readyz): free space the run-directory file system keeps, the service's resident memory. */
  minFreeDiskMiB: 256,
  maxRssMiB: 4096,
} as const;

/** The model hub `chorus model pull` and "CHORUS: Download a Model..." fetch from when HF_ENDPOINT
 * (the convention of the hub's own clients, for mirrors) names none. */
export const DEFAULT_HUB_ENDPOINT = 'https://huggingface.co';

/** The GGUF quantization picked from a repository that holds several and the user named none
 * (llama.cpp's and LM Studio's usual choice for a 4B model on a laptop). */
export const DEFAULT_GGUF_QUANT = 'Q4_K_M';

/** The ONNX weights picked from an ONNX export holding several (the local engine's default dtype). */
export const DEFAULT_ONNX_DTYPE = 'q4';

/** The formal engine's time limits (sim/formal/reach.ts): all of one design's points, and one point. */
export const DEFAULT_FORMAL_BUDGET: Readonly<FormalBudget> = { designS: 20, pointS: 5 };

/** The engine's limits from the two settings; 0 s for the design: off. */
export function formalBudget(designS: number, pointS: number): FormalBudget | undefined {
  return designS > 0 ? { designS, pointS } : undefined;
}
