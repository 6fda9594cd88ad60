// Whose file a name is, as the compile steps, the run and the coverage database name files: the
// testbench's, the design's, or another's. Every message and coverage point comes from the
// candidate's own build and run, so a name in them is the candidate's word, never a path to open:
// only files the host itself resolved as the design's before the build are ever read, and a
// message quoting any other file is withheld (diagnostics.ts withholdForeignSource).
import { basename, isAbsolute, join, relative, resolve, sep } from 'node:path';
import type { DesignSpec } from '../../../design/types.js';
import { insideRoots, type SafetyPaths } from '../../safety.js';
import { cacheRoot } from '../../../util/cache.js';
import type { FileClassifier } from '../diagnostics.js';
import { readSource } from './candidate.js';

export interface FileRoles {
  /** testbench / dut / other, with the file as messages should show it. */
  classify: FileClassifier;
  /** A design file the host resolved before the build: a design file itself, or a visible
   * (no dot-entry on the way) file of an include directory inside the design's roots. */
  knownDesignFile(file: string): boolean;
  /** The testbench, a known design file, or one of the toolchain's own files: what a coverage
   * point may name. */
  knownFile(file: string): boolean;
  /** A known design file's text (read once); undefined for any other file, never opened. */
  readDesignFile(file: string): string | undefined;
  /** What a tool's message may quote: the testbench's, the design's, the toolchain's and the
   * cache's files (the runtime and DUT library sit there). */
  ownOrToolchain(file: string): boolean;
}

/**
 * The roles of file names in one run directory. `designRoots`: the realpaths the design view
 * shows (jail.ts designView); `toolRoot`: the Verilator installation's root.
 */
export function fileRoles(design: DesignSpec, runDir: string, tbName: string, designRoots: string[], toolRoot: string): FileRoles {
  const dutFiles = new Set([...design.files, ...design.libraryFiles].map((f) => resolve(f)));
  const dutByBase = new Map<string, string[]>();
  for (const f of dutFiles) dutByBase.set(basename(f), [...(dutByBase.get(basename(f)) ?? []), f]);
  const classify: FileClassifier = (file) => {
    if (file === tbName || file === join(runDir, tbName)) return { file: tbName, origin: 'testbench' };
    const abs = resolve(runDir, file);
    if (dutFiles.has(abs)) return { file: abs, origin: 'dut' };
    // Run-time messages name files by their base name only.
    const same = !file.includes('/') ? dutByBase.get(file) : undefined;
    if (same?.length === 1) return { file: same[0], origin: 'dut' };
    if (design.includeDirs.some((d) => abs.startsWith(resolve(d) + '/'))) return { file: abs, origin: 'dut' };
    return { file, origin: 'other' };
  };
  const trusted: SafetyPaths = { runDir, includeDirs: [], roots: [...designRoots, toolRoot, cacheRoot()] };
  // The files the host itself resolved before the build: the design's (its files, and the
  // visible, non-hidden files of its include directories), the testbench, the toolchain's own.
  // Only design files are ever opened on the simulation's word.
  const knownDesignFile = (file: string): boolean => {
    const c = classify(file);
    if (c.origin !== 'dut') return false;
    const abs = resolve(runDir, c.file);
    if (dutFiles.has(abs)) return true;
    const shown = design.includeDirs.some((d) => {
      const rel = relative(resolve(d), abs);
      return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) && !rel.split(sep).some((seg) => seg.startsWith('.'));
    });
    return shown && insideRoots(abs, { includeDirs: [], roots: designRoots }, { visibleOnly: true });
  };
  const knownFile = (file: string): boolean =>
    classify(file).origin === 'testbench' ||
    knownDesignFile(file) ||
    insideRoots(resolve(runDir, file), { includeDirs: [], roots: [toolRoot] });
  const designTexts = new Map<string, string | undefined>();
  const readDesignFile = (file: string): string | undefined => {
    if (!knownDesignFile(file)) return undefined;
    const abs = resolve(runDir, classify(file).file);
    if (!designTexts.has(abs)) designTexts.set(abs, readSource(abs) || undefined);
    return designTexts.get(abs);
  };
  const ownOrToolchain = (file: string): boolean => classify(file).origin !== 'other' || insideRoots(resolve(runDir, file), trusted);
  return { classify, knownDesignFile, knownFile, readDesignFile, ownOrToolchain };
}
