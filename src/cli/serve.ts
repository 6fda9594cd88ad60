// `chorus serve`: simulation as a service for RL training (docs/reward-service.md). Scores
// testbenches over HTTP with a bounded worker pool; SIGTERM/SIGINT drain it gracefully.
import { availableParallelism } from 'node:os';
import { startScoreServer } from '../core/service/http.js';
import { ToolchainError } from '../core/sim/verilator/toolchain.js';
import { simulatorNames } from '../core/sim/registry.js';
import { numberOption, parseCommand } from './command.js';
import { safeText } from '../core/util/untrusted.js';

const HELP = `Usage: chorus serve [--port P] [--host H] [--workers N] [--queue-limit Q] [options]

Serves the reward for RL training over HTTP (JSON): POST /v1/score, /v1/refine-prompt,
/v1/first-turn; GET /v1/health, /metrics (Prometheus). See docs/reward-service.md.

Options:
  --port <n>            port to listen on (default 8080; 0 picks a free one)
  --host <addr>         address to bind (default 127.0.0.1; 0.0.0.0 for every interface)
  --workers <n>         simulations at once (default: number of cores, ${availableParallelism()} here)
  --queue-limit <n>     score items allowed to wait; beyond it requests get 429 (default 64)
  --grace <s>           on SIGTERM/SIGINT, seconds in-flight work may finish (default 30)
  --max-timeout <s>     largest timeout_s a request may ask for (default 300)
  --body-limit <MiB>    largest request body (default 8)
  --simulator <name>    ${simulatorNames().join(' | ')} (default verilator)
`;

export function serveHelp(): string {
  return HELP;
}

export async function runServe(argv: string[]): Promise<number> {
  const args = parseCommand(
    'serve',
    argv,
    {
      port: { type: 'string' },
      host: { type: 'string' },
      workers: { type: 'string' },
      'queue-limit': { type: 'string' },
      grace: { type: 'string' },
      'max-timeout': { type: 'string' },
      'body-limit': { type: 'string' },
      simulator: { type: 'string' },
    } as const,
    HELP,
    false,
  );
  if (typeof args === 'number') return args;
  const { values: o, fail } = args;
  if (args.positionals.length) return fail(`serve takes no design files ('${args.positionals[0]}'): designs come with each request`);
  let port: number, workers: number, queueLimit: number, grace: number, maxTimeout: number, bodyMiB: number;
  try {
    port = numberOption('port', o.port, 8080);
    workers = numberOption('workers', o.workers, availableParallelism(), 1);
    queueLimit = numberOption('queue-limit', o['queue-limit'], 64);
    grace = numberOption('grace', o.grace, 30);
    maxTimeout = numberOption('max-timeout', o['max-timeout'], 300, 1);
    bodyMiB = numberOption('body-limit', o['body-limit'], 8, 0.001);
    if (!Number.isInteger(port) || port > 65535) throw new Error(`--port must be an integer 0..65535, got '${o.port}'`);
    if (!Number.isInteger(workers)) throw new Error(`--workers must be an integer, got '${o.workers}'`);
    if (!Number.isInteger(queueLimit)) throw new Error(`--queue-limit must be an integer, got '${o['queue-limit']}'`);
  } catch (e) {
    return fail((e as Error).message);
  }
  if (o.simulator && !simulatorNames().includes(o.simulator))
    return fail(`unknown simulator '${o.simulator}'; available: ${simulatorNames().join(', ')}`);

  let server;
  try {
    server = await startScoreServer({
      port,
      host: o.host ?? '127.0.0.1',
      workers,
      queueLimit,
      graceS: grace,
      maxTimeoutS: maxTimeout,
      bodyLimitBytes: Math.round(bodyMiB * 1024 * 1024),
      simulator: o.simulator,
      // Log lines quote requests and errors a client caused: text, never control sequences.
      log: (line) => process.stderr.write(safeText(line) + '\n'),
    });
  } catch (e) {
    if (e instanceof ToolchainError) return fail(e.message);
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'EADDRINUSE' || err.code === 'EACCES' || err.code === 'EADDRNOTAVAIL')
      return fail(`cannot listen on ${o.host ?? '127.0.0.1'}:${port}: ${err.message}`);
    throw e;
  }
  process.stdout.write(`chorus serve: listening on ${server.url}\n`);
  process.stderr.write(
    `chorus serve: ${workers} worker(s), queue limit ${queueLimit}, grace ${grace}s; SIGTERM or Ctrl-C drains and stops\n`,
  );

  const srv = server;
  let stop = (): void => {};
  await new Promise<void>((resolve) => {
    let signals = 0;
    const onSignal = (sig: NodeJS.Signals): void => {
      signals++;
      if (signals === 1) {
        process.stderr.write(`chorus serve: ${sig}: no new work; finishing in-flight requests (up to ${grace}s)\n`);
        void srv.close().then(resolve);
      } else {
        // A second signal: no more grace, abort what is left (each request still gets its 503).
        process.stderr.write(`chorus serve: ${sig} again: aborting in-flight work now\n`);
        void srv.close(0).then(resolve);
      }
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    stop = () => {
      process.removeListener('SIGTERM', onSignal);
      process.removeListener('SIGINT', onSignal);
    };
  });
  stop();
  return 0;
}
