// Pure builders for the Xcelium + IMC flow: one `xrun` (compile, elaborate, simulate with coverage),
// then IMC in batch twice (merge, then report), as the LLM4Cov harness staged it (its statuses
// xrun_failed / imc_merge_failed / imc_report_summary_failed name these three steps).
// Nothing here runs a process or touches the disk, so every flag choice is testable without Cadence.
import path from 'node:path';
import type { SimRequest } from '../simulator.js';

export interface CommandSpec {
  file: string;
  args: string[];
  cwd: string;
}

/** Coverage database layout: <covworkdir>/<covscope>/<covtest>. Fixed names keep paths predictable. */
export const COV_WORK = 'cov_work';
export const COV_SCOPE = 'scope';
export const COV_TEST = 'test';
export const COV_MERGED = 'merged';
export const REPORT_FILE = 'imc_summary.txt';

/** LLM4Cov's `--metrics code toggle block`, with `overall` first so the Overall columns print. */
export const DEFAULT_IMC_METRICS = ['overall', 'code', 'toggle', 'block'] as const;

export function covTestDir(runDir: string): string {
  return path.join(path.resolve(runDir), COV_WORK, COV_SCOPE, COV_TEST);
}
export function covMergedDir(runDir: string): string {
  return path.join(path.resolve(runDir), COV_WORK, COV_SCOPE, COV_MERGED);
}

/** Strip comments so names inside them are not mistaken for code. Keeps line structure. */
function stripComments(src: string): string {
  return src.replace(/\/\*[\s\S]*?\*\//g, (c) => c.replace(/[^\n]/g, ' ')).replace(/\/\/[^\n]*/g, '');
}

/** The first module the testbench declares: its top, by the protocol's one-module convention. */
export function findTbTop(tbText: string): string | null {
  const m = /\bmodule\s+(?:automatic\s+|static\s+)?([A-Za-z_][\w$]*)/.exec(stripComments(tbText));
  return m ? m[1]! : null;
}

/** Instance names of `dutModule` in the testbench (`counter #(.W(8)) dut (...)` -> `dut`). */
export function findDutInstances(tbText: string, dutModule: string): string[] {
  const esc = dutModule.replace(/[$]/g, '\\$');
  const re = new RegExp(
    `(?:^|[^\\w$.])${esc}(?![\\w$])\\s*(?:#\\s*\\([\\s\\S]*?\\)\\s*)?([A-Za-z_][\\w$]*)\\s*(?:\\[[^\\]]*\\]\\s*)?\\(`,
    'g',
  );
  const out: string[] = [];
  for (const m of stripComments(tbText).matchAll(re)) {
    const name = m[1]!;
    if (name !== 'module' && !out.includes(name)) out.push(name);
  }
  return out;
}

export interface XrunOptions {
  /** Executable (default `xrun` from PATH). */
  xrun?: string;
  /** Testbench file name, relative to runDir (the backend writes it there). */
  tbFile: string;
  /** Testbench top module; passed as `-top` when known. */
  tbTop: string | null;
  /** DUT instance names inside the testbench, for hierarchical `-defparam`. */
  dutInstances: string[];
  /** `-coverage` selection; LLM4Cov used `all` (`--cov_type all`). */
  coverage?: string;
  /** Default timescale for files without a `timescale directive. */
  timescale?: string;
  /** Simulator TCL input file (see simRunTcl), relative to runDir; null to let xrun run to $finish. */
  inputTcl?: string | null;
}

export function xrunCommand(req: SimRequest, runDir: string, o: XrunOptions): CommandSpec {
  const cwd = path.resolve(runDir);
  const args: string[] = [
    // Parse every file as SystemVerilog: generated testbenches are SV, and `.v` DUT files often
    // use SV constructs that Verilog-2001 mode rejects.
    '-sv',
    // Modules without a `timescale would otherwise inherit none and fail elaboration (TSNSPC)
    // when mixed with modules that have one.
    '-timescale',
    o.timescale ?? '1ns/1ps',
    // Instrument the design for coverage at elaboration; `all` = block, expression, FSM, toggle,
    // functional and assertion, matching LLM4Cov's collection.
    '-coverage',
    o.coverage ?? 'all',
    // Instrument only the DUT subtree, so the testbench's own code does not dilute the figure.
    '-covdut',
    req.top,
    // Fixed database location <covworkdir>/<scope>/<test>, so IMC knows where to look; absolute
    // because IMC resolves a relative run path against its own cov_work/ default.
    '-covworkdir',
    path.join(cwd, COV_WORK),
    '-covscope',
    COV_SCOPE,
    '-covtest',
    COV_TEST,
    // A fresh scratch dir has nothing to keep; without this a rerun in a kept dir stops with an
    // "already exists" error.
    '-covoverwrite',
    // Keep the whole transcript in the run dir too (stdout is captured and bounded separately).
    '-l',
    'xrun.log',
  ];
  // Without -top, xrun elaborates every uninstantiated module as a top (helper modules in the DUT
  // files included), which changes the hierarchy IMC reports.
  if (o.tbTop) args.push('-top', o.tbTop);
  if (req.seed !== undefined) args.push('-svseed', String(req.seed));
  if (o.inputTcl) args.push('-input', o.inputTcl);
  const d = req.design;
  for (const dir of d.includeDirs) args.push(`+incdir+${dir}`);
  for (const [name, value] of Object.entries(d.defines)) {
    args.push(value === null ? `+define+${name}` : `+define+${name}=${value}`);
  }
  // DUT parameters: xrun's -defparam takes a hierarchical path, and the DUT sits below the
  // testbench top, so the override needs <tbTop>.<instance>.<param> for each DUT instance. When
  // the instance cannot be found the override is dropped (backend reports it as a warning).
  if (o.tbTop) {
    for (const inst of o.dutInstances) {
      for (const [name, value] of Object.entries(d.params)) args.push('-defparam', `${o.tbTop}.${inst}.${name}=${value}`);
    }
  }
  // Library files: modules compiled only when referenced.
  for (const lib of d.libraryFiles) args.push('-v', lib);
  args.push(...d.files, o.tbFile);
  return { file: o.xrun ?? 'xrun', args, cwd };
}

/** Parameters that could not be applied (no testbench top or no DUT instance found). */
export function droppedParams(req: SimRequest, o: Pick<XrunOptions, 'tbTop' | 'dutInstances'>): string[] {
  const names = Object.keys(req.design.params);
  return names.length > 0 && (!o.tbTop || o.dutInstances.length === 0) ? names : [];
}

/**
 * xmsim input that bounds simulated time: run at most `ns`, then exit (exit still writes the
 * coverage data). A testbench that calls $finish earlier ends the run there. null: no bound.
 */
export function simRunTcl(simTimeLimitNs: number | null): string | null {
  if (simTimeLimitNs === null || !(simTimeLimitNs > 0)) return null;
  return `run ${BigInt(Math.ceil(simTimeLimitNs)).toString()} ns\nexit\n`;
}

/** TCL paths go in braces so spaces and brackets in a temp path are taken literally. */
const tclPath = (p: string): string => `{${p}}`;

/**
 * IMC script 1: merge the single test into `merged`. A one-run merge is a copy, but keeping the
 * step gives the same failure point (imc_merge_failed) LLM4Cov reported.
 */
export function imcMergeScript(runDir: string): string {
  return [`merge ${tclPath(covTestDir(runDir))} -out ${tclPath(covMergedDir(runDir))} -overwrite`, 'exit', ''].join('\n');
}

export interface ImcReportOptions {
  /** IMC metric names; joined with ':' as IMC's -metrics expects. */
  metrics?: readonly string[];
  /** Output file; default <runDir>/imc_summary.txt. */
  outFile?: string;
}

/**
 * IMC script 2: load the merged run and write the text summary table. The report is not narrowed
 * with -inst: the legacy `report -inst X` scores X alone, not its subtree; the database is already
 * restricted to the DUT by xrun's -covdut. `-all` lists every instance (not only the uncovered
 * ones) and `-text` asks for the plain table, both as the CVDP harness invokes it.
 */
export function imcReportScript(runDir: string, o: ImcReportOptions = {}): string {
  const metrics = (o.metrics ?? DEFAULT_IMC_METRICS).join(':');
  const out = o.outFile ?? path.join(path.resolve(runDir), REPORT_FILE);
  return [`load -run ${tclPath(covMergedDir(runDir))}`, `report -metrics ${metrics} -all -text -out ${tclPath(out)}`, 'exit', ''].join(
    '\n',
  );
}

/**
 * `imc -exec <script>`: batch mode that runs the script and exits. Not `-batch` as well: the two
 * are mutually exclusive and IMC then prints its usage and exits 0, which looks like success.
 */
export function imcCommand(scriptFile: string, runDir: string, imc = 'imc'): CommandSpec {
  const cwd = path.resolve(runDir);
  return { file: imc, args: ['-exec', path.resolve(cwd, scriptFile)], cwd };
}
