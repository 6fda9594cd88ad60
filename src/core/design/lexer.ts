// A light SystemVerilog token scan for the few questions that must be answered BEFORE the
// simulator's front end can run: which modules a testbench file declares (to name its top), and
// which packages a file declares and uses (to put packages first in the compile order). Real
// introspection (ports, parameters, tops) uses Verilator's own front end: see introspect.ts.
import { blankSpans, scanPreprocessor } from './svTokens.js';

/**
 * Replaces comments (and, optionally, string bodies) with spaces, keeping every offset and every
 * newline. Comments and strings are what Verilator's preprocessor takes for them (svTokens.ts):
 * an escaped identifier such as `\q"` or `\c1/*` is neither a string nor a comment start.
 */
export function blankComments(src: string, blankStrings = false): string {
  const scan = scanPreprocessor(src);
  const spans = [...scan.comments, ...scan.valueComments];
  if (blankStrings)
    spans.push(
      ...scan.strings.map((s) => ({ start: s.start + 1, end: src[s.end - 1] === '"' && s.end - 1 > s.start ? s.end - 1 : s.end })),
    );
  return blankSpans(src, spans);
}

/** `text` with every identifier in `renames` replaced, outside comments and strings; member
 * selects (`.x`), system names (`$x`), based literals (`'hx`) and package scopes are left alone. */
export function renameIdentifiers(text: string, renames: Map<string, string>): string {
  if (renames.size === 0) return text;
  const code = blankComments(text, true);
  let out = '';
  let last = 0;
  for (const m of code.matchAll(/(?<![\w$.'\\])[A-Za-z_][\w$]*(?![\w$])(?!\s*::)/g)) {
    const to = renames.get(m[0]);
    if (to === undefined) continue;
    out += text.slice(last, m.index) + to;
    last = m.index! + m[0].length;
  }
  return out + text.slice(last);
}

export interface FileUnits {
  modules: string[];
  packages: string[];
  interfaces: string[];
  /** Packages referenced with `import p::` or `p::name`. */
  usesPackages: string[];
  /** Identifiers that appear in instantiation position (`name [#(...)] inst (`), outside macro
   * bodies. */
  instantiated: string[];
  /** Macros this file defines, each with the identifiers in instantiation position in its body
   * and the macros its body uses: a module instantiated only by a macro is used only where the
   * macro is (OpenTitan's prim_flop_macros.sv names prim_sparse_fsm_flop in a macro few designs
   * expand). */
  macros: Record<string, { instantiated: string[]; uses: string[] }>;
  /** Macros used outside macro bodies (`` `NAME ``, directives excluded). */
  usesMacros: string[];
}

const DIRECTIVES = new Set(
  (
    'define undef undefineall ifdef ifndef elsif else endif include timescale resetall celldefine endcelldefine ' +
    'default_nettype line pragma begin_keywords end_keywords unconnected_drive nounconnected_drive __FILE__ __LINE__ ' +
    'default_decay_time default_trireg_strength delay_mode_distributed delay_mode_path delay_mode_unit delay_mode_zero'
  ).split(' '),
);

const INSTANTIATION = /(?<![$\w.`])([A-Za-z_]\w*)(?:\s*#\s*\([^;]*?\)\s*|\s+)([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*\(/g;
const MACRO_USE = /`([A-Za-z_]\w*)/g;

const KEYWORDS = new Set([
  'module',
  'endmodule',
  'if',
  'else',
  'case',
  'begin',
  'end',
  'assign',
  'always',
  'always_ff',
  'always_comb',
  'initial',
  'for',
  'while',
  'repeat',
  'forever',
  'function',
  'task',
  'return',
  'logic',
  'reg',
  'wire',
  'input',
  'output',
  'inout',
  'int',
  'integer',
  'bit',
  'byte',
  'parameter',
  'localparam',
  'typedef',
  'struct',
  'enum',
  'import',
  'package',
  'wait',
  'posedge',
  'negedge',
  'or',
  'and',
  'not',
  'automatic',
  'static',
  'new',
  'class',
  'virtual',
  'interface',
  'property',
  'assert',
  'cover',
  'foreach',
  'fork',
  'join',
]);

export function scanUnits(src: string): FileUnits {
  const full = blankComments(src, true);
  // Macro bodies apart: what they instantiate counts only where they are used.
  const macros: FileUnits['macros'] = {};
  const defines = scanPreprocessor(src).defines;
  for (const d of defines) {
    const text = full.slice(d.start, d.end).replace(/\\\r?\n/g, ' \n');
    const name = /^`define\s+([A-Za-z_]\w*)/.exec(text)?.[1];
    if (!name) continue;
    const body = text.replace(/^`define\s+[A-Za-z_]\w*(?:\([^)]*\))?/, '');
    macros[name] = {
      instantiated: [...new Set([...body.matchAll(INSTANTIATION)].map((m) => m[1]))].filter((n) => !KEYWORDS.has(n)),
      uses: [...new Set([...body.matchAll(MACRO_USE)].map((m) => m[1]))].filter((n) => !DIRECTIVES.has(n)),
    };
  }
  const code = blankSpans(full, defines);
  const grab = (re: RegExp): string[] => [...new Set([...code.matchAll(re)].map((m) => m[1]))];
  const modules = grab(/\b(?:module|macromodule|program)\s+(?:(?:static|automatic)\s+)?([A-Za-z_]\w*)/g);
  const packages = grab(/\bpackage\s+(?:(?:static|automatic)\s+)?([A-Za-z_]\w*)/g);
  const interfaces = grab(/\binterface\s+(?:(?:static|automatic)\s+)?([A-Za-z_]\w*)/g).filter((n) => n !== 'class');
  // `$unit::x` is the compilation unit, not a package: the look-behind keeps `$` names out.
  const usesPackages = grab(/(?<![$\w])([A-Za-z_]\w*)\s*::/g).filter((p) => p !== 'std');
  // `type [#(...)] inst [dims] (`: the type and the instance name are separate identifiers, so
  // whitespace (or a parameter list) must stand between them; a call `foo(` is not a match.
  const instantiated = grab(INSTANTIATION).filter((n) => !KEYWORDS.has(n));
  const usesMacros = grab(MACRO_USE).filter((n) => !DIRECTIVES.has(n));
  return { modules, packages, interfaces, usesPackages, instantiated, macros, usesMacros };
}

/**
 * The top module of a testbench file: the one declared module no other module in the file
 * instantiates. Returns all candidates when that is ambiguous.
 */
export function testbenchTops(src: string): string[] {
  const u = scanUnits(src);
  const tops = u.modules.filter((m) => !u.instantiated.includes(m));
  return tops.length ? tops : u.modules;
}

/**
 * The testbench module a simulator runs for the design `top`, from the file's tops
 * (testbenchTops): `tb_<top>` when it is one, else the first; undefined when there is none.
 */
export function testbenchTopOf(tops: string[], top: string): string | undefined {
  return tops.includes(`tb_${top}`) ? `tb_${top}` : tops[0];
}
