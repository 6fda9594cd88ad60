// Stage "prepare": the candidate's scratch directory and what the later stages run with. Every
// candidate gets its own run directory, holding the testbench (under a safe base name), a retry's
// split_var control file and its rewritten copies of DUT files; nothing else on disk is written.
// It also fixes, once, the options every Verilator pass of this candidate shares (buildArgs: the
// check passes and the build must read exactly the same sources with the same flags, or the check
// would vouch for another build) and the runner of the compile steps (jailed when there is a jail,
// memory-capped always, seeing the run directory, the design view and the toolchain only).
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import type { SimRequest } from '../../simulator.js';
import { toolchainCommand, toolDirsOf } from '../../jail.js';
import { runBounded, type RunResult } from '../../../util/proc.js';
import { verilatorCommand, versionFlags, type Toolchain } from '../toolchain.js';
import { inSlot, type Candidate } from './candidate.js';
import { fileRoles, type FileRoles } from './files.js';
import { stageDataFiles, type DataFiles } from './dataFiles.js';
import { trackScratch } from '../../../util/scratch.js';

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

/** The flags with the model's class prefix (VERILATOR_FLAGS name `Vtb`) set to `prefix`. */
function withPrefix(flags: string[], prefix: string): string[] {
  return flags.map((f, i) => (flags[i - 1] === '--prefix' ? prefix : f));
}

/** The design's include directories, defines, (unless withLibraries is false) -v libraries and
 * pass-through Verilator options. */
export function designArgs(req: SimRequest, withLibraries = true): string[] {
  const d = req.design;
  const args: string[] = [];
  for (const dir of d.includeDirs) args.push(`-I${dir}`);
  for (const [k, v] of Object.entries(d.defines)) args.push(v === null ? `-D${k}` : `-D${k}=${v}`);
  if (withLibraries) for (const f of d.libraryFiles) args.push('-v', f);
  args.push(...(d.verilatorArgs ?? [])); // checked against the allowlist (design/verilatorArgs.ts)
  return args;
}

export type ToolStep = 'preprocess' | 'front-end' | 'c++';
export interface ToolOptions {
  cwd: string;
  timeoutS: number;
  outputLimitBytes?: number;
}
/** Runs one compile step: `readOnly` adds directories it may read (the runtime, the DUT library). */
export type ToolRunner = (step: ToolStep, file: string, args: string[], opts: ToolOptions, readOnly?: string[]) => Promise<RunResult>;

/** The run directory, laid out, and what every later stage runs with. */
export interface Prepared {
  runDir: string;
  /** The testbench's top module. */
  tbTop: string;
  /** The testbench by its absolute path: Verilator looks a relative source name up in the
   * previous file's directory first, where the user's own file of that name may sit. */
  tbPath: string;
  /** A retry's copies of DUT files: original (resolved) path -> the copy in the run directory. */
  copyOf: Map<string, string>;
  /** The flat build's sources: the design's files (or their copies) before the testbench, so
   * their macros are defined when it is read. */
  flatSources: string[];
  files: FileRoles;
  /** The design's $readmem data files, copied into the run directory, and those found nowhere. */
  dataFiles: DataFiles;
  tool: ToolRunner;
  /** The Verilator arguments of this candidate's build (sources apart), into `mdir`. */
  buildArgs(withLibraries: boolean, mdir?: string): string[];
}

/** The candidate's scratch directory, said in the record. */
export function createRunDir(c: Candidate): string {
  const runDir = mkdtempSync(join(tmpdir(), 'chorus-run-'));
  // Removed at exit too (a run ended by a signal), unless the pipeline removes or keeps it first.
  trackScratch(runDir);
  c.protection.scratchDir = runDir;
  return runDir;
}

/** Writes the run directory's files and fixes the options of the candidate's Verilator passes. */
export function prepare(c: Candidate, tc: Toolchain, runDir: string, tbTop: string): Prepared {
  const { req, retry, limits, jail, view } = c;
  const files = fileRoles(req.design, runDir, c.tbName, view.roots, tc.root);
  // Compile steps read the testbench, the design and the toolchain only: in the jail nothing
  // else exists; without it the static check refused every other path.
  const toolDirs = [...toolDirsOf(tc.verilator, tc.root), ...toolDirsOf(tc.cxx)];
  const direct = verilatorCommand(tc);
  const tool: ToolRunner = (step, file, args, opts, readOnly = []) => {
    const verilator = file === tc.verilator;
    const cmd = toolchainCommand(
      jail,
      verilator ? direct.file : file,
      args,
      {
        writable: [runDir],
        readOnly: [...view.paths, ...readOnly],
        hidden: view.hidden,
        cwd: opts.cwd,
        toolDirs,
      },
      // Every compile step has a memory cap, jailed or not, as the run has.
      { memoryLimitMb: limits.buildMemoryLimitMb, ...(verilator ? { stackUnlimited: direct.stackUnlimited, env: direct.env } : {}) },
    );
    if (jail.kind !== 'none') c.sandbox.steps.add(step);
    return inSlot(c, () => runBounded(cmd.file, cmd.args, { ...opts, signal: req.signal, env: cmd.env }));
  };

  writeFileSync(join(runDir, c.tbName), req.testbench.content);
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
  const tbPath = join(runDir, c.tbName);
  // The design's data files, where its relative $readmem names expect them (dataFiles.ts).
  const dataFiles = stageDataFiles(req.design, runDir, view.roots);
  const flatSources = [...req.design.files.map((f) => copyOf.get(resolve(f)) ?? resolve(f)), tbPath];
  const buildArgs = (withLibraries: boolean, mdir = 'obj_check'): string[] => [
    ...withPrefix(versionFlags(tc, VERILATOR_FLAGS), c.prefix),
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
  return { runDir, tbTop, tbPath, copyOf, flatSources, files, dataFiles, tool, buildArgs };
}
