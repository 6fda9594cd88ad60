// Typed messages between the extension host and the worker process (dist/extension-worker.mjs)
// that runs the engine: design loading, simulation, the generator and the agent. Long work never
// runs on the extension host's thread; progress and model text stream back, cancel goes forward.
// One map, WorkerProtocol, names every request with its payload and its result (as Continue's
// protocol files do); the client's request() and the worker's handlers are typed from it.
import type { DesignOptions } from '../../core/run/design.js';
import type { DesignSpec } from '../../core/run/types.js';
import type { CoverageFigures, UncoveredPoint } from '../../core/run/types.js';
import type { Diagnostic, SimResult, SimStatus } from '../../core/run/types.js';
import type { ScoreMode } from '../../core/vocabulary/types.js';
import type { SimStageName } from '../../core/run/types.js';
import type { SimLimits } from '../../core/vocabulary/types.js';
import { runFailure } from '../../core/run/coverage.js';
import type { RunFolderFiles } from '../../core/run/runFolder.js';
export type { RunFolderFiles };
import type { ModelConfig } from '../../core/run/types.js';
import type { ModelCheck } from '../../core/run/modelCheck.js';
import type { PullProgress } from '../../core/run/types.js';
import type { FileLineCoverage } from '../views/coverageData.js';
import type { FormalBudget } from '../../core/vocabulary/types.js';

/** The model as every front end configures it (core/llm/factory.ts); null: the built-in generator.
 * Its progress callbacks are never sent: the worker sets its own. */
export type { ModelConfig };

export interface GenerateSettings {
  /** Refinement rounds after the first generation: at most rounds + 1 attempts (core/run/generation.ts). */
  rounds: number;
  samples: number;
  /** The coverage target, percent (chorus.generation.coverageTarget). */
  coverageTarget: number;
  instance: string;
  history: 'markov' | 'full';
  seed: number;
  temperature: number;
  topP: number;
  maxNewTokens: number;
  simulator: string;
  limits: Partial<SimLimits>;
  /** The built-in generator's best testbench is round 1 and the model refines it (default off). */
  warmStart?: boolean;
  /** How runs are scored (core/sim/result.ts ScoreMode; default `paper`). */
  score?: ScoreMode;
  /** The formal engine's limits (chorus.formal.*; absent: off). */
  formal?: FormalBudget;
}

/** One round as the editor keeps it (history, dashboard, diffs). */
export interface RoundRecord {
  sample: number;
  round: number;
  testbench: string | null;
  status: SimStatus | 'unparsable';
  /** Passed: it simulated and broke none of the design's assertions (the CLI's verdict; every view
   * shows this one, never the bare status). */
  verdict: { passed: boolean; failure?: string };
  coverage: CoverageFigures | null;
  uncovered: UncoveredPoint[];
  diagnostics: Diagnostic[];
  notes: string[];
  errMsg: string;
}

export interface GenerateOutcome {
  top: string;
  tbName: string;
  design: DesignSpec;
  rounds: RoundRecord[];
  /** Index into rounds of the best candidate; null when nothing usable came out. */
  best: number | null;
  model: string;
  simulator: string;
  cancelled: boolean;
  /** The run folder written (logs, coverage.html, junit.xml, summary.json), or null: none asked
   * for, or cancelled before any round finished (nothing is written then). */
  runFolder: RunFolderFiles | null;
}

export interface SimulateOutcome {
  result: SimResult;
  files: FileLineCoverage[];
  runFolder: RunFolderFiles | null;
}

export interface IntrospectOutcome {
  top: string;
  topCandidates: string[];
  files: string[];
}

/** The answer of a model check (core/run/modelCheck.ts). */
export type { ModelCheck };

export interface TestbenchText {
  name: string;
  content: string;
}

/** Where a run's folder is made (`<runRoot>/<top>/<timestamp>/`, as the CLI's `chorus-out/`); absent: none. */
export interface RunFolderRequest {
  runRoot?: string;
}

export interface GenerateRequest extends RunFolderRequest {
  design: DesignOptions;
  model: ModelConfig | null;
  settings: GenerateSettings;
}

export interface SimulateRequest extends RunFolderRequest {
  design: DesignOptions;
  testbench: TestbenchText;
  settings: GenerateSettings;
}

export interface RefineRequest extends RunFolderRequest {
  design: DesignOptions;
  testbench: TestbenchText;
  /** The last result of that testbench, or null (then the log, or a fresh simulation). */
  last: SimResult | null;
  log?: string;
  model: ModelConfig | null;
  settings: GenerateSettings;
}

/** Every request the worker answers: [payload, result]. */
export type WorkerProtocol = {
  introspect: [{ design: DesignOptions }, IntrospectOutcome];
  generate: [GenerateRequest, GenerateOutcome];
  simulate: [SimulateRequest, SimulateOutcome];
  refine: [RefineRequest, RefineOutcome];
  checkModel: [{ model: ModelConfig | null }, ModelCheck];
  /** What a download of `ref` would fetch ("CHORUS: Download a Model..."): talks to the hub, fetches no model bytes. */
  planModel: [HubRequest, PlanSummary];
  /** Fetches the model into the cache (progress: `download` events; cancel keeps the partial files for a resume). */
  pullModel: [HubRequest, PulledModel];
  /** The complete models of the cache (Select Model lists them). */
  listModels: [{ modelsDir?: string }, PulledModel[]];
  /** Writes <models dir>/editor.json (the model the editor uses, for `chorus model list`); null: none. */
  recordEditorModel: [{ dir: string | null; modelsDir?: string }, null];
};

/** A model on a hub: `owner/name[:selector]`, the hub's token (from the secret store; else the
 * worker's HF_TOKEN) and the models folder (chorus.model.downloadFolder; else the per-machine cache). */
export interface HubRequest {
  ref: string;
  revision?: string;
  modelsDir?: string;
  token?: string;
  /** pullModel of a checkpoint: convert it to a GGUF of this type (q4_k_m ...) with the training
   * package once it is in the cache (core/llm/hub/convert.ts). */
  convert?: string;
}

/** One model a repository offers (core/llm/hub/candidates.ts Candidate, without its file list). */
export interface CandidateSummary {
  kind: 'gguf' | 'onnx' | 'checkpoint';
  selector: string;
  engine: 'llama' | 'onnx' | 'none';
  size: number;
  files: number;
}

export interface PlanSummary {
  repo: string;
  revision: string;
  commit: string;
  endpoint: string;
  candidates: CandidateSummary[];
  /** The selector of the model a pull of `ref` takes. */
  chosen: string;
  /** false: the user named no selector and the repository holds several models with no default
   * among them (chosen is then the first runnable one, for the picker to start from). */
  decided: boolean;
  dir: string;
  cached: boolean;
  resumes: boolean;
  /** The repository holds only a training checkpoint (chosen is `checkpoint`). */
  checkpointOnly: boolean;
  /** The training package is there to convert a checkpoint (its chorus-train), else null. */
  trainingCli: string | null;
}

/** A model of the cache (core/llm/hub/cache.ts CachedModel, without its file list). */
export interface PulledModel {
  dir: string;
  repo: string;
  revision: string;
  commit: string;
  selector: string;
  engine: 'llama' | 'onnx' | 'none';
  kind: 'gguf' | 'onnx' | 'checkpoint';
  size: number;
  /** Bytes this pull fetched (0: it was in the cache; absent in a listing). */
  fetched?: number;
}

export type WorkerRequestKind = keyof WorkerProtocol;

/** Host -> worker: a request of one kind with its payload, or the cancel of one in flight. */
export type ToWorker =
  { [K in WorkerRequestKind]: { id: number; kind: K; payload: WorkerProtocol[K][0] } }[WorkerRequestKind] | { id: number; kind: 'cancel' };

export type ProgressEvent =
  | { kind: 'status'; message: string }
  /** The model in use, once it is loaded (engine and device included): status bar and dashboard. */
  | { kind: 'model'; label: string }
  /** `attempts`: the first generation + the refinement rounds, at most. */
  | { kind: 'round-start'; sample: number; round: number; attempts: number }
  | { kind: 'text'; piece: string }
  /** A simulation stage started (check = lint, build, run = simulate, coverage). */
  | { kind: 'stage'; stage: SimStageName }
  | { kind: 'round-end'; record: RoundRecord; bestCoverage: number | null; attempts: number }
  /** A model download (pullModel): the core's PullProgress (file i of n, bytes, rate, time left). */
  | ({ kind: 'download' } & PullProgress);

export interface WorkerErrorInfo {
  message: string;
  /** DesignError kind, `model-<ModelError kind>`, `hub-<HubError kind>`, or `cancelled`. */
  kind?: string;
  /** DesignError: the top candidates; HubError `ambiguous`: the selectors to choose from. */
  candidates?: string[];
  diagnostics?: Diagnostic[];
}

/** Worker -> host: progress events of a request, then its result or its error. */
export type FromWorker =
  | { id: number; type: 'progress'; event: ProgressEvent }
  | { id: number; type: 'result'; result: WorkerProtocol[WorkerRequestKind][1] }
  | { id: number; type: 'error'; error: WorkerErrorInfo };

export interface RefineOutcome {
  testbench: string;
  /** The revision's result (null when the model's reply was unparsable). */
  result: SimResult | null;
  record: RoundRecord;
  model: string;
  runFolder: RunFolderFiles | null;
}

/** Trims a round for the wire and the history: bounded uncovered list and diagnostics. */
export function roundRecord(
  sample: number,
  round: number,
  testbench: string | null,
  result: SimResult | null,
  notes: string[] = [],
): RoundRecord {
  return {
    sample,
    round,
    testbench,
    status: result ? result.status : 'unparsable',
    verdict: result ? verdictOf(result) : { passed: false, failure: 'the reply held no testbench' },
    coverage: result?.coverage?.waived ?? null,
    uncovered: (result?.uncovered ?? []).slice(0, 200),
    diagnostics: (result?.diagnostics ?? []).slice(0, 100),
    notes,
    errMsg: result?.err_msg ?? (result ? '' : 'the reply held no testbench'),
  };
}

function verdictOf(r: SimResult): { passed: boolean; failure?: string } {
  const failure = runFailure(r);
  return failure === undefined ? { passed: true } : { passed: false, failure };
}
