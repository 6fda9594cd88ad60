// Compile order: a package must be compiled before any file that uses it. Users hand us files in
// any order (globs, editor selections); we put package files first, in dependency order, and keep
// everything else as given. Cycles and packages nobody declares are left for the front end to
// report (introspect.ts turns that into a "missing package" error naming the package).
import { readFileSync } from 'node:fs';
import { scanUnits, type FileUnits } from './lexer.js';

export interface OrderResult {
  files: string[];
  /** Packages used by some file but declared by none of them. */
  undeclaredPackages: string[];
}

export function orderFiles(files: string[], read: (f: string) => string = (f) => readFileSync(f, 'utf8')): OrderResult {
  const units = new Map<string, FileUnits>();
  for (const f of files) {
    try {
      units.set(f, scanUnits(read(f)));
    } catch {
      units.set(f, { modules: [], packages: [], interfaces: [], usesPackages: [], instantiated: [], macros: {}, usesMacros: [] });
    }
  }
  const declaredBy = new Map<string, string>();
  for (const [f, u] of units) for (const p of u.packages) if (!declaredBy.has(p)) declaredBy.set(p, f);

  const ordered: string[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (f: string): void => {
    if (state.get(f)) return; // done, or a cycle: keep the given order
    state.set(f, 'visiting');
    const u = units.get(f);
    for (const p of u?.usesPackages ?? []) {
      const dep = declaredBy.get(p);
      if (dep && dep !== f) visit(dep);
    }
    state.set(f, 'done');
    ordered.push(f);
  };
  // Package files first (in dependency order), then the rest in the order given.
  for (const f of files) if ((units.get(f)?.packages.length ?? 0) > 0) visit(f);
  for (const f of files) visit(f);

  const used = new Set<string>();
  for (const u of units.values()) for (const p of u.usesPackages) used.add(p);
  const localTypes = new Set<string>();
  for (const u of units.values()) for (const m of [...u.modules, ...u.interfaces]) localTypes.add(m);
  const undeclaredPackages = [...used].filter((p) => !declaredBy.has(p) && !localTypes.has(p));
  return { files: ordered, undeclaredPackages };
}
