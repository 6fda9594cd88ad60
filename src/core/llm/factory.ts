// One place that turns a model configuration (CLI flags, editor settings, eval config) into a
// backend, so every front end accepts the same sources.
import { ModelError, type ModelBackend } from './backend.js';
import { apiKeyFromEnv, createOpenAIBackend } from './openai.js';

export type ModelConfig =
  | { kind: 'local'; modelDir: string; dtype?: 'fp32' | 'q4' | 'q4f16'; allowDownload?: boolean; contextLength?: number; onProgress?: (p: { file: string; loaded?: number; total?: number; status: string }) => void }
  | { kind: 'openai'; baseUrl: string; model: string; apiKey?: string; timeoutMs?: number; parallelism?: number; contextLength?: number };

export async function createBackend(c: ModelConfig): Promise<ModelBackend> {
  if (c.kind === 'openai') {
    if (!c.model) throw new ModelError('unknown-model', `name the served model (--model-name) for the endpoint ${c.baseUrl}`);
    return createOpenAIBackend({ baseUrl: c.baseUrl, model: c.model, apiKey: c.apiKey ?? apiKeyFromEnv(), timeoutMs: c.timeoutMs, parallelism: c.parallelism, contextLength: c.contextLength });
  }
  // Loaded on demand: onnxruntime is large and most commands never need it.
  const { createLocalBackend } = await import('./local.js');
  return createLocalBackend({ modelDir: c.modelDir, dtype: c.dtype, allowDownload: c.allowDownload, onProgress: c.onProgress, contextLength: c.contextLength });
}

/** A short human description for logs and reports. */
export function describeModel(c: ModelConfig): string {
  return c.kind === 'openai' ? `${c.model} at ${c.baseUrl}` : `${c.modelDir} (local ONNX, ${c.dtype ?? 'q4'})`;
}
