// The editor's side of the project file (`chorus.json`, read and written by core/design/project.ts):
// a project guessed from a folder the user picked, and where a new testbench goes. Pure: no
// vscode import.
import { existsSync, readdirSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import type { ProjectFile } from '../core/run/types.js';
import { looksLikeTestbench, findManifest, readIfReadable } from '../core/run/sources.js';

export const HDL_EXT = /\.(sv|v|svh|vh)$/i;
const SOURCE_EXT = /\.(sv|v)$/i;

/** A project guessed from a folder: its manifest (a FuseSoC .core or a Bender.yml: then it stands
 * for the files), else a `files.f` if there is one, else its design sources (testbenches left
 * out) and folders named include/inc. */
export function inferProject(dir: string, read: (p: string) => string | undefined = readIfReadable, primary?: string): ProjectFile {
  let manifest: string | null = null;
  try {
    manifest = findManifest(dir);
  } catch {
    /* several manifests: the user names one; infer from the files meanwhile */
  }
  if (manifest) return { files: [], manifest: basename(manifest) };
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

/** `tb_<top>.sv` in `dir`, or the first free `tb_<top>_N.sv`. */
export function freeTestbenchPath(dir: string, top: string, exists: (p: string) => boolean = existsSync): string {
  const base = join(dir, `tb_${top}.sv`);
  if (!exists(base)) return base;
  for (let i = 1; ; i++) {
    const c = join(dir, `tb_${top}_${i}.sv`);
    if (!exists(c)) return c;
  }
}
