// The one model check: the editor's "check the model" and endpoint probe (the worker) and the CLI's
// opening of a model (`chorus refine`, through core/run/refinement.ts) use this module, so an
// endpoint is reached at the same address everywhere: the engine's normalizeBaseUrl
// (llm/openai.ts) turns `http://h:8000`, `.../v1`, `.../v1/` and `.../v1/chat/completions` into
// `http://h:8000/v1`, and the served models are listed at `<that>/models`, where the OpenAI
// backend itself looks.
import { ModelError, type BackendInfo, type ModelBackend } from '../llm/backend.js';
import { createBackend, type ModelConfig } from '../llm/factory.js';
import { normalizeBaseUrl } from '../llm/openai.js';

export interface ModelCheck {
  ok: boolean;
  message: string;
  /** An endpoint's served model names. */
  models?: string[];
}

/** Where an endpoint lists its models: `<normalized base>/models`. Throws a ModelError on a URL
 * that is not http(s). */
export function modelsUrl(baseUrl: string): string {
  return `${normalizeBaseUrl(baseUrl)}/models`;
}

/** Opens a model as the CLI runs it (a local model load stops on `signal`). */
export function openModel(model: ModelConfig, signal?: AbortSignal): Promise<ModelBackend> {
  return createBackend(model.kind === 'local' && signal ? { ...model, signal } : model);
}

export interface CheckOptions {
  signal?: AbortSignal;
  /** Opens a local model (default openModel; the editor's worker holds the model it checks). */
  open?: (model: ModelConfig, signal?: AbortSignal) => Promise<ModelBackend>;
  fetchImpl?: typeof fetch;
  /** Limit for the endpoint's answer (default 10 s). */
  timeoutMs?: number;
}

/** A line about a loaded local model: engine, device, KV cache, context. */
export function describeLoaded(info: BackendInfo): string {
  const engine =
    info.engine === 'llama'
      ? `llama.cpp on ${info.device ?? 'cpu'}${info.kvCache ? `, ${info.kvCache} KV cache` : ''}`
      : `ONNX on cpu${info.onnxCache === 'present' ? ' (no in-place KV cache graph in this export: slower on long prompts; re-export with chorus-train export)' : ''}`;
  return `loaded ${info.model} with ${engine}${info.contextLength ? ` (context ${info.contextLength} tokens)` : ''}`;
}

/** Checks a model: an endpoint answers (and serves the named model; an empty name only lists
 * them), or a local model loads. Never throws for a failed check: `ok` is false. */
export async function checkModel(model: ModelConfig | null, opts: CheckOptions = {}): Promise<ModelCheck> {
  if (!model) return { ok: true, message: 'model-free generator: nothing to check' };
  if (model.kind === 'openai') return checkEndpoint(model, opts);
  let backend: ModelBackend | null = null;
  try {
    backend = await (opts.open ?? openModel)(model, opts.signal);
    return { ok: true, message: describeLoaded(await backend.info()) };
  } catch (e) {
    return { ok: false, message: (e as Error).message };
  } finally {
    await backend?.dispose().catch(() => undefined);
  }
}

async function checkEndpoint(m: Extract<ModelConfig, { kind: 'openai' }>, opts: CheckOptions): Promise<ModelCheck> {
  let url: string;
  try {
    url = modelsUrl(m.baseUrl);
  } catch (e) {
    if (e instanceof ModelError) return { ok: false, message: e.message };
    throw e;
  }
  const timeout = AbortSignal.timeout(opts.timeoutMs ?? 10_000);
  let res: Response;
  try {
    res = await (opts.fetchImpl ?? fetch)(url, {
      headers: m.apiKey ? { authorization: `Bearer ${m.apiKey}` } : {},
      signal: opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout,
    });
  } catch (e) {
    return { ok: false, message: `${url} did not answer (${(e as Error).message}); is the server running?` };
  }
  if (res.status === 401 || res.status === 403) return { ok: false, message: `${url} refused the API key (HTTP ${res.status})` };
  if (!res.ok) return { ok: false, message: `${url} answered HTTP ${res.status}` };
  const body = (await res.json().catch(() => ({}))) as { data?: Array<{ id?: string }> };
  const models = (body.data ?? []).map((d) => d.id ?? '').filter(Boolean);
  if (m.model && models.length && !models.includes(m.model))
    return { ok: false, models, message: `the server does not serve '${m.model}'; it serves: ${models.join(', ')}` };
  return { ok: true, models, message: `the server answers; models: ${models.join(', ') || '(none listed)'}` };
}
