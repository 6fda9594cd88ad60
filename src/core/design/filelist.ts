// EDA file lists (`-f files.f`, `-F files.f`) as xrun, VCS and Verilator read them: source files,
// +incdir+, +define+, -D, -G, -I, -v library files, -y library dirs (with +libext+, default .v and
// .sv: their files become -v library files, so a module is taken from them only when used), nested
// -f, comments and $ENV variables. Verilator options on the allowlist (verilatorArgs.ts) are kept
// as pass-through options; any other option is reported and ignored.
// `-f` paths are relative to the working directory and `-F` paths to the list's own folder (the
// common convention); a `-f` path that only exists relative to the list's folder is taken from there.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { DesignSpec } from './types.js';
import { DesignError } from './errors.js';
import { checkVerilatorArgs } from './verilatorArgs.js';

/** Verilator's default +libext+ for -y library folders. */
export const DEFAULT_LIBEXT = ['.v', '.sv'];

/** The files of a -y library folder with one of the extensions (not recursive, sorted). */
export function libraryDirFiles(dir: string, libext: string[] = DEFAULT_LIBEXT, where = '-y'): string[] {
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new DesignError('missing-file', `${where}: library folder not found: ${dir}`);
  const exts = (libext.length ? libext : DEFAULT_LIBEXT).map((e) => (e.startsWith('.') ? e : `.${e}`));
  return readdirSync(dir)
    .filter((f) => exts.some((e) => f.endsWith(e)))
    .sort()
    .map((f) => join(dir, f))
    .filter((f) => statSync(f).isFile());
}

interface ListContext {
  libraryDirs: Array<{ dir: string; where: string }>;
  libext: string[];
}

export interface FileListResult {
  design: DesignSpec;
  warnings: string[];
}

function expandEnv(s: string, where: string): string {
  return s.replace(/\$\{(\w+)\}|\$(\w+)/g, (_, a: string | undefined, b: string | undefined) => {
    const name = (a ?? b) as string;
    const v = process.env[name];
    if (v === undefined) throw new DesignError('filelist', `${where}: environment variable $${name} is not set`);
    return v;
  });
}

/** The words of a file list (comments removed, quotes stripped). */
export function tokens(text: string): string[] {
  const noComments = text
    .split(/\r?\n/)
    .map((l) => l.replace(/(^|\s)(\/\/|#).*$/, ''))
    .join('\n')
    .replace(/\/\*[\s\S]*?\*\//g, ' ');
  return noComments.match(/"[^"]*"|\S+/g)?.map((t) => t.replace(/^"|"$/g, '')) ?? [];
}

export function readFileList(
  path: string,
  relativeToList: boolean,
  into: DesignSpec,
  warnings: string[],
  cwd = process.cwd(),
  depth = 0,
  ctx: ListContext = { libraryDirs: [], libext: [] },
): void {
  if (depth > 16) throw new DesignError('filelist', `${path}: file lists nest more than 16 deep (a -f cycle?)`);
  const abs = resolve(cwd, path);
  if (!existsSync(abs)) throw new DesignError('missing-file', `file list not found: ${abs}`);
  const listDir = dirname(abs);
  const toks = tokens(readFileSync(abs, 'utf8'));
  const where = (i: number): string => `${abs} (entry ${i + 1})`;
  const resolvePath = (p: string, i: number): string => {
    const e = expandEnv(p, where(i));
    if (isAbsolute(e)) return e;
    if (relativeToList) return resolve(listDir, e);
    const fromCwd = resolve(cwd, e);
    const fromList = resolve(listDir, e);
    return existsSync(fromCwd) || !existsSync(fromList) ? fromCwd : fromList;
  };
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i];
    const next = (): string => {
      const at = i;
      const v = toks[++i];
      if (v === undefined) throw new DesignError('filelist', `${where(at)}: '${t}' needs an argument`);
      return v;
    };
    if (t.startsWith('+incdir+')) {
      for (const d of t.slice(8).split('+').filter(Boolean)) into.includeDirs.push(resolvePath(d, i));
    } else if (t.startsWith('+define+')) {
      for (const def of t.slice(8).split('+').filter(Boolean)) {
        const eq = def.indexOf('=');
        if (eq < 0) into.defines[def] = null;
        else into.defines[def.slice(0, eq)] = def.slice(eq + 1);
      }
    } else if (t === '-f' || t === '-F') {
      readFileList(resolvePath(next(), i), t === '-F', into, warnings, cwd, depth + 1, ctx);
    } else if (t === '-v') {
      into.libraryFiles.push(resolvePath(next(), i));
    } else if (t === '-y') {
      ctx.libraryDirs.push({ dir: resolvePath(next(), i), where: where(i) });
    } else if (t.startsWith('+libext+')) {
      ctx.libext.push(...t.slice(8).split('+').filter(Boolean));
    } else if (t === '-sv' || t === '-timescale' || t.startsWith('+timescale')) {
      if (t === '-timescale') next();
    } else if (t.startsWith('-I')) {
      into.includeDirs.push(resolvePath(t.length > 2 ? t.slice(2) : next(), i));
    } else if (t.startsWith('-D')) {
      const def = t.length > 2 ? t.slice(2) : next();
      const eq = def.indexOf('=');
      if (eq < 0) into.defines[def] = null;
      else into.defines[def.slice(0, eq)] = def.slice(eq + 1);
    } else if (t.startsWith('-G')) {
      const p = t.length > 2 ? t.slice(2) : next();
      const eq = p.indexOf('=');
      if (eq < 0) throw new DesignError('filelist', `${where(i)}: parameter override '${p}' needs NAME=VALUE`);
      into.params[p.slice(0, eq)] = p.slice(eq + 1);
    } else if (t.startsWith('-') || t.startsWith('+')) {
      let pass: string[] | null = null;
      try {
        pass = checkVerilatorArgs([t]);
      } catch {
        pass = null;
      }
      if (pass) (into.verilatorArgs ??= []).push(...pass);
      else warnings.push(`${where(i)}: option '${t}' is not understood and was ignored`);
    } else {
      into.files.push(resolvePath(t, i));
    }
  }
  if (depth === 0) {
    for (const { dir, where: w } of ctx.libraryDirs) into.libraryFiles.push(...libraryDirFiles(dir, ctx.libext, w));
    into.libraryFiles = [...new Set(into.libraryFiles)];
  }
}
