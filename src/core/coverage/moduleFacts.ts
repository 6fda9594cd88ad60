// What the 2-state rules (twoState.ts) read of one module: its facts (constants, enum types and
// variables, ports, processes, continuous assignments, instances, where functions and tasks
// write) and every write to each variable. Read once per module, from its tokens
// (svStatements.ts).
import { closeOf, splitTop } from './brackets.js';
import { PRINT_TASK } from './combBits.js';
import { assignmentOf, evalConst, instancesIn, parameterStatement, Parser, targets, walk, type Instance, type Stmt, type Tok } from './svStatements.js';
import type { ParamDecl } from './params.js';

export interface ModuleFacts {
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

/** A module as the rules see it: the file it is in, its tokens, its facts and parameter declarations. */
export interface ModuleSource {
  file: string;
  toks: Tok[];
  facts: ModuleFacts;
  decls: ParamDecl[];
  /** Lines where more than one `if` starts: a point there cannot be told apart. */
  sharedIfLines: Set<number>;
}

/** System functions a constant expression may call. */
export const CONST_FUNCS = new Set(['$clog2', '$bits', '$signed', '$unsigned']);

/** True when the expression uses only literals, operators and constant names. */
export function isConstant(toks: Tok[], m: ModuleFacts): boolean {
  return toks.length > 0 && toks.every((x) => !/^[A-Za-z_$]/.test(x.t) || m.constants.has(x.t) || CONST_FUNCS.has(x.t));
}

/**
 * The facts of module `name`, from its tokens. `paramsAtDefault`: every instance measured has
 * the module's default parameters (Verilator keeps the plain module name only for those: an
 * override makes a copy named `m__D8_P4`), so parameters are constants of known value here.
 */
export function moduleFacts(name: string, toks: Tok[], paramsAtDefault = false): ModuleFacts {
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
  // A reader returns the last token it took; one that finds its construct unfinished (an `assign`
  // with no `;`, an enum with no `{`: source edited after the run) must not send the scan back.
  for (let k = 0; k < toks.length; k++) k = Math.max(k, readConstruct(m, toks, k, paramsAtDefault));
  readInstances(m, toks);
  return m;
}

/** Reads the construct that starts at `k` (a declaration, a subprogram, an assignment, a
 * process) into `m`; returns the index of the last token it took, `k` when it took none. */
function readConstruct(m: ModuleFacts, toks: Tok[], k: number, paramsAtDefault: boolean): number {
  const t = toks[k].t;
  if (t === 'parameter' || t === 'localparam') return readParameters(m, toks, k, paramsAtDefault);
  if (t === 'typedef' && toks[k + 1]?.t === 'enum') return readEnumType(m, toks, k);
  if (t === 'enum' && toks[k - 1]?.t !== 'typedef') return readEnumVariables(m, toks, k);
  if (m.enums.has(t) && /^[A-Za-z_]/.test(toks[k + 1]?.t ?? '')) return readEnumTyped(m, toks, k);
  if (t === 'input' || t === 'inout') return readInputs(m, toks, k);
  if (t === 'function' || t === 'task') return readSubprogram(m, toks, k);
  if (t === 'assign') return readAssign(m, toks, k);
  if (/^(?:always|always_comb|always_ff|always_latch|initial|final)$/.test(t)) return readProcess(m, toks, k);
  return k;
}

/** `localparam [3:0] A = 1, B = 2;` / `parameter int W = 4` in a #( ) list: constants, and their
 * values where no instance can override them. */
function readParameters(m: ModuleFacts, toks: Tok[], k: number, paramsAtDefault: boolean): number {
  const t = toks[k].t;
  const { stmt } = parameterStatement(toks, k);
  for (const part of splitTop(stmt)) {
    const eq = part.findIndex((x) => x.t === '=');
    if (eq < 1) continue;
    const id = part[eq - 1].t;
    m.constants.add(id);
    if (t === 'localparam' || paramsAtDefault) m.fixed.set(id, evalConst(part.slice(eq + 1), m.fixed));
  }
  return k;
}

/** The members of an enum body (`toks[from]` is its '{'), each a constant of known value where
 * it can be worked out, and the index of the closing '}'. */
function readEnumBody(m: ModuleFacts, toks: Tok[], from: number): { members: Array<[string, bigint | null]>; end: number } {
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
}

/** `typedef enum {...} name;`: the type's member values, when all are known. */
function readEnumType(m: ModuleFacts, toks: Tok[], k: number): number {
  const open = toks.findIndex((x, j) => j > k && x.t === '{');
  const { members, end } = readEnumBody(m, toks, open);
  const id = toks[end + 1]?.t;
  if (id && members.every(([, v]) => v !== null)) m.enums.set(id, members.map(([, v]) => v!));
  return end + 1;
}

/** `enum {...} a, b;`: variables of an anonymous enum type. */
function readEnumVariables(m: ModuleFacts, toks: Tok[], k: number): number {
  const open = toks.findIndex((x, j) => j > k && x.t === '{');
  const { members, end } = readEnumBody(m, toks, open);
  const decl = toks.slice(end + 1, toks.findIndex((x, j) => j > end && x.t === ';'));
  for (const part of splitTop(decl))
    if (part[0] && members.every(([, v]) => v !== null)) {
      m.enumOf.set(part[0].t, members.map(([, v]) => v!));
      m.enumLine.set(part[0].t, part[0].line);
    }
  return end;
}

/** `state_t a, b;`: variables of an enum type declared by typedef. */
function readEnumTyped(m: ModuleFacts, toks: Tok[], k: number): number {
  const t = toks[k].t;
  const end = toks.findIndex((x, j) => j > k && (x.t === ';' || x.t === ')'));
  for (const part of splitTop(toks.slice(k + 1, end)))
    if (part[0]) {
      m.enumOf.set(part[0].t, m.enums.get(t)!);
      m.enumLine.set(part[0].t, part[0].line);
    }
  return k;
}

/** `input [3:0] a, b` / `inout x`: the ports the other side drives. */
function readInputs(m: ModuleFacts, toks: Tok[], k: number): number {
  const end = toks.findIndex((x, j) => j > k && (x.t === ';' || x.t === ')' || /^(?:input|output|inout)$/.test(x.t)));
  for (const part of splitTop(toks.slice(k + 1, end < 0 ? undefined : end))) {
    const id = [...part].reverse().find((x) => /^[A-Za-z_]/.test(x.t) && !/^(?:wire|logic|reg|signed|unsigned|var|tri)$/.test(x.t));
    if (id) m.ports.add(id.t);
  }
  return k;
}

/** A function or task: the names written inside (not followed, so never judged), and its span. */
function readSubprogram(m: ModuleFacts, toks: Tok[], k: number): number {
  const t = toks[k].t;
  const end = toks.findIndex((x, j) => j > k && x.t === `end${t}`);
  for (let j = k + 1; j < (end < 0 ? toks.length : end); j++)
    if (/^[A-Za-z_]/.test(toks[j].t) && /^(?:\[|=|<=|\+\+|--|\+=|-=|\|=|&=|\^=)$/.test(toks[j + 1]?.t ?? '')) m.opaque.add(toks[j].t);
  m.spans.push([k, end < 0 ? toks.length : end + 1]);
  return end < 0 ? toks.length : end;
}

/** A continuous assignment: each target and its expression. */
function readAssign(m: ModuleFacts, toks: Tok[], k: number): number {
  const end = toks.findIndex((x, j) => j > k && x.t === ';');
  // A drive strength `(strong0, weak1)` and a delay `#3` / `#(1, 2)` come before the targets.
  let from = k + 1;
  for (;;) {
    if (toks[from]?.t === '#') from += toks[from + 1]?.t === '(' ? closeOf(toks, from + 1) - from + 1 : 2;
    else if (toks[from]?.t === '(') from = closeOf(toks, from) + 1;
    else break;
  }
  for (const part of splitTop(toks.slice(from, end))) {
    const eq = part.findIndex((x) => x.t === '=');
    if (eq > 0) m.assigns.push({ lhs: part.slice(0, eq), rhs: part.slice(eq + 1) });
  }
  m.spans.push([k, end + 1]);
  return end;
}

/** A process (always, initial, final): its statements, its kind, whether it waits inside its
 * body, and whether it is combinational. */
function readProcess(m: ModuleFacts, toks: Tok[], k: number): number {
  const t = toks[k].t;
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
  return p.i - 1;
}

/** The module's instances, and every name their port lists mention. */
function readInstances(m: ModuleFacts, toks: Tok[]): void {
  m.instances = instancesIn(toks);
  for (const inst of m.instances)
    for (const [k, x] of inst.ports.entries()) {
      if (x.t === '.' && inst.ports[k + 1]?.t === '*') m.implicitConnect = true;
      // `.port(expr)`: the names in expr; `.port` alone connects the same name; positional: all.
      else if (/^[A-Za-z_]/.test(x.t)) m.connected.add(x.t);
    }
}

/**
 * An enum variable that holds only its members: not a port (the other side may drive any value),
 * not connected to an instance, not written in a function or task, and never assigned through a
 * cast (`state_t'(x)`, `$cast`): Verilator rejects an implicit conversion to an enum, so without
 * a cast every value written is a member.
 */
export function enumHoldsMembers(m: ModuleFacts, name: string, toks: Tok[]): boolean {
  if (!m.complete || m.ports.has(name) || m.opaque.has(name) || maybeDriven(m, name)) return false;
  if (toks.some((x, k) => x.t === '$cast' && toks.slice(k, k + 6).some((y) => y.t === name))) return false;
  const ws = writesOf(m).get(name) ?? [];
  return ws.every((w) => w.rhs !== null && !w.rhs.some((x) => x.t === "'" || x.t.endsWith("'")));
}

/** A name some instance's port may write (connected to it, or by `.*`). */
export function maybeDriven(m: ModuleFacts, name: string): boolean {
  return m.implicitConnect || m.connected.has(name);
}

export interface Write {
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

/** Every write to each variable: continuous assignments, assignments in processes (for-loop
 * headers included), and the writes this reader does not follow (functions, tasks, task calls). */
export function writesOf(m: ModuleFacts): Map<string, Write[]> {
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

/** The module's tokens outside its processes, continuous assignments, functions and tasks:
 * declarations, instances, generate constructs. */
export function moduleLevel(m: ModuleFacts, toks: Tok[]): Tok[] {
  const inside = new Uint8Array(toks.length + 1);
  for (const [a, b] of m.spans) for (let k = a; k < Math.min(b, toks.length); k++) inside[k] = 1;
  return toks.filter((_, k) => !inside[k]);
}
