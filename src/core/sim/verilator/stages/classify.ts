// Stage "classify": how the run ended and what the record says about it. How it ended comes from
// the harness report when there is one (a channel the testbench cannot write), else from the exit
// status of chorus_main.cpp; the log is the testbench's output as much as the simulator's, so an
// error it attributes to a design file counts as the design's only when the harness recorded it.
// Then the status: a run without coverage, a failed run with the coverage it reached, a run that
// never instantiated the DUT, or success. The reward follows from the status (candidate.ts).
import { constants as osConstants } from 'node:os';
import { basename } from 'node:path';
import type { SimLimits } from '../../../vocabulary/types.js';
import type { Diagnostic, DutAssertion, SimStatus } from '../../result.js';
import type { RunResult } from '../../../util/proc.js';
import type { DutCoverage } from '../../../coverage/analyze.js';
import { coverageDetail, summaryRows } from '../../../coverage/report.js';
import { didNotConverge, foldRepeats, isNoise, loopSignals, parseVerilatorMessages, type FileClassifier } from '../diagnostics.js';
import { legalFailure } from '../../assertions.js';
import { dutAssertionsOf } from '../dutAssertions.js';
import type { HarnessReport } from '../harnessReport.js';
import { describeRetry } from '../settleRetry.js';
import { bounded, type Candidate, Ending, errorText, secondsSince, type SettleRetry } from './candidate.js';
import type { HarnessRun } from './run.js';

export interface RunOutcome {
  status: SimStatus;
  message: string;
  diagnostic?: Diagnostic;
}

/** A run judged: its outcome, every diagnostic of the record, the run's own (confirmed) ones, and
 * whether Verilator itself said the design's logic did not settle. */
export interface Judged {
  outcome: RunOutcome;
  /** The lint warnings, the run's diagnostics (repeats folded: foldRepeats) and the outcome's. */
  diagnostics: Diagnostic[];
  /** The run's own diagnostics, one per message printed (err_msg lists them as it always has). */
  runDiags: Diagnostic[];
  /** The design's assertions the run broke, from the harness report (dutAssertions.ts). */
  dutAssertions: DutAssertion[];
  unsettled?: { region: string; limit: number | null };
}

/** How the run ended, with its diagnostics. `readDesignFile`: a known design file's text (the
 * kind of a DUT assertion is read from its source), undefined for any other file. */
export function judgeRun(
  c: Candidate,
  ran: HarnessRun,
  warnings: Diagnostic[],
  classify: FileClassifier,
  readDesignFile: (file: string) => string | undefined = () => undefined,
): Judged {
  const { run, report } = ran;
  // Repeats the output folding did not keep (util/lineFold.ts) count as repeats of their message.
  const folded = (run.folded ?? []).flatMap((f) =>
    parseVerilatorMessages(f.last + '\n', classify, 'run').map((d) => ({ ...d, count: f.count })),
  );
  const runDiags = confirmRunDiagnostics(
    [...parseVerilatorMessages(run.all, classify, 'run'), ...folded].filter((d) => !isNoise(d)),
    report,
    classify,
    c.tbName,
  );
  const diagnostics = [...warnings, ...foldRepeats(runDiags)];
  const outcome = classifyRun(run, c.limits, report);
  if (outcome.diagnostic) diagnostics.push({ ...outcome.diagnostic, file: c.tbName });
  // Verilator's own fatal error, from the harness's record: text the testbench prints is never taken for it.
  const unsettled = report ? didNotConverge(report.fatals.map((f) => fatalLine(f)).join('\n')) : undefined;
  const dutAssertions = dutAssertionsOf(report, classify, readDesignFile, runDiags);
  return { outcome, diagnostics, runDiags, dutAssertions, unsettled };
}

/**
 * A run whose logic never settled, after every retry that could apply (or none could): a DUT error
 * at the looping signal, never the testbench's, in place of the run's own convergence messages.
 */
export function notSettled(
  judged: Judged & { unsettled: NonNullable<Judged['unsettled']> },
  warnings: Diagnostic[],
  retry: SettleRetry | undefined,
  convergeLimit: boolean,
): Judged {
  const outcome = combLoopOutcome(
    warnings,
    judged.unsettled,
    retry
      ? `retried with ${describeRetry(retry)}, it still does not settle: nothing made it run, so there is no coverage result`
      : convergeLimit
        ? 'nothing Verilator offers applies to it'
        : 'this Verilator offers no --converge-limit to retry with',
  );
  const rest = judged.runDiags.filter((d) => d.code !== 'DIDNOTCONVERGE' && !/region did not converge/.test(d.message));
  return { ...judged, outcome, runDiags: rest, diagnostics: [...warnings, ...foldRepeats(rest), outcome.diagnostic!] };
}

/**
 * The end of a run that cannot be scored on coverage: it could not run at all (exception), or the
 * harness reported no coverage database. Undefined when there is coverage to read.
 */
export function endWithoutCoverage(judged: Judged, ran: HarnessRun): Ending | undefined {
  const { outcome, diagnostics, runDiags } = judged;
  const { run, report } = ran;
  const asserted = judged.dutAssertions.length ? { dutAssertions: judged.dutAssertions } : {};
  if (outcome.status === 'exception')
    return new Ending('exception', 'run', { err_msg: outcome.message, diagnostics, log: bounded(run.all) });
  if (report?.coverage) return undefined;
  const status: SimStatus = outcome.status === 'success' ? 'imc_merge_failed' : outcome.status;
  return new Ending(status, outcome.status === 'success' ? 'coverage' : 'run', {
    err_msg:
      outcome.status === 'success'
        ? report?.coverageProblem
          ? `the harness could not take the coverage database: ${report.coverageProblem}`
          : 'the simulation reported no coverage database (the harness was killed before it could report)'
        : errorText(run.all, runDiags, outcome.message),
    diagnostics,
    log: bounded(run.all),
    ...asserted,
  });
}

/**
 * The end of a run with coverage: the run's failure with the coverage it reached, no coverage of
 * the DUT (the testbench never instantiated it), or success. `coverageFile`: the kept database.
 */
export function classifyCovered(c: Candidate, judged: Judged, ran: HarnessRun, cov: DutCoverage, coverageFile?: string): Ending {
  const { req } = c;
  const { outcome, diagnostics, runDiags } = judged;
  const { run } = ran;
  const rows = summaryRows(cov, req.top);
  const detail = coverageDetail(cov, req.top);
  const cov_info = { summary: rows, detail, runtime_sec: secondsSince(c.t0) };
  // Present only when something fired, so a paper-mode record without DUT assertion failures keeps
  // exactly the fields it always had.
  const asserted = judged.dutAssertions.length ? { dutAssertions: judged.dutAssertions } : {};
  // `legal` scoring (simulator.ts SimRequest.score): the stimulus broke the design's assertions, so
  // the run failed (xrun_failed at stage run, reward 0), with the coverage it reached in the record.
  const illegal = outcome.status === 'success' ? legalFailure(req.score, judged.dutAssertions) : undefined;
  // What the record of a run with coverage of the DUT carries, failed or not.
  const covered = {
    diagnostics,
    coverage: cov.breakdown,
    ...(cov.formal ? { formal: cov.formal } : {}),
    uncovered: cov.uncovered,
    cov_info,
    log: bounded(run.all),
  };
  const points = req.wantPoints ? { points: cov.points } : {};
  if (outcome.status !== 'success' || illegal) {
    return new Ending(illegal ? 'xrun_failed' : outcome.status, 'run', {
      err_msg: illegal ?? errorText(run.all, runDiags, outcome.message),
      ...covered,
      ...points,
      ...asserted,
    });
  }
  if (cov.dutInstances.length === 0 || cov.breakdown.waived.overall === null) {
    return new Ending('imc_report_summary_failed', 'coverage', {
      err_msg: `no coverage points of the DUT '${req.top}' were found: the testbench does not instantiate module '${req.top}'`,
      diagnostics,
      coverage: cov.breakdown,
      cov_info,
      log: bounded(run.all),
    });
  }
  return new Ending('success', 'success', { ...covered, coverageFile, ...points, ...asserted });
}

/** The run outcome for logic that never settled: a DUT error at the looping signal, never the testbench's. */
function combLoopOutcome(warnings: Diagnostic[], unsettled: { region: string; limit: number | null }, retried: string): RunOutcome {
  const loops = loopSignals(warnings);
  const names = loops.map((l) => l.name).join(', ');
  const at = loops[0]?.at;
  const message =
    `the DUT's combinational logic does not settle (Verilator: ${unsettled.region} region did not converge${unsettled.limit ? ` after ${unsettled.limit} tries` : ''})` +
    (names ? `: a combinational loop through ${names}` : '') +
    `. This is the design's problem, not the testbench's; ${retried}. Fix the DUT: a signal computed in always @* or assign must not depend on its own value`;
  return {
    status: 'xrun_failed',
    message,
    diagnostic: {
      file: at?.file ?? '',
      origin: 'dut',
      line: at?.line ?? 1,
      column: at?.column ?? 1,
      endColumn: at?.endColumn,
      severity: 'error',
      code: 'CHORUS-COMBLOOP',
      message,
      stage: 'run',
    },
  };
}

/** A fatal error of the harness report as Verilator prints it (`%Error[-CODE]: file:line: text`). */
export function fatalLine(f: HarnessReport['fatals'][number]): string {
  const code = /^([A-Z]+): /.exec(f.message);
  const text = code ? f.message.slice(code[0].length) : f.message;
  return `%Error${code ? `-${code[1]}` : ''}: ${f.file ? `${f.file}:${f.line}: ` : ''}${text}`;
}

/**
 * Run-time errors the log attributes to a design file are kept as the design's only when the
 * harness recorded an $error/$fatal/assertion or a fatal error at that file and line: a testbench
 * that prints `%Error: dut.sv:2: ...` does not make the design fail. The rest, and every message
 * naming a file outside the testbench and the design, become the testbench's output (the file is
 * quoted in the text, never opened).
 */
export function confirmRunDiagnostics(
  diags: Diagnostic[],
  report: HarnessReport | undefined,
  classify: FileClassifier,
  tbName: string,
): Diagnostic[] {
  const recorded = new Set<string>();
  for (const s of report?.sites ?? []) recorded.add(`${classify(s.file).file}\0${s.line}`);
  for (const f of report?.fatals ?? []) recorded.add(`${classify(f.file).file}\0${f.line}`);
  return diags.map((d) => {
    if (d.origin === 'testbench') return d;
    if (d.origin === 'dut' && (d.severity !== 'error' || recorded.has(`${d.file}\0${d.line}`))) return d;
    return {
      ...d,
      file: tbName,
      origin: 'testbench',
      line: 1,
      column: 1,
      endColumn: undefined,
      message: `printed by the testbench, not reported by the simulator: "${d.file}:${d.line}: ${d.message}"`,
    };
  });
}

/**
 * How the run ended: from the harness report when there is one (a channel the testbench cannot
 * write), else from the exit status of chorus_main.cpp: 0 ok, 1 $error/$stop seen at finish,
 * 3 out of events, 120 out of memory, 124 signal, 125 sim-time limit, 134 $fatal/$stop/fatal error.
 */
export function classifyRun(run: RunResult, limits: SimLimits, report?: HarnessReport): RunOutcome {
  const diag = (code: string, message: string, severity: Diagnostic['severity'] = 'error'): Diagnostic => ({
    file: '',
    origin: 'testbench',
    line: 1,
    column: 1,
    severity,
    code,
    message,
    stage: 'run',
  });
  if (run.spawnError) return { status: 'exception', message: `cannot start the simulation: ${run.spawnError}` };
  if (run.cancelled) return { status: 'exception', message: 'cancelled' };
  // The run directory's cap (jail.ts runDirGuard): the run was killed for it, or broke it.
  if (run.guardStop) return { status: 'xrun_failed', message: run.guardStop, diagnostic: diag('CHORUS-OUTPUT', run.guardStop) };
  const oom = (): RunOutcome => {
    const m = `the simulation ran out of memory (limit ${limits.memoryLimitMb ?? 'none'} MiB of address space)`;
    return { status: 'xrun_failed', message: m, diagnostic: diag('CHORUS-OOM', m) };
  };
  if (report && !run.outputOverflow) {
    switch (report.end) {
      case 'oom':
        return oom();
      case 'terminate':
        return { status: 'xrun_failed', message: 'the simulation ended with an unhandled C++ exception (a fatal run-time error)' };
      case 'stop': {
        const at = report.fatals[0];
        return {
          status: 'xrun_failed',
          message: `the simulation stopped at $fatal/$stop${at?.file ? ` (${basename(at.file)}:${at.line})` : ''}`,
        };
      }
      case 'fatal': {
        const at = report.fatals[0];
        return { status: 'xrun_failed', message: `the simulation hit a fatal run-time error: ${at ? fatalLine(at) : 'unknown'}` };
      }
      default:
        break; // finish, signal, no-events, maxtime, exit: as the exit status says below
    }
  }
  if (run.outputOverflow) {
    const m = `the simulation printed more than ${limits.outputLimitBytes} bytes (the output limit) and was stopped`;
    return { status: 'xrun_failed', message: m, diagnostic: diag('CHORUS-OUTPUT', m) };
  }
  if (run.timedOut || run.exitCode === 124) {
    const m = `the simulation did not finish within ${limits.timeoutS}s of wall-clock time: the testbench must end with $finish (a free-running clock never runs out of events)`;
    return { status: 'timeout', message: m, diagnostic: diag('CHORUS-TIMEOUT', m) };
  }
  if (run.exitCode === 125) {
    const m = `the simulation reached the simulated-time limit of ${limits.simTimeLimitNs} ns without $finish: add $finish after the stimulus`;
    return { status: 'timeout', message: m, diagnostic: diag('CHORUS-SIMTIME', m) };
  }
  if (run.exitCode === 3) {
    // Commercial simulators end a run that has no events left normally; so do we, with a warning.
    const m = 'the simulation ran out of events without $finish; end the stimulus with $finish';
    return { status: 'success', message: m, diagnostic: diag('CHORUS-NOFINISH', m, 'warning') };
  }
  // A signal comes as itself unjailed, as 128 + its number through bwrap.
  const sig = run.signal ?? signalOfExit(run.exitCode);
  if (sig === 'SIGABRT') {
    return { status: 'xrun_failed', message: 'the simulation aborted ($fatal, $stop or a fatal run-time error)' };
  }
  if (sig === 'SIGXFSZ') {
    const m = `the testbench wrote a file larger than the file-size limit of ${limits.outputLimitBytes} bytes (outputLimitBytes) and was stopped`;
    return { status: 'xrun_failed', message: m, diagnostic: diag('CHORUS-OUTPUT', m) };
  }
  if (run.exitCode === 120) return oom();
  // SIGKILL (or 137, how `timeout` and bwrap pass it on) before the time limit, and none of the
  // run's own limits fired (each is handled above): the kernel's OOM killer or an operator killed
  // the process. Not the testbench's doing, so not its result: the caller scores it again.
  if (sig === 'SIGKILL' && run.durationS < limits.timeoutS)
    return {
      status: 'exception',
      message: `the simulation process was killed by SIGKILL from outside the run (the kernel's OOM killer or an operator) after ${run.durationS.toFixed(1)}s: not a result of the testbench; score it again`,
    };
  if (sig === 'SIGSEGV' || sig === 'SIGBUS')
    return {
      status: 'xrun_failed',
      message: `the simulation crashed with ${sig}${limits.memoryLimitMb !== null ? ` (an allocation past the memory limit of ${limits.memoryLimitMb} MiB of address space ends this way too)` : ''}`,
    };
  if (sig) return { status: 'xrun_failed', message: `the simulation was killed by ${sig}` };
  if (run.exitCode === 0 || run.exitCode === 1) return { status: 'success', message: '' };
  return { status: 'xrun_failed', message: `the simulation exited with code ${run.exitCode}` };
}

/** The signal behind an exit status of 128 + N (a shell's or bwrap's way of passing a death by signal on). */
export function signalOfExit(code: number | null): string | null {
  if (code === null || code <= 128 || code >= 128 + 32) return null;
  const n = code - 128;
  return (Object.entries(osConstants.signals).find(([, v]) => v === n)?.[0] as string | undefined) ?? null;
}
