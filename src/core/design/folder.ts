// A folder as a design: its RTL sources, found the way an engineer would pick them by hand. Test
// benches and simulation models are left out by their usual names and folders (tb/, test/, tests/,
// sim/, verif/, dv/ ...), vendored and retired code by theirs (vendor/, third_party/, deprecated/,
// node_modules/; hidden folders such as .git/ and build output silently), and every file left
// out is listed with the reason, so that a wrong guess is visible and fixable (name the file, or
// write chorus.json). Headers (.svh/.vh) are not compiled; their folders become include folders.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { DesignError } from './errors.js';

export const SOURCE_EXT = /\.(sv|v)$/i;
export const HEADER_EXT = /\.(svh|vh)$/i;

/** Folders whose contents are verification code, not the design. */
const EXCLUDED_DIRS = new Set([
  'tb',
  'tbs',
  'test',
  'tests',
  'testbench',
  'testbenches',
  'sim',
  'simulation',
  'verif',
  'verification',
  'dv',
  'bench',
]);
/** Folders that hold other people's copies or retired code, not the design's own sources: skipped
 * and listed (name the folder, or its files, to use them). */
const VENDORED_DIRS = new Map<string, string>([
  ['vendor', 'vendored copies'],
  ['vendored', 'vendored copies'],
  ['third_party', 'vendored copies'],
  ['third-party', 'vendored copies'],
  ['thirdparty', 'vendored copies'],
  ['deprecated', 'deprecated code'],
  ['obsolete', 'deprecated code'],
  ['old', 'deprecated code'],
  ['node_modules', 'vendored copies'],
  ['fusesoc_libraries', 'vendored copies'],
]);
/** Folders that hold tool output, never sources: skipped silently (as are hidden ones, .git). */
const SKIPPED_DIRS = new Set(['build', 'obj_dir', 'chorus-out']);

/** A testbench by name (`tb_x.sv`, `x_tb.sv`, `test_x.sv`) or by content (a module without ports). */
export function looksLikeTestbench(path: string, text?: string): boolean {
  return testbenchReason(path, text) !== null;
}

function testbenchReason(path: string, text?: string): string | null {
  const name = basename(path).toLowerCase();
  if (/^(tb|test)_|_(tb|test)\.s?v$|^tb\.s?v$|^testbench/.test(name)) return 'testbench by its name';
  if (text === undefined) return null;
  const modules = [...text.matchAll(/^\s*module\s+(?:automatic\s+)?\w+\s*(#\s*\([\s\S]*?\)\s*)?(\(|;)/gm)];
  return modules.length > 0 && modules.every((m) => m[2] === ';') ? 'a module without ports (a testbench)' : null;
}

export interface FolderDesign {
  /** Design sources, absolute, sorted (compile order is settled later by orderFiles). */
  files: string[];
  /** Folders holding headers, absolute. */
  includeDirs: string[];
  /** What was left out and why, paths relative to the folder. */
  excluded: Array<{ path: string; reason: string }>;
  /** The vendored and retired folders left out, absolute: a module the design instantiates and only
   * one of them defines is still taken from there (design/discover.ts, like -y). */
  libraryDirs: string[];
}

export interface FolderOptions {
  /** Most entries looked at (a folder named by mistake, e.g. a home directory, must not hang). */
  maxEntries?: number;
  maxDepth?: number;
  read?: (p: string) => string | undefined;
}

export function collectFolder(dir: string, o: FolderOptions = {}): FolderDesign {
  const maxEntries = o.maxEntries ?? 20000;
  const maxDepth = o.maxDepth ?? 8;
  const read = o.read ?? readIfReadable;
  const out: FolderDesign = { files: [], includeDirs: [], excluded: [], libraryDirs: [] };
  const headerDirs = new Set<string>();
  let seen = 0;
  const walk = (d: string, depth: number): void => {
    let entries: string[];
    try {
      entries = readdirSync(d).sort();
    } catch {
      return;
    }
    for (const e of entries) {
      if (++seen > maxEntries) {
        throw new DesignError(
          'missing-file',
          `${dir} holds more than ${maxEntries} entries: name the design's own folder (e.g. its rtl/ or src/), a file list (-f) or a manifest (.core, Bender.yml)`,
        );
      }
      const p = join(d, e);
      let isDir: boolean;
      try {
        isDir = statSync(p).isDirectory();
      } catch {
        continue;
      }
      const rel = relative(dir, p);
      if (isDir) {
        if (e.startsWith('.') || SKIPPED_DIRS.has(e)) continue;
        if (EXCLUDED_DIRS.has(e.toLowerCase())) {
          out.excluded.push({ path: rel + '/', reason: 'verification folder' });
          continue;
        }
        const vendored = VENDORED_DIRS.get(e.toLowerCase());
        if (vendored) {
          out.excluded.push({ path: rel + '/', reason: vendored });
          out.libraryDirs.push(p);
          continue;
        }
        if (depth < maxDepth) walk(p, depth + 1);
        continue;
      }
      if (HEADER_EXT.test(e)) {
        headerDirs.add(d);
        continue;
      }
      if (!SOURCE_EXT.test(e)) continue;
      const why = testbenchReason(p, read(p));
      if (why) out.excluded.push({ path: rel, reason: why });
      else out.files.push(p);
    }
  };
  walk(dir, 0);
  out.includeDirs = [...headerDirs].sort();
  if (out.files.length === 0) {
    const left = out.excluded.length ? ` (left out: ${out.excluded.map((x) => x.path).join(', ')})` : '';
    throw new DesignError(
      'missing-file',
      `no design sources (.sv/.v) in ${dir}${left}: name the design files, or the folder that holds them`,
    );
  }
  return out;
}

/** One line for the user: what a folder gave, and what it left out. */
export function describeFolder(dir: string, f: FolderDesign): string[] {
  const notes = [
    `${dir}: ${f.files.length} design file${f.files.length === 1 ? '' : 's'}${f.includeDirs.length ? `, include folders ${f.includeDirs.map((d) => relative(dir, d) || '.').join(', ')}` : ''}`,
  ];
  if (f.excluded.length) notes.push(`left out of ${dir}: ${f.excluded.map((x) => `${x.path} (${x.reason})`).join(', ')}`);
  return notes;
}

/** A file's text, or undefined when it cannot be read (gone, a folder, no permission). */
export function readIfReadable(p: string): string | undefined {
  try {
    return readFileSync(p, 'utf8');
  } catch {
    return undefined;
  }
}
