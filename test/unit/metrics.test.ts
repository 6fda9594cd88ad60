// The reward service's metrics (prom-client, one Registry per service) and parseExposition, the
// text-format reader the tests and the load test check them with.
import { describe, expect, it } from 'vitest';
import { Counter, Registry } from 'prom-client';
import { parseExposition, serviceMetrics, type ServiceGauges } from '../../src/core/service/metrics.js';

const gauges = (over: Partial<ServiceGauges> = {}): ServiceGauges => ({
  queued: () => 0,
  inFlight: () => 0,
  workers: () => 2,
  queueLimit: () => 16,
  uptimeSeconds: () => 1,
  designCacheEntries: () => 0,
  ...over,
});

describe('service metrics', () => {
  it('renders the documented series, zero before the first event, gauges read at scrape time', async () => {
    let depth = 3;
    const m = serviceMetrics(gauges({ queued: () => depth }));
    const text = await m.registry.metrics();
    expect(text).toContain('# HELP chorus_runs_total Simulations finished, by result status.\n# TYPE chorus_runs_total counter\n');
    expect(text).toContain('# TYPE chorus_queue_depth gauge\n');
    expect(text).toContain('# TYPE chorus_request_duration_seconds histogram\n');
    const s = parseExposition(text);
    const v = (name: string, labels: Record<string, string> = {}) =>
      s.find((x) => x.name === name && JSON.stringify(x.labels) === JSON.stringify(labels))?.value;
    expect(v('chorus_runs_total', { status: 'rejected' })).toBe(0);
    expect(v('chorus_failures_total', { reason: 'aborted_shutdown' })).toBe(0);
    expect(v('chorus_design_cache_total', { result: 'miss' })).toBe(0);
    expect(v('chorus_rejected_total')).toBe(0);
    expect(v('chorus_queue_depth')).toBe(3);
    expect(v('chorus_workers')).toBe(2);
    // prom-client's process metrics ride along.
    expect(s.some((x) => x.name === 'process_cpu_seconds_total')).toBe(true);
    depth = 5;
    m.runs.inc({ status: 'success' });
    m.runs.inc({ status: 'success' }, 2);
    m.latency.observe({ route: '/a' }, 0.004);
    m.latency.observe({ route: '/a' }, 0.5);
    m.latency.observe({ route: '/a' }, 500);
    const s2 = parseExposition(await m.registry.metrics());
    const v2 = (name: string, labels: Record<string, string> = {}) =>
      s2.find((x) => x.name === name && JSON.stringify(x.labels) === JSON.stringify(labels))?.value;
    expect(v2('chorus_queue_depth')).toBe(5);
    expect(v2('chorus_runs_total', { status: 'success' })).toBe(3);
    // Buckets are cumulative; +Inf equals the count.
    expect(v2('chorus_request_duration_seconds_bucket', { le: '0.005', route: '/a' })).toBe(1);
    expect(v2('chorus_request_duration_seconds_bucket', { le: '1', route: '/a' })).toBe(2);
    expect(v2('chorus_request_duration_seconds_bucket', { le: '300', route: '/a' })).toBe(2);
    expect(v2('chorus_request_duration_seconds_bucket', { le: '+Inf', route: '/a' })).toBe(3);
    expect(v2('chorus_request_duration_seconds_count', { route: '/a' })).toBe(3);
    expect(v2('chorus_request_duration_seconds_sum', { route: '/a' })).toBeCloseTo(500.504, 10);
  });

  it('two services keep their own registries', async () => {
    const a = serviceMetrics(gauges());
    const b = serviceMetrics(gauges());
    a.rejected.inc();
    expect(parseExposition(await a.registry.metrics()).find((x) => x.name === 'chorus_rejected_total')!.value).toBe(1);
    expect(parseExposition(await b.registry.metrics()).find((x) => x.name === 'chorus_rejected_total')!.value).toBe(0);
  });
});

describe('parseExposition', () => {
  it('reads escaped label values back and refuses lines it cannot read', async () => {
    const r = new Registry();
    const c = new Counter({ name: 'x_total', help: 'Help.', labelNames: ['path'], registers: [r] });
    c.inc({ path: 'a"b\\c\nd' });
    const text = await r.metrics();
    expect(text).toContain('x_total{path="a\\"b\\\\c\\nd"} 1');
    expect(parseExposition(text)[0].labels.path).toBe('a"b\\c\nd');
    expect(parseExposition('y +Inf\nz Nan\nw -Inf\n').map((x) => x.value)).toEqual([Infinity, NaN, -Infinity]);
    expect(() => parseExposition('not a sample line at all')).toThrow(/unparsable/);
    expect(() => parseExposition('x{a="1" b} 1')).toThrow(/unparsable labels/);
  });
});
