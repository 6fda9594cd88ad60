// The reward service's engine side: request validation -> design on disk (content-addressed, its
// introspection cached) -> bounded worker pool -> simulator -> the result record plus the reward
// fields a trainer reads. HTTP lives in http.ts; this file knows nothing about sockets.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { introspect } from '../design/introspect.js';
import { DesignError } from '../design/errors.js';
import type { DesignSpec } from '../design/types.js';
import type { Simulator } from '../sim/simulator.js';
import { DEFAULT_LIMITS } from '../sim/simulator.js';
import type { SimResult, SimStatus } from '../sim/result.js';
import type { CoverageBreakdown } from '../coverage/model.js';
import { defaultInstruction, feedbackTurn, firstTurn, parseReply, resultForEcho, type ChatMessage, type NamedText, type ParsedReply } from '../agent/protocol.js';
import { Registry, type Counter, type Histogram } from './metrics.js';
import { TaskAbortedError, WorkerPool } from './workerPool.js';

// ---------------------------------------------------------------------------------------------
// Errors a client gets as HTTP statuses

export class ServiceError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ServiceError';
  }
}

const bad = (field: string, what: string): ServiceError => new ServiceError(400, 'bad_request', `${field}: ${what}`, { field });

// ---------------------------------------------------------------------------------------------
// Validation

export interface ScoreItem {
  design_files: NamedText[];
  top: string;
  testbench: NamedText;
  threshold: number;
  timeout_s: number | null;
  include_files: NamedText[];
  defines: Record<string, string | null>;
  params: Record<string, string>;
  seed: number | null;
}

const SCORE_FIELDS = new Set(['design_files', 'top', 'testbench', 'threshold', 'timeout_s', 'include_files', 'defines', 'params', 'seed']);
const SEGMENT = /^[A-Za-z0-9_.+-]+$/;
const IDENT = /^[A-Za-z_][A-Za-z0-9_$]*$/;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function expectObject(v: unknown, field: string): Record<string, unknown> {
  if (!isObject(v)) throw bad(field, `must be a JSON object, got ${v === null ? 'null' : Array.isArray(v) ? 'an array' : typeof v}`);
  return v;
}

function noUnknown(o: Record<string, unknown>, allowed: Set<string>, field: string): void {
  for (const k of Object.keys(o)) if (!allowed.has(k)) throw bad(field ? `${field}.${k}` : k, `unknown field (allowed: ${[...allowed].join(', ')})`);
}

function expectString(v: unknown, field: string, nonEmpty = true): string {
  if (typeof v !== 'string') throw bad(field, `must be a string, got ${v === null ? 'null' : typeof v}`);
  if (nonEmpty && v.length === 0) throw bad(field, 'must not be empty');
  return v;
}

/** A relative path of plain segments: no absolute paths, no `..`, no backslashes or odd bytes. */
export function checkFileName(name: string, field: string, allowDirs: boolean): string {
  if (name.startsWith('/') || /^[A-Za-z]:/.test(name)) throw bad(field, `'${name}' is an absolute path; give a relative file name`);
  if (name.includes('\\') || name.includes('\0')) throw bad(field, `'${name}' contains a backslash or NUL byte`);
  const segs = name.split('/');
  for (const s of segs) {
    if (s === '..') throw bad(field, `'${name}' contains '..'; file names must stay inside the design directory`);
    if (s === '' || s === '.') throw bad(field, `'${name}' has an empty or '.' path segment`);
    if (!SEGMENT.test(s)) throw bad(field, `'${name}' may contain only letters, digits and _ . + - in each path segment`);
    if (s.startsWith('-')) throw bad(field, `'${name}' has a segment starting with '-'`);
  }
  if (!allowDirs && segs.length > 1) throw bad(field, `'${name}' must be a plain file name without directories`);
  if (name.length > 255) throw bad(field, 'file name longer than 255 characters');
  return name;
}

function namedFiles(v: unknown, field: string, min: number, allowDirs: boolean): NamedText[] {
  if (v === undefined && min === 0) return [];
  if (!Array.isArray(v)) throw bad(field, 'must be an array of {name, content}');
  if (v.length < min) throw bad(field, `must hold at least ${min} file${min === 1 ? '' : 's'}`);
  const seen = new Set<string>();
  return v.map((f, i) => {
    const o = expectObject(f, `${field}[${i}]`);
    noUnknown(o, new Set(['name', 'content']), `${field}[${i}]`);
    const name = checkFileName(expectString(o.name, `${field}[${i}].name`), `${field}[${i}].name`, allowDirs);
    if (seen.has(name)) throw bad(`${field}[${i}].name`, `duplicate file name '${name}'`);
    seen.add(name);
    return { name, content: expectString(o.content, `${field}[${i}].content`, false) };
  });
}

function numberField(v: unknown, field: string, min: number, max: number): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) throw bad(field, `must be a number, got ${JSON.stringify(v)}`);
  if (v < min || v > max) throw bad(field, `must be between ${min} and ${max}, got ${v}`);
  return v;
}

export function validateScoreItem(raw: unknown, field = ''): ScoreItem {
  const at = (k: string): string => (field ? `${field}.${k}` : k);
  const o = expectObject(raw, field || 'body');
  noUnknown(o, SCORE_FIELDS, field);
  const design_files = namedFiles(o.design_files, at('design_files'), 1, true);
  const include_files = namedFiles(o.include_files, at('include_files'), 0, true);
  for (const [i, f] of include_files.entries()) {
    if (design_files.some((d) => d.name === f.name)) throw bad(`${at('include_files')}[${i}].name`, `'${f.name}' is also a design file`);
  }
  const top = expectString(o.top, at('top'));
  if (!IDENT.test(top)) throw bad(at('top'), `'${top}' is not a module name`);
  const tbo = expectObject(o.testbench, at('testbench'));
  noUnknown(tbo, new Set(['name', 'content']), at('testbench'));
  const testbench = {
    name: checkFileName(expectString(tbo.name, at('testbench.name')), at('testbench.name'), false),
    content: expectString(tbo.content, at('testbench.content')),
  };
  if ([...design_files, ...include_files].some((d) => d.name === testbench.name)) throw bad(at('testbench.name'), `'${testbench.name}' is also a design file name`);
  const threshold = o.threshold === undefined ? 1 : numberField(o.threshold, at('threshold'), 0, 1);
  const timeout_s = o.timeout_s === undefined || o.timeout_s === null ? null : numberField(o.timeout_s, at('timeout_s'), 0.001, 1e9);
  const seed = o.seed === undefined || o.seed === null ? null : numberField(o.seed, at('seed'), 0, 2 ** 31 - 1);
  if (seed !== null && !Number.isInteger(seed)) throw bad(at('seed'), 'must be an integer');
  const defines: Record<string, string | null> = {};
  if (o.defines !== undefined) {
    for (const [k, v] of Object.entries(expectObject(o.defines, at('defines')))) {
      if (!IDENT.test(k)) throw bad(`${at('defines')}.${k}`, 'not a macro name');
      if (v !== null && typeof v !== 'string' && typeof v !== 'number') throw bad(`${at('defines')}.${k}`, 'must be a string, a number or null');
      defines[k] = v === null ? null : String(v);
    }
  }
  const params: Record<string, string> = {};
  if (o.params !== undefined) {
    for (const [k, v] of Object.entries(expectObject(o.params, at('params')))) {
      if (!IDENT.test(k)) throw bad(`${at('params')}.${k}`, 'not a parameter name');
      if (typeof v !== 'string' && typeof v !== 'number') throw bad(`${at('params')}.${k}`, 'must be a string or a number');
      params[k] = String(v);
    }
  }
  return { design_files, top, testbench, threshold, timeout_s, include_files, defines, params, seed };
}

/** `{...item}` or `{items: [...]}`: the items and whether the answer is a batch. */
export function validateScoreRequest(raw: unknown): { items: ScoreItem[]; batch: boolean } {
  const o = expectObject(raw, 'body');
  if ('items' in o) {
    if (Object.keys(o).length !== 1) throw bad('items', 'a batch request holds only `items`');
    if (!Array.isArray(o.items)) throw bad('items', 'must be an array of score requests');
    if (o.items.length === 0) throw bad('items', 'must hold at least one request');
    return { items: o.items.map((it, i) => validateScoreItem(it, `items[${i}]`)), batch: true };
  }
  return { items: [validateScoreItem(o)], batch: false };
}

// ---------------------------------------------------------------------------------------------
// Prompts: the protocol's own builders, so trainers do not re-implement them

const STATUSES = new Set<SimStatus>(['success', 'xrun_failed', 'imc_merge_failed', 'imc_report_summary_failed', 'exception', 'timeout', 'rejected']);

export function refinePrompt(raw: unknown): { content: string; parsed: ParsedReply } {
  const o = expectObject(raw, 'body');
  noUnknown(o, new Set(['result', 'reply', 'parse_status', 'parse_reason']), '');
  let parsed: ParsedReply;
  if (o.reply !== undefined) {
    if (o.parse_status !== undefined) throw bad('parse_status', 'give either reply or parse_status, not both');
    parsed = parseReply(expectString(o.reply, 'reply', false));
  } else {
    const ps = o.parse_status === undefined ? 'success' : expectString(o.parse_status, 'parse_status');
    if (ps === 'success') parsed = { status: 'success', testbench: '', filename: null, source: 'fence' };
    else if (ps === 'unparsable' || ps === 'failed') {
      parsed = { status: 'unparsable', reason: o.parse_reason === undefined ? 'no fenced SystemVerilog block and no module ... endmodule in the reply' : expectString(o.parse_reason, 'parse_reason') };
    } else throw bad('parse_status', `must be 'success' or 'unparsable', got '${ps}'`);
  }
  if (o.parse_reason !== undefined && parsed.status === 'success' && o.reply === undefined) throw bad('parse_reason', "only with parse_status 'unparsable'");
  let result: SimResult | null = null;
  if (o.result !== undefined && o.result !== null) {
    const r = expectObject(o.result, 'result');
    if (typeof r.status !== 'string' || !STATUSES.has(r.status as SimStatus)) throw bad('result.status', `must be one of ${[...STATUSES].join(', ')}`);
    if (r.err_msg !== undefined && typeof r.err_msg !== 'string') throw bad('result.err_msg', 'must be a string');
    if (r.diagnostics !== undefined && !Array.isArray(r.diagnostics)) throw bad('result.diagnostics', 'must be an array');
    if (r.cov_info !== undefined && r.cov_info !== null && !isObject(r.cov_info)) throw bad('result.cov_info', 'must be an object or null');
    if (r.status === 'success' && (!isObject(r.cov_info) || typeof r.cov_info.detail !== 'string')) throw bad('result.cov_info.detail', 'a successful result needs the coverage report text');
    (r.diagnostics as unknown[] | undefined)?.forEach((d, i) => {
      const x = expectObject(d, `result.diagnostics[${i}]`);
      if (typeof x.severity !== 'string' || typeof x.message !== 'string') throw bad(`result.diagnostics[${i}]`, 'needs severity and message');
    });
    result = { ...r, err_msg: (r.err_msg as string | undefined) ?? '', diagnostics: (r.diagnostics as SimResult['diagnostics'] | undefined) ?? [] } as unknown as SimResult;
  } else if (parsed.status === 'success') throw bad('result', 'is required when the reply parsed (the feedback reports its simulation)');
  return { content: feedbackTurn(parsed, result && resultForEcho(result)), parsed };
}

/** `POST /v1/parse-reply {reply}`: the protocol's parse of a raw model reply (§2), nothing else. */
export function parseReplyRequest(raw: unknown): { parsed: ParsedReply } {
  const o = expectObject(raw, 'body');
  noUnknown(o, new Set(['reply']), '');
  return { parsed: parseReply(expectString(o.reply, 'reply', false)) };
}

export interface IntrospectItem {
  design_files: NamedText[];
  include_files: NamedText[];
  defines: Record<string, string | null>;
  params: Record<string, string>;
  top: string | null;
}

export function validateIntrospectRequest(raw: unknown): IntrospectItem {
  const o = expectObject(raw, 'body');
  noUnknown(o, new Set(['design_files', 'include_files', 'defines', 'params', 'top']), '');
  // The score validator owns the rules for files, defines and params: reuse it with a placeholder
  // top and testbench rather than restating them.
  const probe = validateScoreItem({
    design_files: o.design_files,
    include_files: o.include_files,
    defines: o.defines,
    params: o.params,
    top: o.top ?? 'placeholder_top',
    testbench: { name: 'chorus_introspect_probe.sv', content: '-' },
  });
  return { design_files: probe.design_files, include_files: probe.include_files, defines: probe.defines, params: probe.params, top: o.top === undefined || o.top === null ? null : probe.top };
}

/** What `/v1/introspect` answers: the engine's view of a design (the data filter's top detection). */
export interface IntrospectAnswer {
  /** Modules nobody instantiates; exactly one means the top is unambiguous. */
  top_candidates: string[];
  /** The top the engine would simulate (the given one, or the only candidate); null when ambiguous. */
  top: string | null;
  /** Declared modules with their ports, when the design elaborates. */
  modules?: Array<{ name: string; ports: Array<{ name: string; direction: string; width: number }>; instantiates: string[] }>;
  warnings?: string[];
}

export function firstTurnMessages(raw: unknown): { messages: ChatMessage[] } {
  const o = expectObject(raw, 'body');
  noUnknown(o, new Set(['design_files', 'specs', 'top', 'instance', 'instruction']), '');
  const rtl = namedFiles(o.design_files, 'design_files', 1, true);
  const specs = namedFiles(o.specs, 'specs', 0, true);
  const instruction = o.instruction === undefined ? undefined : expectString(o.instruction, 'instruction');
  const top = o.top === undefined && instruction !== undefined ? undefined : expectString(o.top, 'top');
  const instance = o.instance === undefined ? 'uut' : expectString(o.instance, 'instance');
  if (!IDENT.test(instance)) throw bad('instance', `'${instance}' is not an instance name`);
  return { messages: firstTurn(rtl, specs, instruction ?? defaultInstruction(top!, instance)) };
}

// ---------------------------------------------------------------------------------------------
// Designs on disk: one content-addressed directory per design, its introspection cached

interface DesignEntry {
  key: string;
  dir: string;
  ready: Promise<{ design: DesignSpec; top: string }>;
  refs: number;
  lastUsed: number;
}

export class DesignStore {
  private readonly entries = new Map<string, DesignEntry>();
  readonly root: string;
  private readonly controller = new AbortController();
  hits = 0;
  misses = 0;

  constructor(
    private readonly maxEntries = 128,
    root?: string,
  ) {
    this.root = root ?? mkdtempSync(join(tmpdir(), 'chorus-serve-'));
  }

  get size(): number {
    return this.entries.size;
  }

  static keyOf(item: ScoreItem): string {
    return createHash('sha256')
      .update(JSON.stringify([item.design_files, item.include_files, item.top, item.defines, item.params]))
      .digest('hex')
      .slice(0, 32);
  }

  /** The design's directory and checked spec; call release() when the run is over. */
  async acquire(item: ScoreItem, signal: AbortSignal): Promise<{ design: DesignSpec; top: string; dir: string; cached: boolean; release: () => void }> {
    const key = DesignStore.keyOf(item);
    let e = this.entries.get(key);
    const cached = e !== undefined;
    if (e) this.hits++;
    else {
      this.misses++;
      const dir = join(this.root, key);
      e = { key, dir, refs: 0, lastUsed: Date.now(), ready: this.prepare(item, dir) };
      this.entries.set(key, e);
      const entry = e;
      // A cancelled or crashed introspection is not a fact about the design: forget it.
      e.ready.catch((err: unknown) => {
        if (!(err instanceof DesignError) || err.kind === 'tool') this.drop(entry, true);
      });
    }
    const entry = e;
    entry.refs++;
    entry.lastUsed = Date.now();
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      entry.refs--;
      entry.lastUsed = Date.now();
      this.evict();
    };
    try {
      const got = await abortable(entry.ready, signal);
      return { ...got, dir: entry.dir, cached, release };
    } catch (err) {
      release();
      throw err;
    }
  }

  private async prepare(item: ScoreItem, dir: string): Promise<{ design: DesignSpec; top: string }> {
    const tmp = mkdtempSync(join(this.root, '.tmp-'));
    try {
      writeFiles(tmp, [...item.design_files, ...item.include_files]);
      rmSync(dir, { recursive: true, force: true });
      renameSync(tmp, dir);
    } catch (err) {
      rmSync(tmp, { recursive: true, force: true });
      throw err;
    }
    const info = await introspect(designIn(dir, item, item.top), { signal: this.controller.signal, timeoutS: 120 });
    return { design: info.design, top: info.top };
  }

  private drop(e: DesignEntry, force: boolean): void {
    if (this.entries.get(e.key) !== e) return;
    if (!force && e.refs > 0) return;
    this.entries.delete(e.key);
    if (e.refs === 0) rmSync(e.dir, { recursive: true, force: true });
  }

  private evict(): void {
    if (this.entries.size <= this.maxEntries) return;
    const idle = [...this.entries.values()].filter((e) => e.refs === 0).sort((a, b) => a.lastUsed - b.lastUsed);
    for (const e of idle) {
      if (this.entries.size <= this.maxEntries) break;
      this.drop(e, false);
    }
  }

  /** Cancels introspections in progress and removes every design directory. */
  close(): void {
    this.controller.abort();
    this.entries.clear();
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** The client's files under `dir` (names already checked by checkFileName). */
function writeFiles(dir: string, files: NamedText[]): void {
  for (const f of files) {
    const p = join(dir, f.name);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, f.content);
  }
}

/** The design a request describes, once its files are under `dir` (includes resolve there too). */
function designIn(dir: string, item: Pick<ScoreItem, 'design_files' | 'defines' | 'params'>, top: string | undefined): DesignSpec {
  return { files: item.design_files.map((f) => join(dir, f.name)), libraryFiles: [], includeDirs: [dir], defines: item.defines, params: item.params, top };
}

/** Every mention of `dir/` in a JSON-able value removed: paths become the client's file names. */
function relativize<T>(value: T, dir: string): T {
  const needle = JSON.stringify(dir + '/').slice(1, -1);
  return JSON.parse(JSON.stringify(value).replaceAll(needle, '')) as T;
}

function abortable<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

// ---------------------------------------------------------------------------------------------
// Scoring

/** The result record with DUT paths as the client named them, plus the reward fields. */
export type ScoreRecord = Omit<SimResult, 'coverage'> & {
  /** c in [0, 1]: the DUT's overall coverage when the testbench ran, else 0 (docs/protocol.md §5). */
  coverage: number;
  /** c >= threshold. */
  passed: boolean;
  threshold: number;
  /** SimResult.coverage (figures after and before waivers), renamed: `coverage` is the fraction. */
  coverage_breakdown: CoverageBreakdown | null;
  /** Whether the design's introspection came from the cache. */
  design_cached: boolean;
};

export interface ItemError {
  error: 'design_error' | 'internal_error';
  status: 422 | 500;
  kind?: string;
  message: string;
  candidates?: string[];
  diagnostics?: unknown[];
}

export type ScoreOutcome = { ok: true; record: ScoreRecord } | { ok: false; error: ItemError };

export interface ScoreServiceOptions {
  simulator: Simulator;
  workers: number;
  queueLimit: number;
  /** Largest timeout_s a request may ask for; larger ones are clamped. */
  maxTimeoutS?: number;
  /** timeout_s when a request gives none. */
  defaultTimeoutS?: number;
  designCacheEntries?: number;
}

export const RUN_STATUSES: SimStatus[] = ['success', 'xrun_failed', 'imc_merge_failed', 'imc_report_summary_failed', 'exception', 'timeout', 'rejected'];

export interface ServiceMetrics {
  registry: Registry;
  runs: Counter;
  failures: Counter;
  rejected: Counter;
  requests: Counter;
  latency: Histogram;
  designCache: Counter;
}

export class ScoreService {
  readonly pool: WorkerPool;
  readonly designs: DesignStore;
  readonly simulator: Simulator;
  readonly maxTimeoutS: number;
  readonly defaultTimeoutS: number;
  readonly metrics: ServiceMetrics;
  readonly startedAt = Date.now();

  constructor(opts: ScoreServiceOptions) {
    this.simulator = opts.simulator;
    this.pool = new WorkerPool({ concurrency: opts.workers, queueLimit: opts.queueLimit });
    this.designs = new DesignStore(opts.designCacheEntries ?? 128);
    this.maxTimeoutS = opts.maxTimeoutS ?? 300;
    this.defaultTimeoutS = Math.min(opts.defaultTimeoutS ?? DEFAULT_LIMITS.timeoutS, this.maxTimeoutS);
    const registry = new Registry();
    const pool = this.pool;
    registry.gauge('chorus_queue_depth', 'Score items waiting for a worker.', () => pool.queued);
    registry.gauge('chorus_in_flight', 'Score items running on a worker.', () => pool.inFlight);
    registry.gauge('chorus_workers', 'Size of the worker pool.', () => pool.concurrency);
    registry.gauge('chorus_queue_limit', 'Most score items allowed to wait.', () => pool.queueLimit);
    registry.gauge('chorus_uptime_seconds', 'Seconds since the service started.', () => (Date.now() - this.startedAt) / 1000);
    registry.gauge('chorus_design_cache_entries', 'Designs kept on disk with their introspection.', () => this.designs.size);
    this.metrics = {
      registry,
      runs: registry.counter('chorus_runs_total', 'Simulations finished, by result status.', RUN_STATUSES.map((status) => ({ status }))),
      failures: registry.counter('chorus_failures_total', 'Score items that produced no result record, by reason.', [
        { reason: 'design_error' },
        { reason: 'internal_error' },
        { reason: 'aborted_client' },
        { reason: 'aborted_shutdown' },
      ]),
      rejected: registry.counter('chorus_rejected_total', 'Score requests refused with 429 because the queue was full.'),
      requests: registry.counter('chorus_http_requests_total', 'HTTP requests answered, by route and status code.'),
      latency: registry.histogram('chorus_request_duration_seconds', 'HTTP request latency, seconds, by route.'),
      designCache: registry.counter('chorus_design_cache_total', 'Design lookups, by result (hit: introspection reused).', [{ result: 'hit' }, { result: 'miss' }]),
    };
  }

  /** Puts every item on the pool at once (all or nothing: throws QueueFullError / PoolClosedError). */
  submit(items: ScoreItem[], signal: AbortSignal): Array<Promise<ScoreOutcome>> {
    return this.pool.submitAll(
      items.map((item) => (s: AbortSignal) => this.scoreOne(item, s)),
      signal,
    );
  }

  clampTimeout(t: number | null): number {
    return Math.min(t ?? this.defaultTimeoutS, this.maxTimeoutS);
  }

  async scoreOne(item: ScoreItem, signal: AbortSignal): Promise<ScoreOutcome> {
    let got;
    try {
      got = await this.designs.acquire(item, signal);
    } catch (e) {
      if (signal.aborted) throw e;
      if (e instanceof DesignError) {
        this.metrics.failures.inc({ reason: 'design_error' });
        const error: ItemError = { error: 'design_error', status: 422, kind: e.kind, message: e.message, candidates: e.candidates, diagnostics: e.diagnostics };
        return { ok: false, error: relativize(error, join(this.designs.root, DesignStore.keyOf(item))) };
      }
      throw e;
    }
    this.metrics.designCache.inc({ result: got.cached ? 'hit' : 'miss' });
    try {
      const result = await this.simulator.simulate({
        design: got.design,
        top: got.top,
        testbench: item.testbench,
        limits: { timeoutS: this.clampTimeout(item.timeout_s), buildTimeoutS: Math.min(DEFAULT_LIMITS.buildTimeoutS, Math.max(60, this.maxTimeoutS)) },
        seed: item.seed ?? undefined,
        signal,
      });
      if (signal.aborted) throw signal.reason;
      this.metrics.runs.inc({ status: result.status });
      // DUT paths as the client named them: the model's feedback must not show server temp dirs.
      // Simulator output bounded: a run must not pour a large file into the response.
      const rel = relativize(resultForEcho(result), got.dir);
      const c = rel.status === 'success' ? (rel.coverage?.waived.overall ?? 0) : 0;
      const { coverage, ...rest } = rel;
      return { ok: true, record: { ...rest, coverage: c, passed: c >= item.threshold, threshold: item.threshold, coverage_breakdown: coverage, design_cached: got.cached } };
    } finally {
      got.release();
    }
  }

  /** Reads a design with the engine's front end, on the worker pool (same backpressure as scores). */
  introspect(item: IntrospectItem, signal: AbortSignal): Promise<{ ok: true; answer: IntrospectAnswer } | { ok: false; error: ItemError }> {
    return this.pool.submitAll([(s: AbortSignal) => this.introspectOne(item, s)], signal)[0];
  }

  private async introspectOne(item: IntrospectItem, signal: AbortSignal): Promise<{ ok: true; answer: IntrospectAnswer } | { ok: false; error: ItemError }> {
    const dir = mkdtempSync(join(this.designs.root, '.introspect-'));
    try {
      writeFiles(dir, [...item.design_files, ...item.include_files]);
      try {
        const info = await introspect(designIn(dir, item, item.top ?? undefined), { signal, timeoutS: 120 });
        const answer: IntrospectAnswer = {
          top_candidates: info.topCandidates,
          top: info.top,
          modules: info.modules.map((m) => ({ name: m.name, ports: m.ports.map((p) => ({ name: p.name, direction: p.direction, width: p.width })), instantiates: m.instantiates })),
          warnings: info.warnings,
        };
        return { ok: true, answer: relativize(answer, dir) };
      } catch (e) {
        if (signal.aborted) throw e;
        if (e instanceof DesignError && e.kind === 'multiple-tops') return { ok: true, answer: { top_candidates: e.candidates, top: null } };
        if (e instanceof DesignError && e.kind !== 'tool') {
          this.metrics.failures.inc({ reason: 'design_error' });
          return { ok: false, error: relativize({ error: 'design_error', status: 422, kind: e.kind, message: e.message, candidates: e.candidates, diagnostics: e.diagnostics }, dir) };
        }
        throw e;
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /** Counts a task the pool aborted (client gone or shutdown). */
  countAbort(e: unknown): void {
    if (e instanceof TaskAbortedError) this.metrics.failures.inc({ reason: /shut/i.test(e.reason) ? 'aborted_shutdown' : 'aborted_client' });
  }

  health(info: { name: string; version: string }, draining: boolean): Record<string, unknown> {
    return {
      status: draining ? 'draining' : 'ok',
      simulator: info,
      workers: this.pool.concurrency,
      queue_depth: this.pool.queued,
      queue_limit: this.pool.queueLimit,
      in_flight: this.pool.inFlight,
      uptime_s: Math.round((Date.now() - this.startedAt) / 100) / 10,
      mean_run_s: this.pool.meanTaskSeconds(),
      design_cache_entries: this.designs.size,
      max_timeout_s: this.maxTimeoutS,
    };
  }

  async shutdown(graceMs: number, reason: string): Promise<{ aborted: number }> {
    const r = await this.pool.shutdown(graceMs, reason);
    this.designs.close();
    return r;
  }
}
