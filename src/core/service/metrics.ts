// A small Prometheus registry: counters, gauges and histograms with labels, rendered in the text
// exposition format (version 0.0.4). No dependency: the reward service needs a handful of series.

export type Labels = Record<string, string>;

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function labelKey(labels: Labels): string {
  return Object.keys(labels)
    .sort()
    .map((k) => `${k}="${escapeLabel(labels[k])}"`)
    .join(',');
}

/** Prometheus number formatting: +Inf, -Inf, NaN spelled the way the format wants them. */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

abstract class Metric {
  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'gauge' | 'histogram',
  ) {
    if (!NAME.test(name)) throw new Error(`invalid metric name '${name}'`);
  }
  abstract samples(): string[];
  render(): string {
    return [`# HELP ${this.name} ${escapeHelp(this.help)}`, `# TYPE ${this.name} ${this.type}`, ...this.samples()].join('\n') + '\n';
  }
  protected checkLabels(labels: Labels): void {
    for (const k of Object.keys(labels)) if (!LABEL.test(k) || k === 'le') throw new Error(`invalid label name '${k}' on ${this.name}`);
  }
}

export class Counter extends Metric {
  private readonly values = new Map<string, number>();
  constructor(name: string, help: string, initial: Labels[] = []) {
    super(name, help, 'counter');
    for (const l of initial) this.values.set(labelKey(l), 0);
  }
  inc(labels: Labels = {}, by = 1): void {
    if (by < 0 || !Number.isFinite(by)) throw new Error(`counter ${this.name} can only increase`);
    this.checkLabels(labels);
    const k = labelKey(labels);
    this.values.set(k, (this.values.get(k) ?? 0) + by);
  }
  get(labels: Labels = {}): number {
    return this.values.get(labelKey(labels)) ?? 0;
  }
  samples(): string[] {
    if (this.values.size === 0) return [`${this.name} 0`];
    return [...this.values].map(([k, v]) => `${this.name}${k ? `{${k}}` : ''} ${formatValue(v)}`);
  }
}

export class Gauge extends Metric {
  private readonly values = new Map<string, number>();
  private readonly collect?: () => number;
  /** With `collect`, the value is read when the registry is rendered (queue depth, uptime). */
  constructor(name: string, help: string, collect?: () => number) {
    super(name, help, 'gauge');
    this.collect = collect;
  }
  set(v: number, labels: Labels = {}): void {
    this.checkLabels(labels);
    this.values.set(labelKey(labels), v);
  }
  inc(labels: Labels = {}, by = 1): void {
    this.set(this.get(labels) + by, labels);
  }
  dec(labels: Labels = {}, by = 1): void {
    this.set(this.get(labels) - by, labels);
  }
  get(labels: Labels = {}): number {
    if (this.collect && Object.keys(labels).length === 0) return this.collect();
    return this.values.get(labelKey(labels)) ?? 0;
  }
  samples(): string[] {
    if (this.collect) return [`${this.name} ${formatValue(this.collect())}`];
    if (this.values.size === 0) return [`${this.name} 0`];
    return [...this.values].map(([k, v]) => `${this.name}${k ? `{${k}}` : ''} ${formatValue(v)}`);
  }
}

/** Latency buckets in seconds: a cached-DUT simulation takes about a second, a slow one minutes. */
export const DEFAULT_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

interface HistogramSeries {
  labels: Labels;
  counts: number[];
  sum: number;
  count: number;
}

export class Histogram extends Metric {
  readonly buckets: number[];
  private readonly series = new Map<string, HistogramSeries>();
  constructor(name: string, help: string, buckets: number[] = DEFAULT_BUCKETS) {
    super(name, help, 'histogram');
    const b = [...buckets].filter((x) => Number.isFinite(x)).sort((x, y) => x - y);
    if (b.length === 0 || new Set(b).size !== b.length) throw new Error(`histogram ${name} needs distinct finite buckets`);
    this.buckets = b;
  }
  observe(v: number, labels: Labels = {}): void {
    this.checkLabels(labels);
    const k = labelKey(labels);
    let s = this.series.get(k);
    if (!s) {
      s = { labels: { ...labels }, counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.series.set(k, s);
    }
    for (let i = 0; i < this.buckets.length; i++) if (v <= this.buckets[i]) s.counts[i]++;
    s.sum += v;
    s.count++;
  }
  /** Count and sum of one series (tests, Retry-After estimates). */
  get(labels: Labels = {}): { count: number; sum: number } {
    const s = this.series.get(labelKey(labels));
    return { count: s?.count ?? 0, sum: s?.sum ?? 0 };
  }
  samples(): string[] {
    const out: string[] = [];
    const series = this.series.size ? [...this.series.values()] : [{ labels: {}, counts: this.buckets.map(() => 0), sum: 0, count: 0 }];
    for (const s of series) {
      const with_ = (extra: Labels): string => {
        const k = labelKey({ ...s.labels, ...extra });
        return k ? `{${k}}` : '';
      };
      this.buckets.forEach((b, i) => out.push(`${this.name}_bucket${with_({ le: formatValue(b) })} ${s.counts[i]}`));
      out.push(`${this.name}_bucket${with_({ le: '+Inf' })} ${s.count}`);
      out.push(`${this.name}_sum${with_({})} ${formatValue(s.sum)}`);
      out.push(`${this.name}_count${with_({})} ${s.count}`);
    }
    return out;
  }
}

export class Registry {
  private readonly metrics = new Map<string, Metric>();
  register<M extends Metric>(m: M): M {
    if (this.metrics.has(m.name)) throw new Error(`metric ${m.name} is already registered`);
    this.metrics.set(m.name, m);
    return m;
  }
  counter(name: string, help: string, initial: Labels[] = []): Counter {
    return this.register(new Counter(name, help, initial));
  }
  gauge(name: string, help: string, collect?: () => number): Gauge {
    return this.register(new Gauge(name, help, collect));
  }
  histogram(name: string, help: string, buckets?: number[]): Histogram {
    return this.register(new Histogram(name, help, buckets));
  }
  /** The text exposition format, `Content-Type: text/plain; version=0.0.4`. */
  render(): string {
    return [...this.metrics.values()].map((m) => m.render()).join('');
  }
}

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

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
    const v = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    if (Number.isNaN(v) && m[3] !== 'NaN') throw new Error(`bad value: ${line}`);
    out.push({ name: m[1], labels, value: v });
  }
  return out;
}
