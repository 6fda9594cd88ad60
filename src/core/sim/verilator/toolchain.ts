// Finding Verilator and the C++ compiler, and building what is identical for every candidate
// once per machine: Verilator's runtime objects and a precompiled header of its runtime headers.
// Keyed by Verilator version, compiler version and flags, so an upgrade rebuilds by itself.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { runBounded } from '../../util/proc.js';
import { assetPath } from '../../util/assets.js';
import { cacheRoot } from '../../util/cache.js';

export class ToolchainError extends Error {}

export interface Toolchain {
  verilator: string;
  root: string;
  version: string;
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
export const CXX_DEFINES = [
  '-DVM_COVERAGE=1',
  '-DVM_SC=0',
  '-DVM_TRACE=0',
  '-DVM_TRACE_FST=0',
  '-DVM_TRACE_VCD=0',
];
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

let cached: Promise<Toolchain> | undefined;

export function findToolchain(): Promise<Toolchain> {
  cached ??= (async () => {
    const verilator = process.env.CHORUS_VERILATOR ?? 'verilator';
    const v = await runBounded(verilator, ['--version'], { timeoutS: 30 });
    if (v.spawnError || v.exitCode !== 0) {
      throw new ToolchainError(
        `Verilator was not found ('${verilator} --version' failed). Install it (Debian/Ubuntu: sudo apt-get install verilator g++ make) or set CHORUS_VERILATOR to its path.`,
      );
    }
    const version = v.stdout.trim();
    const r = await runBounded(verilator, ['--getenv', 'VERILATOR_ROOT'], { timeoutS: 30 });
    const root = r.stdout.trim();
    if (!root || !existsSync(join(root, 'include', 'verilated.h'))) {
      throw new ToolchainError(`Verilator's runtime headers were not found under '${root}/include'. Reinstall Verilator or set VERILATOR_ROOT.`);
    }
    const cxx = process.env.CXX ?? 'g++';
    const c = await runBounded(cxx, ['--version'], { timeoutS: 30 });
    if (c.spawnError || c.exitCode !== 0) {
      throw new ToolchainError(`The C++ compiler '${cxx}' was not found. Install it (sudo apt-get install g++) or set CXX.`);
    }
    return { verilator, root, version, cxx, cxxVersion: c.stdout.split('\n')[0].trim() };
  })();
  cached.catch(() => {
    cached = undefined;
  });
  return cached;
}

let gold: Promise<boolean> | undefined;
/** gold links a candidate in a third of the time of bfd; use it when binutils ships it. */
export function linkerFlags(tc: Toolchain): Promise<string[]> {
  gold ??= runBounded(tc.cxx, ['-fuse-ld=gold', '-Wl,--version'], { timeoutS: 30 }).then((r) => r.exitCode === 0 && /gold/i.test(r.stdout));
  return gold.then((ok) => (ok ? ['-fuse-ld=gold'] : []));
}

export function includeFlags(tc: Toolchain): string[] {
  return [`-I${join(tc.root, 'include')}`, `-I${join(tc.root, 'include', 'vltstd')}`];
}

function mainSource(): string {
  return readFileSync(assetPath('chorus_main.cpp', 'sim/verilator'), 'utf8');
}

function runtimeKey(tc: Toolchain): string {
  const h = createHash('sha256');
  h.update(mainSource());
  h.update(JSON.stringify([tc.version, tc.root, tc.cxxVersion, CXX_DEFINES, CXX_COMMON, CXX_CANDIDATE_OPT, RUNTIME_OPT, RUNTIME_SOURCES, 'user-stop-maybe', 3]));
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
    objects: [...RUNTIME_SOURCES.map((s) => join(dir, `${s}.o`)), join(dir, 'chorus_main.o')],
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
    // verilated.cpp leaves vl_stop_maybe to chorus_main.cpp, which tells $error from $fatal.
    // verilated.cpp calls it before any declaration once its own definition is compiled out.
    writeFileSync(join(tmp, 'chorus_decls.h'), 'void vl_stop_maybe(const char* filename, int linenum, const char* hier, bool maybe);\n');
    const extra = (s: string): string[] => (s === 'verilated' ? ['-DVL_USER_STOP_MAYBE', '-include', join(tmp, 'chorus_decls.h')] : []);
    const jobs = RUNTIME_SOURCES.map((s) =>
      runBounded(tc.cxx, [...inc, ...CXX_DEFINES, ...CXX_COMMON, ...RUNTIME_OPT, ...extra(s), '-c', '-o', join(tmp, `${s}.o`), join(tc.root, 'include', `${s}.cpp`)], {
        timeoutS: 600,
        signal,
      }),
    );
    writeFileSync(
      join(tmp, 'chorus_pch.h'),
      '// Precompiled by CHORUS: Verilator runtime headers shared by every candidate.\n' +
        '#include "verilated.h"\n#include "verilated_cov.h"\n#include "verilated_timing.h"\n#include "verilated_threads.h"\n',
    );
    jobs.push(
      runBounded(
        tc.cxx,
        [...inc, ...CXX_DEFINES, ...CXX_COMMON, ...CXX_CANDIDATE_OPT, '-x', 'c++-header', '-o', join(tmp, 'chorus_pch.h.gch'), join(tmp, 'chorus_pch.h')],
        { timeoutS: 600, signal },
      ),
    );
    // The simulation main, compiled once: it reaches the model only through chorus_model.cpp.
    writeFileSync(join(tmp, 'chorus_main.cpp'), mainSource());
    jobs.push(
      runBounded(tc.cxx, [...inc, ...CXX_DEFINES, ...CXX_COMMON, ...RUNTIME_OPT, '-c', '-o', join(tmp, 'chorus_main.o'), join(tmp, 'chorus_main.cpp')], {
        timeoutS: 600,
        signal,
      }),
    );
    const results = await Promise.all(jobs);
    const bad = results.find((r) => r.exitCode !== 0);
    if (bad) {
      throw new ToolchainError(
        `Building Verilator's runtime failed (${tc.cxx}, ${tc.version}):\n${bad.spawnError ?? bad.all.slice(0, 4000)}\nCheck that g++ supports C++20 coroutines (g++ >= 10).`,
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
