// The reward service's engine side: a checked request (requests.ts) -> design on disk
// (designStore.ts: content-addressed, its introspection cached) -> bounded worker pool -> simulator
// -> the result record plus the reward fields a trainer reads. HTTP lives in http.ts; this file
// knows nothing about sockets.
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { introspect } from '../sim/verilator/introspect.js';
import { DesignError } from '../design/errors.js';
import type { Simulator } from '../sim/simulator.js';
import { DEFAULT_LIMITS, DEFAULT_SERVICE } from '../run/defaults.js';
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
import { serviceMetrics, type ServiceMetrics } from './metrics.js';

export type { ServiceMetrics } from './metrics.js';
import { TaskAbortedError, WorkerPool } from './workerPool.js';
import { DesignStore, designIn, relativize, writeFiles } from './designStore.js';
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
  /** c >= threshold (sim/ranking.ts meetsTarget). */
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
    let got;
    try {
      got = await this.designs.acquire(item, signal);
    } catch (e) {
      if (signal.aborted) throw e;
      if (e instanceof DesignError) {
        this.metrics.failures.inc({ reason: 'design_error' });
        const error: ItemError = {
          error: 'design_error',
          status: 422,
          kind: e.kind,
          message: e.message,
          candidates: e.candidates,
          diagnostics: e.diagnostics,
        };
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
        limits: {
          timeoutS: this.clampTimeout(item.timeout_s),
          buildTimeoutS: Math.min(DEFAULT_LIMITS.buildTimeoutS, Math.max(60, this.maxTimeoutS)),
        },
        seed: item.seed ?? undefined,
        ...(item.score ? { score: item.score } : {}),
        signal,
      });
      if (signal.aborted) throw signal.reason;
      this.metrics.runs.inc({ status: result.status });
      // DUT paths as the client named them: the model's feedback must not show server temp dirs.
      // Simulator output bounded: a run must not pour a large file into the response.
      const rel = relativize(resultForEcho(result), got.dir);
      const c = rel.status === 'success' ? (rel.coverage?.waived.overall ?? 0) : 0;
      const { coverage, ...rest } = rel;
      return {
        ok: true,
        record: {
          ...rest,
          coverage: c,
          passed: meetsTarget(c, item.threshold),
          threshold: item.threshold,
          coverage_breakdown: coverage,
          design_cached: got.cached,
        },
      };
    } finally {
      got.release();
    }
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
        if (e instanceof DesignError && e.kind !== 'tool') {
          this.metrics.failures.inc({ reason: 'design_error' });
          return {
            ok: false,
            error: relativize(
              {
                error: 'design_error',
                status: 422,
                kind: e.kind,
                message: e.message,
                candidates: e.candidates,
                diagnostics: e.diagnostics,
              },
              dir,
            ),
          };
        }
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
