// Static check of an untrusted testbench before it becomes a native executable. It rejects what
// can escape the run directory in any simulator: shell escapes ($system), foreign code (DPI,
// Verilator's $c and `systemc_* blocks) and file writes to paths outside the run directory. Paths
// built at run time cannot be judged statically; the OS jail (jail.ts) covers them, and without a
// jail such writes are rejected too.
import type { Diagnostic } from './result.js';

/** Replaces comments (and, optionally, string bodies) with spaces, keeping every offset. */
export function blankComments(src: string, blankStrings = false): string {
  const out = src.split('');
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    const n = src[i + 1];
    if (c === '/' && n === '/') {
      while (i < src.length && src[i] !== '\n') out[i++] = ' ';
    } else if (c === '/' && n === '*') {
      out[i] = out[i + 1] = ' ';
      i += 2;
      while (i < src.length && !(src[i] === '*' && src[i + 1] === '/')) {
        if (src[i] !== '\n') out[i] = ' ';
        i++;
      }
      if (i < src.length) out[i] = out[i + 1] = ' ';
      i += 2;
    } else if (c === '"') {
      i++;
      while (i < src.length && src[i] !== '"' && src[i] !== '\n') {
        if (src[i] === '\\') {
          if (blankStrings) out[i] = ' ';
          i++;
        }
        if (blankStrings && i < src.length && src[i] !== '\n') out[i] = ' ';
        i++;
      }
      i++;
    } else i++;
  }
  return out.join('');
}

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

const WRITERS = /\$(fopen|writememh|writememb|dumpfile|fdumpfile)\s*\(\s*("(?:[^"\\\n]|\\.)*"|[^,)]*)\s*(?:,\s*("(?:[^"\\\n]|\\.)*"|[^)]*))?\)/g;

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

export interface SafetyOptions {
  /** True when an OS jail will confine the executable's writes to the run directory. */
  jailed: boolean;
  file: string;
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
  for (const m of withStrings.matchAll(WRITERS)) {
    // Only look at real calls (not inside comments/strings): the blanked copy must agree.
    if (code.slice(m.index, (m.index ?? 0) + m[1].length + 1) !== `$${m[1]}`) continue;
    const task = m[1];
    const pathArg = m[2].trim();
    const mode = (m[3] ?? '').trim();
    if (task === 'fopen' && /^"rb?"$/.test(mode)) continue; // reading is not an escape
    const literal = /^"(.*)"$/s.exec(pathArg);
    if (literal) {
      const path = decodeSvString(literal[1]);
      if (!isSafeRelativePath(path)) {
        add(m.index ?? 0, m[0].length, {
          code: 'CHORUS-FILE',
          message: `$${task} writes to '${path}', outside the run directory`,
          suggestion: 'Use a plain relative file name (no leading /, no ..) or drop the file output.',
        });
      }
    } else if (!opts.jailed) {
      add(m.index ?? 0, m[0].length, {
        code: 'CHORUS-FILE',
        message: `$${task} with a file name computed at run time cannot be confined without an OS jail (bubblewrap is not available)`,
        suggestion: 'Use a literal relative file name, or install bubblewrap so the run is jailed.',
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
 * call; positions are mapped back to the line that expanded to it.
 */
export function checkPreprocessed(preprocessed: string, opts: SafetyOptions): Diagnostic[] {
  const map = preprocessedLineMap(preprocessed);
  return checkTestbench(preprocessed, opts).map((d) => {
    const at = map[d.line - 1];
    const file = at?.file ? at.file.split('/').pop() ?? opts.file : opts.file;
    return { ...d, file, line: at?.line ?? d.line, column: 1, endColumn: undefined, message: `${d.message} (after macro expansion)` };
  });
}
