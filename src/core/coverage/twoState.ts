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
//   bit by bit (combBits.ts);
// - array slots no write reaches: every write to an array indexes constants, or genvars of
//   generate-for loops unrolled under constant bounds, and some slots are outside all of them.
// A point the run did cover is reachable by definition and is never listed. This module holds the
// rules and what they read of a module (its facts); the token and statement reading, and constant
// expressions, are svStatements.ts.
import { blankComments } from '../design/lexer.js';
import { CombEval, PRINT_TASK, Unsupported, type CombEnv, type DeclShape } from './combBits.js';
import { figures, isCovered, type CoverageFigures, type CoveragePoint, type Exclusion, type PointType } from './model.js';
import {
  assignmentOf,
  evalConst,
  instancesIn,
  modulesIn,
  parameterStatement,
  Parser,
  splitTop,
  targets,
  walk,
  type CaseItem,
  type Instance,
  type Stmt,
  type Tok,
} from './svStatements.js';
import { condValue, elaborate, instanceOverrides, overrideValue, paramDecls, type ParamDecl, type ParamEnv } from './params.js';

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
  /** Every uncovered point proven unreachable, by any rule: 2-state (the points above), dead
   * under the parameters, constant. */
  proven: Map<CoveragePoint, Proof>;
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
  /** Module instances, and every name their port lists mention (an output may write it). */
  instances: Instance[];
  connected: Set<string>;
  /** An instance connects by `.*`: any name may be written by it. */
  implicitConnect: boolean;
  /** The keyword of each process (`initial`, `always_ff`...), and the processes holding a delay,
   * an event control or a wait inside their body. */
  procKind: Map<Stmt, string>;
  timed: Set<Stmt>;
  /** Token ranges [from, to) of the processes, continuous assignments, functions and tasks. */
  spans: Array<[number, number]>;
  /** False when some process could not be read: its writes are unknown, so no rule that needs
   * every write of a variable may claim anything in this module. */
  complete: boolean;
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
    instances: [],
    connected: new Set(),
    implicitConnect: false,
    procKind: new Map(),
    timed: new Set(),
    complete: true,
    spans: [],
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
      const { stmt } = parameterStatement(toks, k);
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
      m.spans.push([k, end < 0 ? toks.length : end + 1]);
      k = end < 0 ? toks.length : end;
      continue;
    }
    if (t === 'assign') {
      const end = toks.findIndex((x, j) => j > k && x.t === ';');
      // A drive strength `(strong0, weak1)` and a delay `#3` / `#(1, 2)` come before the targets.
      let from = k + 1;
      for (;;) {
        if (toks[from]?.t === '#') from += toks[from + 1]?.t === '(' ? splitEnd(toks, from + 1) - from + 1 : 2;
        else if (toks[from]?.t === '(') from = splitEnd(toks, from) + 1;
        else break;
      }
      for (const part of splitTop(toks.slice(from, end))) {
        const eq = part.findIndex((x) => x.t === '=');
        if (eq > 0) m.assigns.push({ lhs: part.slice(0, eq), rhs: part.slice(eq + 1) });
      }
      m.spans.push([k, end + 1]);
      k = end;
      continue;
    }
    if (/^(?:always|always_comb|always_ff|always_latch|initial|final)$/.test(t)) {
      const p = new Parser(toks);
      p.i = k + 1;
      try {
        const proc = p.stmt();
        m.processes.push(proc);
        m.procKind.set(proc, t);
        m.spans.push([k, p.i]);
        // A timing control inside the body (the first one, of an always, is its trigger).
        const body = toks.slice(k + 1, p.i);
        const first = t !== 'initial' && (body[0]?.t === '@' || body[0]?.t === '#') ? 1 : 0;
        if (body.some((x, j) => j >= first && (x.t === '#' || x.t === '@' || x.t === 'wait' || x.t === 'fork'))) m.timed.add(proc);
        const at = toks[k + 1]?.t === '@' ? toks.slice(k + 2, k + 5).map((x) => x.t).join('') : '';
        if (t === 'always_comb' || (t === 'always' && (at.startsWith('*') || at === '(*)'))) m.comb.add(proc);
      } catch {
        // A construct this reader does not know: the process is left out, never guessed, and no
        // variable of this module is judged by a rule that needs all of its writes.
        m.complete = false;
      }
      k = p.i - 1;
    }
  }
  m.instances = instancesIn(toks);
  for (const inst of m.instances)
    for (const [k, x] of inst.ports.entries()) {
      if (x.t === '.' && inst.ports[k + 1]?.t === '*') m.implicitConnect = true;
      // `.port(expr)`: the names in expr; `.port` alone connects the same name; positional: all.
      else if (/^[A-Za-z_]/.test(x.t)) m.connected.add(x.t);
    }
  return m;
}

/**
 * An enum variable that holds only its members: not a port (the other side may drive any value),
 * not connected to an instance, not written in a function or task, and never assigned through a
 * cast (`state_t'(x)`, `$cast`): Verilator rejects an implicit conversion to an enum, so without
 * a cast every value written is a member.
 */
function enumHoldsMembers(m: ModuleFacts, name: string, toks: Tok[]): boolean {
  if (!m.complete || m.ports.has(name) || m.opaque.has(name) || maybeDriven(m, name)) return false;
  if (toks.some((x, k) => x.t === '$cast' && toks.slice(k, k + 6).some((y) => y.t === name))) return false;
  const ws = writesOf(m).get(name) ?? [];
  return ws.every((w) => w.rhs !== null && !w.rhs.some((x) => x.t === "'" || x.t.endsWith("'")));
}

/** The index of the bracket closing the one at `k`. */
function splitEnd(toks: Tok[], k: number): number {
  let depth = 0;
  for (let j = k; j < toks.length; j++) {
    if ('([{'.includes(toks[j].t)) depth++;
    else if (')]}'.includes(toks[j].t) && --depth === 0) return j;
  }
  return toks.length;
}

/** A name some instance's port may write (connected to it, or by `.*`). */
function maybeDriven(m: ModuleFacts, name: string): boolean {
  return m.implicitConnect || m.connected.has(name);
}

interface Write {
  line: number;
  whole: boolean;
  /** The assignment target's tokens (absent for writes this reader does not follow). */
  lhs?: Tok[];
  rhs: Tok[] | null;
  op: string;
  /** The process it sits in (undefined: a continuous assignment). */
  process?: Stmt;
  /** Enclosing statements inside the process. */
  path: Stmt[];
  /** The statement that writes (a simple statement in a process). */
  stmt?: Stmt;
  /** Set when the write is a for-loop header's init or step. */
  loop?: Stmt & { kind: 'for' };
}

function writesOf(m: ModuleFacts): Map<string, Write[]> {
  const out = new Map<string, Write[]>();
  const add = (name: string, w: Write): void => void out.set(name, [...(out.get(name) ?? []), w]);
  for (const a of m.assigns) for (const n of targets(a.lhs)) add(n, { line: a.lhs[0].line, whole: a.lhs.length === 1, lhs: a.lhs, rhs: a.rhs, op: '=', path: [] });
  // Writes this reader does not follow (functions, tasks): such a variable is never judged.
  for (const n of m.opaque) add(n, { line: 0, whole: false, rhs: null, op: '?', path: [] });
  for (const proc of m.processes)
    for (const { s, path } of walk(proc)) {
      if (s.kind === 'simple') {
        const a = assignmentOf(s.toks);
        if (a) for (const n of targets(a.lhs)) add(n, { line: s.line, whole: a.lhs.length === 1, lhs: a.lhs, rhs: a.rhs, op: a.op, process: proc, path, stmt: s });
        // A task or system task call may write any variable it is given (an output argument,
        // $readmemh, $sscanf): never judged. Printing tasks write nothing.
        else if (s.toks.length && !PRINT_TASK.test(s.toks[0].t) && !/^(?:integer|int|logic|reg|bit|byte|begin|end)$/.test(s.toks[0].t))
          for (const x of s.toks) if (/^[A-Za-z_]/.test(x.t)) add(x.t, { line: s.line, whole: false, rhs: null, op: '?', process: proc, path });
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
  /** What the proof says (default: unreachable under 2-state simulation). */
  kind?: Exclusion;
  /** How to make the code reachable (`-G NAME=value`), where there is a way. */
  enable?: string;
  /** Only points of these instances (hierarchy paths). */
  hiers?: Set<string>;
  /** With `hiers`, for block points: which points the finding covers (in place of `lines`). */
  match?: (p: CoveragePoint) => boolean;
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

function fullCaseDefaults(m: ModuleFacts, widthOf: (signal: string) => number | undefined, toks: Tok[]): Finding[] {
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
      const members = sel && enumHoldsMembers(m, sel, toks) ? m.enumOf.get(sel) : undefined;
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
  // Only a name declared a plain unsigned vector: an int, an integer, a typedef'd or signed
  // variable can be negative.
  const unsigned = unsignedNames(toks, m);
  const text = (ts: Tok[]): string => ts.map((x) => x.t).join(' ');
  const unwrap = (ts: Tok[]): Tok[] => (ts[0]?.t === '(' && ts.at(-1)?.t === ')' && splitTop(ts.slice(1, -1), ')').length === 1 ? unwrap(ts.slice(1, -1)) : ts);
  const isZero = (ts: Tok[]): boolean => evalConst(ts, m.fixed) === 0n;
  const isOne = (ts: Tok[]): boolean => evalConst(ts, m.fixed) === 1n;
  /** `x` or `x[..]`, unsigned: the operand's text. */
  const operand = (ts: Tok[]): string | undefined =>
    ts.length && /^[A-Za-z_]/.test(ts[0].t) && unsigned.has(ts[0].t) && (ts.length === 1 || (ts[1].t === '[' && ts.at(-1)!.t === ']'))
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
  if (!m.complete) return out;
  for (const [name, ws] of writesOf(m)) {
    if (m.ports.has(name) || m.constants.has(name) || maybeDriven(m, name)) continue;
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

/** Bit widths from declarations (`logic [7:0] a, b;`, `integer i;`), evaluated where constant;
 * `shape` collects the names whose packed range is not `[w-1:0]`. */
function declaredWidths(toks: Tok[], m: ModuleFacts, shape?: DeclShape): Map<string, number> {
  const out = new Map<string, number>();
  for (let k = 0; k < toks.length; k++) {
    const t = toks[k].t;
    if (!/^(?:reg|logic|wire|bit|integer|int|input|output)$/.test(t)) continue;
    let j = k + 1;
    while (/^(?:reg|logic|wire|bit|signed|unsigned|var)$/.test(toks[j]?.t ?? '')) j++;
    let w = t === 'integer' || t === 'int' ? 32 : 1;
    let offset = false;
    if (toks[j]?.t === '[') {
      const close = toks.findIndex((x, n) => n > j && x.t === ']');
      const parts = splitTop(toks.slice(j + 1, close), ':');
      const hi = parts.length === 2 ? evalConst(parts[0], m.fixed) : null;
      const lo = parts.length === 2 ? evalConst(parts[1], m.fixed) : null;
      if (hi === null || lo === null) continue;
      w = Number(hi > lo ? hi - lo : lo - hi) + 1;
      offset = lo !== 0n;
      j = close + 1;
    }
    const name = (n: string): void => {
      if (!out.has(n)) out.set(n, w);
      if (offset) shape?.offset.add(n);
    };
    if (/^[A-Za-z_]/.test(toks[j]?.t ?? '')) name(toks[j].t);
    while (toks[j + 1]?.t === ',' && /^[A-Za-z_]/.test(toks[j + 2]?.t ?? '') && !/^(?:input|output|inout)$/.test(toks[j + 2].t)) {
      j += 2;
      name(toks[j].t);
    }
  }
  return out;
}

const STATEMENT_KEYWORD =
  /^(?:begin|end|else|do|assign|deassign|force|release|always|always_comb|always_ff|always_latch|initial|final|forever|fork|join|join_any|join_none|return|default|posedge|negedge|edge|or|iff|unique|unique0|priority|if|case|casez|casex|endcase|while|repeat|for|foreach|wait|disable)$/;

/**
 * Names declared as unpacked arrays (`logic [11:0] rom [0:7];`, `int q [4]`): an identifier
 * after a type (an identifier or a packed range's `]`) followed by `[...]` and then the end of a
 * declarator. Found from the tokens alone, whatever the element type, so a memory is never read
 * as a packed vector.
 */
function unpackedArrays(toks: Tok[]): Set<string> {
  const out = new Set<string>();
  for (let k = 1; k < toks.length - 1; k++) {
    const x = toks[k];
    if (!/^[A-Za-z_]/.test(x.t) || toks[k + 1].t !== '[') continue;
    const prev = toks[k - 1].t;
    if (!(prev === ']' || (/^[A-Za-z_]/.test(prev) && !STATEMENT_KEYWORD.test(prev)))) continue;
    let depth = 0;
    let j = k + 1;
    for (; j < toks.length; j++) {
      if (toks[j].t === '[') depth++;
      else if (toks[j].t === ']' && --depth === 0 && toks[j + 1]?.t !== '[') break;
    }
    if (/^(?:;|,|=|\))$/.test(toks[j + 1]?.t ?? '')) out.add(x.t);
  }
  return out;
}

/** Names that may hold a negative value: declared signed or of a signed type anywhere in the module. */
function signedNames(toks: Tok[], m: ModuleFacts): Set<string> {
  const out = new Set<string>();
  toks.forEach((x, k) => {
    if (!/^(?:signed|int|integer|shortint|longint|byte|genvar|real|shortreal|realtime|time)$/.test(x.t)) return;
    // Every declarator up to the end of the declaration.
    for (let j = k + 1; j < toks.length && !/^(?:;|\)|input|output|inout)$/.test(toks[j].t); j++)
      if (/^[A-Za-z_]/.test(toks[j].t) && !m.constants.has(toks[j].t)) out.add(toks[j].t);
  });
  return out;
}

/**
 * Names every declaration of which is a plain unsigned vector: `logic|reg|wire|bit` (or a port
 * of those, or a bare `input [3:0] x`) with no `signed` and no other type name. A name declared
 * any other way (a typedef'd type, int, a struct) is not known to be unsigned.
 */
function unsignedNames(toks: Tok[], m: ModuleFacts): Set<string> {
  const cand = new Set<string>();
  const other = new Set<string>();
  for (let k = 0; k < toks.length; k++) {
    if (!/^(?:reg|logic|wire|bit|input|output|inout)$/.test(toks[k].t)) continue;
    let j = k + 1;
    let plain = true;
    for (; j < toks.length; j++) {
      const t = toks[j].t;
      if (/^(?:reg|logic|wire|bit|unsigned|var|tri|input|output|inout)$/.test(t)) continue;
      if (t === 'signed') plain = false;
      else if (t === '[') {
        j = toks.findIndex((x, n) => n > j && x.t === ']');
        if (j < 0) return new Set();
      } else break;
    }
    // toks[j]: the first declarator, unless it is a type name followed by one.
    if (/^[A-Za-z_]/.test(toks[j]?.t ?? '') && /^[A-Za-z_]/.test(toks[j + 1]?.t ?? '')) {
      other.add(toks[j + 1].t);
      continue;
    }
    for (; j < toks.length && /^[A-Za-z_]/.test(toks[j].t); ) {
      (plain ? cand : other).add(toks[j].t);
      // skip unpacked dimensions and an initializer to the next declarator
      let depth = 0;
      let n = j + 1;
      for (; n < toks.length; n++) {
        const t = toks[n].t;
        if ('([{'.includes(t)) depth++;
        else if (')]}'.includes(t)) {
          if (depth === 0) break;
          depth--;
        } else if (depth === 0 && (t === ',' || t === ';')) break;
      }
      if (toks[n]?.t !== ',' || /^(?:input|output|inout)$/.test(toks[n + 1]?.t ?? '')) break;
      j = n + 1;
    }
  }
  const signed = signedNames(toks, m);
  return new Set([...cand].filter((n) => !other.has(n) && !signed.has(n) && !m.constants.has(n)));
}

/** Bits of variables that every pass of their (only) combinational block leaves at one value. */
function combConstantBits(
  m: ModuleFacts,
  toks: Tok[],
  widthOf: (name: string) => number | undefined,
): Array<{ signal: string; bits: number[]; line: number }> {
  if (!m.complete) return [];
  const shape: DeclShape = { memories: unpackedArrays(toks), offset: new Set() };
  const decl = declaredWidths(toks, m, shape);
  const writes = writesOf(m);
  const out: Array<{ signal: string; bits: number[]; line: number }> = [];
  for (const proc of m.comb) {
    const env: CombEnv = { vars: new Map() };
    const written = new Set<string>();
    try {
      new CombEval(m, widthOf, decl, shape).exec(proc, env, written);
    } catch (e) {
      if (e instanceof Unsupported) continue; // a construct this pass does not follow: no claim
      throw e;
    }
    for (const name of written) {
      if (!(writes.get(name) ?? []).every((w) => w.process === proc) || maybeDriven(m, name)) continue;
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

// ---- proofs about one instance or one module beyond 2-state: dead code, constant signals --

const ASSIGN_OP = /^(?:=|<=|\+=|-=|\*=|\/=|&=|\|=|\^=|<<=|>>=|\+\+|--)$/;

/** True when some occurrence of `name` outside the processes' statements this reader follows is
 * an assignment target (`wire x = a;`, `logic x = 1;`, `force x = ...`): a write rules must see. */
function assignedInPlace(toks: Tok[], name: string): boolean {
  for (let k = 0; k < toks.length; k++) {
    if (toks[k].t !== name) continue;
    let j = k + 1;
    while (toks[j]?.t === '[') {
      let depth = 0;
      for (; j < toks.length; j++) {
        if (toks[j].t === '[') depth++;
        else if (toks[j].t === ']' && --depth === 0) break;
      }
      j++;
    }
    if (ASSIGN_OP.test(toks[j]?.t ?? '') || /^(?:\+\+|--|force|release|deassign)$/.test(toks[k - 1]?.t ?? '')) return true;
  }
  return false;
}

/** Names some module of the design assigns through a hierarchical path (`u_sub.x = ...`). */
function hierarchicalTargets(toks: Tok[]): Set<string> {
  const out = new Set<string>();
  for (let k = 1; k < toks.length; k++)
    if (toks[k - 1].t === '.' && /^[A-Za-z_]/.test(toks[k].t) && k >= 2 && /^[A-Za-z_\]]/.test(toks[k - 2].t)) {
      let j = k + 1;
      while (toks[j]?.t === '[') j = toks.findIndex((x, n) => n > j && x.t === ']') + 1 || toks.length;
      if (ASSIGN_OP.test(toks[j]?.t ?? '') || toks[j]?.t === '.') out.add(toks[k].t);
    }
  return out;
}

/**
 * Signals no assignment changes after time 0: never assigned at all (they keep their initial
 * value), or assigned only in `initial` blocks with no delay, event or wait inside (one change at
 * most, all at time 0); and the bits of a vector that no assignment writes when every assignment
 * writes constant bits of it (`ctrl[3:0] <= d;`: bits 7-4 are never written).
 */
function tiedOffSignals(m: ModuleFacts, toks: Tok[], fromElsewhere: Set<string>, labelsOf: (name: string) => string[]): Finding[] {
  const out: Finding[] = [];
  if (!m.complete || m.implicitConnect) return out;
  const writes = writesOf(m);
  const shape: DeclShape = { memories: unpackedArrays(toks), offset: new Set() };
  const declared = declaredWidths(toks, m, shape);
  const unsigned = unsignedNames(toks, m);
  let level: Tok[] | undefined;
  const outside = (): Tok[] => (level ??= moduleLevel(m, toks));
  for (const name of declared.keys()) {
    if (m.ports.has(name) || m.constants.has(name) || m.opaque.has(name) || maybeDriven(m, name) || fromElsewhere.has(name)) continue;
    const labels = labelsOf(name);
    if (!labels.length) continue;
    const ws = writes.get(name) ?? [];
    const declLine = toks.find((x) => x.t === name)?.line ?? 0;
    if (!ws.length) {
      if (assignedInPlace(toks, name)) continue;
      out.push({ module: m.name, kind: 'constant', signal: name, line: declLine, reason: `'${name}' is never assigned: it keeps its initial value` });
      continue;
    }
    if (ws.some((w) => w.rhs === null)) continue;
    if (ws.every((w) => w.process && m.procKind.get(w.process) === 'initial' && !m.timed.has(w.process)) && !assignedInPlace(outside(), name)) {
      out.push({
        module: m.name,
        kind: 'constant',
        signal: name,
        line: ws[0].line,
        reason: `'${name}' is written only at time 0 (in initial blocks with no delay, event or wait): it changes at most once`,
      });
      continue;
    }
    // A counter that only counts by one under a bound (`if (cnt < 9) cnt <= cnt + 1;`) and is
    // otherwise set to constants: its upper bits are never set.
    const bound = counterBound(m, name, ws, unsigned);
    if (bound !== null && !assignedInPlace(outside(), name) && !shape.offset.has(name) && !shape.memories.has(name)) {
      const width = BigInt(bound.toString(2).length);
      const high = labels.filter((l) => {
        const k = /\[(\d+)\]$/.exec(l)?.[1];
        return k !== undefined ? BigInt(k) >= width || bound === 0n : bound === 0n;
      });
      if (high.length && !labels.some((l) => /\]\[/.test(l))) {
        out.push({
          module: m.name,
          kind: 'constant',
          signal: name,
          labels: new Set(high),
          line: ws[0].line,
          reason: `'${name}' only counts by one below ${bound} and is otherwise set to constants no larger, from 0: it never exceeds ${bound}, so its bits from ${width} up are never set`,
        });
        continue;
      }
    }
    // Bits no assignment writes: every write a constant select of this vector.
    if (shape.offset.has(name) || shape.memories.has(name) || labels.some((l) => /\]\[/.test(l) || !/\[\d+\]$/.test(l))) continue;
    const written = new Set<number>();
    let known = true;
    for (const w of ws) {
      const bits = w.lhs && w.lhs[0]?.t === name ? constSelect(w.lhs.slice(1), m) : null;
      if (!bits) {
        known = false;
        break;
      }
      for (const b of bits) written.add(b);
    }
    if (!known || assignedInPlace(outside(), name)) continue;
    const never = labels.filter((l) => !written.has(Number(/\[(\d+)\]$/.exec(l)![1])));
    if (never.length)
      out.push({
        module: m.name,
        kind: 'constant',
        signal: name,
        labels: new Set(never),
        line: ws[0].line,
        reason: `${never.length === 1 ? 'bit' : 'bits'} ${ranges(never.map((l) => Number(/\[(\d+)\]$/.exec(l)![1])))} of '${name}' ${never.length === 1 ? 'is' : 'are'} never assigned (every assignment writes other bits of it)`,
      });
  }
  return out;
}

/**
 * The largest value a counter can hold when every write to it is whole and either a constant or
 * a step of one guarded so that it cannot pass a bound: `x + 1` in the then arm of `x < L`
 * (`x <= L`: L + 1; `x != L`, or the else arm of `x == L` / `x >= L`: L), `x - 1` in the then arm
 * of `x != 0` / `x > 0` or the else arm of `x == 0`. Variables start at 0 (the harness runs with
 * +verilator+rand+reset+0); a `!=`/`==` bound holds only when no constant written exceeds it.
 * Null when any write is something else.
 */
function counterBound(m: ModuleFacts, name: string, ws: Write[], unsigned: Set<string>): bigint | null {
  if (!unsigned.has(name)) return null;
  let max = 0n;
  const exact: bigint[] = [];
  const one = (ts: Tok[]): boolean => evalConst(ts, m.fixed) === 1n;
  const step = (w: Write): '+' | '-' | undefined => {
    if (w.op === '++' || w.op === '--') return w.op[0] as '+' | '-';
    if ((w.op === '+=' || w.op === '-=') && w.rhs && one(w.rhs)) return w.op[0] as '+' | '-';
    if ((w.op === '=' || w.op === '<=') && w.rhs) {
      const r = w.rhs;
      if (r[0]?.t === name && (r[1]?.t === '+' || r[1]?.t === '-') && one(r.slice(2))) return r[1].t as '+' | '-';
      const plus = r.findIndex((x) => x.t === '+');
      if (plus > 0 && r.at(-1)?.t === name && plus === r.length - 2 && one(r.slice(0, plus))) return '+';
    }
    return undefined;
  };
  /** Guards around the write: [condition, true when the write is in the then arm]. */
  const guards = (w: Write): Array<[Tok[], boolean]> => {
    const out: Array<[Tok[], boolean]> = [];
    for (const p of w.path)
      if (p.kind === 'if' && w.stmt) {
        const inThen = [...walk(p.then)].some(({ s }) => s === w.stmt);
        const inElse = p.else ? [...walk(p.else)].some(({ s }) => s === w.stmt) : false;
        if (inThen || inElse) out.push([p.cond, inThen]);
      }
    return out;
  };
  const terms = (cond: Tok[]): Tok[][] => splitTop(cond, '&&');
  for (const w of ws) {
    if (!w.whole || w.loop || !w.process || w.rhs === null) return null;
    const c = (w.op === '=' || w.op === '<=') && !w.rhs.some((x) => /^[A-Za-z_]/.test(x.t) && !m.constants.has(x.t)) ? evalConst(w.rhs, m.fixed) : null;
    if (c !== null) {
      if (c < 0n) return null;
      if (c > max) max = c;
      continue;
    }
    const dir = step(w);
    if (!dir) return null;
    let best: bigint | null = null;
    let viaExact = false;
    for (const [cond, inThen] of guards(w)) {
      const parts = inThen ? terms(cond) : [cond];
      for (const part of parts) {
        const cmp = ['<', '<=', '!=', '>', '>=', '=='].map((op) => [op, splitTop(part, op)] as const).find(([, x]) => x.length === 2);
        if (!cmp) continue;
        const [op, [l, r]] = cmp;
        const lv = l.length === 1 && l[0].t === name;
        const rv = r.length === 1 && r[0].t === name;
        const k = evalConst(lv ? r : rv ? l : [], m.fixed);
        if (k === null || k < 0n || (!lv && !rv)) continue;
        // Normalize to `name OP k`.
        const o = lv ? op : ({ '<': '>', '<=': '>=', '>': '<', '>=': '<=', '!=': '!=', '==': '==' } as const)[op as '<'];
        if (dir === '+') {
          let b: bigint | null = null;
          let ex = false;
          if (inThen && o === '<') b = k;
          else if (inThen && o === '<=') b = k + 1n;
          else if (inThen && o === '!=') [b, ex] = [k, true];
          else if (!inThen && o === '>=') b = k;
          else if (!inThen && o === '==') [b, ex] = [k, true];
          if (b !== null && (best === null || b < best)) [best, viaExact] = [b, ex];
        } else if ((inThen && ((o === '!=' && k === 0n) || (o === '>' && k === 0n) || (o === '>=' && k === 1n))) || (!inThen && o === '==' && k === 0n)) best = best ?? -1n;
      }
    }
    if (best === null) return null;
    if (best >= 0n) {
      if (viaExact) exact.push(best);
      if (best > max) max = best;
    }
  }
  // Constants only: the constant rule's matter, not a counter's.
  if (exact.some((b) => b < max) || ws.every((w) => !step(w))) return null;
  return max;
}

/** The module's tokens outside its processes, continuous assignments, functions and tasks:
 * declarations, instances, generate constructs. */
function moduleLevel(m: ModuleFacts, toks: Tok[]): Tok[] {
  const inside = new Uint8Array(toks.length + 1);
  for (const [a, b] of m.spans) for (let k = a; k < Math.min(b, toks.length); k++) inside[k] = 1;
  return toks.filter((_, k) => !inside[k]);
}

/** The bits a constant select writes (`[3]`, `[7:4]`, `[2 +: 3]`), or null when not constant;
 * `env` gives the names' values (default: the module's fixed constants). */
function constSelect(sel: Tok[], m: ModuleFacts, env: Map<string, bigint | null> = m.fixed): number[] | null {
  if (sel[0]?.t !== '[' || sel.at(-1)?.t !== ']') return null;
  const inner = sel.slice(1, -1);
  if (inner.some((x) => x.t === '[' || x.t === ']')) return null;
  const span = (lo: bigint | null, hi: bigint | null): number[] | null =>
    lo === null || hi === null || lo < 0n || hi < lo || hi - lo > 4096n ? null : Array.from({ length: Number(hi - lo) + 1 }, (_, k) => Number(lo) + k);
  const parts = splitTop(inner, ':');
  if (parts.length === 1) {
    const v = evalConst(inner, env);
    return span(v, v);
  }
  if (parts.length !== 2) return null;
  const op = parts[0].at(-1)?.t;
  if (op === '+' || op === '-') {
    const base = evalConst(parts[0].slice(0, -1), env);
    const w = evalConst(parts[1], env);
    if (base === null || w === null) return null;
    return op === '+' ? span(base, base + w - 1n) : span(base - w + 1n, base);
  }
  return span(evalConst(parts[1], env), evalConst(parts[0], env));
}

// ---- array slots no write reaches ----------------------------------------------------------

/** A generate-for loop: its genvar, header, and the token range [start, end] of loop and body. */
interface GenLoop {
  start: number;
  end: number;
  init: Tok[];
  cond: Tok[];
  step: Tok[];
}

/** Unrolling bounds: a loop that runs longer, or writes that need more bindings, get no claim. */
const MAX_LOOP_PASSES = 4096;
const MAX_BINDINGS = 1 << 16;

/**
 * The generate-for loops of a module body (tokens outside processes, assignments, functions and
 * tasks): `for (genvar i = 0; i < N; i++) begin ... end`, or a body that is one `assign` or
 * another loop. A loop whose body is anything else gets an empty range: writes in it find no
 * binding of its genvar, so their index is not constant and nothing is claimed.
 */
function generateLoops(m: ModuleFacts, toks: Tok[]): GenLoop[] {
  const inside = new Uint8Array(toks.length + 1);
  for (const [a, b] of m.spans) for (let k = a; k < Math.min(b, toks.length); k++) inside[k] = 1;
  const out: GenLoop[] = [];
  const loopAt = (k: number): GenLoop | null => {
    if (toks[k]?.t !== 'for' || toks[k + 1]?.t !== '(') return null;
    const close = splitEnd(toks, k + 1);
    const parts = splitTop(toks.slice(k + 2, close), ';');
    if (parts.length !== 3 || close >= toks.length) return null;
    const b = close + 1;
    let end = close;
    if (toks[b]?.t === 'begin') {
      let depth = 0;
      for (let j = b; j < toks.length; j++) {
        if (toks[j].t === 'begin') depth++;
        else if (toks[j].t === 'end' && --depth === 0) {
          end = j;
          break;
        }
      }
      if (depth !== 0) return null;
    } else if (toks[b]?.t === 'assign') {
      const semi = toks.findIndex((x, j) => j > b && x.t === ';');
      if (semi > 0) end = semi;
    } else if (toks[b]?.t === 'for') end = loopAt(b)?.end ?? close;
    return { start: k, end, init: parts[0], cond: parts[1], step: parts[2] };
  };
  for (let k = 0; k < toks.length; k++) {
    if (inside[k]) continue;
    const l = loopAt(k);
    if (l) out.push(l);
  }
  return out;
}

/** The genvar of a loop and its passes' values under `env`, or null when not constant or too many. */
function unrollLoop(l: GenLoop, env: Map<string, bigint | null>): { name: string; values: bigint[] } | null {
  const init = l.init[0]?.t === 'genvar' ? l.init.slice(1) : l.init;
  if (init.length < 3 || init[1].t !== '=' || !/^[A-Za-z_]/.test(init[0].t)) return null;
  const name = init[0].t;
  const local = new Map(env);
  let v = evalConst(init.slice(2), local);
  const st = l.step;
  const next = (x: bigint): bigint | null => {
    local.set(name, x);
    if (st.length === 2 && ((st[0].t === name && /^(?:\+\+|--)$/.test(st[1].t)) || (st[1].t === name && /^(?:\+\+|--)$/.test(st[0].t))))
      return (st[0].t === name ? st[1].t : st[0].t) === '++' ? x + 1n : x - 1n;
    if (st.length < 3 || st[0].t !== name) return null;
    const e = evalConst(st.slice(2), local);
    if (e === null) return null;
    switch (st[1].t) {
      case '=':
        return e;
      case '+=':
        return x + e;
      case '-=':
        return x - e;
      case '*=':
        return x * e;
      default:
        return null;
    }
  };
  const values: bigint[] = [];
  for (;;) {
    if (v === null) return null;
    local.set(name, v);
    const c = condValue(l.cond, local);
    if (c === null) return null;
    if (c === 0n) return { name, values };
    if (values.length >= MAX_LOOP_PASSES) return null;
    values.push(v);
    v = next(v);
  }
}

/**
 * Where an array is declared, and how its slots are numbered in toggle labels (`tree[5][3]`: slot
 * 5, bit 3): one unpacked dimension (Verilator numbers slots as declared, in any order), or a
 * packed array of two or more dimensions whose first is `[H:0]` (an ascending one is numbered
 * the other way round: not followed). Null for anything else, or a name declared twice.
 */
function arrayDecl(toks: Tok[], m: ModuleFacts, name: string, memories: Set<string>): { at: number } | null {
  const decls: number[] = [];
  for (let k = 1; k < toks.length; k++) {
    if (toks[k].t !== name) continue;
    const prev = toks[k - 1].t;
    if (prev === ']' || (/^[A-Za-z_]/.test(prev) && !STATEMENT_KEYWORD.test(prev))) decls.push(k);
  }
  if (decls.length !== 1) return null;
  const at = decls[0];
  if (memories.has(name)) {
    // One unpacked dimension: `name [..]` then the end of the declarator.
    if (toks[at + 1]?.t !== '[') return null;
    const close = splitEnd(toks, at + 1);
    return toks[close + 1]?.t === '[' ? null : { at };
  }
  // Packed: `[a:b][c:d] name`, the first dimension `[H:0]`, H >= 0.
  const groups: Array<[number, number]> = [];
  let j = at - 1;
  while (toks[j]?.t === ']') {
    let depth = 0;
    let open = j;
    for (; open >= 0; open--) {
      if (toks[open].t === ']') depth++;
      else if (toks[open].t === '[' && --depth === 0) break;
    }
    if (open < 0) return null;
    groups.unshift([open, j]);
    j = open - 1;
  }
  if (groups.length < 2 || !/^(?:logic|reg|bit|wire|output|var|signed|unsigned)$/.test(toks[j]?.t ?? '')) return null;
  if (toks[at + 1]?.t === '[') return null;
  const [open, close] = groups[0];
  const r = splitTop(toks.slice(open + 1, close), ':');
  const hi = r.length === 2 ? evalConst(r[0], m.fixed) : null;
  const lo = r.length === 2 ? evalConst(r[1], m.fixed) : null;
  return hi !== null && hi >= 0n && lo === 0n ? { at } : null;
}

/**
 * Slots of an array that no assignment writes: every write to it indexes a constant, or an
 * expression of genvars unrolled over the generate-for loops around it (constant bounds, under
 * the module's fixed constants), and the slots of the labels outside that set never change. No
 * claim on an array with any other write: a variable index, the whole array, a task or function,
 * a system task (`$readmemh`), an instance port, a hierarchical reference, a declaration
 * initializer, or a write in an `initial` (or `final`) block (written only there: the time-0
 * rule's matter); none in a module any process of which this reader cannot follow.
 */
function unwrittenSlots(m: ModuleFacts, toks: Tok[], fromElsewhere: Set<string>, labelsOf: (name: string) => string[]): Finding[] {
  const out: Finding[] = [];
  if (!m.complete || m.implicitConnect) return out;
  // A function with an output, inout or ref argument, or a system function that fills its
  // arguments, may write any array it is given from inside an expression: none is judged.
  if (toks.some((x) => /^\$(?:[fs]scanf|fread|fgets|readmem[hb]|value\$plusargs|cast)$/.test(x.t))) return out;
  for (let k = 0; k < toks.length; k++)
    if (toks[k].t === 'function') {
      const end = toks.findIndex((x, j) => j > k && x.t === 'endfunction');
      if (toks.slice(k, end < 0 ? undefined : end).some((x) => /^(?:output|inout|ref)$/.test(x.t))) return out;
    }
  const memories = unpackedArrays(toks);
  const writes = writesOf(m);
  let loops: GenLoop[] | undefined;
  let env: Map<string, bigint | null> | undefined;
  let level: Tok[] | undefined;
  const pos = new Map<Tok, number>();
  toks.forEach((x, k) => pos.set(x, k));
  for (const [name, ws] of writes) {
    if (m.ports.has(name) || m.constants.has(name) || m.opaque.has(name) || maybeDriven(m, name) || fromElsewhere.has(name)) continue;
    const labels = labelsOf(name);
    const slotOf = (l: string): number | undefined => {
      const x = new RegExp(`^${name.replace(/\$/g, '\\$')}\\[(\\d+)\\](?:\\[|$)`).exec(l);
      return x ? Number(x[1]) : undefined;
    };
    if (!labels.length || labels.some((l) => slotOf(l) === undefined)) continue;
    const decl = arrayDecl(toks, m, name, memories);
    if (!decl) continue;
    if (ws.some((w) => !w.lhs || w.rhs === null || w.loop || w.whole || (w.process && /^(?:initial|final)$/.test(m.procKind.get(w.process) ?? '')))) continue;
    loops ??= generateLoops(m, toks);
    if (loops.some((l) => decl.at > l.start && decl.at <= l.end)) continue;
    if (assignedInPlace((level ??= moduleLevel(m, toks)), name)) continue;
    env ??= loopEnv(m, toks, loops);
    /** The genvar declared again in the loop's body (`integer i;`, `for (int i ...)`): a write
     * there may mean the other `i`. */
    const redeclared = (l: GenLoop, g: string): boolean => {
      for (let k = splitEnd(toks, l.start + 1) + 1; k <= l.end; k++)
        if (toks[k].t === g && (toks[k - 1].t === ']' || (/^[A-Za-z_]/.test(toks[k - 1].t) && !STATEMENT_KEYWORD.test(toks[k - 1].t)))) return true;
      return false;
    };
    const written = new Set<number>();
    const genvars = new Set<string>();
    let known = true;
    for (const w of ws) {
      const at = pos.get(w.lhs![0]);
      if (at === undefined) {
        known = false;
        break;
      }
      // The generate loops around the write, outermost first.
      const around = loops.filter((l) => at > l.start && at <= l.end).sort((a, b) => a.start - b.start);
      // Each occurrence of the array in the target must be indexed.
      const sels: Tok[][] = [];
      for (let k = 0; k < w.lhs!.length; k++) {
        if (w.lhs![k].t !== name || w.lhs![k - 1]?.t === '.') continue;
        if (w.lhs![k + 1]?.t !== '[') {
          known = false;
          break;
        }
        sels.push(w.lhs!.slice(k + 1, splitEnd(w.lhs!, k + 1) + 1));
      }
      if (!known || !sels.length) {
        known = false;
        break;
      }
      // A procedural loop or a declaration in the process may rebind a name a genvar has.
      const names = new Set(sels.flatMap((s) => s.filter((x) => /^[A-Za-z_]/.test(x.t) && !env!.has(x.t)).map((x) => x.t)));
      if (names.size && w.process) {
        if (w.path.some((p) => p.kind === 'for' || p.kind === 'loop')) {
          known = false;
          break;
        }
        const declares = [...walk(w.process)].some(
          ({ s }) => s.kind === 'simple' && s.toks.some((x, k) => k > 0 && names.has(x.t) && (s.toks[k - 1].t === ']' || /^[A-Za-z_]/.test(s.toks[k - 1].t))),
        );
        if (declares) {
          known = false;
          break;
        }
      }
      // Every binding of the loops' genvars, each write's slots under it.
      let bindings = 0;
      const visit = (depth: number, local: Map<string, bigint | null>): boolean => {
        if (depth === around.length) {
          if (++bindings > MAX_BINDINGS) return false;
          for (const s of sels) {
            const slots = constSelect(s, m, local);
            if (!slots) return false;
            for (const x of slots) written.add(x);
          }
          return true;
        }
        const u = unrollLoop(around[depth], local);
        if (!u || redeclared(around[depth], u.name)) return false;
        genvars.add(u.name);
        for (const v of u.values) if (!visit(depth + 1, new Map(local).set(u.name, v))) return false;
        return true;
      };
      if (!visit(0, env)) {
        known = false;
        break;
      }
    }
    if (!known) continue;
    const never = labels.filter((l) => !written.has(slotOf(l)!));
    if (!never.length) continue;
    const slots = [...new Set(never.map((l) => slotOf(l)!))];
    const how = genvars.size ? `constant indices and the generate loops over ${[...genvars].map((g) => `'${g}'`).join(', ')} unrolled` : 'constant indices';
    out.push({
      module: m.name,
      kind: 'constant',
      signal: name,
      labels: new Set(never),
      line: toks[decl.at].line,
      reason: `${slots.length === 1 ? 'slot' : 'slots'} ${ranges(slots)} of '${name}' ${slots.length === 1 ? 'is' : 'are'} never written: every write indexes ${written.size ? ranges([...written]) : 'nothing'} (${how})`,
    });
  }
  return out;
}

/** The constants an index may use: the module's fixed ones, less any declared twice or inside a
 * generate loop (its value may differ per pass, or per block). */
function loopEnv(m: ModuleFacts, toks: Tok[], loops: GenLoop[]): Map<string, bigint | null> {
  const env = new Map(m.fixed);
  const seen = new Set<string>();
  for (let k = 0; k < toks.length; k++) {
    if (toks[k].t !== 'parameter' && toks[k].t !== 'localparam') continue;
    const { stmt, end } = parameterStatement(toks, k);
    const inLoop = loops.some((l) => k > l.start && k <= l.end);
    for (const part of splitTop(stmt)) {
      const eq = part.findIndex((x) => x.t === '=');
      if (eq < 1) continue;
      const id = part[eq - 1].t;
      if (inLoop || seen.has(id)) env.set(id, null);
      seen.add(id);
    }
    k = end;
  }
  return env;
}

interface ModuleSource {
  file: string;
  toks: Tok[];
  facts: ModuleFacts;
  decls: ParamDecl[];
  /** Lines where more than one `if` starts: a point there cannot be told apart. */
  sharedIfLines: Set<number>;
}

/** A `-G NAME=value` for the top's parameters, or the instance's fixed values, in words. */
function paramText(names: string[], env: ParamEnv): string {
  // Only the names that have a value: a signal in the condition (short-circuited by a parameter,
  // as in `FallThrough && cnt == 0`) has none, and "cnt = undefined" says nothing.
  return names.filter((n) => env.values.get(n) !== undefined).map((n) => `${n} = ${env.values.get(n)}${env.origin.get(n) === 'override' ? ' (set for this run)' : ''}`).join(', ');
}

/**
 * Dead code under the elaborated parameters, per instance: the arm of an `if` or a `case` whose
 * condition is made of parameters (and localparams, literals) only, and is false under this
 * instance's values. Verilator keeps such code and its coverage points, but no stimulus runs it.
 * Instances whose values cannot be worked out (an instantiation this reader does not find, a
 * value it cannot evaluate) get no claim.
 */
function deadParamCode(points: CoveragePoint[], modules: Map<string, ModuleSource | null>, opts: TwoStateOptions): Finding[] {
  const out: Finding[] = [];
  const base = (mod: string): string => mod.replace(/__.*$/, '');
  const moduleAt = new Map<string, string>();
  for (const p of points) if (!moduleAt.has(p.hier)) moduleAt.set(p.hier, p.module);
  const topOverrides = new Map(Object.entries(opts.params ?? {}).map(([k, v]) => [k, overrideValue(v)] as const));
  const envs = new Map<string, { env: ParamEnv; root: boolean; via?: Instance; viaFile?: string } | null>();
  const envOf = (hier: string): { env: ParamEnv; root: boolean; via?: Instance; viaFile?: string } | null => {
    if (envs.has(hier)) return envs.get(hier)!;
    envs.set(hier, null); // cycles: unknown
    const mod = moduleAt.get(hier);
    const src = mod ? modules.get(base(mod)) : undefined;
    let r: { env: ParamEnv; root: boolean; via?: Instance; viaFile?: string } | null = null;
    if (src) {
      const enums = new Map([...src.facts.fixed].filter(([n]) => !src.decls.some((d) => d.name === n)));
      const segs = hier.split('.');
      let anc = segs.length - 1;
      while (anc > 0 && !moduleAt.has(segs.slice(0, anc).join('.'))) anc--;
      if (anc === 0) {
        // The DUT instance: its defaults and the run's -G overrides (the top's only).
        // Without the caller's word on the overrides (params undefined) the parameters are unknown.
        if (opts.top !== undefined && base(mod!) === opts.top) {
          const unknownParams = new Map(src.decls.filter((d) => !d.local).map((d) => [d.name, null] as const));
          r = { env: elaborate(src.decls, opts.params === undefined ? unknownParams : topOverrides, enums), root: true };
        }
      } else {
        const parentHier = segs.slice(0, anc).join('.');
        const parent = envOf(parentHier);
        const parentSrc = modules.get(base(moduleAt.get(parentHier)!));
        const name = segs.at(-1)!.replace(/\[\d+\]$/, '');
        const cands = parentSrc?.facts.instances.filter((i) => i.name === name && i.module === base(mod!)) ?? [];
        if (parent && cands.length === 1) {
          const ov = instanceOverrides(cands[0].params, src.decls, parent.env.values);
          if (![...ov.keys()].some((k) => k.startsWith('\0'))) {
            const env = elaborate(src.decls, ov, enums);
            for (const k of ov.keys()) if (env.origin.get(k) === 'override') env.origin.set(k, 'instance');
            r = { env, root: false, via: cands[0], viaFile: parentSrc!.file };
          }
        }
      }
    }
    envs.set(hier, r);
    return r;
  };
  const names = (ts: Tok[]): string[] => [...new Set(ts.filter((x) => /^[A-Za-z_]/.test(x.t)).map((x) => x.t))];
  for (const hier of moduleAt.keys()) {
    const e = envOf(hier);
    const mod = moduleAt.get(hier)!;
    const src = modules.get(base(mod));
    if (!e || !src) continue;
    const { env } = e;
    const where = e.root ? '' : ` (fixed by the instantiation '${e.via!.name}' at line ${e.via!.line})`;
    /** A -G that makes `live(values)` true, trying a few values of each top parameter used. */
    const enable = (used: string[], live: (values: Map<string, bigint | null>) => boolean, extra: bigint[]): string | undefined => {
      if (!e.root) return undefined;
      for (const n of used) {
        const d = src.decls.find((x) => x.name === n && !x.local);
        if (!d) continue;
        const tries = new Set<bigint>([0n, 1n, ...extra, ...extra.map((v) => v + 1n), ...extra.map((v) => v - 1n)].filter((v) => v >= 0n));
        for (const v of tries) {
          const trial = elaborate(src.decls, new Map([...topOverrides, [n, v]]), new Map([...src.facts.fixed].filter(([k]) => !src.decls.some((x) => x.name === k))));
          if (live(trial.values)) return `-G ${n}=${v}`;
        }
      }
      // A localparam derived from parameters: try the parameters it may depend on.
      for (const d of src.decls.filter((x) => !x.local && !used.includes(x.name)))
        for (const v of [0n, 1n, ...extra]) {
          if (v < 0n) continue;
          const trial = elaborate(src.decls, new Map([...topOverrides, [d.name, v]]), new Map());
          if (live(trial.values)) return `-G ${d.name}=${v}`;
        }
      return undefined;
    };
    const literals = (ts: Tok[]): bigint[] => ts.map((x) => evalConst([x])).filter((v): v is bigint => v !== null);
    for (const proc of src.facts.processes)
      for (const { s } of walk(proc)) {
        if (s.kind === 'if') {
          const v = condValue(s.cond, env.values);
          if (v === null) continue;
          const used = names(s.cond);
          const cond = s.cond.map((x) => x.t).join(' ');
          const own = !src.sharedIfLines.has(s.line);
          const T: [number, number] = [s.then.line, s.then.end];
          const E: [number, number] | undefined = s.else ? [s.else.line, s.else.end] : undefined;
          if (v === 0n) {
            // The then arm never runs.
            const match = (p: CoveragePoint): boolean =>
              p.line === s.line
                ? own && (p.label === 'if' || p.label === 'elsif') && (!p.span || (p.span[0] >= s.line && p.span[1] <= T[1] && (!E || p.span[1] < E[0])))
                : p.line > s.line && p.line <= T[1] && (!E || p.line < E[0]) && (!p.span || (p.span[0] > s.line && p.span[1] <= T[1] && (!E || p.span[1] < E[0])));
            out.push({
              module: base(mod),
              kind: 'dead-param',
              hiers: new Set([hier]),
              match,
              line: s.line,
              reason: `code under 'if (${cond})', false with ${paramText(used, env)}${where}`,
              enable: enable(used, (vals) => (condValue(s.cond, vals) ?? 0n) !== 0n, literals(s.cond)),
            });
          } else {
            const match = (p: CoveragePoint): boolean =>
              p.line === s.line
                ? own && p.label === 'else' && (!p.span || (E !== undefined && p.span[0] > T[1] && p.span[1] <= E[1]))
                : E !== undefined && p.line >= E[0] && p.line <= E[1] && p.line > T[1] && (!p.span || (p.span[0] > T[1] && p.span[1] <= E[1]));
            out.push({
              module: base(mod),
              kind: 'dead-param',
              hiers: new Set([hier]),
              match,
              line: E ? E[0] : s.line,
              reason: `the else of 'if (${cond})', true with ${paramText(used, env)}${where}`,
              enable: enable(used, (vals) => condValue(s.cond, vals) === 0n, literals(s.cond)),
            });
          }
        } else if (s.kind === 'case' && s.op === 'case') {
          const sel = condValue(s.sel, env.values);
          if (sel === null) continue;
          const used = names(s.sel);
          const selText = s.sel.map((x) => x.t).join(' ');
          let matched = false;
          let decided = true;
          const dead: CaseItem[] = [];
          for (const it of s.items) {
            if (it.labels === 'default') continue;
            if (matched) {
              dead.push(it);
              continue;
            }
            const vals = it.labels.map((l) => condValue(l, env.values));
            if (vals.some((v) => v === sel)) matched = true;
            else if (vals.every((v) => v !== null)) dead.push(it);
            else {
              decided = false;
              break;
            }
          }
          const dflt = s.items.find((it) => it.labels === 'default');
          if (dflt && matched && decided) dead.push(dflt);
          const items = s.items;
          for (const it of dead) {
            const k = items.indexOf(it);
            const lo = it.line;
            const hi = it.body.end;
            const prevEnd = k > 0 ? items[k - 1].body.end : s.line;
            const nextLine = items[k + 1]?.line ?? Number.MAX_SAFE_INTEGER;
            if (lo <= prevEnd || hi >= nextLine) continue; // shares a line with another arm
            const label = it.labels === 'default' ? 'default' : it.labels.map((l) => l.map((x) => x.t).join('')).join(', ');
            const values = it.labels === 'default' ? [] : it.labels.map((l) => condValue(l, new Map([...env.values]))).filter((v): v is bigint => v !== null);
            out.push({
              module: base(mod),
              kind: 'dead-param',
              hiers: new Set([hier]),
              match: (p) => p.line >= lo && p.line <= hi && (!p.span || (p.span[0] >= lo && p.span[1] <= hi)),
              line: lo,
              reason: `case arm '${label}' of 'case (${selText})', never selected with ${paramText(used, env)}${where}`,
              enable: it.labels === 'default' ? undefined : enable(used, (vals) => values.includes(condValue(s.sel, vals) ?? -1n), values),
            });
          }
        }
      }
  }
  return out;
}

/**
 * Inputs of an instance tied to a constant (or left unconnected) by its instantiation:
 * `sub u (.en(1'b1), .mode(MODE))`. Nothing inside may write an input, so its bits never move.
 */
function tiedInputs(points: CoveragePoint[], modules: Map<string, ModuleSource | null>): Finding[] {
  const out: Finding[] = [];
  const base = (mod: string): string => mod.replace(/__.*$/, '');
  const moduleAt = new Map<string, string>();
  for (const p of points) if (!moduleAt.has(p.hier)) moduleAt.set(p.hier, p.module);
  for (const [hier, mod] of moduleAt) {
    const segs = hier.split('.');
    if (segs.length < 2) continue;
    const parentHier = segs.slice(0, -1).join('.');
    const parentMod = moduleAt.get(parentHier);
    const parent = parentMod ? modules.get(base(parentMod)) : undefined;
    const child = modules.get(base(mod));
    if (!parent || !child || !child.facts.complete) continue;
    const cands = parent.facts.instances.filter((i) => i.name === segs.at(-1) && i.module === base(mod));
    if (cands.length !== 1) continue;
    const inst = cands[0];
    const childWrites = writesOf(child.facts);
    for (const part of splitTop(inst.ports)) {
      if (part[0]?.t !== '.' || !part[1] || part[2]?.t !== '(' || part.at(-1)?.t !== ')') continue;
      const port = part[1].t;
      const expr = part.slice(3, -1);
      if (!child.facts.ports.has(port) || childWrites.has(port) || child.facts.opaque.has(port)) continue;
      // Only literals and the instantiating module's localparams (a parameter may differ per copy).
      const v = expr.length ? evalConst(expr, new Map([...parent.facts.fixed].filter(([n]) => !parent.decls.some((d) => d.name === n && !d.local)))) : 0n;
      if (v === null) continue;
      const text = expr.map((x) => x.t).join(' ');
      out.push({
        module: base(mod),
        kind: 'constant',
        hiers: new Set([hier]),
        signal: port,
        line: inst.line,
        reason: expr.length ? `input '${port}' is tied to ${text} by the instantiation '${inst.name}' at line ${inst.line}` : `input '${port}' is left unconnected by the instantiation '${inst.name}' at line ${inst.line}`,
      });
    }
  }
  return out;
}

export interface TwoStateOptions {
  /** The DUT's top module, and the `-G` overrides of its parameters for this run (`{}`: none): a
   * parameter is known only at the value the run elaborated. Without `params` the top's
   * parameters are unknown to the dead-code rule. */
  top?: string;
  params?: Record<string, string>;
}

/** Why a point cannot be covered, as proven: the kind, the reason, and how to enable it. */
export interface Proof {
  kind: Exclusion;
  detail: string;
  enable?: string;
}

const KIND_ORDER: Record<Exclusion, number> = { 'dead-param': 0, constant: 1, 'unreachable-2state': 2 };

/**
 * The uncovered points of `points` (the DUT's, after waivers) that no 2-state simulation can
 * cover, by the rules above, and the figures over the rest. `read` gives a DUT file's text.
 * `proven` also holds the points dead under the parameters and the constant ones.
 */
export function twoStateUnreachable(points: CoveragePoint[], read: (file: string) => string | undefined, opts: TwoStateOptions = {}): TwoStateReport {
  const findings: Array<Finding & { file: string }> = [];
  const files = [...new Set(points.map((p) => p.file))];
  const overridden = opts.top !== undefined && Object.keys(opts.params ?? {}).length > 0;
  const modules = new Map<string, ModuleSource | null>();
  const sources: Array<{ file: string; name: string; toks: Tok[] }> = [];
  for (const file of files) {
    const text = read(file);
    if (!text) continue;
    for (const mod of modulesIn(blankComments(text, true))) sources.push({ file, ...mod });
  }
  const fromElsewhere = new Set<string>();
  for (const src of sources) for (const n of hierarchicalTargets(src.toks)) fromElsewhere.add(n);
  for (const { file, ...mod } of sources) {
    {
      const ofModule = (p: CoveragePoint): boolean => p.module === mod.name || p.module.startsWith(mod.name + '__');
      const widthOf = (signal: string): number | undefined => {
        const bits = new Set(points.filter((p) => p.type === 'toggle' && ofModule(p) && (p.label === signal || p.label.startsWith(signal + '['))).map((p) => p.label));
        if (bits.size === 0 || [...bits].some((l) => /\]\[/.test(l))) return undefined;
        return bits.size;
      };
      const variants = new Set(points.filter(ofModule).map((p) => p.module));
      let facts: ModuleFacts;
      try {
        // With -G the top keeps its plain name but not its defaults.
        facts = moduleFacts(mod.name, mod.toks, variants.size === 1 && variants.has(mod.name) && !(overridden && mod.name === opts.top));
        const ifLines = new Map<number, number>();
        for (const proc of facts.processes) for (const { s } of walk(proc)) if (s.kind === 'if') ifLines.set(s.line, (ifLines.get(s.line) ?? 0) + 1);
        modules.set(
          mod.name,
          modules.has(mod.name)
            ? null
            : { file, toks: mod.toks, facts, decls: paramDecls(mod.toks), sharedIfLines: new Set([...ifLines].filter(([, n]) => n > 1).map(([l]) => l)) },
        );
      } catch {
        continue;
      }
      const toggles = new Map<string, Set<string>>();
      for (const p of points)
        if (p.type === 'toggle' && ofModule(p)) {
          const b = p.label.replace(/\[.*$/, '');
          toggles.set(b, (toggles.get(b) ?? new Set()).add(p.label));
        }
      for (const f of tiedOffSignals(facts, mod.toks, fromElsewhere, (n) => [...(toggles.get(n) ?? [])])) findings.push({ ...f, file });
      for (const f of unwrittenSlots(facts, mod.toks, fromElsewhere, (n) => [...(toggles.get(n) ?? [])])) findings.push({ ...f, file });
      for (const f of [...fullCaseDefaults(facts, widthOf, mod.toks), ...deadElses(facts, mod.toks), ...constantSignals(facts).filter((f) => !fromElsewhere.has(f.signal ?? ''))])
        findings.push({ ...f, file });
      // An enum variable holds only its members (and starts at 0): a bit no member sets stays 0.
      for (const [name, members] of facts.enumOf) {
        if (!members.includes(0n) || !enumHoldsMembers(facts, name, mod.toks)) continue;
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
  for (const f of [...deadParamCode(points, modules, opts), ...tiedInputs(points, modules)]) {
    const src = modules.get(f.module);
    if (src) findings.push({ ...f, file: src.file });
  }
  findings.sort((a, b) => KIND_ORDER[a.kind ?? 'unreachable-2state'] - KIND_ORDER[b.kind ?? 'unreachable-2state']);
  const out = new Map<string, Unreachable2State>();
  const marked = new Set<CoveragePoint>();
  const proven = new Map<CoveragePoint, Proof>();
  for (const p of points) {
    if (isCovered(p)) continue;
    for (const f of findings) {
      if (f.file !== p.file || !(p.module === f.module || p.module.startsWith(f.module + '__'))) continue;
      if (f.hiers && !f.hiers.has(p.hier)) continue;
      const hit =
        p.type === 'toggle'
          ? f.signal !== undefined && (f.labels ? f.labels.has(p.label) : p.label === f.signal || p.label.startsWith(f.signal + '['))
          : p.type !== 'expr' &&
            p.type !== 'cond' &&
            (f.match
              ? f.match(p)
              : f.lines !== undefined && p.line >= f.lines[0] && p.line <= f.lines[1] && (f.label === undefined || p.label === f.label));
      if (!hit) continue;
      const kind = f.kind ?? 'unreachable-2state';
      proven.set(p, { kind, detail: f.reason, ...(f.enable ? { enable: f.enable } : {}) });
      if (kind !== 'unreachable-2state') break;
      marked.add(p);
      const label = p.type === 'toggle' ? f.signal! : p.label;
      const key = `${f.file}\0${f.line}\0${p.type}\0${label}`;
      const e = out.get(key);
      if (e) e.points++;
      else out.set(key, { file: f.file, line: f.line, type: p.type, label, points: 1, reason: f.reason });
      break;
    }
  }
  return { count: marked.size, points: [...out.values()], figures: figures(points.filter((p) => !marked.has(p))), proven };
}
