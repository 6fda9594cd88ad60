// OpenAI-compatible chat backend (`/v1/chat/completions`, streamed): vLLM, SGLang, llama.cpp
// server, Ollama, LM Studio. Retries 429/5xx with backoff, turns the usual failures (refused
// connection, unknown model, context overflow) into ModelErrors that say what to do.
import type { ChatMessage } from './backend.js';
import { ModelError, type BackendInfo, type Completion, type CompletionRequest, type ModelBackend } from './backend.js';

export interface OpenAIBackendOptions {
  /** `http://host:port` or `http://host:port/v1`. */
  baseUrl: string;
  /** Served model name. */
  model: string;
  /** Sent as a bearer token. Take it from the environment or a secret store, never a settings file. */
  apiKey?: string;
  /** Limit for one call, start to last token (default 10 minutes). */
  timeoutMs?: number;
  /** Retries on 429/5xx/connection resets (default 4). */
  maxRetries?: number;
  /** First backoff delay (default 500 ms; doubles; a Retry-After header wins). */
  backoffMs?: number;
  /** Completions to run at once (default 8: servers batch). */
  parallelism?: number;
  /** Send `chat_template_kwargs: {enable_thinking: false}` (Qwen3, docs/protocol.md §4; default true).
   * Dropped automatically if the server rejects the field. */
  disableThinking?: boolean;
  /** Context length when the server does not report it. */
  contextLength?: number;
  fetchImpl?: typeof fetch;
}

/** `http://h:p`, `http://h:p/`, `http://h:p/v1/` → `http://h:p/v1`. */
export function normalizeBaseUrl(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new ModelError('connection', `'${url}' is not a URL; give the server's base URL, e.g. http://127.0.0.1:8000/v1`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new ModelError('connection', `'${url}': only http and https endpoints are supported`);
  let path = u.pathname.replace(/\/+$/, '');
  if (path.endsWith('/chat/completions')) path = path.slice(0, -'/chat/completions'.length);
  if (!/\/v\d+$/.test(path)) path += '/v1';
  return `${u.origin}${path}`;
}

const sleep = (ms: number, signal?: AbortSignal): Promise<void> =>
  new Promise((res, rej) => {
    if (signal?.aborted) return rej(new ModelError('cancelled', 'model call cancelled'));
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      res();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(t);
      rej(new ModelError('cancelled', 'model call cancelled'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });

function causeCode(e: unknown): string | undefined {
  const c = (e as { cause?: { code?: string; errors?: Array<{ code?: string }> } })?.cause;
  return c?.code ?? c?.errors?.[0]?.code;
}

const CONTEXT_OVERFLOW =
  /context length|context window|maximum context|too many tokens|exceeds? the (?:model'?s? )?(?:max|context)|prompt is too long|n_ctx|input tokens exceed/i;

export class OpenAIBackend implements ModelBackend {
  readonly parallelism: number;
  private readonly base: string;
  private readonly fetch: typeof fetch;
  private sendTemplateKwargs: boolean;
  private infoCache: Promise<BackendInfo> | null = null;
  private tokenizeSupported: boolean | null = null;

  constructor(private readonly o: OpenAIBackendOptions) {
    this.base = normalizeBaseUrl(o.baseUrl);
    this.fetch = o.fetchImpl ?? fetch;
    this.parallelism = o.parallelism ?? 8;
    this.sendTemplateKwargs = o.disableThinking ?? true;
  }

  private headers(): Record<string, string> {
    const h: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    if (this.o.apiKey) h.authorization = `Bearer ${this.o.apiKey}`;
    return h;
  }

  private connectionError(e: unknown, what: string): ModelError {
    const code = causeCode(e);
    if (code === 'ECONNREFUSED') {
      return new ModelError(
        'connection',
        `cannot reach the model server at ${this.base} (connection refused). Start the server (e.g. \`vllm serve <model>\`, \`llama-server -m model.gguf\`, \`ollama serve\`) or fix the endpoint URL.`,
      );
    }
    if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
      return new ModelError('connection', `cannot resolve the host of ${this.base} (${code}). Check the endpoint URL.`);
    }
    const cause = (e as { cause?: { message?: string } }).cause?.message;
    return new ModelError('connection', `${what} ${this.base} failed: ${[code, cause ?? (e as Error).message].filter(Boolean).join(': ')}`);
  }

  info(): Promise<BackendInfo> {
    this.infoCache ??= this.fetchInfo().catch((e) => {
      this.infoCache = null;
      throw e;
    });
    return this.infoCache;
  }

  private async fetchInfo(): Promise<BackendInfo> {
    let res: Response;
    try {
      res = await this.fetch(`${this.base}/models`, { headers: this.headers(), signal: AbortSignal.timeout(15_000) });
    } catch (e) {
      throw this.connectionError(e, 'listing models at');
    }
    if (res.status === 401 || res.status === 403)
      throw new ModelError(
        'auth',
        `the server at ${this.base} refused the API key (HTTP ${res.status}). Set CHORUS_API_KEY (or OPENAI_API_KEY) to a valid key.`,
        res.status,
      );
    let contextLength = this.o.contextLength ?? null;
    if (res.ok) {
      const body = (await res.json().catch(() => null)) as { data?: Array<Record<string, unknown>> } | null;
      const models = body?.data ?? [];
      if (models.length) {
        const m = models.find((x) => x.id === this.o.model);
        if (!m) {
          throw new ModelError(
            'unknown-model',
            `the server at ${this.base} does not serve a model named '${this.o.model}'. It serves: ${models.map((x) => String(x.id)).join(', ')}.`,
          );
        }
        // vLLM: max_model_len; SGLang: max_model_len / context_length; llama.cpp: meta.n_ctx_train.
        const ctx = m.max_model_len ?? m.context_length ?? (m.meta as Record<string, unknown> | undefined)?.n_ctx_train;
        if (contextLength === null && typeof ctx === 'number') contextLength = ctx;
      }
    }
    // Some servers (older Ollama, LM Studio) have no /models: the chat call will tell us.
    return { kind: 'openai', model: this.o.model, location: this.base, contextLength };
  }

  /** vLLM and SGLang expose `/tokenize` (with chat messages) at the server root; others do not. */
  async countTokens(messages: ChatMessage[]): Promise<number | null> {
    if (this.tokenizeSupported === false) return null;
    const root = this.base.replace(/\/v\d+$/, '');
    try {
      const res = await this.fetch(`${root}/tokenize`, {
        method: 'POST',
        headers: this.headers(),
        body: JSON.stringify({
          model: this.o.model,
          messages,
          add_generation_prompt: true,
          ...(this.sendTemplateKwargs ? { chat_template_kwargs: { enable_thinking: false } } : {}),
        }),
        signal: AbortSignal.timeout(15_000),
      });
      const body = res.ok ? ((await res.json().catch(() => null)) as { count?: number; tokens?: unknown[] } | null) : null;
      const n = body?.count ?? body?.tokens?.length;
      this.tokenizeSupported = typeof n === 'number';
      return typeof n === 'number' ? n : null;
    } catch {
      this.tokenizeSupported = false;
      return null;
    }
  }

  async complete(req: CompletionRequest): Promise<Completion> {
    const retries = this.o.maxRetries ?? 4;
    let delay = this.o.backoffMs ?? 500;
    for (let attempt = 0; ; attempt++) {
      if (req.signal?.aborted) throw new ModelError('cancelled', 'model call cancelled');
      try {
        return await this.once(req);
      } catch (e) {
        const me = e as ModelError & { retryAfterMs?: number };
        const transient =
          me instanceof ModelError &&
          (me.kind === 'http' ? me.status === 429 || (me.status ?? 0) >= 500 : me.kind === 'connection' && me.message.includes('reset'));
        if (!transient || attempt >= retries) throw e;
        await sleep(me.retryAfterMs ?? delay, req.signal);
        delay *= 2;
      }
    }
  }

  private async once(req: CompletionRequest): Promise<Completion> {
    const t0 = performance.now();
    const timeoutMs = this.o.timeoutMs ?? 600_000;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
    const fail = (e: unknown): never => this.callFailure(e, req, timeout, timeoutMs);

    let res: Response;
    try {
      res = await this.fetch(`${this.base}/chat/completions`, {
        method: 'POST',
        headers: this.headers(),
        body: JSON.stringify(this.chatBody(req)),
        signal,
      });
    } catch (e) {
      return fail(e);
    }
    if (!res.ok) {
      const text = await res.text().catch(() => '');
      if (
        res.status === 400 &&
        this.sendTemplateKwargs &&
        /chat_template_kwargs|unrecognized|unknown (?:field|parameter)|extra (?:fields|inputs)/i.test(text)
      ) {
        // The server does not take template arguments: drop them for this and later calls.
        this.sendTemplateKwargs = false;
        return this.once(req);
      }
      throw this.httpError(res, text);
    }

    let reply: ReplyTally;
    try {
      // A server that ignores `stream` answers one JSON body.
      reply = (res.headers.get('content-type') ?? '').includes('text/event-stream')
        ? await this.readStream(res, req, t0)
        : await this.readBody(res, req, t0);
    } catch (e) {
      return fail(e);
    }
    const { text, promptTokens, finish, firstTokenMs } = reply;
    const completionTokens = reply.completionTokens || reply.pieces;
    if (finish === 'error') throw new ModelError('http', `the server at ${this.base} ended the reply with an error`, 500);
    return {
      text,
      promptTokens,
      completionTokens,
      finishReason: finish === 'length' ? 'length' : 'stop',
      firstTokenMs,
      totalMs: performance.now() - t0,
    };
  }

  /** The chat request's body: the messages, the sampling, a streamed reply with its usage. */
  private chatBody(req: CompletionRequest): Record<string, unknown> {
    const s = req.sampling;
    const body: Record<string, unknown> = {
      model: this.o.model,
      messages: req.messages,
      temperature: s.temperature,
      top_p: s.topP,
      max_tokens: s.maxNewTokens,
      stream: true,
      stream_options: { include_usage: true },
    };
    if (s.seed !== undefined) body.seed = s.seed;
    if (this.sendTemplateKwargs) body.chat_template_kwargs = { enable_thinking: false };
    return body;
  }

  /** A call that threw, as the ModelError it stands for: cancelled, timed out, reset or unreachable. */
  private callFailure(e: unknown, req: CompletionRequest, timeout: AbortSignal, timeoutMs: number): never {
    if (req.signal?.aborted) throw new ModelError('cancelled', 'model call cancelled');
    if (timeout.aborted)
      throw new ModelError(
        'timeout',
        `the model server at ${this.base} did not finish within ${Math.round(timeoutMs / 1000)} s; raise the timeout or lower max new tokens`,
      );
    if (e instanceof ModelError) throw e;
    const code = causeCode(e);
    if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') throw new ModelError('connection', `connection reset by ${this.base}`);
    throw this.connectionError(e, 'calling');
  }

  /** A reply the server sent as one JSON body. */
  private async readBody(res: Response, req: CompletionRequest, t0: number): Promise<ReplyTally> {
    const j = (await res.json()) as ChatResponse;
    const c = j.choices?.[0];
    if (!c) throw new ModelError('protocol', `the server at ${this.base} answered without choices`);
    const text = c.message?.content ?? '';
    if (text) req.onText?.(text);
    return {
      text,
      finish: c.finish_reason ?? null,
      promptTokens: j.usage?.prompt_tokens ?? 0,
      completionTokens: j.usage?.completion_tokens ?? 0,
      firstTokenMs: performance.now() - t0,
      pieces: 0,
    };
  }

  /** A streamed reply (server-sent events), each piece of text handed to onText as it comes. */
  private async readStream(res: Response, req: CompletionRequest, t0: number): Promise<ReplyTally> {
    const tally: ReplyTally = { text: '', promptTokens: 0, completionTokens: 0, finish: null, firstTokenMs: null, pieces: 0 };
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += value;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line.startsWith('data:')) continue;
        const data = line.slice(5).trim();
        if (data === '[DONE]') continue;
        this.takeChunk(data, tally, req, t0);
      }
    }
    return tally;
  }

  /** One stream chunk (the JSON after `data:`) added to the tally. */
  private takeChunk(data: string, tally: ReplyTally, req: CompletionRequest, t0: number): void {
    let chunk: ChatResponse;
    try {
      chunk = JSON.parse(data) as ChatResponse;
    } catch {
      throw new ModelError('protocol', `the server at ${this.base} sent a stream chunk that is not JSON: ${data.slice(0, 200)}`);
    }
    if (chunk.error)
      throw new ModelError(
        'http',
        `the server at ${this.base} reported an error mid-stream: ${chunk.error.message ?? JSON.stringify(chunk.error)}`,
        500,
      );
    const c = chunk.choices?.[0];
    const piece = c?.delta?.content ?? '';
    if (piece) {
      tally.firstTokenMs ??= performance.now() - t0;
      tally.text += piece;
      tally.pieces++;
      req.onText?.(piece);
    }
    if (c?.finish_reason) tally.finish = c.finish_reason;
    if (chunk.usage) {
      tally.promptTokens = chunk.usage.prompt_tokens ?? tally.promptTokens;
      tally.completionTokens = chunk.usage.completion_tokens ?? tally.completionTokens;
    }
  }

  private httpError(res: Response, text: string): ModelError {
    let msg = text;
    try {
      const j = JSON.parse(text) as { error?: { message?: string } | string; message?: string; detail?: string };
      msg = (typeof j.error === 'string' ? j.error : j.error?.message) ?? j.message ?? j.detail ?? text;
    } catch {
      /* plain text body */
    }
    msg = msg.slice(0, 500);
    const s = res.status;
    if (s === 401 || s === 403)
      return new ModelError(
        'auth',
        `the server at ${this.base} refused the request (HTTP ${s}): ${msg}. Set CHORUS_API_KEY (or OPENAI_API_KEY).`,
        s,
      );
    if ((s === 404 || s === 400) && /model/i.test(msg) && /not (?:found|exist)|does not exist|unknown|no such/i.test(msg)) {
      return new ModelError(
        'unknown-model',
        `the server at ${this.base} does not know the model '${this.o.model}': ${msg}. List its models with GET ${this.base}/models.`,
        s,
      );
    }
    if ((s === 400 || s === 413 || s === 422) && CONTEXT_OVERFLOW.test(msg)) {
      return new ModelError(
        'context-overflow',
        `the prompt does not fit the context of '${this.o.model}' at ${this.base}: ${msg}. Lower max new tokens, leave out spec files, or serve the model with a longer context.`,
        s,
      );
    }
    if (s === 404)
      return new ModelError(
        'protocol',
        `${this.base}/chat/completions does not exist (HTTP 404): is this an OpenAI-compatible endpoint? Most servers serve it under /v1.`,
        s,
      );
    const err = new ModelError('http', `the server at ${this.base} answered HTTP ${s}: ${msg}`, s) as ModelError & {
      retryAfterMs?: number;
    };
    const ra = res.headers.get('retry-after');
    if (ra && Number.isFinite(Number(ra))) err.retryAfterMs = Math.min(60_000, Number(ra) * 1000);
    return err;
  }

  async dispose(): Promise<void> {
    /* fetch keeps no state of ours */
  }
}

/** A reply as it was read: its text, finish reason, the usage the server reported, and the
 * time to the first piece of text; `pieces` counts the stream's pieces (the fallback count). */
interface ReplyTally {
  text: string;
  promptTokens: number;
  completionTokens: number;
  finish: string | null;
  firstTokenMs: number | null;
  pieces: number;
}

interface ChatResponse {
  choices?: Array<{ message?: { content?: string }; delta?: { content?: string }; finish_reason?: string | null }>;
  usage?: { prompt_tokens?: number; completion_tokens?: number };
  error?: { message?: string };
}

export function createOpenAIBackend(o: OpenAIBackendOptions): ModelBackend {
  return new OpenAIBackend(o);
}

/** The API key from the environment (CHORUS_API_KEY, then OPENAI_API_KEY). */
export function apiKeyFromEnv(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.CHORUS_API_KEY || env.OPENAI_API_KEY || undefined;
}
