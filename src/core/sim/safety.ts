// Static check of an untrusted testbench before it becomes a native executable. It rejects what
// can escape the run directory in any simulator: shell escapes ($system), foreign code (DPI,
// Verilator's $c and `systemc_* blocks), file writes outside the run directory, and file READS
// outside the run and design directories (`include, $readmem*, $fopen): whatever a testbench
// reads it can print, and what it prints travels back to the user, the reward service's client
// and the model endpoint. Paths built at run time cannot be judged statically; the OS jail
// (jail.ts) shows the simulation nothing else to read or write, and without a jail such paths are
// refused too. It also rejects what would make the coverage figure lie: a `verilator_config
// block (coverage_off on the design's files), a `line directive that names another file (the
// testbench's coverage points would claim to be the design's), and a module, interface or
// package that redefines one of the design's.
//
// The check reads tokens the way Verilator does (design/svTokens.ts), in two passes over text:
// checkTestbench on the testbench as written (exact positions), checkPreprocessed on Verilator's
// own preprocessed output (`verilator -E` with the build's flags, so macros, `ifdef and `include
// are resolved as in the build). The Verilator backend adds a third pass on Verilator's parse of
// the exact build (verilator/netlistCheck.ts).
import { existsSync, realpathSync } from 'node:fs';
import { isAbsolute, join, resolve, sep } from 'node:path';
import type { Diagnostic } from './result.js';
import {
  blankSpans,
  decodeSvString,
  scanPreprocessor,
  significant,
  tokenize,
  withoutComments,
  type Span,
  type Token,
} from '../design/svTokens.js';

export { decodeSvString };

function position(src: string, offset: number): { line: number; column: number } {
  const before = src.slice(0, offset);
  const line = before.split('\n').length;
  return { line, column: offset - before.lastIndexOf('\n') };
}

/** What a refusal says: its code, what was refused and why, and what to write instead. */
export interface Refusal {
  code: string;
  message: string;
  suggestion: string;
}

export const REFUSALS = {
  system: {
    code: 'CHORUS-SYSTEM',
    message: '$system runs a shell command on the host; testbenches may not do that',
    suggestion: 'Remove the $system call; drive the DUT from SystemVerilog only.',
  },
  dpi: {
    code: 'CHORUS-DPI',
    message: 'DPI imports/exports link foreign code into the simulation; testbenches may not do that',
    suggestion: 'Remove the DPI declaration and write the stimulus in SystemVerilog.',
  },
  ccode: {
    code: 'CHORUS-CCODE',
    message: "Verilator's inline C++ ($c, `systemc_*) would run arbitrary host code; testbenches may not use it",
    suggestion: 'Remove the inline C++; use plain SystemVerilog.',
  },
  config: {
    code: 'CHORUS-CONFIG',
    message:
      "a `verilator_config block changes how Verilator builds the design (coverage_off on the design's files shrinks the coverage measured); testbenches may not contain one",
    suggestion: 'Remove the `verilator_config ... `verilog block; the testbench needs no Verilator configuration.',
  },
  redefine: (name: string): Refusal => ({
    code: 'CHORUS-REDEFINE',
    message: `the testbench declares '${name}', a name the design declares: it would replace the design's own '${name}' (and its coverage)`,
    suggestion: `Rename the testbench's '${name}' (tb_${name}, say) and instantiate the design's '${name}' instead of redefining it.`,
  }),
  line: (what: string): Refusal => ({
    code: 'CHORUS-LINE',
    message: `${what}: the testbench's code would claim to be in that file, and its coverage points to be the design's`,
    suggestion: 'Remove the `line directive; the testbench needs none.',
  }),
  paste: (what: string): Refusal => ({
    code: 'CHORUS-LINE',
    message: `${what} pastes text onto a macro or directive name: that can assemble a \`line directive (testbench code claiming to be the design's) the check cannot read before preprocessing`,
    suggestion: 'Paste plain identifiers only (a``b), or write the text out.',
  }),
  pragma: {
    code: 'CHORUS-PRAGMA',
    message:
      "a `pragma in a macro, or on a line with a comment mark, a quote or a backtick: Verilator's build passes the rest of that line on unread but its -E pass reads it, so the check and the build would see different code",
    suggestion: 'Remove the `pragma (Verilator ignores it), or write it out on a line of its own without comments, strings or macros.',
  },
} as const;

const DESIGN_UNIT = new Set(['module', 'macromodule', 'program', 'interface', 'package', 'primitive']);
const FILE_TASKS = new Set(['fopen', 'readmemh', 'readmemb', 'writememh', 'writememb', 'dumpfile', 'fdumpfile']);
const READERS = new Set(['readmemh', 'readmemb']);
/** $c, $c32, ... and $cpure, $cpure64, ... (current releases): Verilator's inline C++. */
const CCODE = /^\$c(?:pure)?\d*$/;

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
  /** The testbench's name, as diagnostics show it. */
  file: string;
  /** The testbench's path as the compiler is given it (its `line markers name it so); default: file. */
  sourceName?: string;
  /** With these, a relative `include is followed to the file it names (symlinks included), which
   * must lie inside the run or design directories. */
  paths?: SafetyPaths;
  /** Modules, interfaces, packages, programs and primitives the design declares: the testbench
   * may not declare one of these names itself. */
  designNames?: string[];
}

function realOrNull(p: string): string | null {
  try {
    return realpathSync(p);
  } catch {
    return null;
  }
}

/** True when `p` (absolute) lies in the run directory or one of the roots, after symlinks. */
export function insideRoots(p: string, paths: SafetyPaths, opts: { visibleOnly?: boolean } = {}): boolean {
  const target = realOrNull(p) ?? resolve(p);
  const roots = [...(paths.runDir ? [paths.runDir] : []), ...paths.roots].map((r) => realOrNull(r) ?? resolve(r));
  return roots.some((r) => {
    if (target !== r && !target.startsWith(r.endsWith(sep) ? r : r + sep)) return false;
    // `visibleOnly`: and not a dot-entry below the root, after symlinks (a plain `a.vh` that links
    // to `.secret` is the dot-file the jail hides).
    return (
      !opts.visibleOnly ||
      !target
        .slice(r.length)
        .split(sep)
        .some((seg) => seg.startsWith('.'))
    );
  });
}

/** Why an `include of `name` is refused, or null when it is fine. */
function includeProblem(name: string, paths: SafetyPaths | undefined): string | null {
  if (name.includes('\\') || name.includes('$')) return `the file name '${name}' holds a backslash or '$'`;
  if (!isSafeRelativePath(name)) return `'${name}' is outside the testbench and design directories`;
  if (name.split('/').some((seg) => seg.startsWith('.') && seg !== '.')) return `'${name}' names a hidden file`;
  if (!paths) return null;
  for (const base of [...(paths.runDir ? [paths.runDir] : []), ...paths.includeDirs]) {
    const at = join(base, name);
    if (existsSync(at) && !insideRoots(at, paths, { visibleOnly: true }))
      return `'${name}' (found in ${base}) leads outside the design directories (a symbolic link?)`;
  }
  return null;
}

/** A refusal at [start, end) of the text the pass read. */
interface Finding extends Refusal {
  start: number;
  end: number;
}

/** The diagnostic for a file-naming call's literal path, or null when the path is fine. */
export function filePathProblem(task: string, path: string, mode: string | null): Refusal | null {
  if (isSafeRelativePath(path)) return null;
  const reads = READERS.has(task) || (task === 'fopen' && mode !== null && /^rb?$/.test(mode));
  return reads
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
      };
}

/** The refusal for a file name computed at run time (only without a jail). */
export function computedPathProblem(task: string): Refusal {
  return {
    code: 'CHORUS-FILE',
    message: `$${task} with a file name computed at run time cannot be confined without an OS jail (bubblewrap is not available)`,
    suggestion: 'Use a literal relative file name, or install bubblewrap so the run is jailed.',
  };
}

/**
 * The rules every pass applies to the parser's tokens: $system, $c, `systemc_*, DPI (import or
 * export followed by ANY string: "\104PI-C" is "DPI-C" to Verilator), file-naming calls with
 * literal paths, `verilator_config, and design units named like the design's.
 */
function tokenFindings(all: Token[], opts: SafetyOptions): Finding[] {
  const out: Finding[] = [];
  const toks = significant(all);
  const design = new Set(opts.designNames ?? []);
  const at = (t: Token, end: number, r: Refusal): void => {
    out.push({ ...r, start: t.start, end });
  };
  for (let k = 0; k < toks.length; k++) {
    const t = toks[k];
    const next = toks[k + 1];
    if (t.kind === 'system') {
      if (t.value === '$system') at(t, t.end, REFUSALS.system);
      else if (CCODE.test(t.value)) at(t, next?.value === '(' && next.kind === 'op' ? next.end : t.end, REFUSALS.ccode);
      else if (FILE_TASKS.has(t.value.slice(1))) {
        const task = t.value.slice(1);
        const args = argumentList(toks, k + 1);
        if (!args) {
          // $dumpfile; and friends without arguments write the default name in the run directory.
          if (/^(fopen|readmem)/.test(task))
            at(t, t.end, {
              code: 'CHORUS-FILE',
              message: `${t.value} without a readable argument list: its file name cannot be checked`,
              suggestion: `Write the call as ${t.value}("name", ...) with a plain relative file name.`,
            });
          continue;
        }
        const [first, second] = args.args.map(unparenthesized);
        const literal = first?.length === 1 && first[0].kind === 'string' ? first[0].value : null;
        const mode = second?.length === 1 && second[0].kind === 'string' ? second[0].value : null;
        if (literal !== null) {
          const problem = filePathProblem(task, literal, mode);
          if (problem) at(t, args.end, problem);
        } else if (!opts.jailed) at(t, args.end, computedPathProblem(task));
      }
    } else if (t.kind === 'directive') {
      if (/^systemc_/.test(t.value)) at(t, t.start + 1 + t.value.length, REFUSALS.ccode);
      else if (t.value === 'verilator_config') at(t, t.end, REFUSALS.config);
    } else if (t.kind === 'id' && (t.value === 'import' || t.value === 'export') && next?.kind === 'string') {
      at(t, next.end, REFUSALS.dpi);
    } else if (t.kind === 'id' && DESIGN_UNIT.has(t.value) && design.size) {
      const before = toks[k - 1];
      // `virtual interface x`, an interface port `(interface x`, `interface class`: no declaration.
      if (t.value === 'interface' && (before?.value === 'virtual' || before?.value === '(' || before?.value === ',')) continue;
      let j = k + 1;
      if (toks[j]?.kind === 'id' && (toks[j].value === 'static' || toks[j].value === 'automatic')) j++;
      const name = toks[j];
      if (!name || (name.kind !== 'id' && name.kind !== 'escid') || name.value === 'class') continue;
      if (design.has(name.value)) at(t, name.end, REFUSALS.redefine(name.value));
    }
  }
  return out;
}

/** An argument without the parentheses around all of it: ("x") is the literal "x". */
function unparenthesized(arg: Token[]): Token[] {
  while (arg.length >= 3 && arg[0].value === '(' && arg[0].kind === 'op' && argumentList(arg, 0)?.end === arg[arg.length - 1].end)
    arg = arg.slice(1, -1);
  return arg;
}

/** The comma-separated arguments of the parenthesized list that starts at toks[k], or null. */
function argumentList(toks: Token[], k: number): { args: Token[][]; end: number } | null {
  if (toks[k]?.kind !== 'op' || toks[k].value !== '(') return null;
  const args: Token[][] = [[]];
  let depth = 0;
  for (let j = k; j < toks.length; j++) {
    const t = toks[j];
    const v = t.kind === 'op' ? t.value : '';
    if (v === '(' || v === '[' || v === '{') {
      if (depth++ === 0) continue;
    } else if (v === ')' || v === ']' || v === '}') {
      if (--depth === 0) return { args: args.length === 1 && args[0].length === 0 ? [] : args, end: t.end };
    } else if (v === ',' && depth === 1) {
      args.push([]);
      continue;
    }
    args[args.length - 1].push(t);
  }
  return null;
}

/** Without a jail: every string that names a path outside the run directory (a DUT parameter
 * or task could open it). Lines that already hold a CHORUS-FILE finding are skipped. */
function unjailedStrings(toks: Token[], flagged: (t: Token) => boolean): Finding[] {
  const out: Finding[] = [];
  for (const t of toks) {
    if (t.kind !== 'string') continue;
    if (/\s/.test(t.value) || !/^(?:\/[\w.]|~\/|\.\.(?:\/|$))|\/\.\.(?:\/|$)/.test(t.value)) continue;
    if (flagged(t)) continue;
    out.push({
      start: t.start,
      end: t.end,
      code: 'CHORUS-FILE',
      message: `the string '${t.value}' names a path outside the run directory; without an OS jail it could reach a file-opening task or parameter of the design`,
      suggestion: 'Use plain relative file names (no leading /, no ..), or install bubblewrap so the run is jailed.',
    });
  }
  return out;
}

/** The `line directive's file name, or null when it cannot be read. */
function lineDirectiveFile(rest: string): string | null {
  const m = /^[ \t\f\r]+\d+[ \t\f\r]+"((?:[^"\\\n]|\\.)*)"(?:[ \t\f\r]+[0-2])?[ \t\f\r]*$/.exec(rest);
  return m ? m[1] : null;
}

/** Rules only the source text can answer: `include names, `line directives as written, pasting, `pragma lines. */
function sourceFindings(src: string, view: string, toks: Token[], defines: Span[], opts: SafetyOptions): Finding[] {
  const out: Finding[] = [];
  const inDefine = (t: Token): boolean => defines.some((d) => t.start > d.start && t.start < d.end);
  for (const t of toks) {
    if (t.kind !== 'directive') continue;
    if (t.value === 'include') {
      const m = /[ \t]*("(?:[^"\n])*"|<[^>\n]*>|[^\s]*)/y;
      m.lastIndex = t.end;
      const arg = m.exec(view)?.[1] ?? '';
      const literal = /^"(.*)"$|^<(.*)>$/s.exec(arg);
      const problem = literal
        ? includeProblem(literal[1] ?? literal[2], opts.paths)
        : `its file name is not a string literal ('${arg.slice(0, 40)}'), so it cannot be checked before the preprocessor opens it`;
      if (problem)
        out.push({
          start: t.start,
          end: m.lastIndex,
          code: 'CHORUS-FILE',
          message: `\`include ${literal ? `${arg} ` : ''}refused: ${problem}`,
          suggestion:
            "Include only the design's headers by a plain relative name (as in the design's own `include lines), or paste the declarations into the testbench.",
        });
    } else if (t.value === 'line') {
      const file = lineDirectiveFile(view.slice(t.start + 5, t.end));
      if (file === opts.file || file === opts.sourceName) continue;
      out.push({
        start: t.start,
        end: t.end,
        ...REFUSALS.line(
          file === null
            ? `the \`line directive '${view.slice(t.start, t.end).trim().slice(0, 80)}' names no file the check can read`
            : `\`line names '${file}', not the testbench`,
        ),
      });
    } else if (t.value === 'pragma') {
      // In a macro, the line it ends up on is only known where it expands.
      const rest = src.slice(t.start + 7, t.end);
      if (inDefine(t) || /\/\*|\*\/|\/\/|"|`/.test(rest)) out.push({ start: t.start, end: t.end, ...REFUSALS.pragma });
    }
  }
  // `name`` (a macro or directive name pasted onto what follows), outside strings.
  const noStrings = blankSpans(
    view,
    toks.filter((t) => t.kind === 'string'),
  );
  for (const m of noStrings.matchAll(/`(?:[A-Za-z_][A-Za-z0-9_$]*|\\[^ \t\f\r\n`]+)``/g))
    out.push({ start: m.index, end: m.index + m[0].length, ...REFUSALS.paste(`'${m[0]}'`) });
  return out;
}

function diagnostic(f: Finding, file: string, line: number, column: number, endColumn: number | undefined): Diagnostic {
  return {
    file,
    origin: 'testbench',
    line,
    column,
    endColumn,
    severity: 'error',
    code: f.code,
    message: f.message,
    suggestion: f.suggestion,
    stage: 'check',
  };
}

/** The same finding twice (the same code at the same place) is reported once. */
function unique(ds: Diagnostic[]): Diagnostic[] {
  const seen = new Set<string>();
  return ds.filter((d) => {
    const k = `${d.file}:${d.line}:${d.column}:${d.code}:${d.message}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/** The check of the testbench as written: every rule, at the exact position. */
export function checkTestbench(src: string, opts: SafetyOptions): Diagnostic[] {
  const scan = scanPreprocessor(src);
  const view = withoutComments(src, scan);
  const all = tokenize(view);
  const toks = significant(all);
  const found = [...tokenFindings(all, opts), ...sourceFindings(src, view, toks, scan.defines, opts)];
  if (!opts.jailed) {
    const flagged = new Set(found.filter((f) => f.code === 'CHORUS-FILE').map((f) => position(src, f.start).line));
    found.push(...unjailedStrings(toks, (t) => flagged.has(position(src, t.start).line)));
  }
  const out = found.map((f) => {
    const { line, column } = position(src, f.start);
    return diagnostic(f, opts.file, line, column, column + (f.end - f.start));
  });
  return unique(out).sort((a, b) => a.line - b.line || a.column - b.column);
}

function testbenchNames(opts: SafetyOptions): string[] {
  return opts.sourceName ? [opts.sourceName, opts.file] : [opts.file];
}

interface Marker {
  /** Index of the marker's line in the text. */
  index: number;
  line: number;
  file: string;
  level: number;
}

function markers(lines: string[]): Marker[] {
  const out: Marker[] = [];
  lines.forEach((l, index) => {
    const d = /^`line\s+(\d+)\s+"([^"]*)"\s*(\d)?/.exec(l);
    if (d) out.push({ index, line: Number(d[1]), file: d[2], level: Number(d[3] ?? 0) });
  });
  return out;
}

/**
 * The testbench's part of `verilator -E` output over the design's files and the testbench (which
 * comes last): from the preprocessor's first entry into the testbench file to the end. Output of
 * the testbench alone, or output that never names it, is all the testbench's.
 */
export function testbenchPart(preprocessed: string, tbFile: string | string[]): string {
  const names = new Set(Array.isArray(tbFile) ? tbFile : [tbFile]);
  const lines = preprocessed.split('\n');
  const first = markers(lines).find((m) => m.level === 1 && names.has(m.file));
  return first ? lines.slice(first.index).join('\n') : preprocessed;
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

/** The files the testbench's preprocessing entered: the testbench and what it included. */
export function testbenchFiles(preprocessed: string, tbFile: string | string[]): string[] {
  const names = Array.isArray(tbFile) ? tbFile : [tbFile];
  const part = testbenchPart(preprocessed, names);
  return [
    ...new Set([
      ...names,
      ...markers(part.split('\n'))
        .filter((m) => m.level === 1)
        .map((m) => m.file),
    ]),
  ];
}

/**
 * The same check on the preprocessed text, so macros, token pasting and `include cannot hide a
 * call; positions are mapped back to the line that expanded to it. Every file the preprocessor
 * opened (its `line markers) must be the testbench or lie in the run or design directories: a
 * macro can build an `include the plain-text check never sees. `preprocessed` may hold the
 * design's files before the testbench (the build's view): only the testbench's part is judged.
 */
export function checkPreprocessed(preprocessed: string, opts: SafetyOptions): Diagnostic[] {
  const part = testbenchPart(preprocessed, testbenchNames(opts));
  const map = preprocessedLineMap(part);
  const lineOf = (offset: number): number => part.slice(0, offset).split('\n').length;
  const all = tokenize(part);
  const toks = significant(all);
  const found = tokenFindings(all, opts);
  if (!opts.jailed) {
    const flagged = new Set(found.filter((f) => f.code === 'CHORUS-FILE').map((f) => lineOf(f.start)));
    found.push(...unjailedStrings(toks, (t) => flagged.has(lineOf(t.start))));
  }
  const ds = found.map((f) => {
    const at = map[lineOf(f.start) - 1];
    const file = at?.file ? (at.file.split('/').pop() ?? opts.file) : opts.file;
    const d = diagnostic(f, file, at?.line ?? lineOf(f.start), 1, undefined);
    return { ...d, message: `${d.message} (after macro expansion)` };
  });
  return unique([...includedFileProblems(part, opts), ...lineMarkerProblems(part, opts), ...ds]);
}

/**
 * `file:line` (base name) of every call of a file-naming task in the testbench's part of `verilator
 * -E` output: the calls the text passes judged (a literal name, or one computed at run time).
 */
export function fileCallSites(preprocessed: string, opts: SafetyOptions): string[] {
  const part = testbenchPart(preprocessed, testbenchNames(opts));
  const map = preprocessedLineMap(part);
  const toks = significant(tokenize(part));
  const out: string[] = [];
  toks.forEach((t, k) => {
    if (t.kind !== 'system' || !FILE_TASKS.has(t.value.slice(1)) || !argumentList(toks, k + 1)) return;
    const at = map[part.slice(0, t.start).split('\n').length - 1];
    if (at) out.push(`${at.file.split('/').pop()}:${at.line}`);
  });
  return out;
}

/**
 * `line markers of the testbench's part that name a file the preprocessor never entered from it:
 * a `line directive (written out, or built by a macro) that names another file.
 */
export function lineMarkerProblems(part: string, opts: SafetyOptions): Diagnostic[] {
  const out: Diagnostic[] = [];
  const known = new Set(testbenchNames(opts));
  let last = { file: opts.file, line: 1, index: 0 };
  for (const m of markers(part.split('\n'))) {
    if (m.level === 1) known.add(m.file);
    else if (!known.has(m.file)) {
      known.add(m.file);
      const f = { start: 0, end: 0, ...REFUSALS.line(`a \`line directive names '${m.file}', not the testbench (after macro expansion)`) };
      out.push(diagnostic(f, last.file.split('/').pop() ?? opts.file, Math.max(1, last.line + m.index - last.index - 1), 1, undefined));
    }
    last = { file: m.file, line: m.line, index: m.index };
  }
  return out;
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
    if (level !== '1' || seen.has(file) || testbenchNames(opts).includes(file)) continue;
    seen.add(file);
    const abs = isAbsolute(file) || !opts.paths.runDir ? resolve(file) : resolve(opts.paths.runDir, file);
    if (insideRoots(abs, opts.paths, { visibleOnly: true })) continue;
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
