// One place that turns a model configuration (CLI flags, editor settings, eval config) into a
// backend, so every front end accepts the same sources.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ModelError, type ModelBackend } from './backend.js';
import { findGguf, type KvCacheOption } from './llama.js';
import { apiKeyFromEnv, createOpenAIBackend } from './openai.js';

/** The in-process engine: `auto` takes llama.cpp when the model folder holds a GGUF. */
export type LocalEngine = 'auto' | 'llama' | 'onnx';

export type ModelConfig =
  | {
      kind: 'local';
      modelDir: string;
      engine?: LocalEngine;
      dtype?: 'fp32' | 'q4' | 'q4f16';
      allowDownload?: boolean;
      contextLength?: number;
      /** CPU threads (default: the physical cores). */
      threads?: number;
      /** llama.cpp: `auto` offloads to a GPU when a build for it loads (else the CPU, with a message). */
      gpu?: 'auto' | 'cpu';
      /** Prompt-lookup drafting (default on). */
      lookup?: boolean;
      /** llama.cpp's KV cache precision: `auto` (default: f16, unless memory is short for it; then
       * q8_0, half the memory, where the model's head size allows it and it runs here, with a
       * message), `f16`, `q8_0` (llama.ts resolveKvCache). */
      kvCache?: KvCacheOption;
      /** Cancels loading the model (the load stops and frees what it loaded). */
      signal?: AbortSignal;
      onProgress?: (p: { file: string; loaded?: number; total?: number; status: string }) => void;
      /** One-line notices (engine choice, GPU fallback). */
      onMessage?: (message: string) => void;
    }
  | { kind: 'openai'; baseUrl: string; model: string; apiKey?: string; timeoutMs?: number; parallelism?: number; contextLength?: number };

/** Which engine a local configuration runs on: `auto` is llama.cpp when there is a GGUF, else ONNX. */
export function resolveEngine(c: { modelDir: string; engine?: LocalEngine }): 'llama' | 'onnx' {
  if (c.engine === 'llama' || c.engine === 'onnx') return c.engine;
  return findGguf(c.modelDir) ? 'llama' : 'onnx';
}

export async function createBackend(c: ModelConfig): Promise<ModelBackend> {
  if (c.kind === 'openai') {
    if (!c.model) throw new ModelError('unknown-model', `name the served model (--model-name) for the endpoint ${c.baseUrl}`);
    return createOpenAIBackend({
      baseUrl: c.baseUrl,
      model: c.model,
      apiKey: c.apiKey ?? apiKeyFromEnv(),
      timeoutMs: c.timeoutMs,
      parallelism: c.parallelism,
      contextLength: c.contextLength,
    });
  }
  const engine = resolveEngine(c);
  if (engine === 'llama') {
    const { createLlamaBackend } = await import('./llama.js');
    const llama = createLlamaBackend({
      modelPath: c.modelDir,
      contextLength: c.contextLength,
      threads: c.threads,
      gpu: c.gpu,
      lookup: c.lookup,
      kvCache: c.kvCache,
      signal: c.signal,
      onMessage: c.onMessage,
    });
    if (c.engine !== 'auto' && c.engine !== undefined) return llama;
    // auto: a machine where no llama.cpp binary loads still has the ONNX engine, when the folder has it.
    try {
      await llama.info();
      return llama;
    } catch (e) {
      const dir = resolve(c.modelDir);
      if (!(e instanceof ModelError) || e.kind !== 'not-found' || !existsSync(join(dir, 'onnx'))) throw e;
      c.onMessage?.(`llama.cpp is unavailable (${e.message}); using the ONNX engine`);
      await llama.dispose();
    }
  }
  // Loaded on demand: onnxruntime is large and most commands never need it.
  const { createLocalBackend } = await import('./local.js');
  return createLocalBackend({
    modelDir: c.modelDir,
    dtype: c.dtype,
    allowDownload: c.allowDownload,
    onProgress: c.onProgress,
    contextLength: c.contextLength,
    threads: c.threads,
    lookup: c.lookup,
    signal: c.signal,
  });
}

/** A short human description for logs and reports. */
export function describeModel(c: ModelConfig): string {
  if (c.kind === 'openai') return `${c.model} at ${c.baseUrl}`;
  const engine = resolveEngine(c);
  return engine === 'llama' ? `${findGguf(c.modelDir) ?? c.modelDir} (local llama.cpp)` : `${c.modelDir} (local ONNX, ${c.dtype ?? 'q4'})`;
}
