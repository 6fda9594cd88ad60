// The design's data files: a `$readmemh("init.hex", mem)` in a design file names its file relative
// to the simulator's working directory, which a designer's own flow sets to the design's folder.
// The run's working directory is the run directory, so the host, before anything runs, looks each
// literal name of the design's $readmem calls up in the design's folders (the folder of the file
// that holds the call first, then the other design folders, then the include directories) and
// copies what it finds into the run directory at that relative position. Only regular, visible
// files inside the design view are copied (the design's own data, never another file); a name
// found nowhere is an error diagnostic of the design's, said before the run, not a run-time warning
// that scrolls by. Names the host cannot resolve this way (computed names, `..`) are left to the
// simulator, as before.
import { copyFileSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, normalize, resolve } from 'node:path';
import type { DesignSpec } from '../../../design/types.js';
import type { Diagnostic } from '../../result.js';
import { blankComments } from '../../../design/lexer.js';
import { insideRoots } from '../../safety.js';
import { readSource } from './candidate.js';

export interface DataFiles {
  /** Relative names copied into the run directory. */
  copied: string[];
  /** One error per $readmem file no design folder holds. */
  missing: Diagnostic[];
}

/** A copy larger than this is not made (the run directory has its own cap): a warning instead. */
const COPY_LIMIT_BYTES = 64 * 1024 * 1024;

export interface ReadmemCall {
  file: string;
  line: number;
  column: number;
  task: string;
  name: string;
}

/** The $readmemh/$readmemb calls with a literal file name in `text` (comments ignored). */
export function readmemCalls(file: string, text: string): ReadmemCall[] {
  const code = blankComments(text);
  const out: ReadmemCall[] = [];
  for (const m of code.matchAll(/\$(readmem[hb])\s*\(\s*"((?:[^"\\\n]|\\.)*)"/g)) {
    const before = code.slice(0, m.index);
    const line = before.split('\n').length;
    const column = m.index - before.lastIndexOf('\n');
    out.push({ file, line, column, task: m[1], name: m[2] });
  }
  return out;
}

/** The $readmem calls of each design file, by path, size and mtime: every candidate of a design
 * stages the same data files, so each file is read and scanned once per version, not per run. */
const scanned = new Map<string, { stamp: string; calls: ReadmemCall[] }>();

function callsOf(src: string): ReadmemCall[] {
  let stamp: string;
  try {
    const st = statSync(src);
    stamp = `${st.size}:${st.mtimeMs}`;
  } catch {
    return []; // unreadable: no calls (readSource reads it as '')
  }
  const hit = scanned.get(src);
  if (hit?.stamp === stamp) return hit.calls;
  const calls = readmemCalls(src, readSource(src));
  if (scanned.size > 256) scanned.clear();
  scanned.set(src, { stamp, calls });
  return calls;
}

/** A plain relative name the host may place in the run directory: no `..`, no hidden segment. */
function placeable(name: string): boolean {
  if (!name || isAbsolute(name) || name.includes('\\') || name.includes('\0')) return false;
  const n = normalize(name);
  return !n.split('/').some((seg) => seg === '..' || (seg.startsWith('.') && seg !== '.'));
}

function isFile(p: string): boolean {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * Copies the design's $readmem data files into `runDir` (see the header). `roots`: the realpaths
 * the design view shows (jail.ts designView); a file outside them is never read.
 */
export function stageDataFiles(design: DesignSpec, runDir: string, roots: string[]): DataFiles {
  const sources = [...design.files, ...design.libraryFiles].map((f) => resolve(f));
  const folders = [...new Set([...sources.map((f) => dirname(f)), ...design.includeDirs.map((d) => resolve(d))])];
  const copied: string[] = [];
  const missing: Diagnostic[] = [];
  const seen = new Set<string>();
  for (const src of sources) {
    for (const call of callsOf(src)) {
      const name = call.name;
      if (seen.has(name)) continue;
      seen.add(name);
      if (isAbsolute(name)) {
        if (!existsSync(name)) missing.push(notFound(call, [dirname(name)]));
        continue;
      }
      if (!placeable(name)) continue;
      const order = [dirname(src), ...folders.filter((f) => f !== dirname(src))];
      const found = order.map((d) => join(d, name)).find((p) => isFile(p));
      if (!found) {
        missing.push(notFound(call, order));
        continue;
      }
      // The design's own visible data only: never a file the design view does not show.
      if (!insideRoots(found, { includeDirs: [], roots }, { visibleOnly: true })) continue;
      if (statSync(found).size > COPY_LIMIT_BYTES) continue;
      const to = join(runDir, normalize(name));
      if (existsSync(to)) continue;
      mkdirSync(dirname(to), { recursive: true });
      copyFileSync(found, to);
      copied.push(normalize(name));
    }
  }
  return { copied, missing };
}

function notFound(call: ReadmemCall, looked: string[]): Diagnostic {
  return {
    file: call.file,
    origin: 'dut',
    line: call.line,
    column: call.column,
    severity: 'error',
    code: 'CHORUS-READMEM',
    message: `$${call.task} file '${call.name}' not found (looked in ${looked.join(', ')}): the memory is not initialized`,
    suggestion: `Put '${call.name}' beside ${call.file}, or name it relative to the design's folder.`,
    stage: 'run',
  };
}
