// A light reader of SystemVerilog module bodies for the 2-state rules (twoState.ts): tokens
// with their lines, a statement tree of each process (blocks, if, case, loops, simple statements
// kept as token lists), and the value of constant expressions. It reads only what those rules
// look at and gives up on the rest (a process it cannot follow is left out by the caller, never
// guessed); it is not a SystemVerilog parser, which this tool leaves to Verilator's front end.
// Tokens come from the design layer's lexer (svTokens.ts), the one that follows Verilator's own
// rules for strings, escaped identifiers, attributes and numbers; literals are read by
// svLiteral.ts.
import { parseSvLiteral } from '../design/svLiteral.js';
import { significant, tokenize as lexTokens } from '../design/svTokens.js';
import { closeOf, itemEnd, nextTopLevel, splitTop } from './brackets.js';

export interface Tok {
  t: string;
  line: number;
}

/** Operators of more than one character, longest first where one begins another. */
const OPERATORS = ['::', '<<<', '>>>', '<<=', '>>=', '===', '!==', '==', '!=', '<=', '>=', '&&', '||', '++', '--', '+=', '-=', '*=', '/=', '&=', '|=', '^=', '<<', '>>', '**', '->'];

/**
 * Tokens of `code` (comments already blanked) with their lines. The lexer gives operators one
 * character at a time; adjacent ones that form an operator above are joined. A number's white
 * space (`8 'hFF`) is dropped, a string is one token as written, a directive or macro use is two
 * tokens (`` ` `` and its name; `timescale and the like take the rest of their line, as in
 * Verilator), an escaped identifier keeps its backslash, and (* attributes *) are left out.
 */
export function tokenize(code: string): Tok[] {
  const out: Tok[] = [];
  const toks = significant(lexTokens(code));
  let line = 1;
  let at = 0;
  const lineOf = (offset: number): number => {
    for (; at < offset; at++) if (code.charCodeAt(at) === 10) line++;
    return line;
  };
  for (let k = 0; k < toks.length; k++) {
    const x = toks[k];
    const ln = lineOf(x.start);
    if (x.kind === 'op') {
      const op = OPERATORS.find((o) => code.startsWith(o, x.start) && [...o].every((_, j) => toks[k + j]?.kind === 'op' && toks[k + j].start === x.start + j));
      out.push({ t: op ?? x.value, line: ln });
      if (op) k += op.length - 1;
    } else if (x.kind === 'number') out.push({ t: x.value.replace(/\s+/g, ''), line: ln });
    else if (x.kind === 'directive') out.push({ t: '`', line: ln }, { t: x.value, line: ln });
    else out.push({ t: code.slice(x.start, x.end), line: ln });
  }
  return out;
}

type StmtStart = Stmt extends infer S ? (S extends Stmt ? Omit<S, 'end'> : never) : never;

export type Stmt =
  | { kind: 'block'; body: Stmt[]; line: number; end: number }
  | { kind: 'if'; cond: Tok[]; then: Stmt; else?: Stmt; line: number; end: number }
  | { kind: 'case'; op: string; sel: Tok[]; items: CaseItem[]; line: number; end: number }
  | { kind: 'for'; init: Tok[]; cond: Tok[]; step: Tok[]; body: Stmt; line: number; end: number }
  | { kind: 'loop'; body: Stmt; line: number; end: number }
  | { kind: 'simple'; toks: Tok[]; line: number; end: number };

export interface CaseItem {
  labels: Tok[][] | 'default';
  body: Stmt;
  line: number;
}

export class Parser {
  i = 0;
  constructor(readonly toks: Tok[]) {}
  peek(k = 0): string {
    return this.toks[this.i + k]?.t ?? '';
  }
  line(): number {
    return this.toks[Math.min(this.i, this.toks.length - 1)]?.line ?? 0;
  }
  lastLine(): number {
    return this.toks[Math.max(0, this.i - 1)]?.line ?? 0;
  }
  /** Tokens up to (not including) `stop` at bracket depth 0; consumes `stop`. */
  until(stop: string[]): Tok[] {
    const end = nextTopLevel(this.toks, this.i, (x) => stop.includes(x.t));
    const out = this.toks.slice(this.i, end);
    this.i = end < this.toks.length ? end + 1 : end;
    return out;
  }
  paren(): Tok[] {
    if (this.peek() !== '(') return [];
    this.i++;
    return this.until([')']);
  }
  label(): void {
    if (this.peek() === ':' && /^[A-Za-z_]/.test(this.peek(1))) this.i += 2;
  }
  stmt(): Stmt {
    const line = this.line();
    const t = this.peek();
    const done = (s: StmtStart): Stmt => ({ ...s, end: this.lastLine() }) as Stmt;
    if (t === 'begin' || t === 'fork') {
      this.i++;
      this.label();
      const body: Stmt[] = [];
      while (this.i < this.toks.length && !/^(?:end|join|join_any|join_none)$/.test(this.peek())) body.push(this.stmt());
      this.i++;
      this.label();
      return done({ kind: 'block', body, line });
    }
    if (t === 'unique' || t === 'unique0' || t === 'priority') {
      this.i++;
      return this.stmt();
    }
    if (t === 'if') {
      this.i++;
      const cond = this.paren();
      const then = this.stmt();
      let other: Stmt | undefined;
      if (this.peek() === 'else') {
        this.i++;
        other = this.stmt();
      }
      return done({ kind: 'if', cond, then, else: other, line });
    }
    if (t === 'case' || t === 'casez' || t === 'casex') {
      this.i++;
      const sel = this.paren();
      if (this.peek() === 'inside') this.i++;
      const items: CaseItem[] = [];
      while (this.i < this.toks.length && this.peek() !== 'endcase') {
        const at = this.line();
        if (this.peek() === 'default') {
          this.i++;
          if (this.peek() === ':') this.i++;
          items.push({ labels: 'default', body: this.stmt(), line: at });
          continue;
        }
        const labels = splitTop(this.until([':']));
        items.push({ labels, body: this.stmt(), line: at });
      }
      this.i++;
      return done({ kind: 'case', op: t, sel, items, line });
    }
    if (t === 'for') {
      this.i++;
      if (this.peek() !== '(') return done({ kind: 'simple', toks: [], line });
      this.i++;
      const init = this.until([';']);
      const cond = this.until([';']);
      const step = this.until([')']);
      return done({ kind: 'for', init, cond, step, body: this.stmt(), line });
    }
    if (t === 'while' || t === 'repeat' || t === 'foreach') {
      this.i++;
      this.paren();
      return done({ kind: 'loop', body: this.stmt(), line });
    }
    if (t === 'forever') {
      this.i++;
      return done({ kind: 'loop', body: this.stmt(), line });
    }
    if (t === 'do') {
      this.i++;
      const body = this.stmt();
      this.until([';']);
      return done({ kind: 'loop', body, line });
    }
    if (t === '@' || t === '#') {
      this.i++;
      if (this.peek() === '(') this.paren();
      else this.i++;
      return this.stmt();
    }
    return done({ kind: 'simple', toks: this.until([';']), line });
  }
}

/** Value of a constant expression of literals and fixed names; null when it is not one. */
export function evalConst(toks: Tok[] | string[], fixed: Map<string, bigint | null> = new Map()): bigint | null {
  const ts = toks.map((x) => (typeof x === 'string' ? x : x.t));
  let i = 0;
  const PREC: Record<string, number> = { '|': 1, '^': 2, '&': 3, '<<': 4, '>>': 4, '+': 5, '-': 5, '*': 6, '/': 6, '%': 6 };
  const atom = (): bigint | null => {
    const t = ts[i++];
    if (t === undefined) return null;
    if (t === '(') {
      const v = expr(0);
      return ts[i++] === ')' ? v : null;
    }
    if (t === '-' || t === '+' || t === '~') {
      const v = atom();
      return v === null ? null : t === '-' ? -v : t === '~' ? ~v : v;
    }
    const lit = parseSvLiteral(t);
    // A sized literal is truncated to its size; x/z bits make no value. `'0` is 0 at any width;
    // `'1` is all ones of a width not known here: no value.
    if (lit) return lit.form === 'fill' && lit.value !== 0n ? null : (lit.value ?? null);
    if (t === '$clog2' && ts[i] === '(') {
      i++;
      const v = expr(0);
      if (ts[i++] !== ')' || v === null) return null;
      let r = 0n;
      while (1n << r < v) r++;
      return r;
    }
    if (fixed.has(t)) return fixed.get(t) ?? null;
    return null;
  };
  const expr = (min: number): bigint | null => {
    let left = atom();
    while (i < ts.length && PREC[ts[i]] !== undefined && PREC[ts[i]] >= min) {
      const op = ts[i++];
      const right = expr(PREC[op] + 1);
      if (left === null || right === null) return null;
      if ((op === '/' || op === '%') && right === 0n) return null;
      // One operation, computed alone: `x / 0` must not be worked out beside `x + 0`; a shift by
      // a huge or negative amount is no value this reader needs.
      if ((op === '<<' || op === '>>') && (right < 0n || right > 4096n)) return null;
      const a: bigint = left;
      const ops: Record<string, () => bigint> = {
        '|': () => a | right,
        '^': () => a ^ right,
        '&': () => a & right,
        '<<': () => a << right,
        '>>': () => a >> right,
        '+': () => a + right,
        '-': () => a - right,
        '*': () => a * right,
        '/': () => a / right,
        '%': () => a % right,
      };
      left = ops[op]();
    }
    return left;
  };
  const v = expr(0);
  return i === ts.length ? v : null;
}

export function* walk(s: Stmt, path: Stmt[] = []): Generator<{ s: Stmt; path: Stmt[] }> {
  yield { s, path };
  const inner = [...path, s];
  if (s.kind === 'block') for (const b of s.body) yield* walk(b, inner);
  else if (s.kind === 'if') {
    yield* walk(s.then, inner);
    if (s.else) yield* walk(s.else, inner);
  } else if (s.kind === 'case') for (const it of s.items) yield* walk(it.body, inner);
  else if (s.kind === 'for' || s.kind === 'loop') yield* walk(s.body, inner);
}

/** `lhs = rhs` / `lhs <= rhs` / `lhs op= rhs` / `lhs++` of a simple statement, split. */
export function assignmentOf(toks: Tok[]): { lhs: Tok[]; op: string; rhs: Tok[] } | undefined {
  const k = nextTopLevel(toks, 0, (x, j) => j > 0 && /^(?:=|<=|\+=|-=|\*=|\/=|&=|\|=|\^=|<<=|>>=|\+\+|--)$/.test(x.t));
  return k < toks.length ? { lhs: toks.slice(0, k), op: toks[k].t, rhs: toks.slice(k + 1) } : undefined;
}

/** The variable an assignment target names (`x`, `x[3]`, `x.f`), or every name in `{a, b}`. */
export function targets(lhs: Tok[]): string[] {
  if (lhs[0]?.t === '{') return lhs.filter((x) => /^[A-Za-z_]/.test(x.t)).map((x) => x.t);
  return lhs[0] && /^[A-Za-z_]/.test(lhs[0].t) ? [lhs[0].t] : [];
}

export function modulesIn(code: string): Array<{ name: string; toks: Tok[] }> {
  const toks = tokenize(code);
  const out: Array<{ name: string; toks: Tok[] }> = [];
  for (let k = 0; k < toks.length; k++) {
    if (toks[k].t !== 'module' && toks[k].t !== 'macromodule') continue;
    const name = toks[k + 1]?.t === 'automatic' || toks[k + 1]?.t === 'static' ? toks[k + 2]?.t : toks[k + 1]?.t;
    const end = toks.findIndex((x, j) => j > k && x.t === 'endmodule');
    out.push({ name, toks: toks.slice(k + 2, end < 0 ? undefined : end) });
    if (end > 0) k = end;
  }
  return out;
}

/** A module instance in a module body: `sub #(.P(1)) u_sub (.a(x), .b());`. */
export interface Instance {
  module: string;
  name: string;
  /** Tokens inside `#( )`, empty when there is none. */
  params: Tok[];
  /** Tokens inside the port list's `( )`. */
  ports: Tok[];
  line: number;
}

const NOT_A_MODULE =
  /^(?:assign|always|always_comb|always_ff|always_latch|initial|final|function|task|assert|assume|cover|restrict|property|sequence|bind|default|clocking|import|export|typedef|parameter|localparam|input|output|inout|wire|reg|logic|bit|int|integer|genvar|generate|endgenerate|if|else|for|case|begin|end|module|endmodule|return|struct|union|enum|byte|shortint|longint|real|time|string|tri|var|signed|unsigned|modport|interface)$/;

const PRIMITIVE = /^(?:and|or|nand|nor|xor|xnor|buf|not|bufif0|bufif1|notif0|notif1|pullup|pulldown|tran|tranif0|tranif1|rtran|rtranif0|rtranif1|nmos|pmos|cmos|rnmos|rpmos|rcmos)$/;

/** The module instances of a module body (tokens), found by their shape; gate primitives too. */
export function instancesIn(toks: Tok[]): Instance[] {
  const out: Instance[] = [];
  for (let k = 0; k < toks.length; k++) {
    const a = toks[k];
    if (!/^[A-Za-z_]/.test(a.t) || NOT_A_MODULE.test(a.t)) continue;
    if (k > 0 && !/^(?:;|end|begin|endgenerate|generate|\)|else|:)$/.test(toks[k - 1].t) && !/^end/.test(toks[k - 1].t)) continue;
    let j = k + 1;
    let params: Tok[] = [];
    if (PRIMITIVE.test(a.t) && toks[j]?.t === '(') {
      // A gate without an instance name: `and (y, a, b);`.
      const close = closeOf(toks, j);
      if (close < toks.length) out.push({ module: a.t, name: '', params, ports: toks.slice(j + 1, close), line: a.line });
      continue;
    }
    if (toks[j]?.t === '#' && toks[j + 1]?.t === '(') {
      const close = closeOf(toks, j + 1);
      if (close >= toks.length) continue;
      params = toks.slice(j + 2, close);
      j = close + 1;
    }
    // One or more instances: `name [range] ( ports )` separated by commas.
    for (;;) {
      const b = toks[j];
      if (!b || !/^[A-Za-z_]/.test(b.t)) break;
      let n = j + 1;
      while (toks[n]?.t === '[') {
        const close = toks.findIndex((x, i) => i > n && x.t === ']');
        if (close < 0) break;
        n = close + 1;
      }
      if (toks[n]?.t !== '(') break;
      const close = closeOf(toks, n);
      if (close >= toks.length) break;
      out.push({ module: a.t, name: b.t, params, ports: toks.slice(n + 1, close), line: b.line });
      j = close + 1;
      if (toks[j]?.t === ',') j++;
      else break;
    }
    if (j > k + 1) k = j - 1;
  }
  return out;
}

/**
 * The declarators of a `parameter`/`localparam` statement starting at toks[k] (the keyword), up to
 * its `;`, the `)` closing a `#( )` list, or the `,` before the next parameter keyword in such a
 * list: `localparam [3:0] A = 1, B = 2;`, `parameter int W = 4`. `end` is the index it stopped at.
 */
export function parameterStatement(toks: Tok[], k: number): { stmt: Tok[]; end: number } {
  const end = itemEnd(toks, k + 1, (x, j) => x.t === ';' || (x.t === ',' && /^(?:parameter|localparam)$/.test(toks[j + 1]?.t ?? '')));
  return { stmt: toks.slice(k + 1, end), end };
}
