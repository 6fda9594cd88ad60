// Coverage points that a 2-state simulator (Verilator) can never reach, found by reading the
// DUT's source: reported beside the scored figure, never taken out of it (docs/protocol.md §5).
// Three rules, each about the code, never about a design's name:
// - full-case default: the `default` arm of a case whose items list every value the selector can
//   hold: every value of its width, or every member of its enum type (a 2-state variable has no
//   X or Z, and an enum variable only holds members, starting at 0 when 0 is one);
// - loop index: a variable assigned only constants and as the index of for-loops with constant
//   bounds, outside any condition: each pass of its block leaves it at the same value, and
//   toggle coverage samples values between passes, never inside one;
// - constant: a variable whose every assignment is the same constant expression.
// A point the run did cover is reachable by definition and is never listed.
import { blankComments } from '../design/lexer.js';
import { figures, isCovered, type CoverageFigures, type CoveragePoint, type PointType } from './model.js';

export interface Unreachable2State {
  file: string;
  line: number;
  type: PointType;
  /** The arm's label (`case`) or, for toggles, the signal; `points` says how many bits. */
  label: string;
  points: number;
  reason: string;
}

export interface TwoStateReport {
  /** How many uncovered points cannot be reached under 2-state simulation. */
  count: number;
  /** The points, grouped by source position and signal. */
  points: Unreachable2State[];
  /** The figures over every other point: what the run reached of what it could reach. */
  figures: CoverageFigures;
}

// ---- tokens and statements -----------------------------------------------------------------

interface Tok {
  t: string;
  line: number;
}

const TOKEN =
  /\s+|(\d*\s*'[sS]?[bBoOdDhH]\s*[0-9a-fA-FxXzZ?_]+|\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?|'[01xXzZ]|[A-Za-z_$][\w$]*|::|<<<|>>>|<<=|>>=|===|!==|==|!=|<=|>=|&&|\|\||\+\+|--|\+=|-=|\*=|\/=|&=|\|=|\^=|<<|>>|\*\*|->|[^\s])/g;

function tokenize(code: string): Tok[] {
  const out: Tok[] = [];
  let line = 1;
  let last = 0;
  for (const m of code.matchAll(TOKEN)) {
    for (let i = last; i < m.index; i++) if (code[i] === '\n') line++;
    last = m.index;
    if (m[1] !== undefined) out.push({ t: m[1].replace(/\s+/g, ''), line });
  }
  return out;
}

type Stmt =
  | { kind: 'block'; body: Stmt[]; line: number; end: number }
  | { kind: 'if'; cond: Tok[]; then: Stmt; else?: Stmt; line: number; end: number }
  | { kind: 'case'; op: string; sel: Tok[]; items: CaseItem[]; line: number; end: number }
  | { kind: 'for'; init: Tok[]; cond: Tok[]; step: Tok[]; body: Stmt; line: number; end: number }
  | { kind: 'loop'; body: Stmt; line: number; end: number }
  | { kind: 'simple'; toks: Tok[]; line: number; end: number };

type StmtStart = Stmt extends infer S ? (S extends Stmt ? Omit<S, 'end'> : never) : never;

interface CaseItem {
  labels: Tok[][] | 'default';
  body: Stmt;
  line: number;
}

class Parser {
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
    const out: Tok[] = [];
    let depth = 0;
    while (this.i < this.toks.length) {
      const t = this.peek();
      if (depth === 0 && stop.includes(t)) {
        this.i++;
        return out;
      }
      if ('([{'.includes(t)) depth++;
      else if (')]}'.includes(t)) depth--;
      out.push(this.toks[this.i++]);
    }
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
        const raw = this.until([':']);
        const labels: Tok[][] = [[]];
        let depth = 0;
        for (const x of raw) {
          if ('([{'.includes(x.t)) depth++;
          else if (')]}'.includes(x.t)) depth--;
          if (x.t === ',' && depth === 0) labels.push([]);
          else labels[labels.length - 1].push(x);
        }
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

// ---- one module's facts --------------------------------------------------------------------

interface ModuleFacts {
  name: string;
  /** localparams and enum members with a value that no instance can override. */
  fixed: Map<string, bigint | null>;
  /** Every constant name (parameters included): for "is this expression constant". */
  constants: Set<string>;
  enums: Map<string, bigint[]>;
  /** Variable -> its enum type's member values, and the line declaring it. */
  enumOf: Map<string, bigint[]>;
  enumLine: Map<string, number>;
  ports: Set<string>;
  /** Names written inside functions and tasks (not followed): never judged. */
  opaque: Set<string>;
  /** Process bodies (always/initial) and continuous assignments. */
  processes: Stmt[];
  /** The processes that are combinational (always_comb, always @*). */
  comb: Set<Stmt>;
  assigns: Array<{ lhs: Tok[]; rhs: Tok[] }>;
}

function splitTop(toks: Tok[], sep = ','): Tok[][] {
  const out: Tok[][] = [[]];
  let depth = 0;
  for (const x of toks) {
    if ('([{'.includes(x.t)) depth++;
    else if (')]}'.includes(x.t)) depth--;
    if (x.t === sep && depth === 0) out.push([]);
    else out[out.length - 1].push(x);
  }
  return out;
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
    const lit = /^(\d*)'[sS]?([bBoOdDhH])([0-9a-fA-F_]+)$/.exec(t);
    if (lit) {
      const digits = lit[3].replace(/_/g, '');
      const base = { b: '0b', o: '0o', d: '', h: '0x' }[lit[2].toLowerCase() as 'b' | 'o' | 'd' | 'h'];
      let v = BigInt(base + digits);
      if (lit[1]) v &= (1n << BigInt(lit[1])) - 1n;
      return v;
    }
    if (/^\d[\d_]*$/.test(t)) return BigInt(t.replace(/_/g, ''));
    if (/^'[01]$/.test(t)) return BigInt(t[1]);
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
      left = { '|': left | right, '^': left ^ right, '&': left & right, '<<': left << right, '>>': left >> right, '+': left + right, '-': left - right, '*': left * right, '/': left / right, '%': left % right }[op]!;
    }
    return left;
  };
  const v = expr(0);
  return i === ts.length ? v : null;
}

const CONST_FUNCS = new Set(['$clog2', '$bits', '$signed', '$unsigned']);

/** True when the expression uses only literals, operators and constant names. */
function isConstant(toks: Tok[], m: ModuleFacts): boolean {
  return toks.length > 0 && toks.every((x) => !/^[A-Za-z_$]/.test(x.t) || m.constants.has(x.t) || CONST_FUNCS.has(x.t));
}

/**
 * `paramsAtDefault`: every instance measured has the module's default parameters (Verilator
 * keeps the plain module name only for those: an override makes a copy named `m__D8_P4`), so
 * parameters are constants of known value here.
 */
function moduleFacts(name: string, toks: Tok[], paramsAtDefault = false): ModuleFacts {
  const m: ModuleFacts = {
    name,
    fixed: new Map(),
    constants: new Set(),
    enums: new Map(),
    enumOf: new Map(),
    enumLine: new Map(),
    ports: new Set(),
    opaque: new Set(),
    processes: [],
    comb: new Set(),
    assigns: [],
  };
  const enumBody = (from: number): { members: Array<[string, bigint | null]>; end: number } => {
    // toks[from] is '{'
    const close = toks.findIndex((x, k) => k > from && x.t === '}');
    const members: Array<[string, bigint | null]> = [];
    let next: bigint | null = 0n;
    for (const item of splitTop(toks.slice(from + 1, close))) {
      if (!item.length) continue;
      const v: bigint | null = item.length > 2 && item[1].t === '=' ? evalConst(item.slice(2), m.fixed) : next;
      members.push([item[0].t, v]);
      m.constants.add(item[0].t);
      m.fixed.set(item[0].t, v);
      next = v === null ? null : v + 1n;
    }
    return { members, end: close };
  };
  for (let k = 0; k < toks.length; k++) {
    const t = toks[k].t;
    if (t === 'parameter' || t === 'localparam') {
      // `localparam [3:0] A = 1, B = 2;` / `parameter int W = 4` in a #( ) list.
      let j = k + 1;
      let depth = 0;
      const stmt: Tok[] = [];
      for (; j < toks.length; j++) {
        const x = toks[j].t;
        if ('([{'.includes(x)) depth++;
        else if (')]}'.includes(x)) {
          if (depth === 0) break;
          depth--;
        }
        if (depth === 0 && (x === ';' || (x === ',' && /^(?:parameter|localparam)$/.test(toks[j + 1]?.t ?? '')))) break;
        stmt.push(toks[j]);
      }
      for (const part of splitTop(stmt)) {
        const eq = part.findIndex((x) => x.t === '=');
        if (eq < 1) continue;
        const id = part[eq - 1].t;
        m.constants.add(id);
        if (t === 'localparam' || paramsAtDefault) m.fixed.set(id, evalConst(part.slice(eq + 1), m.fixed));
      }
      continue;
    }
    if (t === 'typedef' && toks[k + 1]?.t === 'enum') {
      const open = toks.findIndex((x, j) => j > k && x.t === '{');
      const { members, end } = enumBody(open);
      const id = toks[end + 1]?.t;
      if (id && members.every(([, v]) => v !== null)) m.enums.set(id, members.map(([, v]) => v!));
      k = end + 1;
      continue;
    }
    if (t === 'enum' && toks[k - 1]?.t !== 'typedef') {
      const open = toks.findIndex((x, j) => j > k && x.t === '{');
      const { members, end } = enumBody(open);
      const decl = toks.slice(end + 1, toks.findIndex((x, j) => j > end && x.t === ';'));
      for (const part of splitTop(decl))
        if (part[0] && members.every(([, v]) => v !== null)) {
          m.enumOf.set(part[0].t, members.map(([, v]) => v!));
          m.enumLine.set(part[0].t, part[0].line);
        }
      k = end;
      continue;
    }
    if (m.enums.has(t) && /^[A-Za-z_]/.test(toks[k + 1]?.t ?? '')) {
      const end = toks.findIndex((x, j) => j > k && (x.t === ';' || x.t === ')'));
      for (const part of splitTop(toks.slice(k + 1, end)))
        if (part[0]) {
          m.enumOf.set(part[0].t, m.enums.get(t)!);
          m.enumLine.set(part[0].t, part[0].line);
        }
      continue;
    }
    if (t === 'input' || t === 'inout') {
      const end = toks.findIndex((x, j) => j > k && (x.t === ';' || x.t === ')' || /^(?:input|output|inout)$/.test(x.t)));
      for (const part of splitTop(toks.slice(k + 1, end < 0 ? undefined : end))) {
        const id = [...part].reverse().find((x) => /^[A-Za-z_]/.test(x.t) && !/^(?:wire|logic|reg|signed|unsigned|var|tri)$/.test(x.t));
        if (id) m.ports.add(id.t);
      }
      continue;
    }
    if (t === 'function' || t === 'task') {
      const end = toks.findIndex((x, j) => j > k && x.t === `end${t}`);
      for (let j = k + 1; j < (end < 0 ? toks.length : end); j++)
        if (/^[A-Za-z_]/.test(toks[j].t) && /^(?:\[|=|<=|\+\+|--|\+=|-=|\|=|&=|\^=)$/.test(toks[j + 1]?.t ?? '')) m.opaque.add(toks[j].t);
      k = end < 0 ? toks.length : end;
      continue;
    }
    if (t === 'assign') {
      const end = toks.findIndex((x, j) => j > k && x.t === ';');
      for (const part of splitTop(toks.slice(k + 1, end))) {
        const eq = part.findIndex((x) => x.t === '=');
        if (eq > 0) m.assigns.push({ lhs: part.slice(0, eq), rhs: part.slice(eq + 1) });
      }
      k = end;
      continue;
    }
    if (/^(?:always|always_comb|always_ff|always_latch|initial|final)$/.test(t)) {
      const p = new Parser(toks);
      p.i = k + 1;
      try {
        const proc = p.stmt();
        m.processes.push(proc);
        const at = toks[k + 1]?.t === '@' ? toks.slice(k + 2, k + 5).map((x) => x.t).join('') : '';
        if (t === 'always_comb' || (t === 'always' && (at.startsWith('*') || at === '(*)'))) m.comb.add(proc);
      } catch {
        // A construct this reader does not know: the process is left out, never guessed.
      }
      k = p.i - 1;
    }
  }
  return m;
}

function* walk(s: Stmt, path: Stmt[] = []): Generator<{ s: Stmt; path: Stmt[] }> {
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
function assignmentOf(toks: Tok[]): { lhs: Tok[]; op: string; rhs: Tok[] } | undefined {
  let depth = 0;
  for (let k = 0; k < toks.length; k++) {
    const t = toks[k].t;
    if ('([{'.includes(t)) depth++;
    else if (')]}'.includes(t)) depth--;
    else if (depth === 0 && /^(?:=|<=|\+=|-=|\*=|\/=|&=|\|=|\^=|<<=|>>=|\+\+|--)$/.test(t) && k > 0)
      return { lhs: toks.slice(0, k), op: t, rhs: toks.slice(k + 1) };
  }
  return undefined;
}

/** The variable an assignment target names (`x`, `x[3]`, `x.f`), or every name in `{a, b}`. */
function targets(lhs: Tok[]): string[] {
  if (lhs[0]?.t === '{') return lhs.filter((x) => /^[A-Za-z_]/.test(x.t)).map((x) => x.t);
  return lhs[0] && /^[A-Za-z_]/.test(lhs[0].t) ? [lhs[0].t] : [];
}

interface Write {
  line: number;
  whole: boolean;
  rhs: Tok[] | null;
  op: string;
  /** The process it sits in (undefined: a continuous assignment). */
  process?: Stmt;
  /** Enclosing statements inside the process. */
  path: Stmt[];
  /** Set when the write is a for-loop header's init or step. */
  loop?: Stmt & { kind: 'for' };
}

function writesOf(m: ModuleFacts): Map<string, Write[]> {
  const out = new Map<string, Write[]>();
  const add = (name: string, w: Write): void => void out.set(name, [...(out.get(name) ?? []), w]);
  for (const a of m.assigns) for (const n of targets(a.lhs)) add(n, { line: a.lhs[0].line, whole: a.lhs.length === 1, rhs: a.rhs, op: '=', path: [] });
  // Writes this reader does not follow (functions, tasks): such a variable is never judged.
  for (const n of m.opaque) add(n, { line: 0, whole: false, rhs: null, op: '?', path: [] });
  for (const proc of m.processes)
    for (const { s, path } of walk(proc)) {
      if (s.kind === 'simple') {
        const a = assignmentOf(s.toks);
        if (a) for (const n of targets(a.lhs)) add(n, { line: s.line, whole: a.lhs.length === 1, rhs: a.rhs, op: a.op, process: proc, path });
      } else if (s.kind === 'for') {
        for (const part of [...splitTop(s.init), ...splitTop(s.step)]) {
          const a = assignmentOf(part.filter((x, k) => !(k === 0 && /^(?:int|integer|logic|reg|bit|genvar|automatic)$/.test(x.t))));
          if (a) for (const n of targets(a.lhs)) add(n, { line: s.line, whole: a.lhs.length === 1, rhs: a.rhs, op: a.op, process: proc, path, loop: s });
        }
      }
    }
  return out;
}

// ---- the rules -----------------------------------------------------------------------------

interface Finding {
  module: string;
  /** Non-toggle points on these lines, or toggle points of this signal. */
  lines?: [number, number];
  signal?: string;
  /** Only these toggle labels of the signal (`shift_reg[3]`); all of them when absent. */
  labels?: Set<string>;
  /** With `lines`: only block points with this label (the implicit `else` of an `if`). */
  label?: string;
  line: number;
  reason: string;
}

function fullCaseDefaults(m: ModuleFacts, widthOf: (signal: string) => number | undefined): Finding[] {
  const out: Finding[] = [];
  for (const proc of m.processes)
    for (const { s } of walk(proc)) {
      if (s.kind !== 'case' || s.op !== 'case') continue;
      const dflt = s.items.find((it) => it.labels === 'default');
      if (!dflt) continue;
      const values = new Set<bigint>();
      let known = true;
      for (const it of s.items) if (it.labels !== 'default') for (const l of it.labels) {
        const v = evalConst(l, m.fixed);
        if (v === null) known = false;
        else values.add(v);
      }
      if (!known || s.sel.length === 0) continue;
      const sel = s.sel.length === 1 ? s.sel[0].t : undefined;
      const members = sel ? m.enumOf.get(sel) : undefined;
      if (members && members.includes(0n) && members.every((v) => values.has(v))) {
        out.push({
          module: m.name,
          lines: [dflt.line, dflt.body.end],
          line: dflt.line,
          reason: `default arm of a case on '${sel}', whose enum type has ${members.length} members, all listed: a 2-state enum variable only holds its members`,
        });
        continue;
      }
      // The selector's width: the signal's toggle bits in this module, or a constant part-select.
      let width: number | undefined;
      if (sel) width = widthOf(sel);
      else if (s.sel.length === 6 && s.sel[1].t === '[' && s.sel[3].t === ':' && s.sel[5].t === ']') {
        const hi = evalConst([s.sel[2]], m.fixed);
        const lo = evalConst([s.sel[4]], m.fixed);
        if (hi !== null && lo !== null) width = Number(hi - lo) + 1;
      }
      if (!width || width > 12) continue;
      const all = 1n << BigInt(width);
      const inRange = new Set([...values].map((v) => ((v % all) + all) % all));
      if (BigInt(inRange.size) === all)
        out.push({
          module: m.name,
          lines: [dflt.line, dflt.body.end],
          line: dflt.line,
          reason: `default arm of a case whose items list all ${all} values of the ${width}-bit selector '${s.sel.map((x) => x.t).join('')}': a 2-state selector has no other value`,
        });
    }
  return out;
}

/**
 * An `else` that no 2-state value reaches: after `if (x >= 0)` on an unsigned x, or after
 * `if (x == 0) ... else if (x > 0)` (also `!= 0`, `>= 1`). With X or Z a 4-state simulator takes it.
 */
function deadElses(m: ModuleFacts, toks: Tok[]): Finding[] {
  const signed = new Set<string>();
  toks.forEach((x, k) => {
    if (x.t !== 'signed') return;
    const next = toks.slice(k + 1, k + 40).find((y, j, a) => /^[A-Za-z_]/.test(y.t) && a[j - 1]?.t !== '[' && !m.constants.has(y.t));
    if (next) signed.add(next.t);
  });
  const text = (ts: Tok[]): string => ts.map((x) => x.t).join(' ');
  const unwrap = (ts: Tok[]): Tok[] => (ts[0]?.t === '(' && ts.at(-1)?.t === ')' && splitTop(ts.slice(1, -1), ')').length === 1 ? unwrap(ts.slice(1, -1)) : ts);
  const isZero = (ts: Tok[]): boolean => evalConst(ts, m.fixed) === 0n;
  const isOne = (ts: Tok[]): boolean => evalConst(ts, m.fixed) === 1n;
  /** `x` or `x[..]`, unsigned: the operand's text. */
  const operand = (ts: Tok[]): string | undefined =>
    ts.length && /^[A-Za-z_]/.test(ts[0].t) && !m.constants.has(ts[0].t) && !signed.has(ts[0].t) && (ts.length === 1 || (ts[1].t === '[' && ts.at(-1)!.t === ']'))
      ? text(ts)
      : undefined;
  const split = (ts: Tok[], op: string): [Tok[], Tok[]] | undefined => {
    const parts = splitTop(ts, op);
    return parts.length === 2 ? [parts[0], parts[1]] : undefined;
  };
  const out: Finding[] = [];
  const dead = (s: Stmt & { kind: 'if' }, why: string): void => {
    out.push(
      s.else
        ? { module: m.name, lines: [s.else.line, s.else.end], line: s.else.line, reason: why }
        : { module: m.name, lines: [s.line, s.line], label: 'else', line: s.line, reason: why },
    );
  };
  for (const proc of m.processes)
    for (const { s } of walk(proc)) {
      if (s.kind !== 'if') continue;
      const c = unwrap(s.cond);
      const ge = split(c, '>=');
      const le = split(c, '<=');
      const x = ge && isZero(ge[1]) ? operand(ge[0]) : le && isZero(le[0]) ? operand(le[1]) : undefined;
      if (x) dead(s, `the else of 'if (${text(c)})': an unsigned '${x}' is always >= 0 in 2-state simulation`);
      const eq = split(c, '==');
      const y = eq && isZero(eq[1]) ? operand(eq[0]) : undefined;
      if (y && s.else?.kind === 'if') {
        const d = unwrap(s.else.cond);
        const gt = split(d, '>') ?? split(d, '!=');
        const ge1 = split(d, '>=');
        if ((gt && isZero(gt[1]) && operand(gt[0]) === y) || (ge1 && isOne(ge1[1]) && operand(ge1[0]) === y))
          dead(s.else, `the else of 'if (${text(c)}) ... else if (${text(d)})': a 2-state '${y}' that is not 0 is always > 0`);
      }
    }
  return out;
}

function constantSignals(m: ModuleFacts): Finding[] {
  const out: Finding[] = [];
  for (const [name, ws] of writesOf(m)) {
    if (m.ports.has(name) || m.constants.has(name)) continue;
    const loops = ws.filter((w) => w.loop);
    const line = ws[0].line;
    if (!loops.length) {
      // Every write the same constant, whole: at most one change, from the initial 0.
      const texts = new Set(ws.map((w) => (w.whole && w.op !== '++' && w.op !== '--' && w.rhs && isConstant(w.rhs, m) ? w.rhs.map((x) => x.t).join(' ') : '\0')));
      if (!texts.has('\0') && texts.size === 1)
        out.push({ module: m.name, signal: name, line, reason: `'${name}' is only ever assigned the constant ${[...texts][0]}` });
      continue;
    }
    // A loop index: one process, constants and loop headers only, no condition around any of it,
    // and no early exit from those loops.
    const proc = ws[0].process;
    // Around each write only blocks and loops whose condition tests their own index against
    // constants: the write runs, and runs the same, on every pass of the process.
    const constLoop = (f: Stmt & { kind: 'for' }): boolean =>
      new Set(f.cond.filter((x) => /^[A-Za-z_$]/.test(x.t) && !m.constants.has(x.t) && !CONST_FUNCS.has(x.t)).map((x) => x.t)).size <= 1;
    const plain = (w: Write): boolean =>
      w.process !== undefined && w.process === proc && w.path.every((p) => p.kind === 'block' || (p.kind === 'for' && constLoop(p)));
    const stepOk = (w: Write): boolean =>
      w.whole &&
      ((w.op === '++' || w.op === '--') ||
        ((w.op === '+=' || w.op === '-=') && w.rhs !== null && isConstant(w.rhs, m)) ||
        (w.op === '=' && w.rhs !== null && (isConstant(w.rhs, m) || (w.rhs[0]?.t === name && /^[-+]$/.test(w.rhs[1]?.t ?? '') && isConstant(w.rhs.slice(2), m)))));
    const condOk = (f: Stmt & { kind: 'for' }): boolean => {
      const rest = f.cond.filter((x) => x.t !== name);
      return f.cond.some((x) => x.t === name) && rest.length > 0 && rest.every((x) => !/^[A-Za-z_$]/.test(x.t) || m.constants.has(x.t) || CONST_FUNCS.has(x.t));
    };
    const exits = (f: Stmt & { kind: 'for' }): boolean => [...walk(f.body)].some(({ s }) => s.kind === 'simple' && /^(?:break|disable|return)$/.test(s.toks[0]?.t ?? ''));
    // Or every write is the header of one same loop: a pass that runs it ends at its exit value,
    // a pass that does not leaves the value alone, whatever condition sits around it.
    const header = (f: Stmt & { kind: 'for' }): string => [...f.init, ...f.cond, ...f.step].map((x) => x.t).join(' ');
    const oneLoop = ws.every((w) => w.loop && w.process === proc) && new Set(loops.map((w) => header(w.loop!))).size === 1;
    if ((ws.every(plain) || oneLoop) && ws.every(stepOk) && loops.every((w) => condOk(w.loop!) && !exits(w.loop!)))
      out.push({
        module: m.name,
        signal: name,
        line: loops[0].loop!.line,
        reason: `for-loop index '${name}' with constant bounds: every pass of its block leaves it at the same value (toggle coverage never sees the values inside a pass)`,
      });
  }
  return out;
}

// ---- constant bits of combinational blocks -------------------------------------------------
// One pass of an always_comb / always @* block, bit by bit: 0, 1, or unknown (2). Inputs and
// every other signal are unknown, loops with constant bounds are unrolled, both arms of an
// unknown condition are merged. A bit the pass always leaves at the same value is constant.

type Bit = 0 | 1 | 2;
interface AV {
  w: number;
  /** LSB first. */
  b: Bit[];
}
class Unsupported extends Error {}

const unknown = (w: number): AV => ({ w, b: new Array<Bit>(w).fill(2) });
const fromBig = (v: bigint, w: number): AV => ({ w, b: Array.from({ length: w }, (_, k) => Number((v >> BigInt(k)) & 1n) as Bit) });
const toBig = (a: AV): bigint | null => (a.b.every((x) => x !== 2) ? a.b.reduce((acc, x, k) => acc | (BigInt(x) << BigInt(k)), 0n) : null);
const resize = (a: AV, w: number): AV => ({ w, b: Array.from({ length: w }, (_, k) => (k < a.w ? a.b[k] : 0) as Bit) });
const merge = (a: AV, b: AV): AV => {
  const w = Math.max(a.w, b.w);
  const x = resize(a, w);
  const y = resize(b, w);
  return { w, b: x.b.map((v, k) => (v === y.b[k] ? v : 2)) };
};
const MAX_W = 4096;

interface CombEnv {
  vars: Map<string, AV>;
}

class CombEval {
  steps = 0;
  constructor(
    readonly m: ModuleFacts,
    readonly widthOf: (name: string) => number | undefined,
    readonly declWidth: Map<string, number>,
  ) {}
  width(name: string): number {
    const w = this.widthOf(name) ?? this.declWidth.get(name);
    if (!w || w > MAX_W) throw new Unsupported(name);
    return w;
  }
  /** Precedence climbing over tokens; `ctx` is the width of the context (assignment target). */
  expr(ts: Tok[], env: CombEnv, ctx: number): AV {
    const p = { i: 0 };
    const v = this.binary(ts, p, env, ctx, 0);
    if (p.i !== ts.length) throw new Unsupported(ts.map((x) => x.t).join(' '));
    return v;
  }
  private static PREC: Record<string, number> = {
    '?': 1, '||': 2, '&&': 3, '|': 4, '^': 5, '&': 6, '==': 7, '!=': 7, '===': 7, '!==': 7,
    '<': 8, '<=': 8, '>': 8, '>=': 8, '<<': 9, '>>': 9, '<<<': 9, '>>>': 9, '+': 10, '-': 10, '*': 11, '/': 11, '%': 11,
  };
  private binary(ts: Tok[], p: { i: number }, env: CombEnv, ctx: number, min: number): AV {
    let left = this.unary(ts, p, env, ctx);
    for (;;) {
      const op = ts[p.i]?.t;
      const prec = op === undefined ? undefined : CombEval.PREC[op];
      if (prec === undefined || prec < min) return left;
      p.i++;
      if (op === '?') {
        const a = this.binary(ts, p, env, ctx, 0);
        if (ts[p.i++]?.t !== ':') throw new Unsupported('?:');
        const b = this.binary(ts, p, env, ctx, 1);
        const c = toBig(left);
        const w = Math.max(a.w, b.w, ctx);
        left = c === null ? (left.b.includes(1) ? resize(a, w) : merge(resize(a, w), resize(b, w))) : c !== 0n ? resize(a, w) : resize(b, w);
        continue;
      }
      const cmp = prec === 7 || prec === 8 || prec <= 3;
      const right = this.binary(ts, p, env, cmp ? 0 : prec === 9 ? 0 : ctx, prec + 1);
      left = this.apply(op!, left, right, ctx);
    }
  }
  private apply(op: string, a: AV, b: AV, ctx: number): AV {
    const x = toBig(a);
    const y = toBig(b);
    const truth = (v: AV): Bit => (v.b.includes(1) ? 1 : v.b.every((k) => k === 0) ? 0 : 2);
    if (op === '&&' || op === '||') {
      const [p, q] = [truth(a), truth(b)];
      const r: Bit = op === '&&' ? (p === 0 || q === 0 ? 0 : p === 1 && q === 1 ? 1 : 2) : p === 1 || q === 1 ? 1 : p === 0 && q === 0 ? 0 : 2;
      return { w: 1, b: [r] };
    }
    if (['==', '!=', '===', '!==', '<', '<=', '>', '>='].includes(op)) {
      if (x === null || y === null) return unknown(1);
      const r = { '==': x === y, '===': x === y, '!=': x !== y, '!==': x !== y, '<': x < y, '<=': x <= y, '>': x > y, '>=': x >= y }[op]!;
      return { w: 1, b: [r ? 1 : 0] };
    }
    if (op === '<<' || op === '>>' || op === '<<<' || op === '>>>') {
      const w = Math.max(a.w, ctx);
      if (y === null || y > BigInt(MAX_W)) return unknown(w);
      const n = Number(y);
      const s = resize(a, w);
      return { w, b: Array.from({ length: w }, (_, k) => ((op[0] === '<' ? (k - n >= 0 ? s.b[k - n] : 0) : k + n < w ? s.b[k + n] : 0) as Bit)) };
    }
    const w = Math.max(a.w, b.w, ctx);
    if (w > MAX_W) throw new Unsupported(op);
    if (op === '&' || op === '|' || op === '^') {
      const s = resize(a, w);
      const t = resize(b, w);
      return {
        w,
        b: s.b.map((u, k): Bit => {
          const v = t.b[k];
          if (op === '&') return u === 0 || v === 0 ? 0 : u === 1 && v === 1 ? 1 : 2;
          if (op === '|') return u === 1 || v === 1 ? 1 : u === 0 && v === 0 ? 0 : 2;
          return u === 2 || v === 2 ? 2 : ((u ^ v) as Bit);
        }),
      };
    }
    if (x === null || y === null) return unknown(w);
    const mask = (1n << BigInt(w)) - 1n;
    if ((op === '/' || op === '%') && y === 0n) return unknown(w);
    const r = { '+': x + y, '-': x - y, '*': x * y, '/': y ? x / y : 0n, '%': y ? x % y : 0n }[op as '+'];
    if (r === undefined) throw new Unsupported(op);
    return fromBig(r & mask, w);
  }
  private unary(ts: Tok[], p: { i: number }, env: CombEnv, ctx: number): AV {
    const t = ts[p.i]?.t;
    if (t === '~' || t === '!' || t === '-' || t === '+' || t === '&' || t === '|' || t === '^') {
      p.i++;
      const a = this.unary(ts, p, env, t === '~' || t === '-' || t === '+' ? ctx : 0);
      if (t === '+') return a;
      if (t === '~') return { w: a.w, b: a.b.map((x) => (x === 2 ? 2 : ((1 - x) as Bit))) };
      if (t === '-') {
        const v = toBig(a);
        const w = Math.max(a.w, ctx);
        return v === null ? unknown(w) : fromBig(-v & ((1n << BigInt(w)) - 1n), w);
      }
      if (t === '!') return { w: 1, b: [a.b.includes(1) ? 0 : a.b.every((x) => x === 0) ? 1 : 2] };
      if (t === '&') return { w: 1, b: [a.b.includes(0) ? 0 : a.b.every((x) => x === 1) ? 1 : 2] };
      if (t === '|') return { w: 1, b: [a.b.includes(1) ? 1 : a.b.every((x) => x === 0) ? 0 : 2] };
      return { w: 1, b: [a.b.includes(2) ? 2 : ((a.b.reduce((s: number, x) => s ^ x, 0) & 1) as Bit)] };
    }
    return this.postfix(ts, p, env, this.primary(ts, p, env, ctx));
  }
  private primary(ts: Tok[], p: { i: number }, env: CombEnv, ctx: number): AV {
    const t = ts[p.i++]?.t;
    if (t === undefined) throw new Unsupported('end');
    if (t === '(') {
      const v = this.binary(ts, p, env, ctx, 0);
      if (ts[p.i++]?.t !== ')') throw new Unsupported(')');
      return v;
    }
    if (t === '{') {
      const first = this.binary(ts, p, env, 0, 0);
      if (ts[p.i]?.t === '{') {
        // Replication {n{x}}.
        const n = toBig(first);
        p.i++;
        const parts = this.list(ts, p, env, '}');
        if (ts[p.i++]?.t !== '}' || ts[p.i++]?.t !== '}' || n === null || n > BigInt(MAX_W)) throw new Unsupported('{n{}}');
        const one = concat(parts);
        return concat(Array.from({ length: Number(n) }, () => one));
      }
      const parts = [first];
      if (ts[p.i]?.t === ',') {
        p.i++;
        parts.push(...this.list(ts, p, env, '}'));
        p.i++;
      } else if (ts[p.i]?.t === '}') p.i++;
      else throw new Unsupported('{');
      return concat(parts);
    }
    if (t === '$clog2' || t === '$signed' || t === '$unsigned') {
      if (ts[p.i++]?.t !== '(') throw new Unsupported(t);
      const a = this.binary(ts, p, env, 0, 0);
      if (ts[p.i++]?.t !== ')') throw new Unsupported(t);
      if (t !== '$clog2') return a;
      const v = toBig(a);
      if (v === null) throw new Unsupported(t);
      let r = 0n;
      while (1n << r < v) r++;
      return fromBig(r, 32);
    }
    const lit = /^(\d*)'[sS]?([bBoOdDhH])([0-9a-fA-F_xXzZ?]+)$/.exec(t);
    if (lit) {
      const w = lit[1] ? Number(lit[1]) : 32;
      if (/[xXzZ?]/.test(lit[3])) return unknown(w);
      const v = evalConst([t]);
      if (v === null) throw new Unsupported(t);
      return fromBig(v, w);
    }
    if (/^\d[\d_]*$/.test(t)) return fromBig(BigInt(t.replace(/_/g, '')), 32);
    if (/^'[01]$/.test(t)) return fromBig(BigInt(t[1]), Math.max(1, ctx));
    if (/^[A-Za-z_]/.test(t)) {
      if (ts[p.i]?.t === '(' || ts[p.i]?.t === '::' || ts[p.i]?.t === '.') throw new Unsupported(t);
      const v = env.vars.get(t);
      if (v) return v;
      if (this.m.fixed.has(t)) {
        const c = this.m.fixed.get(t);
        if (c === null || c === undefined) throw new Unsupported(t);
        return fromBig(c, 32);
      }
      if (this.m.constants.has(t)) throw new Unsupported(t); // an overridable parameter
      return unknown(this.width(t));
    }
    throw new Unsupported(t);
  }
  private list(ts: Tok[], p: { i: number }, env: CombEnv, close: string): AV[] {
    const out: AV[] = [];
    for (;;) {
      out.push(this.binary(ts, p, env, 0, 0));
      if (ts[p.i]?.t === ',') {
        p.i++;
        continue;
      }
      if (ts[p.i]?.t === close) return out;
      throw new Unsupported(close);
    }
  }
  private postfix(ts: Tok[], p: { i: number }, env: CombEnv, a: AV): AV {
    while (ts[p.i]?.t === '[') {
      p.i++;
      const sel = this.select(ts, p, env);
      if (!sel) throw new Unsupported('[]');
      a = { w: sel.w, b: sel.idx.map((k) => (k === null || k < 0 || k >= a.w ? 2 : a.b[k])) as Bit[] };
    }
    return a;
  }
  /** `[i]`, `[hi:lo]`, `[b +: w]`, `[b -: w]` after the `[`; consumes `]`. Unknown index: null. */
  select(ts: Tok[], p: { i: number }, env: CombEnv): { w: number; idx: Array<number | null> } | null {
    const inner: Tok[] = [];
    let depth = 0;
    while (p.i < ts.length && !(depth === 0 && ts[p.i].t === ']')) {
      if ('([{'.includes(ts[p.i].t)) depth++;
      else if (')]}'.includes(ts[p.i].t)) depth--;
      inner.push(ts[p.i++]);
    }
    p.i++;
    const parts = splitTop(inner, ':');
    const plus = inner.findIndex((x) => x.t === '+' || x.t === '-');
    if (parts.length === 2 && plus >= 0 && parts[0].at(-1)?.t === inner[plus].t) {
      const base = toBig(this.expr(parts[0].slice(0, -1), env, 0));
      const w = toBig(this.expr(parts[1], env, 0));
      if (w === null || w > BigInt(MAX_W)) return null;
      const lo = base === null ? null : inner[plus].t === '+' ? Number(base) : Number(base) - Number(w) + 1;
      return { w: Number(w), idx: Array.from({ length: Number(w) }, (_, k) => (lo === null ? null : lo + k)) };
    }
    if (parts.length === 2) {
      const hi = toBig(this.expr(parts[0], env, 0));
      const lo = toBig(this.expr(parts[1], env, 0));
      if (hi === null || lo === null || hi < lo) return null;
      return { w: Number(hi - lo) + 1, idx: Array.from({ length: Number(hi - lo) + 1 }, (_, k) => Number(lo) + k) };
    }
    const i = toBig(this.expr(inner, env, 0));
    return { w: 1, idx: [i === null ? null : Number(i)] };
  }

  /** One statement; returns the names it wrote. */
  exec(s: Stmt, env: CombEnv, written: Set<string>): void {
    if (++this.steps > 100_000) throw new Unsupported('too long');
    if (s.kind === 'block') for (const b of s.body) this.exec(b, env, written);
    else if (s.kind === 'if') {
      const c = this.expr(s.cond, env, 0);
      if (c.b.includes(1)) this.exec(s.then, env, written);
      else if (!c.b.includes(2)) {
        if (s.else) this.exec(s.else, env, written);
      } else this.branches([s.then, s.else], env, written);
    } else if (s.kind === 'case') {
      if (s.op !== 'case') throw new Unsupported(s.op);
      const sel = toBig(this.expr(s.sel, env, 0));
      const arms: Array<Stmt | undefined> = [];
      let chosen: Stmt | undefined;
      let decided = sel !== null;
      for (const it of s.items) {
        if (it.labels === 'default') continue;
        for (const l of it.labels) {
          const v = toBig(this.expr(l, env, 0));
          if (v === null) decided = false;
          else if (decided && v === sel && !chosen) chosen = it.body;
        }
        arms.push(it.body);
      }
      const dflt = s.items.find((it) => it.labels === 'default')?.body;
      if (decided) {
        const pick = chosen ?? dflt;
        if (pick) this.exec(pick, env, written);
      } else this.branches(dflt ? [...arms, dflt] : [...arms, undefined], env, written);
    } else if (s.kind === 'for') {
      for (const part of splitTop(s.init)) this.assign(part.filter((x, k) => !(k === 0 && /^(?:int|integer|logic|reg|bit|automatic)$/.test(x.t))), env, written);
      for (let n = 0; ; n++) {
        const c = this.expr(s.cond, env, 0);
        if (c.b.includes(2) || n > MAX_W) throw new Unsupported('loop bound');
        if (!c.b.includes(1)) break;
        this.exec(s.body, env, written);
        for (const part of splitTop(s.step)) this.assign(part, env, written);
      }
    } else if (s.kind === 'simple') {
      if (!s.toks.length) return;
      const a = assignmentOf(s.toks);
      if (a) this.assign(s.toks, env, written);
      else if (/^(?:integer|int|logic|reg|bit|byte)$/.test(s.toks[0].t)) return;
      else if (/^\$/.test(s.toks[0].t)) return; // $display and other system tasks change nothing
      else throw new Unsupported(s.toks[0].t);
    } else throw new Unsupported(s.kind);
  }
  /** Every arm on its own copy of the state (undefined: an arm that changes nothing), then merged. */
  branches(arms: Array<Stmt | undefined>, env: CombEnv, written: Set<string>): void {
    const outs = arms.map((arm) => {
      const e: CombEnv = { vars: new Map(env.vars) };
      if (arm) this.exec(arm, e, written);
      return e;
    });
    const names = new Set(outs.flatMap((e) => [...e.vars.keys()]));
    for (const n of names) {
      const vs = outs.map((e) => e.vars.get(n));
      env.vars.set(n, vs.every((v) => v) ? vs.reduce((a, b) => merge(a!, b!))! : unknown(Math.max(...vs.map((v) => v?.w ?? 1))));
    }
  }
  assign(toks: Tok[], env: CombEnv, written: Set<string>): void {
    const a = assignmentOf(toks);
    if (!a) throw new Unsupported('assignment');
    const name = a.lhs[0]?.t;
    if (!name || !/^[A-Za-z_]/.test(name)) throw new Unsupported('lhs');
    const cur = env.vars.get(name) ?? unknown(this.width(name));
    let rhs: Tok[] = a.rhs;
    if (a.op === '++' || a.op === '--') rhs = [...a.lhs, { t: a.op[0], line: 0 }, { t: '1', line: 0 }];
    else if (a.op !== '=' && a.op !== '<=') rhs = [...a.lhs, { t: a.op.slice(0, -1), line: 0 }, { t: '(', line: 0 }, ...a.rhs, { t: ')', line: 0 }];
    written.add(name);
    if (a.lhs.length === 1) {
      env.vars.set(name, resize(this.expr(rhs, env, cur.w), cur.w));
      return;
    }
    if (a.lhs[1]?.t !== '[' || a.lhs.at(-1)?.t !== ']') throw new Unsupported('lhs');
    const p = { i: 2 };
    const sel = this.select(a.lhs, p, env);
    if (p.i !== a.lhs.length) throw new Unsupported('lhs');
    const next = { w: cur.w, b: [...cur.b] };
    if (!sel || sel.idx.includes(null)) next.b.fill(2);
    else {
      const v = resize(this.expr(rhs, env, sel.w), sel.w);
      sel.idx.forEach((k, j) => {
        if (k! >= 0 && k! < next.w) next.b[k!] = v.b[j];
      });
    }
    env.vars.set(name, next);
  }
}

function concat(parts: AV[]): AV {
  const b: Bit[] = [];
  for (const part of [...parts].reverse()) b.push(...part.b);
  if (b.length > MAX_W) throw new Unsupported('concat');
  return { w: b.length, b };
}

/** Bit widths from declarations (`logic [7:0] a, b;`, `integer i;`), evaluated where constant. */
function declaredWidths(toks: Tok[], m: ModuleFacts): Map<string, number> {
  const out = new Map<string, number>();
  for (let k = 0; k < toks.length; k++) {
    const t = toks[k].t;
    if (!/^(?:reg|logic|wire|bit|integer|int|input|output)$/.test(t)) continue;
    let j = k + 1;
    while (/^(?:reg|logic|wire|bit|signed|unsigned|var)$/.test(toks[j]?.t ?? '')) j++;
    let w = t === 'integer' || t === 'int' ? 32 : 1;
    if (toks[j]?.t === '[') {
      const close = toks.findIndex((x, n) => n > j && x.t === ']');
      const parts = splitTop(toks.slice(j + 1, close), ':');
      const hi = parts.length === 2 ? evalConst(parts[0], m.fixed) : null;
      const lo = parts.length === 2 ? evalConst(parts[1], m.fixed) : null;
      if (hi === null || lo === null) continue;
      w = Number(hi > lo ? hi - lo : lo - hi) + 1;
      j = close + 1;
    }
    if (/^[A-Za-z_]/.test(toks[j]?.t ?? '') && !out.has(toks[j].t)) out.set(toks[j].t, w);
    while (toks[j + 1]?.t === ',' && /^[A-Za-z_]/.test(toks[j + 2]?.t ?? '') && !/^(?:input|output|inout)$/.test(toks[j + 2].t)) {
      j += 2;
      out.set(toks[j].t, w);
    }
  }
  return out;
}

/** Bits of variables that every pass of their (only) combinational block leaves at one value. */
function combConstantBits(
  m: ModuleFacts,
  toks: Tok[],
  widthOf: (name: string) => number | undefined,
): Array<{ signal: string; bits: number[]; line: number }> {
  const decl = declaredWidths(toks, m);
  const writes = writesOf(m);
  const out: Array<{ signal: string; bits: number[]; line: number }> = [];
  for (const proc of m.comb) {
    const env: CombEnv = { vars: new Map() };
    const written = new Set<string>();
    try {
      new CombEval(m, widthOf, decl).exec(proc, env, written);
    } catch (e) {
      if (e instanceof Unsupported) continue; // a construct this pass does not follow: no claim
      throw e;
    }
    for (const name of written) {
      if (!(writes.get(name) ?? []).every((w) => w.process === proc)) continue;
      const v = env.vars.get(name)!;
      const bits = v.b.flatMap((x, k) => (x === 2 ? [] : [k]));
      if (bits.length) out.push({ signal: name, bits, line: proc.line });
    }
  }
  return out;
}

// ---- entry point ---------------------------------------------------------------------------

/** `0-7, 10` */
function ranges(ks: number[]): string {
  const s = [...new Set(ks)].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < s.length; i++) {
    let j = i;
    while (j + 1 < s.length && s[j + 1] === s[j] + 1) j++;
    out.push(j > i ? `${s[i]}-${s[j]}` : `${s[i]}`);
    i = j;
  }
  return out.join(', ');
}

function modulesIn(code: string): Array<{ name: string; toks: Tok[] }> {
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

/**
 * The uncovered points of `points` (the DUT's, after waivers) that no 2-state simulation can
 * cover, by the rules above, and the figures over the rest. `read` gives a DUT file's text.
 */
export function twoStateUnreachable(points: CoveragePoint[], read: (file: string) => string | undefined): TwoStateReport {
  const findings: Array<Finding & { file: string }> = [];
  const files = [...new Set(points.map((p) => p.file))];
  for (const file of files) {
    const text = read(file);
    if (!text) continue;
    for (const mod of modulesIn(blankComments(text, true))) {
      const ofModule = (p: CoveragePoint): boolean => p.module === mod.name || p.module.startsWith(mod.name + '__');
      const widthOf = (signal: string): number | undefined => {
        const bits = new Set(points.filter((p) => p.type === 'toggle' && ofModule(p) && (p.label === signal || p.label.startsWith(signal + '['))).map((p) => p.label));
        if (bits.size === 0 || [...bits].some((l) => /\]\[/.test(l))) return undefined;
        return bits.size;
      };
      const variants = new Set(points.filter(ofModule).map((p) => p.module));
      let facts: ModuleFacts;
      try {
        facts = moduleFacts(mod.name, mod.toks, variants.size === 1 && variants.has(mod.name));
      } catch {
        continue;
      }
      for (const f of [...fullCaseDefaults(facts, widthOf), ...deadElses(facts, mod.toks), ...constantSignals(facts)]) findings.push({ ...f, file });
      // An enum variable holds only its members (and starts at 0): a bit no member sets stays 0.
      for (const [name, members] of facts.enumOf) {
        if (!members.includes(0n) || facts.opaque.has(name)) continue;
        const labels = points.filter((p) => p.type === 'toggle' && ofModule(p) && (p.label === name || p.label.startsWith(name + '['))).map((p) => p.label);
        const zero = labels.filter((l) => {
          const k = /\[(\d+)\]$/.exec(l)?.[1];
          return k !== undefined && members.every((v) => ((v >> BigInt(k)) & 1n) === 0n);
        });
        if (zero.length)
          findings.push({
            module: mod.name,
            signal: name,
            labels: new Set(zero),
            line: facts.enumLine.get(name) ?? 0,
            file,
            reason: `'${name}' is of an enum type whose ${members.length} members all leave ${zero.length === 1 ? 'this bit' : 'these bits'} 0: a 2-state enum variable only holds its members`,
          });
      }
      // Bit widths from toggle points are one instance's only when all instances share a variant.
      for (const c of variants.size === 1 ? combConstantBits(facts, mod.toks, widthOf) : []) {
        const labels = points.filter((p) => p.type === 'toggle' && ofModule(p) && (p.label === c.signal || p.label.startsWith(c.signal + '['))).map((p) => p.label);
        const idx = labels.map((l) => Number(/\[(\d+)\]$/.exec(l)?.[1] ?? 0));
        const lo = idx.length ? Math.min(...idx) : 0;
        const names = new Set(c.bits.map((k) => (labels.includes(c.signal) ? c.signal : `${c.signal}[${k + lo}]`)));
        const list = c.bits.length === 1 ? `bit ${c.bits[0] + lo}` : `bits ${ranges(c.bits.map((k) => k + lo))}`;
        findings.push({
          module: mod.name,
          signal: c.signal,
          labels: names,
          line: c.line,
          file,
          reason: `${list} of '${c.signal}' hold the same value after every pass of the combinational block at line ${c.line} (worked out bit by bit from constants and constant-bound loops; toggle coverage samples between passes)`,
        });
      }
    }
  }
  const out = new Map<string, Unreachable2State>();
  const marked = new Set<CoveragePoint>();
  for (const p of points) {
    if (isCovered(p)) continue;
    for (const f of findings) {
      if (f.file !== p.file || !(p.module === f.module || p.module.startsWith(f.module + '__'))) continue;
      const hit =
        p.type === 'toggle'
          ? f.signal !== undefined && (f.labels ? f.labels.has(p.label) : p.label === f.signal || p.label.startsWith(f.signal + '['))
          : f.lines !== undefined &&
            p.type !== 'expr' &&
            p.type !== 'cond' &&
            p.line >= f.lines[0] &&
            p.line <= f.lines[1] &&
            (f.label === undefined || p.label === f.label);
      if (!hit) continue;
      marked.add(p);
      const label = p.type === 'toggle' ? f.signal! : p.label;
      const key = `${f.file}\0${f.line}\0${p.type}\0${label}`;
      const e = out.get(key);
      if (e) e.points++;
      else out.set(key, { file: f.file, line: f.line, type: p.type, label, points: 1, reason: f.reason });
      break;
    }
  }
  return { count: marked.size, points: [...out.values()], figures: figures(points.filter((p) => !marked.has(p))) };
}
