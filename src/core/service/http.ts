// The reward service over HTTP (node:http, JSON): routing, body limits, JSON errors, backpressure,
// client disconnects and graceful shutdown. Every request gets exactly one answer.
import { serviceRedactor, type Redactor } from './hostPaths.js';
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { availableParallelism } from 'node:os';
import { getSimulator } from '../sim/registry.js';
import { DEFAULT_SERVICE } from '../vocabulary/defaults.js';
import type { SimulatorInfo } from '../sim/simulator.js';
import { PROMETHEUS_CONTENT_TYPE } from './metrics.js';
import {
  firstTurnMessages,
  parseReplyRequest,
  refinePrompt,
  ScoreService,
  validateIntrospectRequest,
  type ScoreOutcome,
} from './scoreService.js';
import { ServiceError, validateScoreRequest } from './requests.js';
import { PoolClosedError, QueueFullError, TaskAbortedError } from './workerPool.js';
import { fingerprintOf, IDEMPOTENCY_KEY, InFlight } from './idempotency.js';
import type { ResourceLimits } from './resources.js';

export interface ScoreServerOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  host?: string;
  /** Simulations at once (default: the number of cores). */
  workers?: number;
  /** Score items allowed to wait for a worker (default 64). */
  queueLimit?: number;
  /** Seconds in-flight work may finish after shutdown starts (default 30). */
  graceS?: number;
  /** Largest timeout_s a request may ask for (default 300). */
  maxTimeoutS?: number;
  /** Largest request body, bytes (default 8 MiB). */
  bodyLimitBytes?: number;
  /** Simulator backend name (default verilator). */
  simulator?: string;
  /** Where lines about the server's life go (default: nowhere). */
  log?: (line: string) => void;
  /** Idempotent answers and design directories survive a restart here (default: memory and a
   * temporary directory only). */
  stateDir?: string;
  /** Free disk and service RSS below which the service is not ready and refuses score work. */
  resourceLimits?: Partial<ResourceLimits>;
  /** Bytes of idempotent answers kept in memory (default 64 MiB). */
  answerCacheBytes?: number;
  /** Seconds a client has to send a whole request (headers and body); a slower one is answered
   * 408 and closed (default 10). The answer's own time is not counted: simulations take minutes. */
  slowClientTimeoutS?: number;
  /** Answers show host paths (run directories, the state directory) as they are: for an
   * administrator's debugging. Default false: they read <tmp>, <state>, <cache>, <home>, <cwd>. */
  hostDetails?: boolean;
  /** Accept designs with native code ($c, DPI, $system); default: refused (CHORUS-NATIVE). */
  allowNativeDesign?: boolean;
}

export interface ScoreServer {
  url: string;
  port: number;
  host: string;
  service: ScoreService;
  /** Graceful shutdown: new requests get 503, in-flight work gets up to `graceS` (default: the
   * server's), the rest is aborted and answered 503. Idempotent. */
  close(graceS?: number): Promise<void>;
}

const ROUTES = [
  '/v1/score',
  '/v1/introspect',
  '/v1/refine-prompt',
  '/v1/first-turn',
  '/v1/parse-reply',
  '/v1/health',
  '/healthz',
  '/readyz',
  '/metrics',
] as const;
const METHODS: Record<string, string> = {
  '/v1/score': 'POST',
  '/v1/introspect': 'POST',
  '/v1/refine-prompt': 'POST',
  '/v1/first-turn': 'POST',
  '/v1/parse-reply': 'POST',
  '/v1/health': 'GET',
  '/healthz': 'GET',
  '/readyz': 'GET',
  '/metrics': 'GET',
};

/** An answer computed apart from the socket it goes to: idempotent retries share and replay it. */
interface Answer {
  status: number;
  /** The body, or its JSON text as recorded (a recorded answer is sent as the very bytes kept). */
  body: unknown | Serialized;
  headers?: Record<string, string>;
}

/** JSON text already made: sent as it is, not serialized again. */
class Serialized {
  constructor(readonly text: string) {}
}

/** The redactor of each response's server (hostPaths.ts): every JSON answer passes through it. */
const redactors = new WeakMap<ServerResponse, Redactor>();

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent || res.writableEnded || res.destroyed) return;
  const raw = body instanceof Serialized ? body.text : JSON.stringify(body);
  const text = redactors.get(res)?.(raw) ?? raw;
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function errorBody(code: string, message: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { error: code, message, ...extra };
}

/** Past the limit a body is read and dropped up to this many times the limit, so that the client,
 * still sending, gets to read its 413 instead of a reset connection; beyond that the socket goes. */
const DRAIN_FACTOR = 8;

/** Reads the body up to `limit` bytes; rejects with a 413 ServiceError beyond it, once the client
 * has finished sending (or the drain cap is reached). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  const tooLarge = (size?: number): ServiceError =>
    new ServiceError(
      413,
      'body_too_large',
      `request body ${size !== undefined ? `of ${size} bytes ` : ''}exceeds the limit of ${limit} bytes (chorus serve --body-limit)`,
      { limit_bytes: limit },
    );
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = Number.isFinite(declared) && declared > limit;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (!over && size > limit) {
        over = true;
        chunks.length = 0;
      }
      if (!over) chunks.push(c);
      else if (size > limit * DRAIN_FACTOR) {
        reject(tooLarge(Number.isFinite(declared) ? declared : undefined));
        req.socket.destroy();
      }
    });
    let ended = false;
    req.on('end', () => {
      ended = true;
      if (!over) resolve(Buffer.concat(chunks));
      else reject(tooLarge(Number.isFinite(declared) ? declared : undefined));
    });
    // A client that hangs up mid-body: nothing to answer, but the handler must not wait forever.
    req.on('close', () => {
      if (!ended) reject(new ServiceError(400, 'bad_request', 'the client closed the connection before the body was complete'));
    });
    req.on('error', (e) => reject(e));
  });
}

function parseJson(buf: Buffer): unknown {
  const text = buf.toString('utf8');
  if (!text.trim()) throw new ServiceError(400, 'bad_request', 'the request body is empty; send a JSON object', { field: 'body' });
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ServiceError(400, 'bad_request', `malformed JSON: ${(e as Error).message}`, { field: 'body' });
  }
}

/** What one server's handlers share: the service, the state of shutdown, the work in flight. */
interface ServerContext {
  service: ScoreService;
  simInfo: SimulatorInfo;
  bodyLimit: number;
  log: (line: string) => void;
  /** Idempotent `/v1/score` work in flight, shared by retries under the same key. */
  inflight: InFlight<Answer | null>;
  /** Set when shutdown starts: new work is answered 503 with `shutdownReason`. */
  draining: boolean;
  shutdownReason: string;
  /** Handlers still running: shutdown lets them write their answers before the sockets go. */
  pending: Set<Promise<void>>;
  sockets: Set<Socket>;
}

export async function startScoreServer(opts: ScoreServerOptions = {}): Promise<ScoreServer> {
  const host = opts.host ?? DEFAULT_SERVICE.host;
  const log = opts.log ?? (() => {});
  const simulator = getSimulator(opts.simulator ?? 'verilator');
  const simInfo: SimulatorInfo = await simulator.info();
  const service = new ScoreService({
    simulator,
    workers: opts.workers ?? availableParallelism(),
    queueLimit: opts.queueLimit ?? DEFAULT_SERVICE.queueLimit,
    maxTimeoutS: opts.maxTimeoutS ?? DEFAULT_SERVICE.maxTimeoutS,
    stateDir: opts.stateDir,
    resourceLimits: opts.resourceLimits,
    answerCacheBytes: opts.answerCacheBytes,
    allowNativeDesign: opts.allowNativeDesign,
    log,
  });
  const ctx: ServerContext = {
    service,
    simInfo,
    bodyLimit: opts.bodyLimitBytes ?? DEFAULT_SERVICE.bodyLimitMiB * 1024 * 1024,
    log,
    inflight: new InFlight<Answer | null>(),
    draining: false,
    shutdownReason: 'the server is shutting down',
    pending: new Set<Promise<void>>(),
    sockets: new Set<Socket>(),
  };
  const server = createHttpServer(ctx, opts);
  await listen(server, opts.port ?? 0, host);
  const port = (server.address() as AddressInfo).port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const close = shutdownOf(ctx, server, opts.graceS ?? DEFAULT_SERVICE.graceS);
  return { url, port, host, service, close };
}

/** Backpressure: the queue is full, come back after Retry-After. */
function queueFullAnswer(ctx: ServerContext, e: QueueFullError): Answer {
  ctx.service.metrics.rejected.inc();
  return {
    status: 429,
    body: errorBody('queue_full', e.message, { retry_after_s: e.retryAfterS, queue_depth: e.queued, queue_limit: e.queueLimit }),
    headers: { 'Retry-After': String(e.retryAfterS) },
  };
}

function shuttingDown(ctx: ServerContext): Answer {
  return { status: 503, body: errorBody('shutting_down', ctx.shutdownReason), headers: { Connection: 'close' } };
}

function sendShuttingDown(ctx: ServerContext, res: ServerResponse): void {
  const a = shuttingDown(ctx);
  json(res, a.status, a.body, a.headers);
}

/** Work the service refuses before it starts: a batch larger than the pool can ever hold (thrown,
 * 413), or the service out of disk or memory (a 503 answer); null when the work may go ahead. */
function refusal(ctx: ServerContext, items: number): Answer | null {
  const { service } = ctx;
  if (items > service.pool.capacity) {
    throw new ServiceError(
      413,
      'batch_too_large',
      `a batch of ${items} items can never fit: the server holds at most ${service.pool.capacity} (workers + queue limit); split it`,
      { field: 'items' },
    );
  }
  // Out of disk or memory: refuse before starting work that would fail halfway (ENOSPC in a
  // build reads like a broken testbench) and let the client use another instance meanwhile.
  const r = service.resources();
  if (r.ok) return null;
  service.metrics.failures.inc({ reason: 'service_failure' });
  return {
    status: 503,
    body: errorBody('service_failure', `${r.message}; not taking work (score it again, here later or elsewhere)`, {
      cause: r.cause,
      retry_after_s: 5,
    }),
    headers: { 'Retry-After': '5' },
  };
}

/** The items' settled outcomes as the answer lists them, with the first shutdown abort and the
 * first service failure among them. */
interface Gathered {
  results: unknown[];
  aborted?: TaskAbortedError;
  failure?: { cause?: string; message: string };
}

function gather(ctx: ServerContext, settled: Array<PromiseSettledResult<ScoreOutcome>>): Gathered {
  const g: Gathered = { results: [] };
  for (const s of settled) {
    if (s.status === 'fulfilled') {
      g.results.push(s.value.ok ? s.value.record : s.value.error);
      if (!s.value.ok && s.value.error.error === 'service_failure') g.failure ??= s.value.error;
    } else if (s.reason instanceof TaskAbortedError) {
      ctx.service.countAbort(s.reason);
      g.aborted ??= s.reason;
      g.results.push({ error: 'aborted', status: 503, message: s.reason.reason });
    } else {
      ctx.service.metrics.failures.inc({ reason: 'internal_error' });
      ctx.log(`internal error: ${s.reason instanceof Error ? (s.reason.stack ?? s.reason.message) : String(s.reason)}`);
      g.results.push({ error: 'internal_error', status: 500, message: s.reason instanceof Error ? s.reason.message : String(s.reason) });
    }
  }
  return g;
}

/** `/v1/score` for a checked body: the answer, or null when nobody is left to answer. */
async function scoreAnswer(ctx: ServerContext, body: unknown, signal: AbortSignal): Promise<Answer | null> {
  const { items, batch, group } = validateScoreRequest(body);
  if (ctx.draining) return shuttingDown(ctx);
  const refused = refusal(ctx, items.length);
  if (refused) return refused;
  let promises: Array<Promise<ScoreOutcome>>;
  try {
    promises = group ? ctx.service.submitGroup(items, signal) : ctx.service.submit(items, signal);
  } catch (e) {
    if (e instanceof QueueFullError) return queueFullAnswer(ctx, e);
    if (e instanceof PoolClosedError) return shuttingDown(ctx);
    throw e;
  }
  const settled = await Promise.allSettled(promises);
  const g = gather(ctx, settled);
  if (signal.aborted) return null; // nobody to answer
  return batch ? batchAnswer(ctx, g) : singleAnswer(ctx, settled[0], g);
}

/** A shutdown aborted at least one item: say so explicitly (the completed ones ride along in a batch). */
function abortedAnswer(aborted: TaskAbortedError, results: unknown[] | undefined): Answer {
  return {
    status: 503,
    body: errorBody(
      'shutting_down',
      `${aborted.reason}: the simulation was aborted ${aborted.started ? 'while running' : 'before it started'}; retry on another instance`,
      results ? { results } : {},
    ),
    headers: { Connection: 'close' },
  };
}

function batchAnswer(ctx: ServerContext, { results, aborted, failure }: Gathered): Answer {
  if (aborted) return abortedAnswer(aborted, results);
  if (failure) {
    // One failed item fails the batch: the client retries it whole under the same key, and a
    // batch answer is recorded only when every item has its final result.
    ctx.log(`chorus serve: service failure (${failure.cause}): ${failure.message}`);
    return {
      status: 503,
      body: errorBody('service_failure', failure.message, { cause: failure.cause, retry_after_s: 1, results }),
      headers: { 'Retry-After': '1' },
    };
  }
  return { status: 200, body: { results } };
}

function singleAnswer(ctx: ServerContext, only: PromiseSettledResult<ScoreOutcome>, { results, aborted }: Gathered): Answer {
  if (aborted) return abortedAnswer(aborted, undefined);
  if (only.status === 'fulfilled') {
    const v = only.value;
    if (v.ok) return { status: 200, body: v.record };
    if (v.error.error === 'service_failure') {
      ctx.log(`chorus serve: service failure (${v.error.cause}): ${v.error.message}`);
      return { status: 503, body: { ...v.error, retry_after_s: 1 }, headers: { 'Retry-After': '1' } };
    }
    return { status: v.error.status, body: v.error };
  }
  return { status: 500, body: results[0] };
}

/** Only answers about the request itself are replayed: a 429, 503 or 500 is the service's state
 * at that moment, and a retry must run the work again. */
const isFinal = (a: Answer): boolean => a.status === 200 || a.status === 422;

function sendAnswer(res: ServerResponse, a: Answer, key: string, replayed = false): void {
  json(res, a.status, a.body, { ...a.headers, 'Idempotency-Key': key, ...(replayed ? { 'Idempotent-Replayed': 'true' } : {}) });
}

/** Counts the request (route, status, latency) when answered, and gives the abort signal of a
 * client that goes away: it takes its queued or running simulation with it. */
function observeRequest(ctx: ServerContext, res: ServerResponse, route: string): AbortController {
  const t0 = performance.now();
  const m = ctx.service.metrics;
  res.on('finish', () => {
    m.latency.observe({ route }, (performance.now() - t0) / 1000);
    m.requests.inc({ route, code: String(res.statusCode) });
  });
  const client = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) client.abort('the client closed the connection');
  });
  return client;
}

async function handle(ctx: ServerContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  const route = (ROUTES as readonly string[]).includes(path) ? path : 'other';
  const client = observeRequest(ctx, res, route);

  if (route === 'other') return json(res, 404, errorBody('not_found', `no route ${path}; routes: ${ROUTES.join(', ')}`));
  if (req.method !== METHODS[route])
    return json(res, 405, errorBody('method_not_allowed', `${path} takes ${METHODS[route]}`), { Allow: METHODS[route] });
  if (METHODS[route] === 'GET') return answerGet(ctx, res, route);
  if (ctx.draining) return sendShuttingDown(ctx, res);

  try {
    const body = parseJson(await readBody(req, ctx.bodyLimit));
    if (route === '/v1/refine-prompt') return json(res, 200, refinePrompt(body));
    if (route === '/v1/first-turn') return json(res, 200, firstTurnMessages(body));
    if (route === '/v1/parse-reply') return json(res, 200, parseReplyRequest(body));
    if (route === '/v1/introspect') return await handleIntrospect(ctx, res, body, client.signal);
    return await handleScore(ctx, req, res, body, client.signal);
  } catch (e) {
    if (e instanceof ServiceError) {
      const headers: Record<string, string> = e.status === 413 ? { Connection: 'close' } : {};
      json(res, e.status, errorBody(e.code, e.message, e.extra), headers);
      return;
    }
    ctx.service.metrics.failures.inc({ reason: 'internal_error' });
    ctx.log(`internal error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    return json(res, 500, errorBody('internal_error', e instanceof Error ? e.message : String(e)));
  }
}

/** The GET routes: health, liveness, readiness, metrics; they answer while draining too. */
async function answerGet(ctx: ServerContext, res: ServerResponse, route: string): Promise<void> {
  const { service, draining } = ctx;
  if (route === '/v1/health') return json(res, draining ? 503 : 200, service.health(ctx.simInfo, draining));
  // Liveness: the process answers. 200 while draining too: an orchestrator must not kill a
  // service that is finishing its work; readiness is what takes it out of rotation.
  if (route === '/healthz')
    return json(res, 200, { status: draining ? 'draining' : 'ok', uptime_s: (Date.now() - service.startedAt) / 1000 });
  if (route === '/readyz') {
    const r = service.readiness(draining);
    return json(res, r.ready ? 200 : 503, r.body);
  }
  // /metrics
  const text = await service.metrics.registry.metrics();
  res.writeHead(200, { 'Content-Type': PROMETHEUS_CONTENT_TYPE, 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

async function handleIntrospect(ctx: ServerContext, res: ServerResponse, body: unknown, signal: AbortSignal): Promise<void> {
  const item = validateIntrospectRequest(body);
  let outcome;
  try {
    outcome = await ctx.service.introspect(item, signal);
  } catch (e) {
    if (e instanceof QueueFullError) {
      const a = queueFullAnswer(ctx, e);
      return json(res, a.status, a.body, a.headers);
    }
    if (e instanceof PoolClosedError || e instanceof TaskAbortedError) {
      if (signal.aborted) return;
      return sendShuttingDown(ctx, res);
    }
    throw e;
  }
  return outcome.ok ? json(res, 200, outcome.answer) : json(res, outcome.error.status, outcome.error);
}

/** The request's Idempotency-Key: the client's, checked, or one made here (undefined `given`);
 * either way it comes back in the answer's Idempotency-Key header, so a client can retry with it. */
function idempotencyKey(req: IncomingMessage): { key: string; given: string | undefined } {
  const given = req.headers['idempotency-key'];
  if (given !== undefined && (typeof given !== 'string' || !IDEMPOTENCY_KEY.test(given)))
    throw new ServiceError(400, 'bad_request', 'Idempotency-Key: must be 1 to 200 visible ASCII characters (a UUID fits)', {
      field: 'Idempotency-Key',
      fields: ['Idempotency-Key'],
    });
  return { key: given ?? randomUUID(), given };
}

/** `/v1/score` with idempotency: a recorded answer is replayed, a retry joins the work in flight,
 * a reused key with another body is refused (422). */
async function handleScore(
  ctx: ServerContext,
  req: IncomingMessage,
  res: ServerResponse,
  body: unknown,
  signal: AbortSignal,
): Promise<void> {
  const { service } = ctx;
  const { key, given } = idempotencyKey(req);
  const fingerprint = fingerprintOf(JSON.stringify(body));
  const conflict = (): void =>
    json(
      res,
      422,
      errorBody('idempotency_key_reused', 'this Idempotency-Key was used for a different request body; use a new key per request'),
      { 'Idempotency-Key': key },
    );
  // A key made here (randomUUID) was never recorded: no lookup (it reads the disk with a state dir).
  const recorded = given === undefined ? undefined : service.answers.get(key);
  if (recorded) {
    if (recorded.fingerprint !== fingerprint) return conflict();
    service.metrics.replays.inc();
    service.answers.replays++;
    return sendAnswer(res, { status: recorded.status, body: new Serialized(recorded.body) }, key, true);
  }
  const shared = ctx.inflight.join(key, fingerprint, signal, async (workSignal) => {
    const a = await scoreAnswer(ctx, body, workSignal);
    if (!a || !isFinal(a)) return a;
    // Recorded before it is sent: any answer a client could have seen survives a crash.
    const kept = service.answers.put(key, { status: a.status, body: JSON.stringify(a.body), fingerprint, at: Date.now() });
    return { status: kept.status, body: new Serialized(kept.body), headers: a.headers };
  });
  if (shared === 'conflict') return conflict();
  const a = await shared;
  if (!a || signal.aborted) return;
  return sendAnswer(res, a, key);
}

/** The node:http server: handlers tracked for shutdown, sockets tracked, slow or unreadable
 * requests answered and closed. */
function createHttpServer(ctx: ServerContext, opts: ScoreServerOptions): Server {
  // A client must send its whole request within the slow-client timeout (Node answers 408 and
  // closes): 200 connections dripping one byte a second must not hold sockets and memory. Node's
  // requestTimeout covers receiving the request only, so answers that take minutes (a batch of
  // long simulations) are not cut. Timeouts are checked every second, not Node's default 30 s.
  const clientTimeoutMs = Math.round((opts.slowClientTimeoutS ?? DEFAULT_SERVICE.slowClientTimeoutS) * 1000);
  const redact: Redactor = opts.hostDetails ? (t) => t : serviceRedactor(opts.stateDir);
  const server: Server = createServer({ connectionsCheckingInterval: 1000 }, (req, res) => {
    redactors.set(res, redact);
    const p = handle(ctx, req, res)
      .catch((e: unknown) => {
        ctx.log(`internal error: ${String(e)}`);
        json(res, 500, errorBody('internal_error', String(e)));
      })
      .finally(() => ctx.pending.delete(p));
    ctx.pending.add(p);
  });
  server.on('connection', (s: Socket) => {
    ctx.sockets.add(s);
    s.on('close', () => ctx.sockets.delete(s));
  });
  server.on('clientError', (e: NodeJS.ErrnoException, socket: Duplex) => answerClientError(e, socket, clientTimeoutMs));
  server.requestTimeout = clientTimeoutMs;
  server.headersTimeout = clientTimeoutMs;
  server.keepAliveTimeout = 5_000;
  return server;
}

/** A request Node could not read (malformed, or too slow: requestTimeout/headersTimeout): one
 * short JSON answer, then the socket goes, whatever the client does. */
function answerClientError(e: NodeJS.ErrnoException, socket: Duplex, clientTimeoutMs: number): void {
  const slow = e.code === 'ERR_HTTP_REQUEST_TIMEOUT';
  const body = JSON.stringify(
    slow
      ? errorBody('request_timeout', `the request was not received within ${clientTimeoutMs / 1000} s (chorus serve --client-timeout)`)
      : errorBody('bad_request', 'the request could not be read as HTTP/1.1'),
  );
  const head = slow ? 'HTTP/1.1 408 Request Timeout' : 'HTTP/1.1 400 Bad Request';
  if (socket.writable)
    socket.end(
      `${head}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  setTimeout(() => socket.destroy(), 100).unref();
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/** The server's `close`: graceful shutdown, once; a later call with zero grace cuts it short. */
function shutdownOf(ctx: ServerContext, server: Server, graceS: number): ScoreServer['close'] {
  const { service, log } = ctx;
  let closing: Promise<void> | undefined;
  return (grace = graceS): Promise<void> => {
    if (closing) {
      // Already draining: a zero grace (second signal) cuts it short.
      if (grace <= 0) service.pool.abortAll('the server is shutting down now (aborted without grace)');
      return closing;
    }
    closing = (async () => {
      ctx.draining = true;
      ctx.shutdownReason = 'the server is shutting down';
      log(`chorus serve: shutting down; ${service.pool.inFlight} running, ${service.pool.queued} queued, grace ${grace}s`);
      const { aborted } = await service.shutdown(grace * 1000, `the server is shutting down and the ${grace}s grace period ended`);
      if (aborted) log(`chorus serve: aborted ${aborted} simulation(s) after the grace period`);
      // Every handler writes its answer (results or 503) before the sockets go.
      // A client still sending its body gets a few seconds, then its socket goes.
      await Promise.race([Promise.allSettled([...ctx.pending]), new Promise((r) => setTimeout(r, 5000).unref())]);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        setTimeout(() => {
          for (const s of ctx.sockets) s.destroy();
        }, 1000).unref();
      });
      log('chorus serve: stopped');
    })();
    return closing;
  };
}
