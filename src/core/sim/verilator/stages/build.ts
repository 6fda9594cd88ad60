// Stage "build": the checked candidate becomes an executable. Verilator's front end (lint,
// elaboration, C++ generation in one pass) then a C++ compile against the cached runtime and its
// precompiled header, and the link. Two build modes: flat (DUT and testbench verilated together)
// or against the cached DUT library (dutLibrary.ts: only the testbench and the DUT wrapper are
// verilated), chosen per candidate; any front-end error in library mode (hierarchical references
// into the DUT, parameter overrides...) retries flat, which gives the real messages. Every step
// runs through prepare.ts's tool runner: jailed, memory-capped, its messages stripped of any file
// that is not the testbench's, the design's or the toolchain's.
import { existsSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { SimRequest } from '../../simulator.js';
import type { SimLimits } from '../../../vocabulary/types.js';
import type { Diagnostic, SimResult } from '../../result.js';
import type { RunResult } from '../../../util/proc.js';
import { assetPath } from '../../../util/assets.js';
import { killedFromOutside, killedMessage, outOfMemoryDiagnostic, ranOutOfMemory, SCRATCH_LIMIT_BYTES } from '../../jail.js';
import {
  cxxToolProblem,
  isNoise,
  parseVerilatorMessages,
  toolCrash,
  toolProblem,
  withholdForeignSource,
  type FileClassifier,
} from '../diagnostics.js';
import { dutLibrary, type DutLibrary } from '../dutLibrary.js';
import {
  CXX_CANDIDATE_OPT,
  CXX_COMMON,
  CXX_DEFINES,
  includeFlags,
  linkerFlags,
  readClassLists,
  type RuntimeBuild,
  type Toolchain,
} from '../toolchain.js';
import { bounded, type Candidate, crashEnding, Ending, errorText, secondsSince, toolchainMessage } from './candidate.js';
import type { Prepared, ToolOptions } from './prepare.js';

/**
 * Reusing the compiled DUT pays off when compiling it is expensive; for small DUTs the DPI glue
 * of the library wrapper costs as much as it saves (measured: counter 1.31 s library vs 1.24 s
 * flat; a 16-instance DUT 4-5 s vs 22-29 s). CHORUS_DUT_LIBRARY_MIN_S overrides.
 * Read at each decision (not at load), so a caller or a test can set it for one run.
 */
const dutLibraryMinSeconds = (): number => Number(process.env.CHORUS_DUT_LIBRARY_MIN_S ?? 2);
/** Above this much generated C++, compile in two translation units in parallel. */
const SPLIT_BYTES = 400 * 1024;

/** The front end's pass: the mode it built in (with the reason when not the library), its result. */
export interface FrontEnd {
  lib?: DutLibrary;
  build: NonNullable<SimResult['build']>;
  result: RunResult;
}

/**
 * Verilates the candidate into obj/. `mode`: the request's build mode, 'flat' when the check found
 * that the library build would read the testbench differently. A retry always builds flat.
 */
export async function verilate(
  c: Candidate,
  tc: Toolchain,
  runtime: RuntimeBuild,
  prep: Prepared,
  mode: SimRequest['build'],
): Promise<FrontEnd> {
  const { req, retry, limits } = c;
  const { runDir, tbPath, flatSources, tool, buildArgs, files } = prep;
  const ts = performance.now();
  let lib: DutLibrary | undefined;
  let fallbackReason: string | undefined;
  if (mode !== 'flat' && !retry) {
    const got = await dutLibrary(tc, runtime, req.design, req.top, {
      timeoutS: limits.buildTimeoutS,
      signal: req.signal,
      jail: c.jail,
      view: c.view,
      memoryLimitMb: limits.buildMemoryLimitMb,
      quotable: files.ownOrToolchain,
    });
    if (!got.ok) fallbackReason = got.reason;
    else if (mode === 'dut-library' || got.lib.compileSeconds >= dutLibraryMinSeconds()) lib = got.lib;
    else
      fallbackReason = `the DUT compiles in ${got.lib.compileSeconds.toFixed(2)}s: below ${dutLibraryMinSeconds()}s the flat build is as fast`;
  }
  const pass = async (sources: string[], withLibraries: boolean): Promise<RunResult> => {
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
    const own = (t: string): string => withholdForeignSource(t, files.ownOrToolchain);
    return { ...r, all: own(r.all), stdout: own(r.stdout), stderr: own(r.stderr) };
  };
  let v: RunResult | undefined;
  if (lib) {
    v = await pass([lib.wrapper, tbPath], false);
    if (v.exitCode !== 0 && !v.cancelled) {
      fallbackReason = 'the testbench needs the flat build (it reaches into the DUT or overrides its parameters)';
      rmSync(join(runDir, 'obj'), { recursive: true, force: true });
      lib = undefined;
      v = undefined;
    }
  }
  v ??= await pass(flatSources, true);
  c.timings.lint = secondsSince(ts);
  return { lib, build: lib ? { mode: 'dut-library' } : { mode: 'flat', fallbackReason }, result: v };
}

/**
 * The front end's result as the candidate's lint result: an Ending when it failed (the tool's own
 * problems are `exception`, never the candidate's fault), else the warnings every later result
 * carries.
 */
export function lintResult(c: Candidate, tc: Toolchain, front: FrontEnd, classify: FileClassifier): Ending | Diagnostic[] {
  const { req, limits, tbName } = c;
  const v = front.result;
  const lintDiags = parseVerilatorMessages(v.all, classify, 'lint').filter((d) => !isNoise(d));
  if (v.cancelled) return new Ending('exception', 'lint', { err_msg: 'cancelled', diagnostics: lintDiags });
  if (v.timedOut)
    return new Ending('timeout', 'lint', { err_msg: `Verilator did not finish within ${limits.buildTimeoutS}s`, diagnostics: lintDiags });
  if (v.exitCode !== 0) {
    if (killedFromOutside(v))
      return new Ending('exception', 'lint', { err_msg: killedMessage("Verilator's front end"), log: bounded(v.all) });
    if (ranOutOfMemory(v)) {
      const d = outOfMemoryDiagnostic("Verilator's front end", limits.buildMemoryLimitMb, tbName, 'lint');
      const rest = lintDiags.filter((x) => x.severity !== 'error');
      return new Ending('xrun_failed', 'lint', { err_msg: d.message, diagnostics: [...rest, d], log: bounded(v.all) });
    }
    const crash = toolCrash(v, "Verilator's front end");
    if (crash) return crashEnding(c, crash, 'lint', v.all);
    // An option this Verilator refuses, or its own files missing: the tool's problem.
    const tool = toolProblem(v.all);
    if (tool) return new Ending('exception', 'lint', { err_msg: toolchainMessage(tc, tool), returncode: 2, log: bounded(v.all) });
    return new Ending('xrun_failed', 'lint', { err_msg: errorText(v.all, lintDiags), diagnostics: lintDiags, log: bounded(v.all) });
  }
  const warnings = lintDiags;
  const overrides = Object.entries(req.design.params);
  if (!front.lib && overrides.length) {
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
  return warnings;
}

/**
 * C++ compile of the verilated model against the prebuilt runtime and precompiled header, then
 * the link into runDir/Vtb. An Ending when it failed, undefined when Vtb was built.
 */
export async function compileModel(
  c: Candidate,
  tc: Toolchain,
  runtime: RuntimeBuild,
  prep: Prepared,
  lib: DutLibrary | undefined,
  warnings: Diagnostic[],
): Promise<Ending | undefined> {
  const { limits, tbName } = c;
  const ts = performance.now();
  const cxxDirs = [runtime.dir, assetPath('chorus_model.cpp', 'sim/verilator'), ...(lib ? [lib.dir] : [])];
  const built = await cxxBuild(tc, runtime, prep.runDir, c.prefix, limits, lib ? [lib.object] : [], (file, args, opts) =>
    prep.tool('c++', file, args, opts, cxxDirs),
  );
  // g++ quotes the line of any file it reads: a design's `$c("#include ...")` of a host file must
  // not bring that file's text back (paths relative to obj/, where g++ runs).
  const obj = join(prep.runDir, 'obj');
  const build = { ...built, all: withholdForeignSource(built.all, (f) => prep.files.ownOrToolchain(resolve(obj, f)), { cxx: true }) };
  c.timings.build = secondsSince(ts);
  if (build.cancelled) return new Ending('exception', 'build', { err_msg: 'cancelled', diagnostics: warnings });
  if (build.timedOut)
    return new Ending('timeout', 'build', {
      err_msg: `the C++ build did not finish within ${limits.buildTimeoutS}s`,
      diagnostics: warnings,
    });
  if (build.exitCode !== 0) {
    if (killedFromOutside(build))
      return new Ending('exception', 'build', { err_msg: killedMessage('the C++ compile'), log: bounded(build.all) });
    if (ranOutOfMemory(build)) {
      const d = outOfMemoryDiagnostic('the C++ compile', limits.buildMemoryLimitMb, tbName, 'build');
      return new Ending('xrun_failed', 'build', { err_msg: d.message, diagnostics: [...warnings, d], log: bounded(build.all) });
    }
    const crash = toolCrash(build, 'the C++ compiler');
    if (crash) return crashEnding(c, crash, 'build', build.all);
    const tool = cxxToolProblem(build.all);
    if (tool)
      return new Ending('exception', 'build', { err_msg: toolchainMessage(tc, tool, true), returncode: 2, log: bounded(build.all) });
    // The jail's private /tmp is capped (jail.ts SCRATCH_LIMIT_BYTES): g++'s temporary files for a
    // huge model run out of it, and the limit is named, not left as a bare ENOSPC.
    const scratch =
      c.jail.tmpfsSize && /No space left on device/.test(build.all)
        ? ` (the compile's scratch space, /tmp in the jail, is limited to ${SCRATCH_LIMIT_BYTES / (1024 * 1024)} MiB: the testbench makes the model too large)`
        : '';
    const msg = `C++ compilation of the Verilated model failed${scratch || ' (a construct Verilator translated but g++ rejects)'}:\n${bounded(build.all, 8000)}`;
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
    return new Ending('xrun_failed', 'build', { err_msg: msg, diagnostics: [...warnings, d], log: bounded(build.all) });
  }
  return undefined;
}

/** The compile and link commands, each through `run` (the jailed tool runner): the first failure's
 * result, else the link's. */
async function cxxBuild(
  tc: Toolchain,
  runtime: RuntimeBuild,
  runDir: string,
  prefix: string,
  limits: SimLimits,
  extraObjects: string[],
  run: (file: string, args: string[], opts: ToolOptions) => Promise<RunResult>,
): Promise<RunResult> {
  const obj = join(runDir, 'obj');
  const { classes, sizes, total } = modelSources(obj, prefix);
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
  const flags = candidateCxxFlags(tc, runtime, ['-I.']);
  const compiles = units.map((u, i) => {
    const src = join(obj, `chorus_unit${i}.cpp`);
    writeFileSync(src, unitText(u) + (i === 0 ? shimText(prefix, '') : ''));
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

/** The model's generated C++ files in `obj` (from <prefix>_classes.mk), their sizes and total. */
export function modelSources(obj: string, prefix: string): { classes: string[]; sizes: number[]; total: number } {
  const classes = readClassLists(join(obj, `${prefix}_classes.mk`))
    .map((c) => `${c}.cpp`)
    .filter((f) => existsSync(join(obj, f)));
  const sizes = classes.map((f) => statSync(join(obj, f)).size);
  return { classes, sizes, total: sizes.reduce((a, b) => a + b, 0) };
}

/** A candidate's C++ compile flags: the runtime's defines and the precompiled header. */
export function candidateCxxFlags(tc: Toolchain, runtime: RuntimeBuild, include: string[]): string[] {
  return [...include, ...includeFlags(tc), ...CXX_DEFINES, ...CXX_COMMON, ...CXX_CANDIDATE_OPT, '-include', runtime.pchHeader];
}

/** A unity translation unit: `#include` of each file. */
export function unitText(files: string[]): string {
  return files.map((f) => `#include "${f}"\n`).join('');
}

/** chorus_model.cpp for the model of class `prefix`, its functions named with `suffix`. */
export function shimText(prefix: string, suffix: string, header = `${prefix}.h`): string {
  const shim = assetPath('chorus_model.cpp', 'sim/verilator');
  return [
    `#include "${header}"`,
    `#define CHORUS_MODEL ${prefix}`,
    ...(suffix ? [`#define CHORUS_MODEL_SUFFIX ${suffix}`] : []),
    `#include "${shim}"`,
    '',
  ].join('\n');
}
