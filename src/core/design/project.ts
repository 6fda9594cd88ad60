// The project file (`chorus.json` beside the design): which files, or which manifest, make the
// design and how to compile them, so that what was found or chosen once (an include folder, the
// top, the core and target) is not asked again. Paths in the file are relative to its folder.
// Read by the CLI and the editor alike; written only when the user asks.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { DesignOptions } from './load.js';
import type { ProjectFile } from './types.js';

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

export function validateProject(data: unknown, origin = PROJECT_FILE): ProjectFile {
  if (!data || typeof data !== 'object' || Array.isArray(data))
    throw new Error(`${origin}: expected an object with "files" (or "manifest")`);
  const o = data as Record<string, unknown>;
  const list = (k: string): string[] | undefined => {
    const v = o[k];
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw new Error(`${origin}: "${k}" must be a list of strings`);
    return v as string[];
  };
  const text = (k: string, what: string): string | undefined => {
    const v = o[k];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || !v) throw new Error(`${origin}: "${k}" must be ${what}`);
    return v;
  };
  const files = list('files') ?? [];
  const fileLists = list('fileLists');
  const manifest = text('manifest', 'the path of a FuseSoC .core file or a Bender.yml');
  if (files.length === 0 && !fileLists?.length && !manifest)
    throw new Error(`${origin}: "files" (or "fileLists", or "manifest") must name at least one design file`);
  if (o.top !== undefined && typeof o.top !== 'string') throw new Error(`${origin}: "top" must be a module name`);
  for (const p of list('params') ?? []) if (p.indexOf('=') <= 0) throw new Error(`${origin}: parameter "${p}" must be NAME=VALUE`);
  const core = text('core', 'a FuseSoC core name (vendor:library:name[:version])');
  const target = text('target', 'a FuseSoC target or Bender targets (comma-separated)');
  const coresRoots = list('coresRoots');
  if (!manifest && (core || target || coresRoots))
    throw new Error(`${origin}: "core", "target" and "coresRoots" belong to a "manifest"; name the manifest too`);
  const out: ProjectFile = { files };
  if (fileLists) out.fileLists = fileLists;
  for (const k of ['includeDirs', 'defines', 'params'] as const) {
    const v = list(k);
    if (v) out[k] = v;
  }
  if (typeof o.top === 'string' && o.top) out.top = o.top;
  if (manifest) out.manifest = manifest;
  if (core) out.core = core;
  if (target) out.target = target;
  if (coresRoots) out.coresRoots = coresRoots;
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
