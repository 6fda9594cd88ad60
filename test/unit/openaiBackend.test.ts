// The OpenAI-compatible backend against a loopback server: streaming, usage, retries, and the
// errors users meet (refused connection, unknown model, context overflow, timeout, cancel).
import { afterEach, describe, expect, it } from 'vitest';
import { createServer } from 'node:net';
import { createOpenAIBackend, normalizeBaseUrl } from '../../src/core/llm/openai.js';
import { ModelError } from '../../src/core/llm/backend.js';
import { DEFAULT_SAMPLING } from '../../src/core/vocabulary/defaults.js';
import { startScriptedServer, type ScriptedServer } from '../support/scriptedServer.js';

const msgs = [
  { role: 'system' as const, content: 'sys' },
  { role: 'user' as const, content: 'write a testbench' },
];
const sampling = { ...DEFAULT_SAMPLING, maxNewTokens: 256 };

let server: ScriptedServer | null = null;
afterEach(async () => {
  await server?.close();
  server = null;
});

async function kind(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'resolved';
  } catch (e) {
    expect(e).toBeInstanceOf(ModelError);
    return (e as ModelError).kind;
  }
}

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((ok) => s.listen(0, '127.0.0.1', ok));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((ok) => s.close(() => ok()));
  return port;
}

describe('normalizeBaseUrl', () => {
  it('accepts the forms users paste', () => {
    expect(normalizeBaseUrl('http://127.0.0.1:8000')).toBe('http://127.0.0.1:8000/v1');
    expect(normalizeBaseUrl('http://127.0.0.1:8000/v1/')).toBe('http://127.0.0.1:8000/v1');
    expect(normalizeBaseUrl('http://h:1/v1/chat/completions')).toBe('http://h:1/v1');
    expect(normalizeBaseUrl('http://h:11434/api/v1')).toBe('http://h:11434/api/v1');
    expect(() => normalizeBaseUrl('localhost:8000')).toThrow(/not a URL|only http/);
  });
});

describe('OpenAI-compatible backend', () => {
  it('streams the reply, reports usage and sends the protocol sampling settings', async () => {
    server = await startScriptedServer(['filename: tb.sv\n```systemverilog\nmodule tb; endmodule\n```\n']);
    const b = createOpenAIBackend({ baseUrl: server.url, model: 'scripted' });
    const pieces: string[] = [];
    const c = await b.complete({ messages: msgs, sampling: { ...sampling, seed: 7 }, onText: (p) => pieces.push(p) });
    expect(c.text).toContain('module tb; endmodule');
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join('')).toBe(c.text);
    expect(c.finishReason).toBe('stop');
    expect(c.completionTokens).toBe(pieces.length);
    expect(c.promptTokens).toBeGreaterThan(0);
    expect(c.firstTokenMs).not.toBeNull();
    const req = server.requests[0];
    expect(req).toMatchObject({
      model: 'scripted',
      temperature: 0.7,
      top_p: 0.8,
      max_tokens: 256,
      stream: true,
      seed: 7,
      chat_template_kwargs: { enable_thinking: false },
    });
    expect(req.messages).toEqual(msgs);
  });

  it('reports a reply cut at max tokens as finishReason length', async () => {
    server = await startScriptedServer([{ text: 'module tb;', finishReason: 'length' }]);
    const c = await createOpenAIBackend({ baseUrl: server.url, model: 'scripted' }).complete({ messages: msgs, sampling });
    expect(c.finishReason).toBe('length');
  });

  it('retries 500 and 429 (honouring Retry-After) then succeeds', async () => {
    server = await startScriptedServer([{ status: 500 }, { status: 429, retryAfter: 0 }, 'ok']);
    const c = await createOpenAIBackend({ baseUrl: server.url, model: 'scripted', backoffMs: 10 }).complete({ messages: msgs, sampling });
    expect(c.text).toBe('ok');
    expect(server.requests).toHaveLength(3);
  });

  it('gives up after maxRetries with an http error naming the status', async () => {
    server = await startScriptedServer([{ status: 503 }, { status: 503 }, { status: 503 }]);
    const b = createOpenAIBackend({ baseUrl: server.url, model: 'scripted', backoffMs: 5, maxRetries: 2 });
    await expect(b.complete({ messages: msgs, sampling })).rejects.toThrow(/HTTP 503/);
    expect(server.requests).toHaveLength(3);
  });

  it('does not retry a client error', async () => {
    server = await startScriptedServer([{ status: 400, body: 'bad request: temperature must be >= 0' }, 'never']);
    const b = createOpenAIBackend({ baseUrl: server.url, model: 'scripted', backoffMs: 5 });
    expect(await kind(b.complete({ messages: msgs, sampling }))).toBe('http');
    expect(server.requests).toHaveLength(1);
  });

  it('names a context overflow as such', async () => {
    server = await startScriptedServer([
      { status: 400, body: "This model's maximum context length is 32768 tokens. However, you requested 40000 tokens." },
    ]);
    const b = createOpenAIBackend({ baseUrl: server.url, model: 'scripted' });
    const err = await b.complete({ messages: msgs, sampling }).catch((e: ModelError) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).kind).toBe('context-overflow');
    expect((err as ModelError).message).toMatch(/Lower max new tokens/);
  });

  it('lists the served models when the name is wrong', async () => {
    server = await startScriptedServer([], { models: ['qwen3-4b-chorus'] });
    const b = createOpenAIBackend({ baseUrl: server.url, model: 'qwen3-4b' });
    await expect(b.info()).rejects.toThrow(/does not serve a model named 'qwen3-4b'.*qwen3-4b-chorus/);
    // The chat call itself also says so (servers without /models).
    expect(await kind(b.complete({ messages: msgs, sampling }))).toBe('unknown-model');
  });

  it('reads the context length from /models', async () => {
    server = await startScriptedServer([], { maxModelLen: 4096 });
    expect(await createOpenAIBackend({ baseUrl: server.url, model: 'scripted' }).info()).toMatchObject({
      kind: 'openai',
      contextLength: 4096,
    });
  });

  it('says the server is down and how to start it when the connection is refused', async () => {
    const port = await closedPort();
    const b = createOpenAIBackend({ baseUrl: `http://127.0.0.1:${port}`, model: 'm', maxRetries: 0 });
    const err = (await b.complete({ messages: msgs, sampling }).catch((e) => e)) as ModelError;
    expect(err.kind).toBe('connection');
    expect(err.message).toMatch(/connection refused.*Start the server/);
    await expect(b.info()).rejects.toThrow(/connection refused/);
  });

  it('times out a server that never answers', async () => {
    server = await startScriptedServer([{ hang: true }]);
    const b = createOpenAIBackend({ baseUrl: server.url, model: 'scripted', timeoutMs: 300, maxRetries: 0 });
    expect(await kind(b.complete({ messages: msgs, sampling }))).toBe('timeout');
  });

  it('cancels a streaming reply through the AbortSignal', async () => {
    server = await startScriptedServer([{ text: 'x'.repeat(2000), chunkDelayMs: 20 }]);
    const b = createOpenAIBackend({ baseUrl: server.url, model: 'scripted' });
    const ac = new AbortController();
    let got = 0;
    const p = b.complete({ messages: msgs, sampling, signal: ac.signal, onText: () => ++got === 3 && ac.abort() });
    expect(await kind(p)).toBe('cancelled');
  });

  it('drops chat_template_kwargs for a server that rejects it, once', async () => {
    server = await startScriptedServer(['a', 'b'], { rejectTemplateKwargs: true });
    const b = createOpenAIBackend({ baseUrl: server.url, model: 'scripted' });
    expect((await b.complete({ messages: msgs, sampling })).text).toBe('a');
    expect((await b.complete({ messages: msgs, sampling })).text).toBe('b');
    expect(server.requests.every((r) => r.chat_template_kwargs === undefined)).toBe(true);
  });

  it('sends the API key as a bearer token and counts tokens through /tokenize when served', async () => {
    server = await startScriptedServer(['ok'], { tokenize: true });
    const b = createOpenAIBackend({ baseUrl: server.url, model: 'scripted', apiKey: 'sk-test' });
    expect(await b.countTokens(msgs)).toBeGreaterThan(0);
    await b.complete({ messages: msgs, sampling });
    expect(server.authorizations).toEqual(['Bearer sk-test']);
  });

  it('leaves token counting to the agent when the server has no /tokenize', async () => {
    server = await startScriptedServer([]);
    expect(await createOpenAIBackend({ baseUrl: server.url, model: 'scripted' }).countTokens(msgs)).toBeNull();
  });
});
