// The Prometheus registry: counters, gauges, histograms in the text exposition format.
import { describe, expect, it } from 'vitest';
import { Registry, parseExposition } from '../../src/core/service/metrics.js';

describe('metrics registry', () => {
  it('renders HELP/TYPE and samples that parse back', () => {
    const r = new Registry();
    const c = r.counter('runs_total', 'Runs by status.', [{ status: 'success' }, { status: 'timeout' }]);
    c.inc({ status: 'success' });
    c.inc({ status: 'success' }, 2);
    let depth = 3;
    r.gauge('queue_depth', 'Waiting items.', () => depth);
    const g = r.gauge('in_flight', 'Running.');
    g.inc();
    g.inc();
    g.dec();
    const h = r.histogram('latency_seconds', 'Latency.', [0.1, 1, 10]);
    h.observe(0.05, { route: '/a' });
    h.observe(0.5, { route: '/a' });
    h.observe(50, { route: '/a' });
    const text = r.render();
    expect(text).toContain('# HELP runs_total Runs by status.\n# TYPE runs_total counter\n');
    expect(text).toContain('# TYPE queue_depth gauge\n');
    expect(text).toContain('# TYPE latency_seconds histogram\n');
    const s = parseExposition(text);
    const v = (name: string, labels: Record<string, string> = {}) => s.find((x) => x.name === name && JSON.stringify(x.labels) === JSON.stringify(labels))?.value;
    expect(v('runs_total', { status: 'success' })).toBe(3);
    expect(v('runs_total', { status: 'timeout' })).toBe(0);
    expect(v('queue_depth')).toBe(3);
    depth = 5;
    expect(parseExposition(r.render()).find((x) => x.name === 'queue_depth')!.value).toBe(5);
    expect(v('in_flight')).toBe(1);
    // Buckets are cumulative; +Inf equals the count.
    expect(v('latency_seconds_bucket', { le: '0.1', route: '/a' })).toBe(1);
    expect(v('latency_seconds_bucket', { le: '1', route: '/a' })).toBe(2);
    expect(v('latency_seconds_bucket', { le: '10', route: '/a' })).toBe(2);
    expect(v('latency_seconds_bucket', { le: '+Inf', route: '/a' })).toBe(3);
    expect(v('latency_seconds_count', { route: '/a' })).toBe(3);
    expect(v('latency_seconds_sum', { route: '/a' })).toBeCloseTo(50.55, 10);
    expect(h.get({ route: '/a' })).toEqual({ count: 3, sum: 50.55 });
  });

  it('escapes label values and refuses bad names, duplicates and decreasing counters', () => {
    const r = new Registry();
    const c = r.counter('x_total', 'Help with \\ and\nnewline.');
    c.inc({ path: 'a"b\\c\nd' });
    const text = r.render();
    expect(text).toContain('# HELP x_total Help with \\\\ and\\nnewline.');
    expect(text).toContain('x_total{path="a\\"b\\\\c\\nd"} 1');
    expect(parseExposition(text)[0].labels.path).toBe('a"b\\c\nd');
    expect(() => r.counter('x_total', 'again')).toThrow(/already registered/);
    expect(() => r.gauge('bad-name', 'x')).toThrow(/invalid metric name/);
    expect(() => c.inc({}, -1)).toThrow(/only increase/);
    expect(() => c.inc({ 'bad-label': 'v' })).toThrow(/invalid label/);
    expect(() => r.histogram('h', 'h', [])).toThrow(/buckets/);
  });

  it('an unused metric still renders a zero sample', () => {
    const r = new Registry();
    r.counter('never_total', 'Never.');
    r.histogram('idle_seconds', 'Idle.', [1]);
    const s = parseExposition(r.render());
    expect(s.find((x) => x.name === 'never_total')!.value).toBe(0);
    expect(s.find((x) => x.name === 'idle_seconds_bucket' && x.labels.le === '+Inf')!.value).toBe(0);
    expect(s.find((x) => x.name === 'idle_seconds_count')!.value).toBe(0);
  });
});
