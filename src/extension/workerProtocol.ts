// Typed messages between the extension host and the worker process (dist/extension-worker.mjs)
// that runs the engine: design loading, simulation, the generator and the agent. Long work never
// runs on the extension host's thread; progress and model text stream back, cancel goes forward.
import type { DesignOptions } from '../core/design/load.js';
import type { DesignSpec } from '../core/design/types.js';
import type { CoverageFigures, UncoveredPoint } from '../core/coverage/model.js';
import type { Diagnostic, SimResult, SimStatus } from '../core/sim/result.js';
import type { SimLimits } from '../core/sim/simulator.js';
import type { FileLineCoverage } from './coverageData.js';

export type ModelConfig =
  | { source: 'none' }
  | { source: 'openai'; baseUrl: string; model: string; apiKey?: string; timeoutMs?: number; maxRetries?: number }
  | { source: 'local'; modelDir: string; dtype: string; allowDownload: boolean; engine?: string };

export interface GenerateSettings {
  rounds: number;
  samples: number;
  target: number;
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
}

/** One round as the editor keeps it (history, dashboard, diffs). */
export interface RoundRecord {
  sample: number;
  round: number;
  testbench: string | null;
  status: SimStatus | 'unparsable';
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
}

export interface SimulateOutcome {
  result: SimResult;
  files: FileLineCoverage[];
}

export interface IntrospectOutcome {
  top: string;
  topCandidates: string[];
  files: string[];
}

export interface ModelCheck {
  ok: boolean;
  message: string;
  models?: string[];
}

export type WorkerRequest =
  | { id: number; type: 'introspect'; design: DesignOptions }
  | { id: number; type: 'generate'; design: DesignOptions; model: ModelConfig; settings: GenerateSettings }
  | { id: number; type: 'simulate'; design: DesignOptions; testbench: { name: string; content: string }; settings: GenerateSettings }
  | {
      id: number;
      type: 'refine';
      design: DesignOptions;
      testbench: { name: string; content: string };
      /** The last result of that testbench, or null (then the log, or a fresh simulation). */
      last: SimResult | null;
      log?: string;
      model: ModelConfig;
      settings: GenerateSettings;
    }
  | { id: number; type: 'checkModel'; model: ModelConfig }
  | { id: number; type: 'cancel' };

export type ProgressEvent =
  | { kind: 'status'; message: string }
  /** The model in use, once it is loaded (engine and device included): status bar and dashboard. */
  | { kind: 'model'; label: string }
  | { kind: 'round-start'; sample: number; round: number; rounds: number }
  | { kind: 'text'; piece: string }
  | { kind: 'round-end'; record: RoundRecord; bestCoverage: number | null; rounds: number };

export interface WorkerErrorInfo {
  message: string;
  /** DesignError kind, ModelError kind, or `cancelled`. */
  kind?: string;
  candidates?: string[];
  diagnostics?: Diagnostic[];
}

export type WorkerReply =
  | { id: number; type: 'progress'; event: ProgressEvent }
  | { id: number; type: 'result'; result: unknown }
  | { id: number; type: 'error'; error: WorkerErrorInfo };

export type ResultOf<T extends WorkerRequest['type']> = T extends 'introspect'
  ? IntrospectOutcome
  : T extends 'generate'
    ? GenerateOutcome
    : T extends 'simulate'
      ? SimulateOutcome
      : T extends 'refine'
        ? RefineOutcome
        : T extends 'checkModel'
          ? ModelCheck
          : never;

export interface RefineOutcome {
  testbench: string;
  /** The revision's result (null when the model's reply was unparsable). */
  result: SimResult | null;
  record: RoundRecord;
  model: string;
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
    coverage: result?.coverage?.waived ?? null,
    uncovered: (result?.uncovered ?? []).slice(0, 200),
    diagnostics: (result?.diagnostics ?? []).slice(0, 100),
    notes,
    errMsg: result?.err_msg ?? (result ? '' : 'the reply held no testbench'),
  };
}
