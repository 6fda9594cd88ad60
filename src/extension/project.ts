// The project file (`chorus.json` beside the design): which files make the design and how to
// compile them. Paths in the file are relative to its folder. Pure: no vscode import.
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import type { DesignOptions } from '../core/design/load.js';
import type { ProjectFile } from './webviewProtocol.js';

export const PROJECT_FILE = 'chorus.json';

export type { ProjectFile };

export const HDL_EXT = /\.(sv|v|svh|vh)$/i;
const SOURCE_EXT = /\.(sv|v)$/i;

/** A testbench by name (`tb_x.sv`, `x_tb.sv`, `test_x.sv`) or by content (a module without ports). */
export function looksLikeTestbench(path: string, text?: string): boolean {
  const name = basename(path).toLowerCase();
  if (/^(tb|test)_|_(tb|test)\.s?v$|^tb\.s?v$|^testbench/.test(name)) return true;
  if (text === undefined) return false;
  const modules = [...text.matchAll(/^\s*module\s+(?:automatic\s+)?\w+\s*(#\s*\([\s\S]*?\)\s*)?(\(|;)/gm)];
  return modules.length > 0 && modules.every((m) => m[2] === ';');
}

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
  if (!data || typeof data !== 'object' || Array.isArray(data)) throw new Error(`${origin}: expected an object with "files"`);
  const o = data as Record<string, unknown>;
  const list = (k: string): string[] | undefined => {
    const v = o[k];
    if (v === undefined) return undefined;
    if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw new Error(`${origin}: "${k}" must be a list of strings`);
    return v as string[];
  };
  const files = list('files') ?? [];
  const fileLists = list('fileLists');
  if (files.length === 0 && !fileLists?.length) throw new Error(`${origin}: "files" (or "fileLists") must name at least one design file`);
  if (o.top !== undefined && typeof o.top !== 'string') throw new Error(`${origin}: "top" must be a module name`);
  for (const p of list('params') ?? []) if (p.indexOf('=') <= 0) throw new Error(`${origin}: parameter "${p}" must be NAME=VALUE`);
  const out: ProjectFile = { files };
  if (fileLists) out.fileLists = fileLists;
  for (const k of ['includeDirs', 'defines', 'params'] as const) {
    const v = list(k);
    if (v) out[k] = v;
  }
  if (typeof o.top === 'string' && o.top) out.top = o.top;
  return out;
}

export function writeProjectFile(path: string, p: ProjectFile): void {
  writeFileSync(path, JSON.stringify(p, null, 2) + '\n');
}

/** What the engine needs, paths made absolute against the project file's folder. */
export function projectToDesign(p: ProjectFile, projectDir: string): DesignOptions {
  const abs = (x: string): string => (isAbsolute(x) ? x : resolve(projectDir, x));
  return {
    files: p.files.map(abs),
    fileLists: p.fileLists?.map(abs),
    includeDirs: p.includeDirs?.map(abs),
    defines: p.defines,
    params: p.params,
    top: p.top,
    cwd: projectDir,
  };
}

/** A project guessed from a folder: its design sources (testbenches left out), a `files.f` if
 * there is one (then it stands for the files), and folders named include/inc. */
export function inferProject(dir: string, read: (p: string) => string | undefined = safeRead, primary?: string): ProjectFile {
  let entries: string[] = [];
  try {
    entries = readdirSync(dir).sort();
  } catch {
    /* unreadable folder: the primary file alone */
  }
  const fileLists = entries.filter((e) => e.toLowerCase() === 'files.f');
  if (fileLists.length) return { files: [], fileLists };
  const files = entries.filter((e) => SOURCE_EXT.test(e) && !looksLikeTestbench(e, read(join(dir, e))));
  if (primary) {
    const rel = relative(dir, primary);
    if (!rel.startsWith('..') && !files.includes(rel) && !looksLikeTestbench(primary, read(primary))) files.unshift(rel);
  }
  const includeDirs = entries.filter((e) => /^(include|inc)$/i.test(e));
  const out: ProjectFile = { files };
  if (includeDirs.length) out.includeDirs = includeDirs;
  return out;
}

function safeRead(p: string): string | undefined {
  try {
    return readFileSync(p, 'utf8');
  } catch {
    return undefined;
  }
}

/** `tb_<top>.sv` in `dir`, or the first free `tb_<top>_N.sv`. */
export function freeTestbenchPath(dir: string, top: string, exists: (p: string) => boolean = existsSync): string {
  const base = join(dir, `tb_${top}.sv`);
  if (!exists(base)) return base;
  for (let i = 1; ; i++) {
    const c = join(dir, `tb_${top}_${i}.sv`);
    if (!exists(c)) return c;
  }
}
