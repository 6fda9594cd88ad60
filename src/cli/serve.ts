// `chorus serve`: simulation as a service for RL training (docs/reward-service.md). Scores
// testbenches over HTTP with a bounded worker pool; SIGTERM/SIGINT drain it gracefully.
import { DEFAULT_SERVICE } from '../core/vocabulary/defaults.js';
import { availableParallelism } from 'node:os';
import { claimStateDir, startScoreServer } from '../core/run/service.js';
import { resolve } from 'node:path';
import { simulatorOption } from './simulatorOption.js';
import { settingOptions, settingsHelp } from './settingOptions.js';
import { flags, strings, numberOption, runCommand, toolchainError, type CommandRun } from './command.js';
import { safeText } from '../core/run/frontEnd.js';

export const HELP = `Usage: chorus serve [--port P] [--host H] [--workers N] [--queue-limit Q] [options]

Serves the reward for RL training over HTTP (JSON): POST /v1/score, /v1/refine-prompt,
/v1/first-turn; GET /v1/health, /metrics (Prometheus). See docs/reward-service.md.

Options:
  --port <n>            port to listen on (default ${DEFAULT_SERVICE.port}; 0 picks a free one)
  --host <addr>         address to bind (default ${DEFAULT_SERVICE.host}; 0.0.0.0 for every interface)
  --workers <n>         simulations at once (default: number of cores, ${availableParallelism()} here)
  --queue-limit <n>     score items allowed to wait; beyond it requests get 429 (default ${DEFAULT_SERVICE.queueLimit})
  --grace <s>           on SIGTERM/SIGINT, seconds in-flight work may finish (default ${DEFAULT_SERVICE.graceS})
  --max-timeout <s>     largest timeout_s a request may ask for (default ${DEFAULT_SERVICE.maxTimeoutS})
  --body-limit <MiB>    largest request body (default ${DEFAULT_SERVICE.bodyLimitMiB}); a larger one gets 413 with a JSON body
  --client-timeout <s>  seconds a client has to send a whole request, headers and body; a slower
                        one gets 408 and is closed (default ${DEFAULT_SERVICE.slowClientTimeoutS}); the answer's time is not counted
  --allow-native-design accept designs with native code ($c, \`systemc_*, DPI, $system): it runs on
                        this host, so only for clients you trust (default: refused, CHORUS-NATIVE)
  --host-details        answers show host paths (run folders, the state folder) as they are; by
                        default they read <tmp>, <state>, <cache>, <home>, <cwd>
  --state-dir <dir>     keep recorded answers here (an Idempotency-Key retried after a restart gets
                        the same answer) and this instance's run directories (STATE/tmp-<pid>;
                        what a killed instance left is removed at the next start); default: none,
                        answers are kept in memory only
  --min-free-disk <MiB> /readyz fails and new work is refused (503, retry later) below this much
                        free space for run directories (default ${DEFAULT_SERVICE.minFreeDiskMiB})
  --max-rss <MiB>       /readyz fails and new work is refused above this resident memory of the
                        service (default ${DEFAULT_SERVICE.maxRssMiB})
${settingsHelp('serve', ['simulator'])}`;

export function serveHelp(): string {
  return HELP;
}

export const OPTIONS = {
  ...strings('port', 'host', 'workers', 'queue-limit', 'grace', 'max-timeout', 'body-limit', 'client-timeout'),
  ...strings('state-dir', 'min-free-disk', 'max-rss'),
  ...flags('host-details', 'allow-native-design'),
  ...settingOptions('serve'),
} as const;

export function runServe(argv: string[]): Promise<number> {
  return runCommand(
    argv,
    {
      name: 'serve',
      options: OPTIONS,
      help: HELP,
      takesDesign: false,
      // SIGTERM (and Ctrl-C) drains the service: in-flight requests finish within the grace.
      interrupt: 'drain',
      errors: [toolchainError],
    },
    serveCommand,
  );
}

async function serveCommand({ values: o, positionals, fail, untilSignal }: CommandRun<typeof OPTIONS>): Promise<number> {
  if (positionals.length) return fail(`serve takes no design files ('${positionals[0]}'): designs come with each request`);
  let port: number, workers: number, queueLimit: number, grace: number, maxTimeout: number, bodyMiB: number;
  let minFreeMiB: number, maxRssMiB: number, clientTimeout: number;
  try {
    port = numberOption('port', o.port, DEFAULT_SERVICE.port, 0, { max: 65535, integer: true });
    workers = numberOption('workers', o.workers, availableParallelism(), 1, { integer: true });
    queueLimit = numberOption('queue-limit', o['queue-limit'], DEFAULT_SERVICE.queueLimit, 0, { integer: true });
    grace = numberOption('grace', o.grace, DEFAULT_SERVICE.graceS);
    maxTimeout = numberOption('max-timeout', o['max-timeout'], DEFAULT_SERVICE.maxTimeoutS, 0, { above: true });
    bodyMiB = numberOption('body-limit', o['body-limit'], DEFAULT_SERVICE.bodyLimitMiB, 0, { above: true });
    minFreeMiB = numberOption('min-free-disk', o['min-free-disk'], DEFAULT_SERVICE.minFreeDiskMiB, 0);
    clientTimeout = numberOption('client-timeout', o['client-timeout'], DEFAULT_SERVICE.slowClientTimeoutS, 0, { above: true });
    maxRssMiB = numberOption('max-rss', o['max-rss'], DEFAULT_SERVICE.maxRssMiB, 0, { above: true });
  } catch (e) {
    return fail((e as Error).message);
  }
  try {
    simulatorOption(o.simulator);
  } catch (e) {
    return fail((e as Error).message);
  }

  // With a state directory, this instance's run directories live under it (TMPDIR), so the next
  // instance removes what a killed one left behind.
  const claimed = o['state-dir'] ? claimStateDir(resolve(o['state-dir'])) : null;
  if (claimed) {
    process.env.TMPDIR = claimed.scratch;
    if (claimed.removed.length)
      process.stderr.write(`chorus serve: removed ${claimed.removed.length} run folder(s) of instances no longer running\n`);
  }
  let server;
  try {
    server = await startScoreServer({
      port,
      host: o.host ?? DEFAULT_SERVICE.host,
      workers,
      queueLimit,
      graceS: grace,
      maxTimeoutS: maxTimeout,
      bodyLimitBytes: Math.round(bodyMiB * 1024 * 1024),
      slowClientTimeoutS: clientTimeout,
      hostDetails: o['host-details'] === true,
      allowNativeDesign: o['allow-native-design'] === true,
      simulator: o.simulator,
      ...(claimed ? { stateDir: resolve(o['state-dir']!) } : {}),
      resourceLimits: { minFreeDiskBytes: minFreeMiB * 1024 * 1024, maxRssBytes: maxRssMiB * 1024 * 1024 },
      // Log lines quote requests and errors a client caused: text, never control sequences.
      log: (line) => process.stderr.write(safeText(line) + '\n'),
    });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'EADDRINUSE' || err.code === 'EACCES' || err.code === 'EADDRNOTAVAIL')
      return fail(`cannot listen on ${o.host ?? DEFAULT_SERVICE.host}:${port}: ${err.message}`);
    throw e; // a ToolchainError reads as a usage error in runCommand; anything else is a bug
  }
  const srv = server;
  process.stdout.write(`chorus serve: listening on ${server.url}\n`);
  process.stderr.write(
    `chorus serve: ${workers} worker(s), queue limit ${queueLimit}, grace ${grace}s; SIGTERM or Ctrl-C drains and stops\n`,
  );

  await untilSignal(async (sig, count) => {
    if (count === 1) {
      process.stderr.write(`chorus serve: ${sig}: no new work; finishing in-flight requests (up to ${grace}s)\n`);
      await srv.close();
    } else {
      // A second signal: no more grace, abort what is left (each request still gets its 503).
      process.stderr.write(`chorus serve: ${sig} again: aborting in-flight work now\n`);
      await srv.close(0);
    }
  });
  claimed?.release();
  return 0;
}
