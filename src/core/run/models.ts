// The models a run can use (a local directory through llama.cpp or ONNX, an OpenAI-compatible
// endpoint), their errors, and the checkpoints' conversation (first turn, feedback turn) for the
// front ends that show or measure it.
export { createBackend, describeModel, resolveEngine, type LocalEngine, type ModelConfig } from '../llm/factory.js';
export { createLlamaBackend } from '../llm/llama.js';
export { resolveModelRef } from '../llm/resolve.js';
export { createLocalBackend } from '../llm/local.js';
export { ModelError } from '../llm/backend.js';
export { ContextBudgetError } from '../agent/loop.js';
export { defaultInstruction, feedbackFromLog, firstTurn } from '../agent/protocol.js';
// Models from a hub repository into the per-machine model cache (`chorus model pull|list|rm`,
// "CHORUS: Download a Model...").
export {
  HubError,
  parseModelRef,
  planPull,
  pullModel,
  type PullOptions,
  type PullPlan,
  type PullProgress,
  type PullResult,
} from '../llm/hub/pull.js';
export { describeCandidate, type Candidate } from '../llm/hub/candidates.js';
export { convertCheckpoint, findTrainingCli, GGUF_TYPES, ggufType } from '../llm/hub/convert.js';
export {
  editorModel,
  findModels,
  listModels,
  listPartials,
  modelsDir,
  recordEditorModel,
  removeModel,
  removePartials,
  type CachedModel,
} from '../llm/hub/cache.js';
