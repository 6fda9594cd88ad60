// The rules of twoState.ts whose proofs hold for a 2-state simulator (kind 'unreachable-2state'):
// a full-case default, a dead else, a loop index or constant variable, the bits no member of an
// enum type sets, and the bits every pass of a combinational block leaves at one value
// (combBits.ts). Each reads a module's facts (moduleFacts.ts), never a design's name.
import { splitTop } from './brackets.js';
import { CombEval, Unsupported, type CombEnv, type DeclShape } from './combBits.js';
import { declaredWidths, unpackedArrays, unsignedNames } from './declarations.js';
import { ranges, type Finding } from './finding.js';
import { CONST_FUNCS, enumHoldsMembers, isConstant, maybeDriven, writesOf, type ModuleFacts, type Write } from './moduleFacts.js';
import { evalConst, walk, type Stmt, type Tok } from './svStatements.js';

/** The `default` arm of a case whose items list every value the selector can hold: every value
 * of its width, or every member of its enum type when the variable holds only members. */
export function fullCaseDefaults(m: ModuleFacts, widthOf: (signal: string) => number | undefined, toks: Tok[]): Finding[] {
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
export function deadElses(m: ModuleFacts, toks: Tok[]): Finding[] {
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

/** A variable whose every write is the same constant, and a for-loop index with constant bounds
 * that each pass of its block leaves at the same value. */
export function constantSignals(m: ModuleFacts): Finding[] {
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

/**
 * An enum variable holds only its members (and starts at 0): a bit no member sets stays 0.
 * `labelsOf` gives a signal's toggle labels in this module.
 */
export function enumBits(m: ModuleFacts, toks: Tok[], labelsOf: (signal: string) => string[]): Finding[] {
  const out: Finding[] = [];
  for (const [name, members] of m.enumOf) {
    if (!members.includes(0n) || !enumHoldsMembers(m, name, toks)) continue;
    const labels = labelsOf(name);
    const zero = labels.filter((l) => {
      const k = /\[(\d+)\]$/.exec(l)?.[1];
      return k !== undefined && members.every((v) => ((v >> BigInt(k)) & 1n) === 0n);
    });
    if (zero.length)
      out.push({
        module: m.name,
        signal: name,
        labels: new Set(zero),
        line: m.enumLine.get(name) ?? 0,
        reason: `'${name}' is of an enum type whose ${members.length} members all leave ${zero.length === 1 ? 'this bit' : 'these bits'} 0: a 2-state enum variable only holds its members`,
      });
  }
  return out;
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

/**
 * The constant bits of combinational blocks (combConstantBits), named as toggle coverage names
 * them: `labelsOf` gives a signal's toggle labels in this module, whose lowest index is bit 0.
 */
export function combBitFindings(
  m: ModuleFacts,
  toks: Tok[],
  widthOf: (name: string) => number | undefined,
  labelsOf: (signal: string) => string[],
): Finding[] {
  return combConstantBits(m, toks, widthOf).map((c) => {
    const labels = labelsOf(c.signal);
    const idx = labels.map((l) => Number(/\[(\d+)\]$/.exec(l)?.[1] ?? 0));
    const lo = idx.length ? Math.min(...idx) : 0;
    const names = new Set(c.bits.map((k) => (labels.includes(c.signal) ? c.signal : `${c.signal}[${k + lo}]`)));
    const list = c.bits.length === 1 ? `bit ${c.bits[0] + lo}` : `bits ${ranges(c.bits.map((k) => k + lo))}`;
    return {
      module: m.name,
      signal: c.signal,
      labels: names,
      line: c.line,
      reason: `${list} of '${c.signal}' hold the same value after every pass of the combinational block at line ${c.line} (worked out bit by bit from constants and constant-bound loops; toggle coverage samples between passes)`,
    };
  });
}
