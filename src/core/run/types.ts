// The engine's types a front end names (the CLI, the editor, the webview, the benchmarks), each
// re-exported once from the module that defines it: a front end imports core only from core/run
// and the vocabulary (test/unit/layers.test.ts), and this file is the one door for types.
export type { ChatMessage, LogKind, NamedText } from '../agent/protocol.js';
export type { CoverageFigures, CoveragePoint, UncoveredPoint, UncoveredReason } from '../coverage/model.js';
export type { Waiver } from '../coverage/waivers.js';
export type { Diagnostic } from '../design/diagnostic.js';
export type { ProjectFile } from '../design/projectSchema.js';
export type { DesignInfo, DesignSpec } from '../design/types.js';
export type { EvalFormat } from '../eval/task.js';
export type { BackendInfo, Completion, ModelBackend } from '../llm/backend.js';
export type { ModelConfig } from '../llm/factory.js';
export type { PullProgress } from '../llm/hub/pull.js';
export type { SimResult, SimStatus, StageTimings } from '../sim/result.js';
export type { SimRequest, SimStageName, Simulator } from '../sim/simulator.js';
export type { Toolchain } from '../sim/verilator/toolchain.js';
