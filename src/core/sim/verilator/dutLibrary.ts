// Reusing the compiled DUT across candidates of the same design. Verilator's --lib-create turns
// the DUT into a C++ model plus a SystemVerilog wrapper that drives it through DPI; we compile that
// model ONCE per design (cached by the design's content) and each candidate then verilates and
// compiles only the testbench and links the cached object. A testbench that reaches into DUT
// internals, overrides DUT parameters in its instantiation, or a DUT the library flow cannot
// express (delays, interface ports...) falls back to the flat build: the caller retries flat on
// any front-end error in library mode, and a design that fails here is remembered as ineligible.
// The design may come from a request: both steps run in the jail with the candidate's memory cap
// (they see the design view, the toolchain and the build directory), and a failure's reason keeps
// no text of a file outside the design (a `$c("#include ...")` of a host file would be quoted).
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import type { DesignSpec } from '../../design/types.js';
import { runBounded } from '../../util/proc.js';
import { toolchainCommand, toolDirsOf, type DesignView, type JailInfo } from '../jail.js';
import { withholdForeignSource } from './diagnostics.js';
import { cacheRoot } from '../../util/cache.js';
import {
  CXX_CANDIDATE_OPT,
  CXX_COMMON,
  CXX_DEFINES,
  includeFlags,
  readClassLists,
  versionFlags,
  type RuntimeBuild,
  type Toolchain,
  verilatorCommand,
} from './toolchain.js';

export interface DutLibrary {
  dir: string;
  /** Seconds the DUT model took to compile: what a flat build pays again for every candidate. */
  compileSeconds: number;
  /** The wrapper module, renamed to the DUT's own name so testbenches instantiate it unchanged. */
  wrapper: string;
  object: string;
}

export type DutLibraryResult = { ok: true; lib: DutLibrary } | { ok: false; reason: string };

const LIB_NAME = 'chorus_dut';
const MAX_ENTRIES = 64;
const building = new Map<string, Promise<DutLibraryResult>>();

// designKey runs for every candidate: hash a file's content only when its size or mtime changed.
const digests = new Map<string, { stamp: string; digest: string }>();

function fileFingerprint(h: ReturnType<typeof createHash>, f: string): void {
  h.update(f);
  try {
    const st = statSync(f);
    const stamp = `${st.size}:${st.mtimeMs}`;
    let known = digests.get(f);
    if (known?.stamp !== stamp) {
      known = { stamp, digest: createHash('sha256').update(readFileSync(f)).digest('hex') };
      digests.set(f, known);
    }
    h.update(known.digest);
  } catch {
    h.update('missing');
  }
}

/** Content key: every design file, include-directory listing (name, size, mtime), options. */
export function designKey(design: DesignSpec, top: string, runtimeDir: string): string {
  const h = createHash('sha256');
  h.update(
    JSON.stringify({
      top,
      params: design.params,
      defines: design.defines,
      runtimeDir,
      v: 3,
      ...(design.verilatorArgs?.length ? { vargs: design.verilatorArgs } : {}),
    }),
  );
  for (const f of [...design.files, ...design.libraryFiles]) fileFingerprint(h, resolve(f));
  for (const d of design.includeDirs) {
    h.update(d);
    try {
      for (const name of readdirSync(d).sort()) {
        const s = statSync(join(d, name));
        if (s.isFile()) h.update(`${name}:${s.size}:${s.mtimeMs}`);
      }
    } catch {
      h.update('unreadable');
    }
  }
  return h.digest('hex').slice(0, 24);
}

export interface DutLibraryOptions {
  timeoutS: number;
  signal?: AbortSignal;
  jail: JailInfo;
  /** What the steps may read of the design (jail.ts designView). */
  view: DesignView;
  memoryLimitMb: number | null;
  /** Files a tool's message may quote (stages/files.ts ownOrToolchain). */
  quotable: (file: string) => boolean;
}

export function dutLibrary(
  tc: Toolchain,
  runtime: RuntimeBuild,
  design: DesignSpec,
  top: string,
  opts: DutLibraryOptions,
): Promise<DutLibraryResult> {
  const key = designKey(design, top, runtime.dir);
  const root = join(cacheRoot(), 'dut');
  const dir = join(root, key);
  const lib: DutLibrary = { dir, wrapper: join(dir, `${top}.chorus_wrapper.sv`), object: join(dir, 'dut.o'), compileSeconds: 0 };
  if (existsSync(join(dir, 'READY'))) {
    touch(dir);
    lib.compileSeconds = Number(/compileSeconds=([\d.]+)/.exec(readFileSync(join(dir, 'READY'), 'utf8'))?.[1] ?? 0);
    return Promise.resolve({ ok: true, lib });
  }
  if (existsSync(join(dir, 'INELIGIBLE'))) return Promise.resolve({ ok: false, reason: readFileSync(join(dir, 'INELIGIBLE'), 'utf8') });
  let p = building.get(key);
  if (!p) {
    p = build(tc, runtime, design, top, root, dir, lib, opts).finally(() => building.delete(key));
    building.set(key, p);
  }
  return p;
}

function touch(dir: string): void {
  try {
    const now = new Date();
    utimesSync(dir, now, now);
  } catch {
    /* best effort: only used to keep recently used entries when pruning */
  }
}

function prune(root: string): void {
  try {
    const entries = readdirSync(root)
      .filter((n) => !n.startsWith('.'))
      .map((n) => ({ n, t: statSync(join(root, n)).mtimeMs }))
      .sort((a, b) => b.t - a.t);
    for (const e of entries.slice(MAX_ENTRIES)) rmSync(join(root, e.n), { recursive: true, force: true });
  } catch {
    /* pruning is housekeeping; never fail a run for it */
  }
}

async function build(
  tc: Toolchain,
  runtime: RuntimeBuild,
  design: DesignSpec,
  top: string,
  root: string,
  dir: string,
  lib: DutLibrary,
  opts: DutLibraryOptions,
): Promise<DutLibraryResult> {
  mkdirSync(root, { recursive: true });
  const tmp = mkdtempSync(join(root, '.build-'));
  const toolDirs = [...toolDirsOf(tc.verilator, tc.root), ...toolDirsOf(tc.cxx)];
  const direct = verilatorCommand(tc);
  const step = (file: string, args: string[], cwd: string, outputLimitBytes?: number) => {
    const verilator = file === tc.verilator;
    const cmd = toolchainCommand(
      opts.jail,
      verilator ? direct.file : file,
      args,
      { writable: [tmp], readOnly: [...opts.view.paths, runtime.dir], hidden: opts.view.hidden, cwd, toolDirs },
      { memoryLimitMb: opts.memoryLimitMb, ...(verilator ? { stackUnlimited: direct.stackUnlimited, env: direct.env } : {}) },
    );
    return runBounded(cmd.file, cmd.args, { cwd, timeoutS: opts.timeoutS, signal: opts.signal, env: cmd.env, outputLimitBytes });
  };
  const publish = (marker: 'READY' | 'INELIGIBLE', text: string): void => {
    writeFileSync(join(tmp, marker), text);
    try {
      renameSync(tmp, dir);
    } catch {
      /* a concurrent builder published first */
    }
  };
  try {
    const args = [
      '--cc',
      '--lib-create',
      LIB_NAME,
      '--prefix',
      'Vchorus_dut',
      '--top-module',
      top,
      ...versionFlags(tc, ['--coverage']),
      '--assert',
      '-Wno-fatal',
      '-Wno-BLKANDNBLK',
      '-Wno-lint',
      '-Wno-style',
      '-Mdir',
      'obj',
    ];
    for (const [k, v] of Object.entries(design.params)) args.push(`-G${k}=${v}`);
    for (const d of design.includeDirs) args.push(`-I${resolve(d)}`);
    for (const [k, v] of Object.entries(design.defines)) args.push(v === null ? `-D${k}` : `-D${k}=${v}`);
    for (const f of design.libraryFiles) args.push('-v', resolve(f));
    args.push(...(design.verilatorArgs ?? []));
    args.push(...design.files.map((f) => resolve(f)));
    const v = await step(tc.verilator, args, tmp);
    if (v.cancelled) return { ok: false, reason: 'cancelled' };
    if (v.exitCode !== 0) {
      const log = withholdForeignSource(v.all, opts.quotable);
      const reason = `the DUT cannot be built as a reusable library (${log.split('\n').find((l) => l.startsWith('%Error')) ?? `exit ${v.exitCode}`})`;
      publish('INELIGIBLE', reason);
      return { ok: false, reason };
    }
    const obj = join(tmp, 'obj');
    const classes = readClassLists(join(obj, 'Vchorus_dut_classes.mk'))
      .map((c) => `${c}.cpp`)
      .filter((f) => existsSync(join(obj, f)));
    writeFileSync(join(obj, 'chorus_dut_unit.cpp'), [...classes, `${LIB_NAME}.cpp`].map((f) => `#include "${f}"`).join('\n') + '\n');
    const t0 = performance.now();
    const c = await step(
      tc.cxx,
      [
        '-I.',
        ...includeFlags(tc),
        ...CXX_DEFINES,
        ...CXX_COMMON,
        ...CXX_CANDIDATE_OPT,
        '-include',
        runtime.pchHeader,
        '-c',
        '-o',
        join(tmp, 'dut.o'),
        'chorus_dut_unit.cpp',
      ],
      obj,
      1024 * 1024,
    );
    if (c.cancelled) return { ok: false, reason: 'cancelled' };
    if (c.exitCode !== 0) {
      const log = withholdForeignSource(c.all, (f) => opts.quotable(resolve(obj, f)), { cxx: true });
      const reason = `compiling the DUT library failed: ${log.split('\n').find((l) => /error/.test(l)) ?? `exit ${c.exitCode}`}`;
      publish('INELIGIBLE', reason);
      return { ok: false, reason };
    }
    // The wrapper is named after the library; rename it to the DUT so `counter uut(...)` binds to it.
    const wrapper = readFileSync(join(obj, `${LIB_NAME}.sv`), 'utf8').replace(new RegExp(`^module ${LIB_NAME}\\b`, 'm'), `module ${top}`);
    writeFileSync(join(tmp, `${top}.chorus_wrapper.sv`), wrapper);
    rmSync(obj, { recursive: true, force: true });
    lib.compileSeconds = (performance.now() - t0) / 1000;
    publish('READY', `${top}\ncompileSeconds=${lib.compileSeconds.toFixed(3)}\n`);
    prune(root);
    return existsSync(join(dir, 'READY')) ? { ok: true, lib } : { ok: false, reason: readFileSync(join(dir, 'INELIGIBLE'), 'utf8') };
  } finally {
    if (existsSync(tmp)) rmSync(tmp, { recursive: true, force: true });
  }
}
