// Coverage points that a 2-state simulator (Verilator) can never reach, found by reading the
// DUT's source: reported beside the scored figure, never taken out of it (docs/protocol.md §5).
// The rules, each about the code, never about a design's name:
// - full-case default: the `default` arm of a case whose items list every value the selector can
//   hold: every value of its width, or every member of its enum type (a 2-state variable has no
//   X or Z, and an enum variable only holds members, starting at 0 when 0 is one);
// - dead else: the else of `if (x >= 0)` on an unsigned x, or of `if (x == 0) ... else if (x > 0)`;
// - loop index: a variable assigned only constants and as the index of for-loops with constant
//   bounds, outside any condition: each pass of its block leaves it at the same value, and
//   toggle coverage samples values between passes, never inside one;
// - constant: a variable whose every assignment is the same constant expression;
// - enum bits: a bit that no member of a variable's enum type sets;
// - constant bits of a combinational block: bits that every pass leaves at one value, worked out
//   bit by bit (combBits.ts).
// A point the run did cover is reachable by definition and is never listed. This module holds the
// rules and what they read of a module (its facts); the token and statement reading, and constant
// expressions, are svStatements.ts.
import { blankComments } from '../design/lexer.js';
import { CombEval, Unsupported, type CombEnv } from './combBits.js';
import { figures, isCovered, type CoverageFigures, type CoveragePoint, type PointType } from './model.js';
import { assignmentOf, evalConst, modulesIn, Parser, splitTop, targets, walk, type Stmt, type Tok } from './svStatements.js';

export { evalConst } from './svStatements.js';

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

// ---- constant bits of combinational blocks (combBits.ts) -----------------------------------

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
