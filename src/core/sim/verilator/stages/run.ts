// Stage "run": the built executable runs, jailed and bounded, and its harness report is read. The
// jail (jail.ts jailCommand) shows the run directory, the design view and the shared libraries Vtb
// links, nothing else; outside it the run is still under prlimit and timeout. Limits: wall clock
// (inside the jail first, so the harness can still report; the host's bound is the backstop),
// simulated time, memory, output bytes, the size of any file it writes and of the run directory.
// What is scored comes only from the harness report on fd 3 (harnessReport.ts), framed by a
// nonce the harness reads from stdin before any testbench code runs: a frame the testbench could
// write (wrong nonce, extra bytes) is an integrity failure, never a result.
import { randomBytes } from 'node:crypto';
import { basename, join } from 'node:path';
import type { Diagnostic } from '../../result.js';
import { jailCommand, sharedLibraries, type SharedLibraries } from '../../jail.js';
import { runBounded, type RunResult } from '../../../util/proc.js';
import { blankComments } from '../../../design/lexer.js';
import type { RuntimeBuild } from '../toolchain.js';
import { readHarnessReport, type HarnessReport, type ReportReading } from '../harnessReport.js';

/** How many times one run-time message (its time apart) is kept in the log. */
export const RUN_LINES_KEPT = 20;
import { type Candidate, Ending, inSlot, integrityFailure, readSource, secondsSince } from './candidate.js';

/** The harness report carries the coverage database: big designs write tens of MB. */
const REPORT_LIMIT_BYTES = 512 * 1024 * 1024;

/** The run's process result and, when the harness reported, its report (the one source of what is scored). */
export interface HarnessRun {
  run: RunResult;
  report?: HarnessReport;
}

/**
 * The harness's arguments: the seed, no random reset, the sim-time limit and where the testbench
 * and the design call $fatal/$stop. No +chorus+cov+: the counts come back on the harness's report
 * channel, never as a file.
 */
export function harnessArgs(c: Candidate): string[] {
  const { req, limits, tbName } = c;
  const simArgs = [`+verilator+seed+${req.seed ?? 1}`, '+verilator+rand+reset+0'];
  if (limits.simTimeLimitNs !== null) simArgs.push(`+chorus+maxtime_ns+${limits.simTimeLimitNs}`);
  const stops = stopPositions([
    { name: tbName, content: req.testbench.content },
    ...req.design.files.map((f) => ({ name: f, content: readSource(f) })),
  ]);
  if (stops.length) simArgs.push(`+chorus+stops+${stops.join(';')}`);
  return simArgs;
}

/**
 * Runs runDir/Vtb under the jail and the limits and reads its report. An Ending when the jail
 * cannot be set up (fail closed: never run unjailed because of it) or the report channel was
 * tampered with; `warnings` (the lint warnings) go into that Ending's diagnostics.
 */
export async function runHarness(
  c: Candidate,
  runtime: RuntimeBuild,
  runDir: string,
  warnings: Diagnostic[],
): Promise<Ending | HarnessRun> {
  const { req, limits, jail } = c;
  const ts = performance.now();
  const simArgs = harnessArgs(c);
  // The jail holds the run directory, the design directories and the libraries Vtb links:
  // every candidate links the same ones, so they are listed once per runtime build.
  let libs: SharedLibraries | undefined;
  try {
    libs = jail.kind === 'none' ? undefined : await sharedLibraries(join(runDir, 'Vtb'), runtime.dir);
  } catch (e) {
    // Fail closed: never run unjailed because the jail could not be built.
    return new Ending('exception', 'run', {
      err_msg: `the simulation jail cannot be set up: ${(e as Error).message}`,
      diagnostics: warnings,
    });
  }
  const cmd = jailCommand(
    jail,
    runDir,
    join(runDir, 'Vtb'),
    simArgs,
    {
      memoryLimitMb: limits.memoryLimitMb,
      fileSizeLimitBytes: limits.outputLimitBytes,
      timeoutS: limits.timeoutS,
      runDirLimitBytes: limits.runDirLimitBytes,
    },
    libs && { design: c.view, libs },
    c.sandbox.runEnv,
  );
  if (libs) {
    c.sandbox.steps.add('run');
    c.sandbox.runLibs = libs;
  }
  // The outer limit is a backstop: `timeout` inside the jail fires first and lets the report out.
  // The harness reports on fd 3, framed by a nonce it reads from stdin before any testbench
  // code runs (harnessReport.ts): the one source of what is scored.
  const nonce = randomBytes(16).toString('hex');
  // A group's member waits for a slot before its clock starts: the others' builds must not eat
  // into its time limit (it would time out where it would not alone).
  const run = await inSlot(c, () =>
    runBounded(cmd.file, cmd.args, {
      cwd: runDir,
      timeoutS: limits.timeoutS + 10,
      signal: req.signal,
      outputLimitBytes: limits.outputLimitBytes,
      graceS: 2,
      env: cmd.env,
      input: `${nonce}\n`,
      reportLimitBytes: REPORT_LIMIT_BYTES,
      guard: cmd.guard,
      // A design whose assertions fire every cycle floods the log: each message is kept this many
      // times, the rest counted (the harness's report keeps the exact counts either way).
      foldLinesAfter: RUN_LINES_KEPT,
    }),
  );
  c.timings.run = secondsSince(ts);
  const reading = harnessReading(run, nonce);
  if (reading.kind === 'forged')
    return integrityFailure(c.tbName, `the simulation's report channel was tampered with: ${reading.problem}`, warnings, run.all);
  return { run, report: reading.kind === 'ok' ? reading.report : undefined };
}

/** The run's report channel read against this run's nonce. A run the run-directory guard killed
 * may have been cut mid-report: no report, not a forgery. */
export function harnessReading(run: RunResult, nonce: string): ReportReading {
  if (run.guardStop) return { kind: 'none' };
  const reading = readHarnessReport(run.report, nonce, run.reportOverflow);
  // A frame of this run cut short because the harness was killed while writing it: by our time
  // limit or cancel, or by SIGKILL from outside (the OOM killer, an operator). The testbench
  // cannot kill the harness, so this is no forgery: the run has no report, and classifyRun says
  // why it ended (a timeout, or an exception the caller scores again).
  const killed = run.timedOut || run.cancelled || run.signal === 'SIGKILL' || run.exitCode === 137;
  return reading.kind === 'forged' && reading.cut && killed ? { kind: 'none' } : reading;
}

/** `base:line` of every $fatal/$stop call: the simulation main stops on these, not on $error. */
export function stopPositions(files: Array<{ name: string; content: string }>): string[] {
  const out: string[] = [];
  for (const f of files) {
    const code = blankComments(f.content, true);
    const lines = code.split('\n');
    lines.forEach((l, i) => {
      if (/\$(fatal|stop)\b/.test(l)) out.push(`${basename(f.name)}:${i + 1}`);
    });
  }
  return out;
}
