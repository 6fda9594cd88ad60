// The reward service's Prometheus metrics on prom-client: one Registry per service (tests and a
// trainer may run several in one process), the chorus_* series of docs/reward-service.md and
// prom-client's process metrics (CPU, memory, event-loop lag, GC: collectDefaultMetrics).
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { SIM_STATUSES } from '../sim/result.js';

export type Labels = Record<string, string>;

/** Latency buckets in seconds: a cached-DUT simulation takes about a second, a slow one minutes. */
export const DEFAULT_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export const PROMETHEUS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

export const FAILURE_REASONS = ['design_error', 'internal_error', 'aborted_client', 'aborted_shutdown', 'service_failure'] as const;
/** Why the service (not the testbench) failed an item: scoreService.ts SERVICE_FAILURE_CAUSES. */
export const SERVICE_FAILURE_CAUSES = ['worker_killed', 'disk_full', 'disk_unwritable', 'resources', 'simulator_exception'] as const;

export interface ServiceMetrics {
  registry: Registry;
  runs: Counter<'status'>;
  failures: Counter<'reason'>;
  rejected: Counter;
  requests: Counter<'route' | 'code'>;
  latency: Histogram<'route'>;
  designCache: Counter<'result'>;
  serviceFailures: Counter<'cause'>;
  replays: Counter;
}

/** What the gauges read when /metrics is scraped. */
export interface ServiceGauges {
  queued(): number;
  inFlight(): number;
  workers(): number;
  queueLimit(): number;
  uptimeSeconds(): number;
  designCacheEntries(): number;
}

export function serviceMetrics(read: ServiceGauges): ServiceMetrics {
  const registry = new Registry();
  const registers = [registry];
  const gauge = (name: string, help: string, value: () => number): void => {
    new Gauge({
      name,
      help,
      registers,
      collect() {
        this.set(value());
      },
    });
  };
  gauge('chorus_queue_depth', 'Score items waiting for a worker.', read.queued);
  gauge('chorus_in_flight', 'Score items running on a worker.', read.inFlight);
  gauge('chorus_workers', 'Size of the worker pool.', read.workers);
  gauge('chorus_queue_limit', 'Most score items allowed to wait.', read.queueLimit);
  gauge('chorus_uptime_seconds', 'Seconds since the service started.', read.uptimeSeconds);
  gauge('chorus_design_cache_entries', 'Designs kept on disk with their introspection.', read.designCacheEntries);
  // Counters by one label, each known value at zero from the start (labelledCounter).
  const counter = <L extends string>(name: string, help: string, label: L, values: readonly string[]): Counter<L> =>
    labelledCounter(registers, name, help, label, values);
  const runs = counter('chorus_runs_total', 'Simulations finished, by result status.', 'status', SIM_STATUSES);
  const failures = counter('chorus_failures_total', 'Score items that produced no result record, by reason.', 'reason', FAILURE_REASONS);
  const designCache = counter('chorus_design_cache_total', 'Design lookups, by result (hit: introspection reused).', 'result', [
    'hit',
    'miss',
  ]);
  const serviceFailures = counter(
    'chorus_service_failures_total',
    'Score items the service failed (answered 503 service_failure, retried by the client), by cause.',
    'cause',
    SERVICE_FAILURE_CAUSES,
  );
  collectDefaultMetrics({ register: registry });
  return {
    registry,
    runs,
    failures,
    designCache,
    serviceFailures,
    replays: new Counter({
      name: 'chorus_idempotent_replays_total',
      help: 'Score requests answered with the recorded answer of an earlier request with the same Idempotency-Key.',
      registers,
    }),
    rejected: new Counter({
      name: 'chorus_rejected_total',
      help: 'Score requests refused with 429 because the queue was full.',
      registers,
    }),
    requests: new Counter({
      name: 'chorus_http_requests_total',
      help: 'HTTP requests answered, by route and status code.',
      labelNames: ['route', 'code'] as const,
      registers,
    }),
    latency: new Histogram({
      name: 'chorus_request_duration_seconds',
      help: 'HTTP request latency, seconds, by route.',
      labelNames: ['route'] as const,
      buckets: DEFAULT_BUCKETS,
      registers,
    }),
  };
}

/** A counter by one label, every known value of the label at zero from the start: a dashboard's
 * rate() needs the zero before the first event. */
function labelledCounter<L extends string>(
  registers: Registry[],
  name: string,
  help: string,
  label: L,
  values: readonly string[],
): Counter<L> {
  const counter = new Counter({ name, help, labelNames: [label] as const, registers });
  for (const value of values) counter.inc({ [label]: value } as Partial<Record<L, string>>, 0);
  return counter;
}

/** Parses the text format back into samples: for tests and for the load test's own checks. */
export function parseExposition(text: string): Array<{ name: string; labels: Labels; value: number }> {
  const out: Array<{ name: string; labels: Labels; value: number }> = [];
  for (const line of text.split('\n')) {
    if (!line.trim() || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (!m) throw new Error(`unparsable exposition line: ${line}`);
    const labels: Labels = {};
    if (m[2]) {
      const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/gy;
      let lm: RegExpExecArray | null;
      let consumed = 0;
      while ((lm = re.exec(m[2]))) {
        labels[lm[1]] = lm[2].replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
        consumed = re.lastIndex;
      }
      if (consumed !== m[2].length) throw new Error(`unparsable labels: ${line}`);
    }
    // Case-insensitive like Prometheus's own parser (Go's ParseFloat): prom-client writes `Nan`.
    const word = m[3].toLowerCase();
    const v = word === '+inf' || word === 'inf' ? Infinity : word === '-inf' ? -Infinity : word === 'nan' ? NaN : Number(m[3]);
    if (Number.isNaN(v) && word !== 'nan') throw new Error(`bad value: ${line}`);
    out.push({ name: m[1], labels, value: v });
  }
  return out;
}
