// The model-backend interface. The agent, the evaluator and the editor talk to a model only through
// this: a local in-process ONNX model and any OpenAI-compatible server look the same to them.
import type { SamplingParams } from '../vocabulary/types.js';

/** One chat message, as every backend sends it (the protocol, agent/protocol.ts, builds them). */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface CompletionRequest {
  messages: ChatMessage[];
  sampling: SamplingParams;
  /** Cancels the call: the backend stops generating and rejects with ModelError('cancelled'). */
  signal?: AbortSignal;
  /** Streamed text pieces, in order, as they are decoded. */
  onText?: (piece: string) => void;
}

export interface Completion {
  text: string;
  promptTokens: number;
  completionTokens: number;
  /** `length`: stopped at maxNewTokens (the reply is probably cut). */
  finishReason: 'stop' | 'length';
  /** Milliseconds from the call to the first decoded token, and to the end. */
  firstTokenMs: number | null;
  totalMs: number;
  /** In-process engines: prompt tokens evaluated for this call, and those whose KV state an
   * earlier call left behind (prefix reuse); llama.cpp: the context allocated by the end of the
   * call, tokens (it grows with the calls' needs up to the limit). */
  cache?: { evaluatedTokens: number; reusedTokens: number; contextTokens?: number };
  /** Prompt-lookup drafting: draft tokens verified, and those kept. */
  drafts?: { proposed: number; accepted: number };
}

export type ModelErrorKind =
  | 'connection' // server refused / unreachable
  | 'unknown-model' // the server does not serve that model name
  | 'context-overflow' // prompt + max new tokens exceed the model's context
  | 'auth' // 401/403
  | 'http' // any other HTTP failure after retries
  | 'timeout'
  | 'cancelled'
  | 'not-found' // model directory or file missing
  | 'corrupt' // model files present but not loadable
  | 'download-disabled' // a named model would need the network and the user did not allow it
  | 'protocol'; // the server answered something that is not an OpenAI-style reply

/** A model failure with an actionable message (what went wrong and what to do). */
export class ModelError extends Error {
  constructor(
    readonly kind: ModelErrorKind,
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ModelError';
  }
}

export interface BackendInfo {
  /** `local` (in-process) or `openai` (HTTP). */
  kind: 'local' | 'openai';
  /** The in-process engine: llama.cpp (a GGUF) or ONNX (transformers.js layout). */
  engine?: 'llama' | 'onnx';
  /** Where an in-process engine computes: `cpu`, or the GPU kind (`cuda`, `vulkan`, `metal`). */
  device?: string;
  /** llama.cpp: the KV cache type in use (`--kv-cache auto` resolved: q8_0, or f16 where q8_0
   * cannot run). Results differ slightly between the two, so eval keeps them apart. */
  kvCache?: 'f16' | 'q8_0';
  /** ONNX: the decoder graph in use: the export's in-place KV cache graph, or transformers.js's
   * past/present one (an export without the former; slower per token as the context grows). */
  onnxCache?: 'inplace' | 'present';
  /** Model identifier as the user gave it (directory or served model name). */
  model: string;
  /** Where it runs: a directory, or the base URL. */
  location: string;
  /** Context window in tokens when known. */
  contextLength: number | null;
}

export interface ModelBackend {
  /** Describes the backend; for the local backend this loads the model (once). */
  info(): Promise<BackendInfo>;
  /** Tokens the prompt of these messages takes under the model's chat template; null when the
   * backend cannot count exactly (then the agent estimates). */
  countTokens(messages: ChatMessage[]): Promise<number | null>;
  /** In-process engines: the prompt's token ids under the chat template (tests and bench compare engines). */
  promptIds?(messages: ChatMessage[]): Promise<number[]>;
  /** One sampled reply. Rejects with ModelError. */
  complete(req: CompletionRequest): Promise<Completion>;
  /** How many completions the backend runs well at once (servers batch; the local CPU model: 1). */
  readonly parallelism: number;
  /** Frees the model (local) or connections. */
  dispose(): Promise<void>;
}

/** A rough token estimate (about 3.5 characters per token for Verilog with the Qwen3 tokenizer),
 * used only when the backend cannot count. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 3.5);
}

/** The promise, or a rejection as soon as the signal fires: cancel answers at once while the
 * native work under way (a forward pass, a prompt batch) ends on its own in the background. */
export function abortable<T>(p: Promise<T>, signal: AbortSignal | undefined, error: () => Error): Promise<T> {
  if (!signal) return p;
  return new Promise<T>((ok, fail) => {
    const onAbort = (): void => fail(error());
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(ok, fail).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
