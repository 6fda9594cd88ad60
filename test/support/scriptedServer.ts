// Test double for an OpenAI-compatible model server: replays scripted replies on a loopback port,
// so tests exercise the agent loop's branches (good testbench, broken testbench, no code block,
// thinking block, timeout, HTTP errors) with the real HTTP backend. It stands in only for the
// CONTENT a real checkpoint would produce; everything else (HTTP, streaming, parsing, simulation)
// is the product's real code.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ScriptItem =
  | string
  | { text: string; delayMs?: number; chunkDelayMs?: number; finishReason?: 'stop' | 'length' }
  | { status: number; body?: string; retryAfter?: number }
  | { hang: true }
  | ((request: ChatRequest) => ScriptItem);

export interface ChatRequest {
  model: string;
  messages: Array<{ role: string; content: string }>;
  stream?: boolean;
  temperature?: number;
  top_p?: number;
  max_tokens?: number;
  seed?: number;
  chat_template_kwargs?: Record<string, unknown>;
}

export interface ScriptedServer {
  url: string;
  /** Every chat request received, in order. */
  requests: ChatRequest[];
  /** The Authorization header of each chat request ('' when absent). */
  authorizations: string[];
  /** Every request received, as `METHOD /path`, in order (routed or not). */
  paths: string[];
  /** Remaining script items. */
  remaining(): number;
  close(): Promise<void>;
}

export interface ScriptedServerOptions {
  models?: string[];
  maxModelLen?: number;
  /** Reject `chat_template_kwargs` with 400 like a strict server would. */
  rejectTemplateKwargs?: boolean;
  /** Serve POST /tokenize (vLLM style) with a count of 1 token per 4 characters. */
  tokenize?: boolean;
}

export async function startScriptedServer(script: ScriptItem[], opts: ScriptedServerOptions = {}): Promise<ScriptedServer> {
  const queue = [...script];
  const requests: ChatRequest[] = [];
  const authorizations: string[] = [];
  const paths: string[] = [];
  const models = opts.models ?? ['scripted'];
  const hanging = new Set<ServerResponse>();

  const readBody = (req: IncomingMessage): Promise<string> =>
    new Promise((res, rej) => {
      let b = '';
      req.setEncoding('utf8');
      req.on('data', (d: string) => (b += d));
      req.on('end', () => res(b));
      req.on('error', rej);
    });

  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };

  const server = createServer(async (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    paths.push(`${req.method} ${path}`);
    if (req.method === 'GET' && path === '/v1/models') {
      return json(res, 200, {
        object: 'list',
        data: models.map((id) => ({ id, object: 'model', max_model_len: opts.maxModelLen ?? 32_768 })),
      });
    }
    if (req.method === 'POST' && path === '/tokenize' && opts.tokenize) {
      const body = JSON.parse(await readBody(req)) as ChatRequest;
      const chars = body.messages.reduce((n, m) => n + m.content.length + 16, 0);
      return json(res, 200, { count: Math.ceil(chars / 4) });
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions')
      return json(res, 404, { error: { message: `no route ${req.method} ${path}` } });
    let body: ChatRequest;
    try {
      body = JSON.parse(await readBody(req)) as ChatRequest;
    } catch {
      return json(res, 400, { error: { message: 'body is not JSON' } });
    }
    if (opts.rejectTemplateKwargs && body.chat_template_kwargs) {
      return json(res, 400, { error: { message: 'Unrecognized request argument supplied: chat_template_kwargs' } });
    }
    if (!models.includes(body.model)) return json(res, 404, { error: { message: `The model \`${body.model}\` does not exist.` } });
    requests.push(body);
    authorizations.push(req.headers.authorization ?? '');
    let item = queue.shift();
    while (typeof item === 'function') item = item(body);
    if (item === undefined) return json(res, 500, { error: { message: 'scripted server: script exhausted' } });
    if (typeof item === 'object' && 'hang' in item) {
      hanging.add(res);
      res.on('close', () => hanging.delete(res));
      return;
    }
    if (typeof item === 'object' && 'status' in item) {
      return json(
        res,
        item.status,
        { error: { message: item.body ?? `scripted HTTP ${item.status}` } },
        item.retryAfter !== undefined ? { 'retry-after': String(item.retryAfter) } : {},
      );
    }
    const r = typeof item === 'string' ? { text: item } : item;
    if (r.delayMs) await new Promise((ok) => setTimeout(ok, r.delayMs));
    if (res.destroyed) return;
    const promptTokens = Math.ceil(body.messages.reduce((n, m) => n + m.content.length, 0) / 4);
    const pieces = r.text.match(/[\s\S]{1,16}/g) ?? [];
    const finish = r.finishReason ?? 'stop';
    if (!body.stream) {
      return json(res, 200, {
        id: 'scripted',
        object: 'chat.completion',
        choices: [{ index: 0, message: { role: 'assistant', content: r.text }, finish_reason: finish }],
        usage: { prompt_tokens: promptTokens, completion_tokens: pieces.length, total_tokens: promptTokens + pieces.length },
      });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = (o: unknown): boolean => res.write(`data: ${JSON.stringify(o)}\n\n`);
    send({ id: 'scripted', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { role: 'assistant' }, finish_reason: null }] });
    for (const p of pieces) {
      if (res.destroyed) return;
      send({ id: 'scripted', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: p }, finish_reason: null }] });
      if (r.chunkDelayMs) await new Promise((ok) => setTimeout(ok, r.chunkDelayMs));
    }
    send({ id: 'scripted', object: 'chat.completion.chunk', choices: [{ index: 0, delta: {}, finish_reason: finish }] });
    send({
      id: 'scripted',
      object: 'chat.completion.chunk',
      choices: [],
      usage: { prompt_tokens: promptTokens, completion_tokens: pieces.length, total_tokens: promptTokens + pieces.length },
    });
    res.end('data: [DONE]\n\n');
  });

  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    authorizations,
    paths,
    remaining: () => queue.length,
    close: () =>
      new Promise<void>((ok) => {
        for (const r of hanging) r.destroy();
        server.closeAllConnections();
        server.close(() => ok());
      }),
  };
}

/** A reply in the checkpoints' format (docs/protocol.md §1): filename line + fenced block. */
export function fencedReply(code: string, filename = 'tb.sv', preface = ''): string {
  return `${preface}filename: ${filename}\n\`\`\`systemverilog\n${code.trim()}\n\`\`\`\n`;
}
