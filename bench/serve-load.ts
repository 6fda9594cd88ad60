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
//                               [--json out.json] [--faults [--quick] [--seed S]] [--group G]
//
// --group G: candidates per second with each prompt's G candidates sent as one group request
// (`testbenches`) beside the same candidates one per request, in one run (serveGroup.ts; --requests
// counts candidates, default 96).
//
// --faults: the same load against a service in a child process (state directory, so answers
// survive its restart), with faults injected at random times, bounded in count: SIGKILL of a
// simulation process mid-run; SIGKILL of the whole service, restarted on the same port; the
// run-directory file system filled (a small tmpfs when running as root, else the service's
// free-space limit raised over what is free); clients that disconnect mid-request and
// mid-response; a client that sends its body a byte at a time; bursts of oversized and malformed
// bodies. Clients retry with backoff and jitter under one Idempotency-Key per request. PASS only
// when every request got exactly one final answer, none wrong (a killed run is never a testbench
// failure), no process or run directory is left behind, and the service's RSS stayed under
// --max-rss MiB (default 1024). --quick: 40 requests, one fault of each kind (the soak the test
// suite runs). Loopback only; bounded by --deadline seconds (default 1200).
// Exit status: 0 when every request got exactly one final answer with the expected outcome,
// 1 otherwise, 2 on bad arguments.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { connect } from 'node:net';
import { startScoreServer, parseExposition, descendants, processesNaming, claimStateDir } from '../src/core/run/service.js';
import { afterRetryAfter, benchServer, compareGroups, EXPECTED, type Candidate, type Kind } from './serveGroup.js';

interface Options {
  requests: number;
  clients: number;
  workers: number;
  queueLimit: number;
  json?: string;
  faults: boolean;
  quick: boolean;
  maxRssMiB: number;
  deadlineS: number;
  /** Compare groups of this many candidates with the single form (serveGroup.ts); 0: not. */
  group: number;
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
        faults: { type: 'boolean' },
        quick: { type: 'boolean' },
        'max-rss': { type: 'string' },
        deadline: { type: 'string' },
        'serve-child': { type: 'string' },
        port: { type: 'string' },
        'min-free': { type: 'string' },
        group: { type: 'string' },
      },
    });
    const int = (name: string, v: string | undefined, d: number, min: number): number => {
      const n = v === undefined ? d : Number(v);
      if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}`);
      return n;
    };
    const quick = values.quick ?? false;
    const group = int('group', values.group, 0, 0);
    if (group === 1) throw new Error('--group must be 0 (off) or at least 2');
    return {
      group,
      faults: values.faults ?? false,
      quick,
      maxRssMiB: int('max-rss', values['max-rss'], 1024, 64),
      deadlineS: int('deadline', values.deadline, quick ? 300 : 1200, 10),
      requests: int('requests', values.requests, quick ? 40 : group ? 96 : 500, 1),
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
      coverage_target: 90,
      ...(kind === 'timeout' ? { timeout_s: 1 } : {}),
    },
  };
}

function percentile(xs: number[], p: number): number {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const childAt = argv.indexOf('--serve-child');
  if (childAt >= 0) return serveChild(argv[childAt + 1], argv);
  const o = options(argv);
  if (!o) return 2;
  if (o.faults) return faults(o);
  const ds = designs(resolve(process.cwd()));
  if (o.group) return compareGroups(o, ds.length, (i) => request(i, ds) as Candidate);
  const server = await benchServer(o);
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
          await afterRetryAfter(res);
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

// ---------------------------------------------------------------------------------------------
// --faults: the service in a child process, faults injected while the load runs

/** `--serve-child STATE_DIR --port P --workers W --queue-limit Q [--min-free BYTES]`: the service
 * the fault run kills and restarts. Its run directories go under STATE_DIR/tmp-<pid> (TMPDIR), so
 * what a killed instance left behind is found and removed by the next one. */
async function serveChild(stateDir: string, argv: string[]): Promise<number> {
  const arg = (name: string): string | undefined => {
    const i = argv.indexOf(`--${name}`);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const claimed = claimStateDir(stateDir);
  process.env.TMPDIR = claimed.scratch;
  const server = await startScoreServer({
    port: Number(arg('port') ?? 0),
    host: '127.0.0.1',
    workers: Number(arg('workers') ?? 2),
    queueLimit: Number(arg('queue-limit') ?? 8),
    graceS: 5,
    maxTimeoutS: 60,
    bodyLimitBytes: 1024 * 1024,
    stateDir,
    resourceLimits: { minFreeDiskBytes: Number(arg('min-free') ?? 8 * 1024 * 1024) },
    log: (l) => process.stderr.write(l + '\n'),
  });
  process.stdout.write(`listening on ${server.url}\n`);
  await new Promise<void>((r) => process.once('SIGTERM', () => r()));
  await server.close(5);
  claimed.release();
  return 0;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function rssMiB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

async function faults(o: Options): Promise<number> {
  const ds = designs(resolve(process.cwd()));
  const deadline = Date.now() + o.deadlineS * 1000;
  const root = mkdtempSync(join(tmpdir(), 'chorus-faults-'));
  const stateDir = join(root, 'state');
  mkdirSync(stateDir);
  // A small tmpfs for the state and run directories when we may mount one; else the disk fault is
  // the service's free-space limit raised over what is free (the same refusal path).
  let tmpfs = false;
  if (process.getuid?.() === 0) tmpfs = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=512m', 'tmpfs', stateDir]).status === 0;
  const counts: Record<string, number> = {};
  const injected = (what: string, detail = ''): void => {
    counts[what] = (counts[what] ?? 0) + 1;
    process.stdout.write(`  [${((Date.now() - t0) / 1000).toFixed(1)}s] inject ${what}${detail ? `: ${detail}` : ''}\n`);
  };
  const t0 = Date.now();
  let child: ChildProcess | undefined;
  let port = 0;
  let url = '';
  let maxRss = 0;
  const start = async (minFree?: number): Promise<void> => {
    child = spawn(
      process.execPath,
      [
        process.argv[1],
        '--serve-child',
        stateDir,
        '--port',
        String(port),
        '--workers',
        String(o.workers),
        '--queue-limit',
        String(o.queueLimit),
        ...(minFree !== undefined ? ['--min-free', String(minFree)] : []),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stderr!.on('data', () => {});
    url = await new Promise<string>((ok, fail) => {
      let text = '';
      child!.stdout!.on('data', (c: Buffer) => {
        text += c.toString();
        const m = /listening on (http:\/\/\S+)/.exec(text);
        if (m) ok(m[1]);
      });
      child!.once('exit', (code) => fail(new Error(`the service exited (${code}) before listening`)));
    });
    port = Number(new URL(url).port);
  };
  const stop = async (sig: NodeJS.Signals): Promise<void> => {
    const c = child!;
    if (c.exitCode !== null || c.signalCode !== null) return;
    const gone = new Promise((r) => c.once('exit', r));
    c.kill(sig);
    await gone;
  };
  await start();
  process.stdout.write(
    `serve-load --faults: ${o.requests} requests, ${o.clients} clients -> ${url} (${o.workers} workers, queue limit ${o.queueLimit}); ` +
      `state ${stateDir}${tmpfs ? ' (tmpfs 512 MiB)' : ''}; ${cpus().length} cores\n`,
  );
  const rssTimer = setInterval(() => {
    if (child?.pid) maxRss = Math.max(maxRss, rssMiB(child.pid));
  }, 200);

  // The clients: one Idempotency-Key per request, kept across every retry.
  const answers = new Array<number>(o.requests).fill(0);
  const wrong: string[] = [];
  let retries = 0;
  let replays = 0;
  let next = 0;
  let restarting: Promise<void> | undefined;
  const client = async (): Promise<void> => {
    for (;;) {
      const i = next++;
      if (i >= o.requests) return;
      const { kind, body } = request(i, ds);
      const text = JSON.stringify(body);
      const key = randomUUID();
      for (let attempt = 0; ; attempt++) {
        if (Date.now() > deadline) return;
        await restarting;
        let res: Response;
        let payload: { status?: string; error?: string; cause?: string };
        try {
          res = await fetch(`${url}/v1/score`, {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', 'Idempotency-Key': key, Connection: 'close' },
            body: text,
          });
          payload = (await res.json()) as typeof payload;
        } catch {
          retries++;
          await sleep(Math.random() * Math.min(5000, 200 * 2 ** attempt));
          continue;
        }
        if (res.status === 429 || res.status === 503) {
          retries++;
          const wait = Number(res.headers.get('retry-after') ?? '1');
          await sleep(Math.min(5000, (Number.isFinite(wait) ? wait : 1) * 1000) * (0.5 + Math.random()));
          continue;
        }
        answers[i]++;
        if (res.headers.get('idempotent-replayed')) replays++;
        if (res.status !== 200 || payload.status !== EXPECTED[kind])
          wrong.push(`#${i} (${kind}): HTTP ${res.status} ${payload.status ?? payload.error ?? ''} ${payload.cause ?? ''}`);
        break;
      }
    }
  };

  // The faults: each kind a bounded number of times, at random moments of the run.
  const n = o.quick ? 1 : 3;
  const raw = (send: (sock: import('node:net').Socket) => void, closeAfterMs: number): Promise<void> =>
    new Promise((ok) => {
      const sock = connect(port, '127.0.0.1', () => send(sock));
      sock.on('error', () => ok());
      sock.on('close', () => ok());
      sock.on('data', () => {});
      setTimeout(() => (sock.destroy(), ok()), closeAfterMs);
    });
  const goodBody = JSON.stringify(request(0, ds).body);
  const kinds: Array<[string, () => Promise<void>]> = [
    [
      'SIGKILL of a simulation process',
      async () => {
        for (let k = 0; k < 100; k++) {
          const v = child?.pid
            ? descendants(child.pid).find((p) => p.name === 'Vtb' || p.name === 'verilator_bin' || p.name === 'cc1plus')
            : undefined;
          if (v) {
            process.kill(v.pid, 'SIGKILL');
            return injected('SIGKILL of a simulation process', `${v.name} pid ${v.pid}`);
          }
          await sleep(100);
        }
      },
    ],
    [
      'SIGKILL of the service, restart on the same port',
      async () => {
        let done!: () => void;
        restarting = new Promise((r) => (done = r));
        injected('SIGKILL of the service, restart on the same port', `pid ${child?.pid}`);
        await stop('SIGKILL');
        await start();
        done();
      },
    ],
    [
      'full run-directory disk',
      async () => {
        if (tmpfs) {
          const filler = join(stateDir, 'filler');
          spawnSync('fallocate', ['-l', '500M', filler]);
          injected('full run-directory disk', 'tmpfs filled to ~500 of 512 MiB for 3 s');
          await sleep(3000);
          rmSync(filler, { force: true });
        } else {
          let done!: () => void;
          restarting = new Promise((r) => (done = r));
          injected('full run-directory disk', 'restart with a free-space limit over what is free, for 3 s');
          await stop('SIGTERM');
          await start(2 ** 60);
          done();
          await sleep(3000);
          restarting = new Promise((r) => (done = r));
          await stop('SIGTERM');
          await start();
          done();
        }
      },
    ],
    [
      'client disconnect mid-request',
      () => (
        injected('client disconnect mid-request'),
        raw(
          (s) =>
            s.write(
              `POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${goodBody.length}\r\n\r\n${goodBody.slice(0, 100)}`,
            ),
          200,
        )
      ),
    ],
    [
      'client disconnect mid-response',
      () => (
        injected('client disconnect mid-response'),
        raw(
          (s) =>
            s.write(
              `POST /v1/score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(goodBody)}\r\n\r\n${goodBody}`,
            ),
          1500,
        )
      ),
    ],
    [
      'slow client (a byte at a time)',
      async () => {
        injected('slow client (a byte at a time)');
        const small = '{"reply":"module tb; endmodule"}';
        await raw(async (s) => {
          s.write(
            `POST /v1/parse-reply HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: ${small.length}\r\n\r\n`,
          );
          for (const ch of small) {
            if (s.destroyed) return;
            s.write(ch);
            await sleep(50);
          }
        }, 10_000);
      },
    ],
    [
      'burst of oversized and malformed bodies',
      async () => {
        injected('burst of oversized and malformed bodies', '20 requests');
        await Promise.all(
          Array.from({ length: 20 }, (_, k) =>
            fetch(`${url}/v1/score`, {
              method: 'POST',
              headers: { 'Content-Type': 'application/json' },
              body: k % 2 ? '{"design_files": [' : 'x'.repeat(2 * 1024 * 1024),
            })
              .then((r) => r.body?.cancel())
              .catch(() => {}),
          ),
        );
      },
    ],
  ];
  const load = Promise.all(Array.from({ length: o.clients }, () => client()));
  let loadDone = false;
  void load.then(() => (loadDone = true));
  // Inside the load: the quick soak takes about 20 s on 2 cores, the full one about requests / 3 s.
  const expectedS = o.quick ? 8 : Math.max(30, o.requests / 4);
  const schedule = kinds.flatMap(([, f]) =>
    Array.from({ length: n }, () => ({ at: Date.now() + 3000 + Math.random() * expectedS * 1000, f })),
  );
  schedule.sort((a, b) => a.at - b.at);
  for (const s of schedule) {
    while (Date.now() < s.at && !loadDone) await sleep(100);
    if (loadDone || Date.now() > deadline) break;
    await s.f().catch((e: unknown) => process.stdout.write(`  fault failed to inject: ${String(e)}\n`));
  }
  await load;
  const wall = (Date.now() - t0) / 1000;
  clearInterval(rssTimer);
  await stop('SIGTERM');
  // Orphans of a killed service end by their own limits; give them that long.
  let left = processesNaming(root);
  for (let k = 0; k < 150 && left.length; k++) {
    await sleep(200);
    left = processesNaming(root);
  }
  const leftDirs = readdirSync(stateDir).filter((d) => d.startsWith('tmp-') || d.startsWith('designs-'));
  const problems: string[] = [];
  const unanswered = answers.filter((a) => a === 0).length;
  const twice = answers.filter((a) => a > 1).length;
  if (Date.now() > deadline) problems.push(`the run passed its deadline of ${o.deadlineS}s`);
  if (unanswered) problems.push(`${unanswered} request(s) without a final answer`);
  if (twice) problems.push(`${twice} request(s) answered more than once`);
  if (wrong.length) problems.push(`${wrong.length} wrong answer(s): ${wrong.slice(0, 5).join('; ')}`);
  if (left.length) problems.push(`${left.length} process(es) left behind: ${left.join(', ')}`);
  if (leftDirs.length) problems.push(`run/design directories left behind: ${leftDirs.join(', ')}`);
  if (maxRss > o.maxRssMiB) problems.push(`service RSS reached ${maxRss.toFixed(0)} MiB, over ${o.maxRssMiB} MiB`);
  process.stdout.write(
    `\n| requests | final answers | wrong | retries | replays | faults injected | left behind | max RSS | wall |\n` +
      `|---:|---:|---:|---:|---:|---|---|---:|---:|\n` +
      `| ${o.requests} | ${answers.filter((a) => a === 1).length} | ${wrong.length} | ${retries} | ${replays} | ${Object.entries(counts)
        .map(([k, v]) => `${k} ×${v}`)
        .join(
          '; ',
        )} | ${left.length} processes, ${leftDirs.length} dirs | ${maxRss.toFixed(0)} MiB (bound ${o.maxRssMiB}) | ${wall.toFixed(0)} s |\n`,
  );
  for (const p of problems) process.stdout.write(`FAIL: ${p}\n`);
  if (tmpfs) spawnSync('umount', [stateDir]);
  rmSync(root, { recursive: true, force: true });
  if (!problems.length)
    process.stdout.write('PASS: every request got exactly one final, right answer through the faults; nothing left behind\n');
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
