// The design options every command shares (files, folders, manifests, chorus.json, -f, -I, -D, -G,
// --top), parsed the same way, and --save-project, which records what was found in chorus.json.
import { existsSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import type { DesignOptions } from '../core/run/design.js';
import {
  checkVerilatorArgs,
  findProjectFile,
  projectToDesign,
  readProjectFile,
  withDiscovered,
  writeProjectFile,
  PROJECT_FILE,
} from '../core/run/sources.js';
import type { ProjectFile } from '../core/run/types.js';

export const DESIGN_OPTIONS = {
  top: { type: 'string' },
  filelist: { type: 'string', short: 'f', multiple: true },
  'filelist-relative': { type: 'string', short: 'F', multiple: true },
  include: { type: 'string', short: 'I', multiple: true },
  define: { type: 'string', short: 'D', multiple: true },
  param: { type: 'string', short: 'G', multiple: true },
  library: { type: 'string', short: 'v', multiple: true },
  'library-dir': { type: 'string', short: 'y', multiple: true },
  libext: { type: 'string', multiple: true },
  'verilator-arg': { type: 'string', multiple: true },
  core: { type: 'string' },
  'manifest-target': { type: 'string' },
  'cores-root': { type: 'string', multiple: true },
  'no-search': { type: 'boolean' },
  'save-project': { type: 'boolean' },
} as const;

export const DESIGN_HELP = `Design (files, folders, a manifest, or chorus.json):
  <files|folder>        RTL files, or a folder (its .sv/.v; testbenches, test/, sim/, verif/, dv/
                        left out and listed), or a FuseSoC .core / Bender.yml (or a folder holding
                        one), read by fusesoc / bender themselves; with none, ./chorus.json
  --top <module>        DUT top module (needed when the files hold several top candidates)
  -f <files.f>          EDA file list (+incdir+, +define+, -I, -D, -G, -v, -y, +libext+, nested
                        -f/-F, allowed Verilator options); paths relative to the working folder;
                        repeatable (--filelist)
  -F <files.f>          the same, paths relative to the list's own folder (--filelist-relative)
  -I <dir>, +incdir+<dir>[+<dir>...]
                        include directory; repeatable (--include)
  -D <NAME[=VALUE]>, +define+<NAME[=VALUE]>[+...]
                        define; repeatable (--define)
  -G <NAME=VALUE>       DUT top parameter override; repeatable (--param)
  -v <file>             library file: its modules are used only where referenced (--library)
  -y <dir>              library folder: its files (see +libext+) are library files (--library-dir)
  +libext+.v+.sv        extensions of -y folders' files (default .v .sv; --libext .sv)
  --verilator-arg <arg> pass a Verilator option through (repeatable; an allowlist: -Wno-<CODE>,
                        -Wall, --timing/--no-timing, -O<n>, --x-assign/--x-initial <v>,
                        --bbox-unsup, +1800-2017ext+ ...; nothing that writes files, runs
                        programs or changes paths; README "Command line conventions")
  --core <vlnv>         FuseSoC core to read (default: the one the .core file declares)
  --manifest-target <t> FuseSoC target (default 'default'); Bender targets, comma-separated
  --cores-root <dir>    FuseSoC core search folder (default: the repository root); repeatable
  --no-search           do not search the repository for missing includes, packages, modules
  --save-project        write what was used and found (files, include folders, top) to chorus.json
`;

interface DesignValues {
  top?: string;
  filelist?: string[];
  'filelist-relative'?: string[];
  include?: string[];
  define?: string[];
  param?: string[];
  library?: string[];
  'library-dir'?: string[];
  libext?: string[];
  'verilator-arg'?: string[];
  core?: string;
  'manifest-target'?: string;
  'cores-root'?: string[];
  'no-search'?: boolean;
  'save-project'?: boolean;
}

export interface CliDesign {
  options: DesignOptions;
  /** The chorus.json the design came from, if any. */
  projectPath: string | null;
  project: ProjectFile | null;
}

/** `--tb` and the design the other arguments name (the testbench itself left out), for the
 * commands that take an existing testbench (sim, refine). Throws with the next step. */
export function testbenchAndDesign(v: DesignValues & { tb?: string }, positionals: string[]): { tbPath: string; design: CliDesign } {
  const { tbPaths, design } = testbenchesAndDesign({ ...v, tb: v.tb === undefined ? [] : [v.tb] }, positionals);
  return { tbPath: tbPaths[0], design };
}

/** `--tb` given once or more (`chorus sim` scores a group of testbenches of one design). */
export function testbenchesAndDesign(v: DesignValues & { tb?: string[] }, positionals: string[]): { tbPaths: string[]; design: CliDesign } {
  if (!v.tb?.length) throw new Error('name the testbench with --tb <testbench.sv>');
  const tbPaths = v.tb.map((t) => resolve(t));
  for (const p of tbPaths) if (!existsSync(p)) throw new Error(`testbench not found: ${p}`);
  const twice = tbPaths.find((p, i) => tbPaths.indexOf(p) !== i);
  if (twice) throw new Error(`the testbench ${twice} is named twice with --tb`);
  return {
    tbPaths,
    design: designFromArgs(
      v,
      positionals.filter((p) => !tbPaths.includes(resolve(p))),
    ),
  };
}

/** The design a command works on: the positionals and options, or a chorus.json (named, or in
 * the working folder when nothing else is given). Throws with the next step when nothing is. */
export function designFromArgs(v: DesignValues, positionals: string[], cwd = process.cwd()): CliDesign {
  const named = positionals.find((p) => basename(p) === PROJECT_FILE);
  const nothing = positionals.length === 0 && !v.filelist?.length && !v['filelist-relative']?.length;
  const projectPath = named ? resolve(cwd, named) : nothing ? findProjectFile(cwd, cwd) : null;
  if (nothing && !projectPath)
    throw new Error(`name the design: files, a folder, a manifest (.core, Bender.yml) or -f files.f (no ${PROJECT_FILE} in ${cwd})`);
  const manifestOpts = v.core || v['manifest-target'] || v['cores-root']?.length;
  const base: DesignOptions = projectPath ? projectToDesign(readProjectFile(projectPath), dirname(projectPath)) : { files: [], cwd };
  const rest = positionals.filter((p) => p !== named);
  const opt: DesignOptions = {
    ...base,
    files: [...base.files, ...rest.map((p) => resolve(cwd, p))],
    fileLists: [...(base.fileLists ?? []), ...(v.filelist ?? []).map((p) => resolve(cwd, p))],
    relativeFileLists: [...(base.relativeFileLists ?? []), ...(v['filelist-relative'] ?? []).map((p) => resolve(cwd, p))],
    libraryFiles: [...(base.libraryFiles ?? []), ...(v.library ?? []).map((p) => resolve(cwd, p))],
    libraryDirs: [...(base.libraryDirs ?? []), ...(v['library-dir'] ?? []).map((p) => resolve(cwd, p))],
    libext: [...(base.libext ?? []), ...(v.libext ?? [])],
    // Checked here too, so that a refused one is a usage error before anything runs.
    verilatorArgs: [...(base.verilatorArgs ?? []), ...checkVerilatorArgs(v['verilator-arg'] ?? [])],
    includeDirs: [...(base.includeDirs ?? []), ...(v.include ?? []).map((p) => resolve(cwd, p))],
    defines: [...(base.defines ?? []), ...(v.define ?? [])],
    params: [...(base.params ?? []), ...(v.param ?? [])],
    top: v.top ?? base.top,
    discover: !v['no-search'],
  };
  if (manifestOpts) {
    const path =
      opt.manifest?.path ??
      rest.find((p) => /\.core$|(^|\/)Bender\.yml$/.test(p) || (existsSync(resolve(cwd, p)) && statSync(resolve(cwd, p)).isDirectory()));
    if (!path)
      throw new Error('--core, --manifest-target and --cores-root need a manifest: name the .core file or Bender.yml (or its folder)');
    opt.manifest = {
      ...(opt.manifest ?? {}),
      path: resolve(cwd, path),
      core: v.core ?? opt.manifest?.core,
      target: v['manifest-target'] ?? opt.manifest?.target,
      coresRoots: v['cores-root']?.map((r) => resolve(cwd, r)) ?? opt.manifest?.coresRoots,
    };
    opt.files = opt.files.filter((f) => f !== resolve(cwd, path));
  }
  return { options: opt, projectPath, project: projectPath ? readProjectFile(projectPath) : null };
}

/** --save-project: the project read (or ./chorus.json, new) with what this run used and found.
 * Returns the line for the user (never throws: the run itself goes on). */
export function saveProject(
  d: CliDesign,
  used: { top: string; discovered: { includeDirs: string[]; files: string[] } },
  cwd = process.cwd(),
): string {
  const path = d.projectPath ?? join(cwd, PROJECT_FILE);
  const dir = dirname(path);
  const rel = (x: string): string => relative(dir, x) || '.';
  let p: ProjectFile;
  if (d.project) p = { ...d.project };
  else {
    if (existsSync(path))
      return `design settings not saved: ${path} exists and was not the project read; name it (e.g. chorus sim ${PROJECT_FILE} ...) to update it, or remove it`;
    const o = d.options;
    p = { files: o.files.map(rel) };
    if (o.fileLists?.length) p.fileLists = o.fileLists.map(rel);
    if (o.includeDirs?.length) p.includeDirs = o.includeDirs.map(rel);
    if (o.defines?.length) p.defines = o.defines;
    if (o.params?.length) p.params = o.params;
    if (o.verilatorArgs?.length) p.verilatorArgs = o.verilatorArgs;
    if (o.manifest) {
      p.manifest = rel(o.manifest.path);
      if (o.manifest.core) p.core = o.manifest.core;
      if (o.manifest.target) p.target = o.manifest.target;
      if (o.manifest.coresRoots?.length) p.coresRoots = o.manifest.coresRoots.map(rel);
    }
  }
  p = withDiscovered(p, used.discovered, dir);
  p.top = used.top;
  try {
    writeProjectFile(path, p);
  } catch (e) {
    return `design settings not saved: ${(e as Error).message}`;
  }
  return `design settings written to ${path}`;
}
