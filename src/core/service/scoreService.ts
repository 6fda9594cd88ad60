// The reward service's engine side: a checked request (requests.ts) -> design on disk
// (designStore.ts: content-addressed, its introspection cached) -> bounded worker pool -> simulator
// -> the result record plus the reward fields a trainer reads. HTTP lives in http.ts; this file
// knows nothing about sockets.
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { introspect } from '../sim/verilator/introspect.js';
import { DesignError } from '../design/errors.js';
import { simulateAll, type SimRequest, type Simulator } from '../sim/simulator.js';
import { DEFAULT_LIMITS, DEFAULT_SERVICE } from '../vocabulary/defaults.js';
import type { SimResult } from '../sim/result.js';
import { meetsTarget } from '../sim/ranking.js';
import type { CoverageBreakdown } from '../coverage/model.js';
import {
  defaultInstruction,
  feedbackTurn,
  firstTurn,
  parseReply,
  resultForEcho,
  type ChatMessage,
  type ParsedReply,
} from '../agent/protocol.js';
import { SERVICE_FAILURE_CAUSES, serviceMetrics, type ServiceMetrics } from './metrics.js';

export type { ServiceMetrics } from './metrics.js';
import { TaskAbortedError, WorkerPool } from './workerPool.js';
import { AnswerStore } from './idempotency.js';
import { checkResources, DEFAULT_RESOURCE_LIMITS, freeBytes, type ResourceCheck, type ResourceLimits } from './resources.js';
import { descendants } from '../util/proc.js';
import { DesignStore, designIn, relativize, writeFiles } from './designStore.js';
import { sweepDead } from './stateDir.js';
import {
  bad,
  firstTurnRequestSchema,
  parseBody,
  parseReplyRequestSchema,
  refinePromptRequestSchema,
  introspectRequestSchema,
  type IntrospectItem,
  type ScoreItem,
} from './requests.js';

export { DesignStore } from './designStore.js';
export { SERVICE_FAILURE_CAUSES } from './metrics.js';
export { ServiceError, validateScoreRequest, type IntrospectItem, type ScoreItem } from './requests.js';

// ---------------------------------------------------------------------------------------------
// Prompts: the protocol's own builders, so trainers do not re-implement them

export function refinePrompt(raw: unknown): { content: string; parsed: ParsedReply } {
  const o = parseBody(refinePromptRequestSchema, raw);
  let parsed: ParsedReply;
  if (o.reply !== undefined) parsed = parseReply(o.reply);
  else if ((o.parse_status ?? 'success') === 'success') parsed = { status: 'success', testbench: '', filename: null, source: 'fence' };
  else
    parsed = { status: 'unparsable', reason: o.parse_reason ?? 'no fenced SystemVerilog block and no module ... endmodule in the reply' };
  if (!o.result && parsed.status === 'success')
    throw bad('result', 'is required when the reply parsed (the feedback reports its simulation)');
  const result = o.result
    ? ({ ...o.result, err_msg: o.result.err_msg ?? '', diagnostics: o.result.diagnostics ?? [] } as unknown as SimResult)
    : null;
  return { content: feedbackTurn(parsed, result && resultForEcho(result)), parsed };
}

/** `POST /v1/parse-reply {reply}`: the protocol's parse of a raw model reply (§2), nothing else. */
export function parseReplyRequest(raw: unknown): { parsed: ParsedReply } {
  return { parsed: parseReply(parseBody(parseReplyRequestSchema, raw).reply) };
}

export function validateIntrospectRequest(raw: unknown): IntrospectItem {
  return parseBody(introspectRequestSchema, raw);
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
  const o = parseBody(firstTurnRequestSchema, raw);
  return { messages: firstTurn(o.design_files, o.specs, o.instruction ?? defaultInstruction(o.top!, o.instance)) };
}

// ---------------------------------------------------------------------------------------------
// Scoring

/** The result record with DUT paths as the client named them, plus the reward fields. */
export type ScoreRecord = Omit<SimResult, 'coverage'> & {
  /** c in [0, 1]: the DUT's overall coverage when the testbench ran, else 0 (docs/protocol.md §5). */
  coverage: number;
  /** c >= coverage_target / 100 (sim/ranking.ts meetsTarget). */
  passed: boolean;
  /** The coverage target of the request, percent (the run setting `coverageTarget`). */
  coverage_target: number;
  /** SimResult.coverage (figures after and before waivers), renamed: `coverage` is the fraction. */
  coverage_breakdown: CoverageBreakdown | null;
  /** Whether the design's introspection came from the cache. */
  design_cached: boolean;
};

export interface ItemError {
  error: 'design_error' | 'internal_error' | 'service_failure';
  status: 422 | 500 | 503;
  kind?: string;
  /** With service_failure: what failed (worker_killed, disk_full, disk_unwritable, resources,
   * simulator_exception). Never the testbench's fault: the client scores the item again. */
  cause?: ServiceFailureCause;
  message: string;
  candidates?: string[];
  diagnostics?: unknown[];
}

export type ServiceFailureCause = (typeof SERVICE_FAILURE_CAUSES)[number];

/** Errno codes that mean the machine, not the request, failed (a full or read-only disk, no
 * memory, no file descriptors). */
const MACHINE_ERRNO: Record<string, ServiceFailureCause> = {
  ENOSPC: 'disk_full',
  EDQUOT: 'disk_full',
  EROFS: 'disk_unwritable',
  EACCES: 'disk_unwritable',
  EPERM: 'disk_unwritable',
  EIO: 'disk_unwritable',
  ENOMEM: 'resources',
  EAGAIN: 'resources',
  EMFILE: 'resources',
  ENFILE: 'resources',
};

/** A thrown error that is the machine's failure, as an item error; undefined for anything else. */
export function machineFailure(e: unknown): ItemError | undefined {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  const cause = code ? MACHINE_ERRNO[code] : undefined;
  if (!cause) return undefined;
  return serviceFailure(cause, `the service could not write or run: ${(e as Error).message}`);
}

export function serviceFailure(cause: ServiceFailureCause, message: string): ItemError {
  return {
    error: 'service_failure',
    status: 503,
    cause,
    message: `${message} (a failure of the service, not of the testbench: score it again)`,
  };
}

/** A run the disk cut short leaves this little free (or less) on the file system. */
const DISK_FULL_BYTES = 1024 * 1024;

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
  /** Disk and memory the service needs to accept work (readiness). */
  resourceLimits?: Partial<ResourceLimits>;
  /** Where idempotent answers and the design directories live across restarts; absent: a
   * temporary directory, and answers in memory only. */
  stateDir?: string;
  /** Accept designs with native code ($c, DPI, $system): for a service whose clients are trusted
   * (chorus serve --allow-native-design). Default: refused (CHORUS-NATIVE). */
  allowNativeDesign?: boolean;
  /** Bytes of idempotent answers kept in memory (default 64 MiB). */
  answerCacheBytes?: number;
  /** Processes at once within one group request (default: the cores per worker, at least 1). */
  groupParallel?: number;
  log?: (line: string) => void;
}

/** Design directories of earlier instances on the same state directory whose process is gone:
 * what a killed service left behind, removed by the next one. */
function designsRootIn(stateDir: string): string {
  sweepDead(stateDir, /^designs-(\d+)-/);
  return mkdtempSync(join(stateDir, `designs-${process.pid}-`));
}

export class ScoreService {
  readonly pool: WorkerPool;
  readonly designs: DesignStore;
  readonly simulator: Simulator;
  readonly maxTimeoutS: number;
  private readonly allowNativeDesign: boolean;
  readonly defaultTimeoutS: number;
  readonly groupParallel: number;
  readonly metrics: ServiceMetrics;
  readonly startedAt = Date.now();
  readonly limits: ResourceLimits;
  readonly answers: AnswerStore;
  private lastCheck: { at: number; check: ResourceCheck } | undefined;

  constructor(opts: ScoreServiceOptions) {
    this.simulator = opts.simulator;
    this.allowNativeDesign = opts.allowNativeDesign === true;
    this.pool = new WorkerPool({ concurrency: opts.workers, queueLimit: opts.queueLimit });
    // A group runs as one task: its processes share what the workers leave of the cores, so that
    // `workers` groups at once keep every core busy without paying for more shared units.
    this.groupParallel = opts.groupParallel ?? Math.max(1, Math.floor(availableParallelism() / opts.workers));
    this.designs = new DesignStore(opts.designCacheEntries ?? 128, opts.stateDir ? designsRootIn(opts.stateDir) : undefined);
    this.limits = { ...DEFAULT_RESOURCE_LIMITS, ...opts.resourceLimits };
    this.answers = new AnswerStore({ dir: opts.stateDir, maxBytes: opts.answerCacheBytes, log: opts.log });
    this.maxTimeoutS = opts.maxTimeoutS ?? DEFAULT_SERVICE.maxTimeoutS;
    this.defaultTimeoutS = Math.min(opts.defaultTimeoutS ?? DEFAULT_LIMITS.timeoutS, this.maxTimeoutS);
    const pool = this.pool;
    this.metrics = serviceMetrics({
      queued: () => pool.queued,
      inFlight: () => pool.inFlight,
      workers: () => pool.concurrency,
      queueLimit: () => pool.queueLimit,
      uptimeSeconds: () => (Date.now() - this.startedAt) / 1000,
      designCacheEntries: () => this.designs.size,
    });
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
    return (await this.scoreGroup([item], signal))[0];
  }

  /**
   * A group (`testbenches` of one design): ONE task on the pool, the design read once, the
   * candidates scored together (the engine's group scoring: shared work, each its own result), one
   * outcome per item in order. A group of one is scoreOne.
   */
  submitGroup(items: ScoreItem[], signal: AbortSignal): Array<Promise<ScoreOutcome>> {
    const [all] = this.pool.submitAll([(s: AbortSignal) => this.scoreGroup(items, s)], signal);
    return items.map((_, k) => all.then((outcomes) => outcomes[k]));
  }

  /** The items (all of one design: the first one's is read) scored together, outcomes in order. */
  private async scoreGroup(items: ScoreItem[], signal: AbortSignal): Promise<ScoreOutcome[]> {
    let got;
    try {
      got = await this.designs.acquire(items[0], signal);
    } catch (e) {
      if (signal.aborted) throw e;
      const failure =
        e instanceof DesignError
          ? this.designFailure(e, join(this.designs.root, DesignStore.keyOf(items[0])))
          : this.failed(machineFailure(e), e);
      return items.map(() => failure);
    }
    for (const _ of items) this.metrics.designCache.inc({ result: got.cached ? 'hit' : 'miss' });
    try {
      const reqs = items.map((item): SimRequest => ({
        design: got.design,
        top: got.top,
        testbench: item.testbench,
        limits: {
          timeoutS: this.clampTimeout(item.timeout_s),
          buildTimeoutS: Math.min(DEFAULT_LIMITS.buildTimeoutS, Math.max(60, this.maxTimeoutS)),
        },
        seed: item.seed ?? undefined,
        ...(item.score ? { score: item.score } : {}),
        // A design from a request is untrusted: its native code would run on this host.
        designNativeCode: this.allowNativeDesign ? 'allow' : 'refuse',
        signal,
      }));
      let results: SimResult[];
      try {
        results =
          reqs.length === 1
            ? [await this.simulator.simulate(reqs[0])]
            : this.simulator.simulateGroup
              ? await this.simulator.simulateGroup(reqs, { parallel: this.groupParallel })
              : await simulateAll(this.simulator, reqs);
      } catch (e) {
        if (signal.aborted) throw e;
        const failure = this.failed(machineFailure(e), e);
        return items.map(() => failure);
      }
      if (signal.aborted) throw signal.reason;
      return results.map((result, k) => this.outcome(items[k], result, got.dir, got.cached));
    } finally {
      got.release();
    }
  }

  /** One result as the service answers it: a service failure, or the record. */
  private outcome(item: ScoreItem, result: SimResult, dir: string, cached: boolean): ScoreOutcome {
    // The engine's `exception` is the tool's or the machine's problem, never the candidate's
    // (a killed process, a full disk, a missing toolchain): a service failure the client
    // retries, not a reward of 0 that would teach the policy the testbench was bad.
    const broken = this.brokenRun(result);
    if (broken) return this.failed(broken);
    this.metrics.runs.inc({ status: result.status });
    // DUT paths as the client named them: the model's feedback must not show server temp dirs.
    // Simulator output bounded: a run must not pour a large file into the response.
    const rel = relativize(resultForEcho(result), dir);
    const c = rel.status === 'success' ? (rel.coverage?.waived.overall ?? 0) : 0;
    const { coverage, ...rest } = rel;
    return {
      ok: true,
      record: {
        ...rest,
        coverage: c,
        passed: meetsTarget(c, item.coverage_target),
        coverage_target: item.coverage_target,
        coverage_breakdown: coverage,
        design_cached: cached,
      },
    };
  }

  /** A result that is the machine's failure rather than the testbench's: the engine's
   * exception, or any failed run while the run-directory disk is full (a compiler that could not
   * write its output fails like a bad testbench would). */
  private brokenRun(result: SimResult): ItemError | undefined {
    const text = `${result.err_msg ?? ''}`;
    if (result.status === 'exception') {
      if (/SIGKILL/.test(text)) return serviceFailure('worker_killed', safeReason(text));
      if (/ENOSPC|EDQUOT|No space left on device|Disk quota exceeded/i.test(text)) return serviceFailure('disk_full', safeReason(text));
      if (/EROFS|Read-only file system/i.test(text)) return serviceFailure('disk_unwritable', safeReason(text));
      return serviceFailure('simulator_exception', safeReason(text));
    }
    if (result.status !== 'success') {
      const free = [tmpdir(), this.designs.root].map(freeBytes).filter((n): n is number => n !== null);
      if (free.some((n) => n < DISK_FULL_BYTES))
        return serviceFailure('disk_full', `the run-directory file system is full (${Math.min(...free)} bytes free) and the run failed`);
    }
    return undefined;
  }

  /** A design the front end refused (the request's fault: 422), counted, its paths shown relative
   * to the design's directory `dir`. */
  private designFailure(e: DesignError, dir: string): { ok: false; error: ItemError } {
    this.metrics.failures.inc({ reason: 'design_error' });
    const error: ItemError = {
      error: 'design_error',
      status: 422,
      kind: e.kind,
      message: e.message,
      candidates: e.candidates,
      diagnostics: e.diagnostics,
    };
    return { ok: false, error: relativize(error, dir) };
  }

  private failed(error: ItemError | undefined, e?: unknown): ScoreOutcome {
    if (!error) throw e;
    this.metrics.failures.inc({ reason: 'service_failure' });
    this.metrics.serviceFailures.inc({ cause: error.cause ?? 'simulator_exception' });
    return { ok: false, error };
  }

  /** Disk and memory against the limits, measured at most once a second (statfs on every request
   * of a busy service would cost more than it tells). */
  resources(fresh = false): ResourceCheck {
    const now = Date.now();
    if (fresh || !this.lastCheck || now - this.lastCheck.at > 1000)
      this.lastCheck = {
        at: now,
        check: checkResources(this.limits, [this.designs.root, ...(this.answers.dir ? [this.answers.dir] : [])]),
      };
    return this.lastCheck.check;
  }

  /** The simulation processes running now (the pool's workers' process trees). */
  processes(): ReturnType<typeof descendants> {
    return descendants();
  }

  /** Reads a design with the engine's front end, on the worker pool (same backpressure as scores). */
  introspect(item: IntrospectItem, signal: AbortSignal): Promise<{ ok: true; answer: IntrospectAnswer } | { ok: false; error: ItemError }> {
    return this.pool.submitAll([(s: AbortSignal) => this.introspectOne(item, s)], signal)[0];
  }

  private async introspectOne(
    item: IntrospectItem,
    signal: AbortSignal,
  ): Promise<{ ok: true; answer: IntrospectAnswer } | { ok: false; error: ItemError }> {
    const dir = mkdtempSync(join(this.designs.root, '.introspect-'));
    try {
      writeFiles(dir, [...item.design_files, ...item.include_files]);
      try {
        const info = await introspect(designIn(dir, item, item.top ?? undefined), { signal, timeoutS: 120 });
        const answer: IntrospectAnswer = {
          top_candidates: info.topCandidates,
          top: info.top,
          modules: info.modules.map((m) => ({
            name: m.name,
            ports: m.ports.map((p) => ({ name: p.name, direction: p.direction, width: p.width })),
            instantiates: m.instantiates,
          })),
          warnings: info.warnings,
        };
        return { ok: true, answer: relativize(answer, dir) };
      } catch (e) {
        if (signal.aborted) throw e;
        if (e instanceof DesignError && e.kind === 'multiple-tops')
          return { ok: true, answer: { top_candidates: e.candidates, top: null } };
        if (e instanceof DesignError && e.kind !== 'tool') return this.designFailure(e, dir);
        throw e;
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }

  /** Counts a task the pool aborted (client gone or shutdown). */
  countAbort(e: unknown): void {
    if (e instanceof TaskAbortedError)
      this.metrics.failures.inc({ reason: /shut/i.test(e.reason) ? 'aborted_shutdown' : 'aborted_client' });
  }

  /** `/readyz`: whether the service takes work now, and each check. */
  readiness(draining: boolean): { ready: boolean; body: Record<string, unknown> } {
    const r = this.resources(true);
    const workers = this.pool.accepting;
    const ready = !draining && workers && r.ok;
    return {
      ready,
      body: {
        status: ready ? 'ready' : draining ? 'draining' : 'not_ready',
        ...(r.ok ? {} : { cause: r.cause, message: r.message }),
        checks: {
          workers: { ok: workers, workers: this.pool.concurrency, in_flight: this.pool.inFlight, queue_depth: this.pool.queued },
          disk: r.disk.map((d) => ({ ...d, ok: d.free_bytes === null || d.free_bytes >= this.limits.minFreeDiskBytes })),
          min_free_disk_bytes: this.limits.minFreeDiskBytes,
          memory: { ok: r.rss_bytes <= this.limits.maxRssBytes, rss_bytes: r.rss_bytes, max_rss_bytes: this.limits.maxRssBytes },
        },
      },
    };
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

/** The engine's message, bounded: it goes into an answer. */
function safeReason(text: string): string {
  return text.length > 600 ? `${text.slice(0, 600)}...` : text;
}
