// From what a user types (files, -f lists, -I, -D, -G, --top) to a checked DesignSpec and its
// introspection. One entry point for the CLI, the editor and the services.
import { resolve } from 'node:path';
import { emptyDesign, type DesignInfo, type DesignSpec } from './types.js';
import { readFileList } from './filelist.js';
import { introspect } from './introspect.js';
import { DesignError } from './errors.js';

export interface DesignOptions {
  files: string[];
  fileLists?: string[];
  includeDirs?: string[];
  /** `NAME` or `NAME=VALUE`. */
  defines?: string[];
  /** `NAME=VALUE`. */
  params?: string[];
  top?: string;
  cwd?: string;
}

export function designFromOptions(o: DesignOptions): { design: DesignSpec; warnings: string[] } {
  const cwd = o.cwd ?? process.cwd();
  const d = emptyDesign();
  const warnings: string[] = [];
  for (const f of o.fileLists ?? []) readFileList(f, false, d, warnings, cwd);
  d.files.push(...o.files.map((f) => resolve(cwd, f)));
  d.includeDirs.push(...(o.includeDirs ?? []).map((f) => resolve(cwd, f)));
  for (const def of o.defines ?? []) {
    const eq = def.indexOf('=');
    if (eq < 0) d.defines[def] = null;
    else d.defines[def.slice(0, eq)] = def.slice(eq + 1);
  }
  for (const p of o.params ?? []) {
    const eq = p.indexOf('=');
    if (eq <= 0) throw new DesignError('filelist', `parameter override '${p}' must be NAME=VALUE (e.g. -G WIDTH=16)`);
    d.params[p.slice(0, eq)] = p.slice(eq + 1);
  }
  if (o.top) d.top = o.top;
  d.files = [...new Set(d.files)];
  return { design: d, warnings };
}

export async function loadDesign(o: DesignOptions, signal?: AbortSignal): Promise<{ design: DesignSpec; info: DesignInfo; warnings: string[] }> {
  const { design, warnings } = designFromOptions(o);
  const info = await introspect(design, { signal });
  return { design: info.design, info, warnings: [...warnings, ...info.warnings] };
}
