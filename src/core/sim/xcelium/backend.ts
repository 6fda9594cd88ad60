// Cadence Xcelium + IMC backend: the reference flow of the published LLM4Cov/CHORUS harness.
// xrun compiles, elaborates and simulates with coverage in one process; IMC merges the run and
// writes the per-instance summary table; the DUT row's Overall Average is the coverage c.
// It cannot run without a Cadence install, so every command and parser lives in pure functions
// (commands.ts, imcReport.ts, parseXrunDiagnostics below) that are tested on text fixtures.
import { access, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { constants as fsc } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runBounded, type RunResult } from '../../util/proc.js';
import type { SimRequest, Simulator, SimulatorInfo } from '../simulator.js';
import type { SimLimits } from '../../vocabulary/types.js';
import { DEFAULT_LIMITS } from '../../vocabulary/defaults.js';
import { rewardFor, safeResult, type CovSummaryRow, type Diagnostic, type SimResult, type SimStage, type SimStatus } from '../result.js';
import { dutRow, parseImcReport } from './imcReport.js';
import {
  covMergedDir,
  covTestDir,
  droppedParams,
  findDutInstances,
  findTbTop,
  imcCommand,
  imcMergeScript,
  imcReportScript,
  REPORT_FILE,
  simRunTcl,
  xrunCommand,
  type CommandSpec,
  type XrunOptions,
} from './commands.js';

/** Where the tools come from, said in every "not found" message. */
export const TOOL_HINT =
  'Add the Xcelium install\'s bin directory (e.g. "$XCELIUM_HOME/tools/bin", which holds xrun and imc) to PATH, ' +
  'or set CHORUS_XRUN and CHORUS_IMC to the executables; licensing comes from CDS_LIC_FILE or LM_LICENSE_FILE.';

export interface XceliumOptions {
  /** xrun executable; default $CHORUS_XRUN, else `xrun` on PATH. */
  xrun?: string;
  /** imc executable; default $CHORUS_IMC, else `imc` on PATH. */
  imc?: string;
  /** IMC metrics; default overall, code, toggle, block (LLM4Cov's `--metrics code toggle block`). */
  metrics?: string[];
  /** xrun `-coverage` selection; default `all`. */
  coverage?: string;
  /** Default timescale; default `1ns/1ps`. */
  timescale?: string;
  /** Wall-clock limit for each IMC step, seconds; default 300. */
  imcTimeoutS?: number;
}

// --- xrun diagnostics -------------------------------------------------------------------------

// `xmvlog: *E,CODE (file,line|col): message`, `xmelab: *E,CODE: message`, `xmsim: *W,CODE (file,line): ...`
// The column after `|` is 0-based (the caret xrun draws sits under that character).
const DIAG = /^\s*(xm\w+|xrun|nc\w+|irun)(?:\(64\))?:\s*\*([EWFN]),([A-Za-z0-9_]+)(?:\s*\((.+?),(\d+)(?:\|(\d+))?\))?\s*:?\s*(.*)$/;
/** Benign notices that are not faults of the testbench. */
const BENIGN = new Set(['RNQUIE']);

function sameFile(reported: string, candidate: string): boolean {
  const a = reported.replace(/\\/g, '/').replace(/^\.\//, '');
  const b = candidate.replace(/\\/g, '/');
  return a === b || b.endsWith(`/${a}`) || path.posix.basename(a) === path.posix.basename(b);
}

/**
 * xrun output -> diagnostics. `tbName` is the testbench's name as the user knows it; `dutFiles`
 * the DUT sources (absolute). Messages without a position get file '' and line/column 1.
 */
export function parseXrunDiagnostics(log: string, tbName: string, dutFiles: string[] = []): Diagnostic[] {
  const lines = log.split(/\r\n|\r|\n/);
  const out: Diagnostic[] = [];
  const tbBase = path.posix.basename(tbName.replace(/\\/g, '/'));
  lines.forEach((line, i) => {
    const m = DIAG.exec(line);
    if (!m) return;
    const [, tool = '', sev = 'E', code = '', file, lineNo, col, rest = ''] = m;
    if (BENIGN.has(code)) return;
    let message = rest.trim();
    let time: string | undefined;
    const t = /^\(time\s+([^)]*)\)\s*/i.exec(message);
    if (t) {
      time = t[1]!.trim();
      message = message.slice(t[0].length).trim();
    }
    // Run-time fatals print the user's text on the next line (`*F,FATSEV (f,7): (time 1 NS).`).
    if ((message === '' || message === '.') && lines[i + 1] !== undefined && !DIAG.test(lines[i + 1]!)) {
      message = lines[i + 1]!.trim() || message;
    }
    let origin: Diagnostic['origin'] = 'other';
    let shown = file ?? '';
    if (file !== undefined) {
      if (path.posix.basename(file.replace(/\\/g, '/')) === tbBase) {
        origin = 'testbench';
        shown = tbName;
      } else {
        const dut = dutFiles.find((f) => sameFile(file, f));
        if (dut) {
          origin = 'dut';
          shown = dut;
        }
      }
    }
    const d: Diagnostic = {
      file: shown,
      origin,
      line: lineNo !== undefined ? Number(lineNo) : 1,
      column: col !== undefined ? Number(col) + 1 : 1,
      severity: sev === 'W' ? 'warning' : sev === 'N' ? 'info' : 'error',
      code,
      message,
      stage: /^(xmsim|ncsim)$/.test(tool) ? 'run' : 'build',
    };
    if (time !== undefined) d.time = time;
    out.push(d);
  });
  // xrun's own roll-ups ("xrun: *E,VLGERR: An error occurred during parsing") repeat what the
  // tool errors already say; keep them only when they are all there is.
  const specific = out.some((d) => d.severity === 'error' && d.file !== '');
  return specific ? out.filter((d) => !(d.file === '' && d.severity === 'error' && /^[A-Z]+ERR$/.test(d.code ?? ''))) : out;
}

/** `TOOL:   xrun(64)   24.03-s007` or the banner `xrun(64): 24.03-s007: (c) Copyright ...`. */
export function parseXrunVersion(text: string): string | null {
  const m = /^TOOL:\s*xrun\S*\s+(\d[\w.-]*)/m.exec(text) ?? /^xrun(?:\(64\))?:\s*(\d[\w.-]*)\s*:/m.exec(text);
  return m ? m[1]! : null;
}

/** The error lines of a log with the source echo and caret xrun prints above each, bounded. */
export function errorExcerpt(log: string, maxChars = 8000): string {
  const lines = log.split(/\r\n|\r|\n/);
  const keep = new Set<number>();
  lines.forEach((l, i) => {
    if (!/\*[EF],/.test(l)) return;
    if (i >= 2 && /^\s*\|\s*$/.test(lines[i - 1]!)) keep.add(i - 2).add(i - 1);
    keep.add(i);
    // A fatal's message can sit on the next line.
    if (/\*F,/.test(l) && lines[i + 1] !== undefined) keep.add(i + 1);
  });
  const text =
    keep.size > 0
      ? [...keep]
          .sort((a, b) => a - b)
          .map((i) => lines[i])
          .join('\n')
      : log.trim().slice(-4000);
  return text.length > maxChars ? text.slice(0, maxChars) + '\n...' : text;
}

// --- backend -----------------------------------------------------------------------------------

async function isExecutable(p: string): Promise<boolean> {
  try {
    await access(p, fsc.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The executable's path if `cmd` resolves (a path, or a name on PATH), else null. */
export async function findExecutable(cmd: string, envPath = process.env.PATH ?? ''): Promise<string | null> {
  if (cmd.includes('/') || cmd.includes('\\')) return (await isExecutable(cmd)) ? cmd : null;
  for (const dir of envPath.split(path.delimiter)) {
    if (dir && (await isExecutable(path.join(dir, cmd)))) return path.join(dir, cmd);
  }
  return null;
}

/** Keep only the last path component, and something xrun will parse as a source file. */
function safeTbFile(name: string): string {
  const base = path.posix.basename(name.replace(/\\/g, '/'));
  return /^[\w.-]+\.(sv|v|svh|vh)$/i.test(base) ? base : 'tb.sv';
}

const simStarted = (log: string): boolean => /Loading snapshot|^\s*xcelium>|^\s*xmsim:/m.test(log);

export class XceliumSimulator implements Simulator {
  readonly name = 'xcelium';
  private readonly xrun: string;
  private readonly imc: string;
  private version: string | null = null;

  constructor(private readonly opts: XceliumOptions = {}) {
    this.xrun = opts.xrun ?? process.env.CHORUS_XRUN ?? 'xrun';
    this.imc = opts.imc ?? process.env.CHORUS_IMC ?? 'imc';
  }

  async info(): Promise<SimulatorInfo> {
    const r = await runBounded(this.xrun, ['-version'], { timeoutS: 60, outputLimitBytes: 1 << 20 });
    if (r.spawnError) throw new Error(`Cannot start xrun ('${this.xrun}': ${r.spawnError}). ${TOOL_HINT}`);
    if (r.exitCode !== 0) {
      throw new Error(
        `'${this.xrun} -version' failed (exit ${r.exitCode ?? r.signal}): ${r.all.trim().slice(-500)}. ` +
          'Check the Xcelium install and its license (CDS_LIC_FILE / LM_LICENSE_FILE).',
      );
    }
    if (!(await findExecutable(this.imc))) throw new Error(`imc ('${this.imc}') was not found. ${TOOL_HINT}`);
    this.version = parseXrunVersion(r.all) ?? r.all.trim().split('\n')[0] ?? 'unknown';
    return { name: this.name, version: this.version };
  }

  async simulate(req: SimRequest): Promise<SimResult> {
    const t0 = performance.now();
    const limits: SimLimits = { ...DEFAULT_LIMITS, ...req.limits };
    const x: XRun = {
      req,
      limits,
      t0,
      tbTop: findTbTop(req.testbench.content),
      dutInstances: findDutInstances(req.testbench.content, req.top),
      timings: { total: 0 },
      diagnostics: [],
      dir: null,
      log: '',
      version: this.version,
    };
    try {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'chorus-xcelium-'));
      x.dir = dir;
      const plan = await prepareRun(x, dir);
      const failed = (await this.xrunStep(x, dir, plan)) ?? (await this.imcMerge(x, dir));
      if (failed) return failed;
      return await this.imcReport(x, dir);
    } catch (e) {
      return this.finish(x, 'exception', 'build', { returncode: -1, err_msg: e instanceof Error ? e.message : String(e) });
    } finally {
      if (x.dir && !req.keepRunDir) await rm(x.dir, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  /** The run's SimResult: its status and stage, what the steps so far recorded, the protections said. */
  private finish(x: XRun, status: SimStatus, stage: SimStage, extra: Outcome = {}): SimResult {
    const { req, limits, timings, dir } = x;
    timings.total = (performance.now() - x.t0) / 1000;
    const ok = status === 'success';
    // What xrun, IMC and the testbench printed is data: no control character or escape sequence leaves here.
    return safeResult({
      returncode: extra.returncode ?? (ok ? 0 : 1),
      status,
      err_msg: extra.err_msg ?? '',
      cov_info: extra.summary ? { summary: extra.summary, detail: extra.detail ?? '', runtime_sec: timings.total } : null,
      reward: rewardFor(status, extra.overall ?? null),
      stage,
      // IMC's summary has no per-point list, so there is no breakdown or uncovered list here.
      coverage: null,
      uncovered: [],
      diagnostics: x.diagnostics,
      timings,
      simulator: { name: this.name, version: x.version ?? 'unknown' },
      protection: {
        scratchDir: dir,
        staticCheck: false,
        jail: 'none',
        reads: 'none',
        jailReason: 'xrun and imc run directly on the host: they need the Cadence install tree and license server',
        wallClockLimitS: limits.buildTimeoutS + limits.timeoutS,
        simTimeLimitNs: limits.simTimeLimitNs,
        outputLimitBytes: limits.outputLimitBytes,
        memoryLimitMb: null,
      },
      tbTop: x.tbTop,
      dutTop: req.top,
      log: x.log,
      ...(req.keepRunDir && dir && ok ? { coverageFile: covMergedDir(dir) } : {}),
    });
  }

  /** xrun: compile + elaborate + simulate. The failed run's result, or null when it went through. */
  private async xrunStep(x: XRun, dir: string, plan: RunPlan): Promise<SimResult | null> {
    const { req, limits, diagnostics } = x;
    const xr = await runStep(
      xrunCommand(req, dir, { ...plan, xrun: this.xrun, coverage: this.opts.coverage, timescale: this.opts.timescale }),
      limits.buildTimeoutS + limits.timeoutS,
      x,
    );
    x.timings.run = xr.durationS;
    x.log = xr.all;
    x.version ??= parseXrunVersion(xr.all);
    diagnostics.push(...parseXrunDiagnostics(xr.all, req.testbench.name, req.design.files));
    const xStage: SimStage = diagnostics.some((d) => d.severity === 'error' && d.stage === 'run') || simStarted(xr.all) ? 'run' : 'build';
    if (xr.spawnError)
      return this.finish(x, 'exception', 'build', {
        returncode: -1,
        err_msg: `Cannot start xrun ('${this.xrun}': ${xr.spawnError}). ${TOOL_HINT}`,
      });
    if (xr.cancelled) return this.finish(x, 'exception', xStage, { returncode: -1, err_msg: 'cancelled' });
    if (xr.timedOut) {
      return this.finish(x, 'timeout', xStage, {
        returncode: -1,
        err_msg: `xrun exceeded the wall-clock limit of ${limits.buildTimeoutS + limits.timeoutS}s\n${errorExcerpt(xr.all)}`,
      });
    }
    if (xr.outputOverflow) {
      return this.finish(x, 'xrun_failed', xStage, {
        returncode: -1,
        err_msg: `xrun output exceeded ${limits.outputLimitBytes} bytes and was stopped`,
      });
    }
    if (xr.exitCode !== 0) {
      const stage = diagnostics.some((d) => d.severity === 'error' && d.stage === 'build') ? 'build' : xStage;
      return this.finish(x, 'xrun_failed', stage, { returncode: xr.exitCode ?? -1, err_msg: errorExcerpt(xr.all) });
    }
    return null;
  }

  /** IMC step 1: merge (also catches "the simulation wrote no coverage"). The failed step's
   * result, or null when it went through. */
  private async imcMerge(x: XRun, dir: string): Promise<SimResult | null> {
    if (!(await exists(covTestDir(dir)))) {
      return this.finish(x, 'imc_merge_failed', 'coverage', { err_msg: `xrun wrote no coverage database at ${covTestDir(dir)}` });
    }
    await writeFile(path.join(dir, 'imc_merge.tcl'), imcMergeScript(dir));
    const mg = await runStep(imcCommand('imc_merge.tcl', dir, this.imc), this.opts.imcTimeoutS ?? 300, x);
    x.timings.coverage = mg.durationS;
    if (mg.cancelled) return this.finish(x, 'exception', 'coverage', { returncode: -1, err_msg: 'cancelled' });
    if (mg.spawnError)
      return this.finish(x, 'exception', 'coverage', {
        returncode: -1,
        err_msg: `Cannot start imc ('${this.imc}': ${mg.spawnError}). ${TOOL_HINT}`,
      });
    const mgFail = imcFailure(mg);
    if (mgFail) return this.finish(x, 'imc_merge_failed', 'coverage', { returncode: mg.exitCode ?? -1, err_msg: mgFail });
    return null;
  }

  /** IMC step 2: the summary report, and the DUT row's Overall Average as the coverage. */
  private async imcReport(x: XRun, dir: string): Promise<SimResult> {
    const { req } = x;
    const reportFile = path.join(dir, REPORT_FILE);
    // A report file the testbench wrote during the run must not stand in for IMC's.
    await rm(reportFile, { recursive: true, force: true });
    await writeFile(path.join(dir, 'imc_report.tcl'), imcReportScript(dir, { metrics: this.opts.metrics, outFile: reportFile }));
    const rp = await runStep(imcCommand('imc_report.tcl', dir, this.imc), this.opts.imcTimeoutS ?? 300, x);
    x.timings.coverage = (x.timings.coverage ?? 0) + rp.durationS;
    if (rp.cancelled) return this.finish(x, 'exception', 'coverage', { returncode: -1, err_msg: 'cancelled' });
    if (rp.spawnError)
      return this.finish(x, 'exception', 'coverage', {
        returncode: -1,
        err_msg: `Cannot start imc ('${this.imc}': ${rp.spawnError}). ${TOOL_HINT}`,
      });
    const report = await readFile(reportFile, 'utf8').catch(() => null);
    const rpFail = imcFailure(rp) ?? (report === null ? `IMC wrote no report at ${reportFile}` : null);
    if (rpFail || report === null) {
      return this.finish(x, 'imc_report_summary_failed', 'coverage', { returncode: rp.exitCode || 1, err_msg: rpFail ?? '' });
    }
    const rows = parseImcReport(report);
    const dut = dutRow(rows, req.top, x.dutInstances[0]);
    if (!dut) {
      return this.finish(x, 'imc_report_summary_failed', 'coverage', {
        err_msg: `no row for DUT '${req.top}' in the IMC summary (${rows.length} rows parsed)`,
        summary: rows,
        detail: report,
      });
    }
    return this.finish(x, 'success', 'success', { summary: rows, detail: report, overall: dut['Overall Average'] });
  }
}

/** One simulate() call under way: what its result reports, filled in as the steps go. */
interface XRun {
  req: SimRequest;
  limits: SimLimits;
  /** When the call began (performance.now()). */
  t0: number;
  tbTop: string | null;
  dutInstances: string[];
  timings: SimResult['timings'];
  diagnostics: Diagnostic[];
  /** The scratch directory, once made. */
  dir: string | null;
  /** xrun's output. */
  log: string;
  /** The xrun version: info()'s, else read from xrun's banner. */
  version: string | null;
}

/** What a step adds to the result beside its status and stage. */
type Outcome = { returncode?: number; err_msg?: string; summary?: CovSummaryRow[]; detail?: string; overall?: number | null };

/** What xrunCommand() needs beside the request: the files prepareRun() wrote and the tops found. */
type RunPlan = Pick<XrunOptions, 'tbFile' | 'tbTop' | 'dutInstances' | 'inputTcl'>;

/** A tool run under the call's output limit and cancel signal. */
function runStep(spec: CommandSpec, timeoutS: number, x: XRun): Promise<RunResult> {
  return runBounded(spec.file, spec.args, {
    cwd: spec.cwd,
    timeoutS,
    outputLimitBytes: x.limits.outputLimitBytes,
    signal: x.req.signal,
  });
}

/** Writes the testbench and the simulation's TCL into `dir`, and warns of what this backend
 * leaves out (parameter overrides it cannot place, waivers). */
async function prepareRun(x: XRun, dir: string): Promise<RunPlan> {
  const { req, limits, diagnostics } = x;
  const tbFile = safeTbFile(req.testbench.name);
  await writeFile(path.join(dir, tbFile), req.testbench.content);
  const tcl = simRunTcl(limits.simTimeLimitNs);
  if (tcl) await writeFile(path.join(dir, 'run.tcl'), tcl);
  const plan = { tbFile, tbTop: x.tbTop, dutInstances: x.dutInstances, inputTcl: tcl ? 'run.tcl' : null };
  const dropped = droppedParams(req, plan);
  if (dropped.length > 0) {
    diagnostics.push(
      warning(
        req.testbench.name,
        'CHORUS-PARAM',
        `parameter override(s) ${dropped.join(', ')} not applied: no instance of '${req.top}' found in the testbench`,
      ),
    );
  }
  if ((req.waivers?.length ?? 0) > 0) {
    diagnostics.push(
      warning(
        '',
        'CHORUS-WAIVERS',
        'waivers are not applied by the xcelium backend (IMC reports no per-point list); use an IMC refinement file',
      ),
    );
  }
  return plan;
}

function warning(file: string, code: string, message: string): Diagnostic {
  return { file, origin: file ? 'testbench' : 'other', line: 1, column: 1, severity: 'warning', code, message, stage: 'check' };
}

async function exists(p: string): Promise<boolean> {
  try {
    await access(p);
    return true;
  } catch {
    return false;
  }
}

/** IMC may exit 0 after a failed TCL command, so its error lines count as failure too. */
function imcFailure(r: RunResult): string | null {
  if (r.timedOut) return `imc exceeded its time limit\n${errorExcerpt(r.all)}`;
  if (r.exitCode !== 0 || /\*[EF],/.test(r.all)) return errorExcerpt(r.all) || `imc exited with ${r.exitCode ?? r.signal}`;
  return null;
}
