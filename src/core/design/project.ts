// The project file (`chorus.json` beside the design): which files, or which manifest, make the
// design and how to compile them, so that what was found or chosen once (an include folder, the
// top, the core and target) is not asked again. Paths in the file are relative to its folder.
// Read by the CLI and the editor alike; written only when the user asks.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { DesignOptions } from './prepare.js';
import { projectFileSchema, type ProjectFile } from './projectSchema.js';
import { check } from '../util/schema.js';
import { checkVerilatorArgs } from './verilatorArgs.js';

export const PROJECT_FILE = 'chorus.json';

export type { ProjectFile };

/** Looks for the project file from a folder upward, stopping at `stopAt` (the workspace folder). */
export function findProjectFile(startDir: string, stopAt?: string): string | null {
  let dir = resolve(startDir);
  for (;;) {
    const p = join(dir, PROJECT_FILE);
    if (existsSync(p)) return p;
    const up = dirname(dir);
    if (up === dir || (stopAt && relative(resolve(stopAt), dir) === '')) return null;
    if (stopAt && relative(resolve(stopAt), up).startsWith('..')) return null;
    dir = up;
  }
}

export function readProjectFile(path: string): ProjectFile {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`${path}: not valid JSON (${(e as Error).message})`);
  }
  return validateProject(data, path);
}

/** The project file checked against its schema (unknown keys refused); throws naming each bad field. */
export function validateProject(data: unknown, origin = PROJECT_FILE): ProjectFile {
  const r = check(projectFileSchema, data, '');
  if (!r.ok) throw new Error(`${origin}: ${r.issues.map((i) => (i.field ? `"${i.field}" ${i.message}` : i.message)).join('; ')}`);
  const out = r.value;
  if (out.verilatorArgs?.length) {
    try {
      out.verilatorArgs = checkVerilatorArgs(out.verilatorArgs, '"verilatorArgs"');
    } catch (e) {
      throw new Error(`${origin}: ${(e as Error).message}`);
    }
  }
  // An empty top means "not chosen yet" (the editor's form writes it so): not a module name.
  if (out.top === '') delete out.top;
  return out;
}

export function writeProjectFile(path: string, p: ProjectFile): void {
  writeFileSync(path, JSON.stringify(p, null, 2) + '\n');
}

/** What the engine needs, paths made absolute against the project file's folder. */
export function projectToDesign(p: ProjectFile, projectDir: string): DesignOptions {
  const abs = (x: string): string => (isAbsolute(x) ? x : resolve(projectDir, x));
  const d: DesignOptions = {
    files: p.files.map(abs),
    fileLists: p.fileLists?.map(abs),
    includeDirs: p.includeDirs?.map(abs),
    defines: p.defines,
    params: p.params,
    verilatorArgs: p.verilatorArgs,
    top: p.top,
    cwd: projectDir,
    // The user's own design: search its repository for what the files need (load.ts).
    discover: true,
  };
  if (p.manifest) d.manifest = { path: abs(p.manifest), core: p.core, target: p.target, coresRoots: p.coresRoots?.map(abs) };
  return d;
}

/** The project with what the repository search found (absolute paths) added, relative to `dir`. */
export function withDiscovered(p: ProjectFile, found: { includeDirs: string[]; files: string[] }, dir: string): ProjectFile {
  const rel = (x: string): string => relative(dir, x) || '.';
  const out = { ...p };
  const inc = [...new Set([...(p.includeDirs ?? []), ...found.includeDirs.map(rel)])];
  if (inc.length) out.includeDirs = inc;
  if (found.files.length) out.files = [...new Set([...p.files, ...found.files.map(rel)])];
  return out;
}
