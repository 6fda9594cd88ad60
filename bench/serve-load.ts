// bench/serve-load: the reward service under an RL trainer's load.
//
// Starts `chorus serve` in-process on loopback and sends N score requests (default 500) from C
// concurrent clients (default 16): a quarter with broken testbenches (xrun_failed), a few that run
// forever with a small timeout_s (timeout), the rest good testbenches on small example designs
// (each textually unique, so nothing but the design's introspection and DUT are reused). A 429 is
// retried after its Retry-After. Prints requests ok / failed / retried, p50 / p99 latency and
// throughput, and checks that every request was answered exactly once, both from the clients' side
// and from the server's own request counter.
//
// Usage: npm run bench:serve -- [--requests N] [--clients C] [--workers W] [--queue-limit Q]
//                               [--json out.json]
// Exit status: 0 when every request got exactly one final answer with the expected outcome,
// 1 otherwise, 2 on bad arguments.
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startScoreServer, parseExposition } from '../src/core/run/service.js';

interface Options {
  requests: number;
  clients: number;
  workers: number;
  queueLimit: number;
  json?: string;
}

function options(argv: string[]): Options | null {
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
        requests: { type: 'string' },
        clients: { type: 'string' },
        workers: { type: 'string' },
        'queue-limit': { type: 'string' },
        json: { type: 'string' },
      },
    });
    const int = (name: string, v: string | undefined, d: number, min: number): number => {
      const n = v === undefined ? d : Number(v);
      if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}`);
      return n;
    };
    return {
      requests: int('requests', values.requests, 500, 1),
      clients: int('clients', values.clients, 16, 1),
      workers: int('workers', values.workers, availableParallelism(), 1),
      // Smaller than the number of clients, so backpressure (429 + Retry-After) is exercised.
      queueLimit: int('queue-limit', values['queue-limit'], 8, 0),
      json: values.json,
    };
  } catch (e) {
    process.stderr.write(`bench serve-load: ${(e as Error).message}\n`);
    return null;
  }
}

type Kind = 'good' | 'broken' | 'timeout';

interface Design {
  name: string;
  top: string;
  files: Array<{ name: string; content: string }>;
  tb: string;
  /** Module header and DUT instantiation lines for the broken and endless variants. */
  decls: string;
}

function designs(root: string): Design[] {
  const ex = (p: string): string => readFileSync(join(root, 'examples', p), 'utf8');
  return [
    {
      name: 'counter',
      top: 'counter',
      files: [{ name: 'counter.sv', content: ex('counter/counter.sv') }],
      tb: ex('counter/tb_counter.sv'),
      decls: `logic clk = 0, rst_n = 0, en = 1, load = 0, up = 1;\n  logic [7:0] din = 0;\n  logic [7:0] count;\n  logic wrap;\n  counter uut (.*);`,
    },
    {
      name: 'seq_detector',
      top: 'seq_detector',
      files: [{ name: 'seq_detector.sv', content: ex('fsm/seq_detector.sv') }],
      tb: ex('fsm/tb_seq_detector.sv'),
      decls: `reg clk = 0, reset = 1, bit_in = 0, valid = 0;\n  wire detected;\n  wire [3:0] hits;\n  seq_detector uut (.clk(clk), .reset(reset), .bit_in(bit_in), .valid(valid), .detected(detected), .hits(hits));`,
    },
  ];
}

function request(i: number, ds: Design[]): { kind: Kind; body: unknown } {
  const d = ds[i % ds.length];
  // Every 4th broken, every 25th (offset) endless, the rest good.
  const kind: Kind = i % 4 === 1 ? 'broken' : i % 25 === 3 ? 'timeout' : 'good';
  let tb: string;
  if (kind === 'good') tb = `// candidate ${i}\n${d.tb}`;
  else if (kind === 'broken')
    tb = `// candidate ${i}\n\`timescale 1ns/1ps\nmodule tb_broken_${i};\n  ${d.decls}\n  initial begin\n    clk = 1 +;\n  end\nendmodule\n`;
  else tb = `// candidate ${i}\n\`timescale 1ns/1ps\nmodule tb_forever_${i};\n  ${d.decls}\n  initial forever #1 clk = ~clk;\nendmodule\n`;
  return {
    kind,
    body: {
      design_files: d.files,
      top: d.top,
      testbench: { name: `tb_${i}.sv`, content: tb },
      threshold: 0.9,
      ...(kind === 'timeout' ? { timeout_s: 1 } : {}),
    },
  };
}

const EXPECTED: Record<Kind, string> = { good: 'success', broken: 'xrun_failed', timeout: 'timeout' };

function percentile(xs: number[], p: number): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

async function main(): Promise<number> {
  const o = options(process.argv.slice(2));
  if (!o) return 2;
  const ds = designs(resolve(process.cwd()));
  const server = await startScoreServer({
    port: 0,
    host: '127.0.0.1',
    workers: o.workers,
    queueLimit: o.queueLimit,
    graceS: 30,
    maxTimeoutS: 120,
  });
  process.stdout.write(
    `serve-load: ${o.requests} requests, ${o.clients} clients -> ${server.url} (${o.workers} workers, queue limit ${o.queueLimit}); ` +
      `${cpus().length} cores, load ${loadavg()[0].toFixed(2)}\n`,
  );

  const answers = new Array<number>(o.requests).fill(0);
  const latencies: number[] = [];
  const byKind: Record<Kind, { ok: number; failed: number }> = {
    good: { ok: 0, failed: 0 },
    broken: { ok: 0, failed: 0 },
    timeout: { ok: 0, failed: 0 },
  };
  const failures: string[] = [];
  let ok = 0;
  let failed = 0;
  let retried = 0;
  let attempts = 0;
  let next = 0;
  const t0 = performance.now();
  let lastReport = t0;

  const client = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= o.requests) return;
      const { kind, body } = request(i, ds);
      const text = JSON.stringify(body);
      const start = performance.now();
      for (;;) {
        attempts++;
        let res: Response;
        let payload: { status?: string; error?: string; message?: string };
        try {
          res = await fetch(`${server.url}/v1/score`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: text });
          payload = (await res.json()) as typeof payload;
        } catch (e) {
          answers[i]++;
          failed++;
          byKind[kind].failed++;
          failures.push(`#${i} (${kind}): transport error ${(e as Error).message}`);
          break;
        }
        if (res.status === 429) {
          retried++;
          const wait = Number(res.headers.get('retry-after') ?? '1');
          // Jitter keeps 16 clients from retrying in lockstep.
          await new Promise((r) => setTimeout(r, (Number.isFinite(wait) ? wait : 1) * 1000 * (0.5 + Math.random())));
          continue;
        }
        answers[i]++;
        latencies.push((performance.now() - start) / 1000);
        if (res.status === 200 && payload.status === EXPECTED[kind]) {
          ok++;
          byKind[kind].ok++;
        } else {
          failed++;
          byKind[kind].failed++;
          failures.push(
            `#${i} (${kind}): HTTP ${res.status} ${payload.status ?? payload.error ?? ''} ${(payload.message ?? '').slice(0, 200)}`,
          );
        }
        break;
      }
      const now = performance.now();
      if (now - lastReport > 15_000) {
        lastReport = now;
        process.stdout.write(`  ${ok + failed}/${o.requests} answered, ${retried} retried, ${((now - t0) / 1000).toFixed(0)}s\n`);
      }
    }
  };
  await Promise.all(Array.from({ length: o.clients }, () => client()));
  const wall = (performance.now() - t0) / 1000;

  const metrics = parseExposition(await (await fetch(`${server.url}/metrics`)).text());
  await server.close();
  const serverAnswers = metrics
    .filter((m) => m.name === 'chorus_http_requests_total' && m.labels.route === '/v1/score')
    .reduce((a, m) => a + m.value, 0);
  const served429 = metrics.find((m) => m.name === 'chorus_rejected_total')?.value ?? 0;
  const runs = Object.fromEntries(metrics.filter((m) => m.name === 'chorus_runs_total').map((m) => [m.labels.status, m.value]));

  const unanswered = answers.flatMap((n, i) => (n === 0 ? [i] : []));
  const duplicated = answers.flatMap((n, i) => (n > 1 ? [i] : []));
  const summary = {
    requests: o.requests,
    clients: o.clients,
    workers: o.workers,
    queueLimit: o.queueLimit,
    ok,
    failed,
    retried,
    attempts,
    byKind,
    p50_s: percentile(latencies, 50),
    p99_s: percentile(latencies, 99),
    wall_s: wall,
    throughput_per_s: o.requests / wall,
    serverAnswers,
    served429,
    runs,
    unanswered: unanswered.length,
    duplicated: duplicated.length,
  };
  process.stdout.write(
    `requests: ${ok} ok, ${failed} failed, ${retried} retried (429) over ${attempts} attempts\n` +
      `  good ${byKind.good.ok}/${byKind.good.ok + byKind.good.failed}, broken ${byKind.broken.ok}/${byKind.broken.ok + byKind.broken.failed}, ` +
      `timeout ${byKind.timeout.ok}/${byKind.timeout.ok + byKind.timeout.failed} as expected\n` +
      `latency (end to end, retries included): p50 ${summary.p50_s.toFixed(2)}s, p99 ${summary.p99_s.toFixed(2)}s\n` +
      `throughput: ${summary.throughput_per_s.toFixed(2)} requests/s over ${wall.toFixed(1)}s\n` +
      `server: ${serverAnswers} score answers (= ${o.requests} + ${retried} retries expected), ${served429} answered 429, runs ${JSON.stringify(runs)}\n`,
  );
  for (const f of failures.slice(0, 20)) process.stdout.write(`  failed ${f}\n`);
  if (o.json) writeFileSync(o.json, JSON.stringify(summary, null, 2) + '\n');

  const problems: string[] = [];
  if (unanswered.length) problems.push(`${unanswered.length} request(s) never answered (first: ${unanswered.slice(0, 5).join(', ')})`);
  if (duplicated.length) problems.push(`${duplicated.length} request(s) answered more than once`);
  if (serverAnswers !== o.requests + retried)
    problems.push(`the server answered ${serverAnswers} score requests, expected ${o.requests + retried}`);
  if (served429 !== retried) problems.push(`the server counted ${served429} 429s, the clients saw ${retried}`);
  if (failed) problems.push(`${failed} request(s) did not get the expected outcome`);
  for (const p of problems) process.stdout.write(`FAIL: ${p}\n`);
  if (!problems.length) process.stdout.write('PASS: every request was answered exactly once with the expected outcome\n');
  return problems.length ? 1 : 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`bench serve-load: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = 1;
  },
);
