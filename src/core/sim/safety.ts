// Static check of an untrusted testbench before it becomes a native executable. It rejects what
// can escape the run directory in any simulator: shell escapes ($system), foreign code (DPI,
// Verilator's $c and `systemc_* blocks), file writes outside the run directory, and file READS
// outside the run and design directories (`include, $readmem*, $fopen): whatever a testbench
// reads it can print, and what it prints travels back to the user, the reward service's client
// and the model endpoint. Paths built at run time cannot be judged statically; the OS jail
// (jail.ts) shows the simulation nothing else to read or write, and without a jail such paths are
// refused too.
import { existsSync, realpathSync } from 'node:fs';
import { isAbsolute, join, resolve, sep } from 'node:path';
import type { Diagnostic } from './result.js';
import { blankComments } from '../design/lexer.js';

function position(src: string, offset: number): { line: number; column: number } {
  const before = src.slice(0, offset);
  const line = before.split('\n').length;
  return { line, column: offset - before.lastIndexOf('\n') };
}

interface Rule {
  code: string;
  pattern: RegExp;
  message: string;
  suggestion: string;
}

const RULES: Rule[] = [
  {
    code: 'CHORUS-SYSTEM',
    pattern: /\$system\b/g,
    message: '$system runs a shell command on the host; testbenches may not do that',
    suggestion: 'Remove the $system call; drive the DUT from SystemVerilog only.',
  },
  {
    code: 'CHORUS-DPI',
    pattern: /\b(?:import|export)\s+"DPI(?:-C)?"/g,
    message: 'DPI imports/exports link foreign code into the simulation; testbenches may not do that',
    suggestion: 'Remove the DPI declaration and write the stimulus in SystemVerilog.',
  },
  {
    code: 'CHORUS-CCODE',
    pattern: /\$c(?:\d+)?\s*\(|`systemc_\w+/g,
    message: "Verilator's inline C++ ($c, `systemc_*) would run arbitrary host code; testbenches may not use it",
    suggestion: 'Remove the inline C++; use plain SystemVerilog.',
  },
];

/** System tasks that name a file: the path is the first argument, $fopen's mode the second. */
const FILE_TASKS =
  /\$(fopen|readmemh|readmemb|writememh|writememb|dumpfile|fdumpfile)\s*\(\s*("(?:[^"\\\n]|\\.)*"|[^,)]*)\s*(?:,\s*("(?:[^"\\\n]|\\.)*"|[^)]*))?\)/y;
/** Every mention of those tasks: a mention FILE_TASKS cannot read is refused rather than skipped. */
const FILE_TASK_NAMES = /\$(fopen|readmemh|readmemb|writememh|writememb|dumpfile|fdumpfile)\b/g;
const READERS = new Set(['readmemh', 'readmemb']);
/** `include "file", `include <file>, or `include followed by anything else (a macro). */
const INCLUDE = /`include\b[ \t]*("(?:[^"\n])*"|<[^>\n]*>|[^\s]*)/g;

/** Decodes a SystemVerilog string literal body the way the simulator will (\056 is '.', \/ is '/'). */
export function decodeSvString(body: string): string {
  return body.replace(/\\(x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)/g, (_, e: string) => {
    if (e[0] === 'x') return String.fromCharCode(parseInt(e.slice(1), 16));
    if (/^[0-7]/.test(e)) return String.fromCharCode(parseInt(e, 8));
    return ({ n: '\n', t: '\t', v: '\v', f: '\f', a: '\x07' } as Record<string, string>)[e] ?? e;
  });
}

function isSafeRelativePath(p: string): boolean {
  return p.length > 0 && !p.startsWith('/') && !p.startsWith('~') && !p.split(/[\\/]/).includes('..') && !p.includes('\0');
}

/** Where the testbench's relative paths land, and which directories it may read. */
export interface SafetyPaths {
  /** The run directory: the working directory of every step, the testbench's own directory
   * (absent before it exists: it then holds nothing but the testbench). */
  runDir?: string;
  /** The design's include directories (`include search path after the testbench's directory). */
  includeDirs: string[];
  /** Directories (realpaths) a resolved path may end in: the design directories, the toolchain. */
  roots: string[];
}

export interface SafetyOptions {
  /** True when an OS jail confines what the executable can read and write. */
  jailed: boolean;
  file: string;
  /** With these, a relative `include is followed to the file it names (symlinks included), which
   * must lie inside the run or design directories. */
  paths?: SafetyPaths;
}

function realOrNull(p: string): string | null {
  try {
    return realpathSync(p);
  } catch {
    return null;
  }
}

/** True when `p` (absolute) lies in the run directory or one of the roots, after symlinks. */
export function insideRoots(p: string, paths: SafetyPaths): boolean {
  const target = realOrNull(p) ?? resolve(p);
  const roots = [...(paths.runDir ? [paths.runDir] : []), ...paths.roots].map((r) => realOrNull(r) ?? resolve(r));
  return roots.some((r) => target === r || target.startsWith(r.endsWith(sep) ? r : r + sep));
}

/** Why an `include of `name` is refused, or null when it is fine. */
function includeProblem(name: string, paths: SafetyPaths | undefined): string | null {
  if (name.includes('\\') || name.includes('$')) return `the file name '${name}' holds a backslash or '$'`;
  if (!isSafeRelativePath(name)) return `'${name}' is outside the testbench and design directories`;
  if (name.split('/').some((seg) => seg.startsWith('.') && seg !== '.')) return `'${name}' names a hidden file`;
  if (!paths) return null;
  for (const base of [...(paths.runDir ? [paths.runDir] : []), ...paths.includeDirs]) {
    const at = join(base, name);
    if (existsSync(at) && !insideRoots(at, paths))
      return `'${name}' (found in ${base}) leads outside the design directories (a symbolic link?)`;
  }
  return null;
}

export function checkTestbench(src: string, opts: SafetyOptions): Diagnostic[] {
  const code = blankComments(src, true);
  const withStrings = blankComments(src, false);
  const out: Diagnostic[] = [];
  const add = (offset: number, length: number, rule: Omit<Rule, 'pattern'>): void => {
    const { line, column } = position(src, offset);
    out.push({
      file: opts.file,
      origin: 'testbench',
      line,
      column,
      endColumn: column + length,
      severity: 'error',
      code: rule.code,
      message: rule.message,
      suggestion: rule.suggestion,
      stage: 'check',
    });
  };
  for (const rule of RULES) {
    // The DPI rule needs the "DPI-C" string itself; the others must not fire inside strings.
    const text = rule.code === 'CHORUS-DPI' ? withStrings : code;
    for (const m of text.matchAll(rule.pattern)) add(m.index ?? 0, m[0].length, rule);
  }
  for (const m of withStrings.matchAll(INCLUDE)) {
    if (code.slice(m.index, (m.index ?? 0) + 8) !== '`include') continue;
    const arg = m[1];
    const literal = /^"(.*)"$|^<(.*)>$/s.exec(arg);
    const problem = literal
      ? includeProblem(literal[1] ?? literal[2], opts.paths)
      : `its file name is not a string literal ('${arg.slice(0, 40)}'), so it cannot be checked before the preprocessor opens it`;
    if (problem) {
      add(m.index ?? 0, m[0].length, {
        code: 'CHORUS-FILE',
        message: `\`include ${literal ? `${arg} ` : ''}refused: ${problem}`,
        suggestion:
          "Include only the design's headers by a plain relative name (as in the design's own `include lines), or paste the declarations into the testbench.",
      });
    }
  }
  for (const t of code.matchAll(FILE_TASK_NAMES)) {
    FILE_TASKS.lastIndex = t.index ?? 0;
    const m = FILE_TASKS.exec(withStrings);
    if (!m) {
      // $dumpfile; and friends without arguments write the default name in the run directory.
      if (!/^\$(fopen|readmem)/.test(t[0])) continue;
      add(t.index ?? 0, t[0].length, {
        code: 'CHORUS-FILE',
        message: `${t[0]} without a readable argument list: its file name cannot be checked`,
        suggestion: `Write the call as ${t[0]}("name", ...) with a plain relative file name.`,
      });
      continue;
    }
    const task = m[1];
    const pathArg = m[2].trim();
    const mode = (m[3] ?? '').trim();
    const reads = READERS.has(task) || (task === 'fopen' && /^"rb?"$/.test(mode));
    const length = m[0].length;
    const literal = /^"(.*)"$/s.exec(pathArg);
    if (literal) {
      const path = decodeSvString(literal[1]);
      if (!isSafeRelativePath(path)) {
        add(
          m.index ?? 0,
          length,
          reads
            ? {
                code: 'CHORUS-FILE',
                message: `$${task} reads '${path}', outside the run and design directories`,
                suggestion:
                  'Read only files of the run directory by a plain relative name (no leading /, no ..), or put the data in the testbench.',
              }
            : {
                code: 'CHORUS-FILE',
                message: `$${task} writes to '${path}', outside the run directory`,
                suggestion: 'Use a plain relative file name (no leading /, no ..) or drop the file output.',
              },
        );
      }
    } else if (!opts.jailed) {
      add(m.index ?? 0, length, {
        code: 'CHORUS-FILE',
        message: `$${task} with a file name computed at run time cannot be confined without an OS jail (bubblewrap is not available)`,
        suggestion: 'Use a literal relative file name, or install bubblewrap so the run is jailed.',
      });
    }
  }
  if (!opts.jailed) {
    // Without a jail a path can also reach a file-opening task of the DUT: a parameter
    // (`.INIT_FILE("/etc/shadow")`) or a task argument. Refuse every string that names a path
    // outside the run directory, wherever it appears (paths built at run time are refused above).
    const flagged = new Set(out.filter((d) => d.code === 'CHORUS-FILE').map((d) => d.line));
    for (const m of withStrings.matchAll(/"((?:[^"\\\n]|\\.)*)"/g)) {
      const text = decodeSvString(m[1]);
      if (/\s/.test(text) || !/^(?:\/[\w.]|~\/|\.\.(?:\/|$))|\/\.\.(?:\/|$)/.test(text)) continue;
      const { line } = position(src, m.index ?? 0);
      if (flagged.has(line)) continue;
      add(m.index ?? 0, m[0].length, {
        code: 'CHORUS-FILE',
        message: `the string '${text}' names a path outside the run directory; without an OS jail it could reach a file-opening task or parameter of the design`,
        suggestion: 'Use plain relative file names (no leading /, no ..), or install bubblewrap so the run is jailed.',
      });
    }
  }
  return out.sort((a, b) => a.line - b.line || a.column - b.column);
}

/** Maps each line of `verilator -E` output back to its source file and line (`line directives). */
export function preprocessedLineMap(text: string): Array<{ file: string; line: number } | null> {
  const out: Array<{ file: string; line: number } | null> = [];
  let file = '';
  let line = 1;
  for (const l of text.split('\n')) {
    const d = /^`line\s+(\d+)\s+"([^"]*)"/.exec(l);
    if (d) {
      line = Number(d[1]);
      file = d[2];
      out.push(null);
      continue;
    }
    out.push({ file, line });
    line++;
  }
  return out;
}

/**
 * The same check on the preprocessed text, so macros, token pasting and `include cannot hide a
 * call; positions are mapped back to the line that expanded to it. Every file the preprocessor
 * opened (its `line markers) must be the testbench or lie in the run or design directories: a
 * macro can build an `include the plain-text check never sees.
 */
export function checkPreprocessed(preprocessed: string, opts: SafetyOptions): Diagnostic[] {
  const map = preprocessedLineMap(preprocessed);
  const found = checkTestbench(preprocessed, opts).map((d) => {
    const at = map[d.line - 1];
    const file = at?.file ? (at.file.split('/').pop() ?? opts.file) : opts.file;
    return { ...d, file, line: at?.line ?? d.line, column: 1, endColumn: undefined, message: `${d.message} (after macro expansion)` };
  });
  return [...includedFileProblems(preprocessed, opts), ...found];
}

/** Files the preprocessor entered (`line N "file" 1) that are not the testbench's or the design's. */
export function includedFileProblems(preprocessed: string, opts: SafetyOptions): Diagnostic[] {
  if (!opts.paths) return [];
  const out: Diagnostic[] = [];
  const seen = new Set<string>();
  let site = { file: opts.file, line: 1 };
  let last = { file: opts.file, line: 1 };
  let text = 0;
  for (const l of preprocessed.split('\n')) {
    const d = /^`line\s+(\d+)\s+"([^"]*)"\s+(\d)/.exec(l);
    if (!d) {
      text++;
      continue;
    }
    const [, lineNo, file, level] = d;
    // The `include sits on the last text line before the marker, or on the marker's own line.
    if (level === '1') site = { file: last.file, line: Math.max(1, last.line + text - (text ? 1 : 0)) };
    last = { file, line: Number(lineNo) };
    text = 0;
    if (level !== '1' || seen.has(file)) continue;
    seen.add(file);
    const abs = isAbsolute(file) || !opts.paths.runDir ? resolve(file) : resolve(opts.paths.runDir, file);
    if (insideRoots(abs, opts.paths)) continue;
    out.push({
      file: site.file.split('/').pop() ?? opts.file,
      origin: 'testbench',
      line: site.line,
      column: 1,
      severity: 'error',
      code: 'CHORUS-FILE',
      message: `the preprocessor was made to include '${file}', outside the testbench and design directories (after macro expansion)`,
      suggestion: "Include only the design's headers, by a plain relative name written as a string literal.",
      stage: 'check',
    });
  }
  return out;
}
