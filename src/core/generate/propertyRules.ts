// Legal stimulus from the design's properties, as slang elaborated them (design/facts.ts): each
// assertion's structure (antecedent, implication, delay, sampled-value functions, clock) over the
// top's ports becomes what the testbench does in every step before the sampling edge:
// - an obligation the inputs can meet (`valid && !ready |=> valid`, `a |-> $onehot0(sel)`,
//   `req |=> $stable(data)`): the inputs are set so that the consequent holds, `delay` edges after
//   the antecedent matched (a shift register per property records it at the property's clock);
// - otherwise the violation itself (`push |-> !full`: push while full): an input of one of its
//   conjunctions is flipped whenever the rest of it holds.
// A property over signals that do not reach the top's ports directly, or with constructs this
// module does not model (sequences, repetitions, `$past` of depth > 1), gives no rule here: the
// generator learns from its failures instead (legality.ts), and holds inputs at zero last.
// Everything here is about the property's structure, never about a design's name.
import type { FactAssertion, FactExpr } from '../design/facts.js';
import type { PortInfo } from '../design/types.js';
import type { Roles } from './roles.js';

/** What the testbench does for one assertion (emit.ts puts `declarations` at module level and
 * `statements` into step(), before the sampling edge). */
export interface PropertyRule {
  site: string;
  level: 'oblige' | 'gate';
  statements: string[];
  declarations: string[];
  why: string;
}

/** `s` as a SystemVerilog identifier fragment (testbench register names built from sites and ports). */
export const ident = (s: string): string => s.replace(/[^A-Za-z0-9_]/g, '_');

/** A name for the previous-cycle value of `port` at `clock`. */
const pastName = (port: string, clock: string): string => `chorus_past_${ident(clock)}_${ident(port)}`;

interface Ctx {
  ports: Map<string, PortInfo>;
  clock: { port: string; edge: 'pos' | 'neg' } | null;
  /** Past values the rendering needs: leaf text (`sel`, `sel[3:2]`) -> register and width. */
  past: Map<string, { reg: string; width: number }>;
}

const BIN: Record<string, string> = {
  and: '&&',
  or: '||',
  eq: '==',
  ne: '!=',
  lt: '<',
  le: '<=',
  gt: '>',
  ge: '>=',
  bitand: '&',
  bitor: '|',
  xor: '^',
  add: '+',
  sub: '-',
  mul: '*',
  shl: '<<',
  shr: '>>',
};

/** A top port, or constant bits of a packed one (`sel[3:2]`, in the flat numbering the testbench
 * declares ports with), that an expression names: what the testbench reads, and for a data input
 * sets, as `text`. */
interface Leaf {
  port: PortInfo;
  text: string;
  width: number;
}

function leafOf(e: FactExpr, c: Ctx): Leaf | null {
  if (e.op === 'id') {
    const p = e.top ? c.ports.get(e.top) : undefined;
    return p ? { port: p, text: p.name, width: p.width } : null;
  }
  if (e.op !== 'select' || e.base.op !== 'id' || !e.base.top) return null;
  const m = /^\[(\d+)(?::(\d+))?\]$/.exec(e.text);
  const p = c.ports.get(e.base.top);
  if (!m || !p || p.unpackedDims.length) return null;
  const hi = Number(m[1]);
  const lo = m[2] === undefined ? hi : Number(m[2]);
  if (hi < lo || hi >= p.width) return null;
  return { port: p, text: `${p.name}${e.text}`, width: hi - lo + 1 };
}

/** The register holding the value `e` (a leaf) had at the previous edge of the property's clock. */
function pastOf(e: FactExpr, c: Ctx): string | null {
  const l = leafOf(e, c);
  return l ? pastOfLeaf(l, c) : null;
}

/** A 1-bit value: where `&`, `|`, `^`, `~` are the logical operators and a 1-bit cast changes
 * nothing. */
function oneBit(e: FactExpr): boolean {
  switch (e.op) {
    case 'id':
    case 'select':
    case 'const':
      return e.width === 1;
    case 'not':
    case 'and':
    case 'or':
    case 'eq':
    case 'ne':
    case 'lt':
    case 'le':
    case 'gt':
    case 'ge':
      return true;
    case 'bitand':
    case 'bitor':
    case 'xor':
    case 'bitnot':
      return e.args.every(oneBit);
    case 'cast':
      return e.width === 1;
    case 'cond':
      return oneBit(e.args[1]) && oneBit(e.args[2]);
    case 'call':
      return ['$onehot', '$onehot0', '$stable', '$changed', '$rose', '$fell', '$isunknown'].includes(e.name);
    default:
      return false;
  }
}

/** `e` without the 1-bit casts of 1-bit values an inlined driver brings (`1'(take & ~give)`). */
function unwrap(e: FactExpr): FactExpr {
  while (e.op === 'cast' && e.width === 1 && oneBit(e.args[0])) e = e.args[0];
  return e;
}

/** The numeric value of a constant (`4'd9`, `12`, `'0`), or null. */
function constValue(e: FactExpr): bigint | null {
  if (e.op !== 'const') return null;
  if (e.value === "'0") return 0n;
  const m = /^(?:\d+'s?d)?(\d+)$/.exec(e.value);
  return m ? BigInt(m[1]) : null;
}

/** `e` with each signal read one edge earlier (`$past` of a leaf); calls are left alone, so a
 * `$past` inside `$past` (two edges back) renders to nothing. */
function pastOfEach(e: FactExpr): FactExpr {
  switch (e.op) {
    case 'id':
    case 'select':
      return { op: 'call', name: '$past', args: [e] };
    case 'const':
    case 'opaque':
      return e;
    case 'call':
      return { op: 'opaque', text: e.name };
    default:
      return { ...e, args: e.args.map(pastOfEach) };
  }
}

/** SystemVerilog text of `e` over the top's ports, or null when it names anything else. */
export function render(e: FactExpr, c: Ctx): string | null {
  switch (e.op) {
    case 'id':
    case 'select':
      return leafOf(e, c)?.text ?? null;
    case 'const':
      return e.value;
    case 'not':
    case 'bitnot': {
      const a = render(e.args[0], c);
      return a === null ? null : `${e.op === 'not' ? '!' : '~'}(${a})`;
    }
    case 'call':
      return renderCall(e.name, e.args, c);
    case 'opaque':
      return null;
    default: {
      const parts = e.args.map((a) => render(a, c));
      if (parts.some((p) => p === null)) return null;
      if (e.op === 'cast') return `${e.width}'(${parts[0]})`;
      if (e.op === 'concat') return `{${parts.join(', ')}}`;
      if (e.op === 'cond') return `(${parts[0]} ? ${parts[1]} : ${parts[2]})`;
      return `(${parts.join(` ${BIN[e.op]} `)})`;
    }
  }
}

function renderCall(name: string, args: FactExpr[], c: Ctx): string | null {
  const a = args[0] ? render(args[0], c) : null;
  if (a === null) return null;
  switch (name) {
    case '$onehot':
    case '$onehot0':
    case '$countones':
      return `${name}(${a})`;
    case '$isunknown':
      return "1'b0"; // two-state simulation: never unknown
    case '$past': {
      if (args.length > 1 && !(args[1].op === 'const' && /^(32'd)?1$/.test(args[1].value))) return null;
      // $past(f(x, y)) is f($past(x), $past(y)) for an expression of sampled values.
      return leafOf(args[0], c) ? pastOf(args[0], c) : render(pastOfEach(args[0]), c);
    }
    case '$stable':
    case '$changed':
    case '$rose':
    case '$fell': {
      const p = leafOf(args[0], c) ? pastOf(args[0], c) : render(pastOfEach(args[0]), c);
      if (!p) return null;
      if (name === '$stable') return `(${a} == ${p})`;
      if (name === '$changed') return `(${a} != ${p})`;
      // $rose/$fell look at bit 0; a 1-bit value is its own bit 0 (and a scalar takes no select).
      const one = leafOf(args[0], c)?.width === 1;
      const [x, y] = one ? [a, p] : [bit0(a), bit0(p)];
      return name === '$rose' ? `(${x} && !${y})` : `(!${x} && ${y})`;
    }
    default:
      return null;
  }
}

/** Bit 0 of a rendered value: a name or select is indexed, anything else masked. */
const bit0 = (v: string): string => (/^[A-Za-z_]\w*$/.test(v) ? `${v}[0]` : `((${v}) & 1'b1)`);

/** An input the stimulus may set: a data input (not a clock or reset) of the top, or constant
 * bits of one. */
function settable(e: FactExpr, c: Ctx, roles: Roles): Leaf | null {
  const l = leafOf(unwrap(e), c);
  return l && roles.data.includes(l.port) && l.port.unpackedDims.length === 0 ? l : null;
}

/** The leaves of `e` when every one is a settable input and nothing else but constants and
 * operators is in it (`data & MASK`); else null. */
function settableLeaves(e: FactExpr, c: Ctx, roles: Roles): Leaf[] | null {
  if (e.op === 'id' || e.op === 'select') {
    const l = settable(e, c, roles);
    return l ? [l] : null;
  }
  if (e.op === 'const') return [];
  if (e.op === 'call' || e.op === 'opaque') return null;
  const out: Leaf[] = [];
  for (const a of e.args) {
    const ls = settableLeaves(a, c, roles);
    if (!ls) return null;
    out.push(...ls);
  }
  return out;
}

const NEGATED: Partial<Record<FactExpr['op'], 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge'>> = {
  eq: 'ne',
  ne: 'eq',
  lt: 'ge',
  ge: 'lt',
  gt: 'le',
  le: 'gt',
};

/** `!e` pushed one level in: `!!x` is x, `!(a < b)` is `a >= b`; null where it does not simplify. */
function negate(e: FactExpr): FactExpr | null {
  e = unwrap(e);
  if (isNot(e)) return unwrap(e.args[0]);
  const n = NEGATED[e.op];
  return n && 'args' in e ? { op: n, args: e.args } : null;
}

/**
 * Statements that make `e` true by setting inputs only, or null. Conjunctions set each part; a
 * disjunction that does not hold already its first part that can be made true; `!x`, `x == K`, `x < K`, `$stable(x)`,
 * `$onehot0(x)` and `$onehot(x)` of an input each have one assignment that satisfies them.
 */
export function makeTrue(e: FactExpr, c: Ctx, roles: Roles): string[] | null {
  e = unwrap(e);
  if (e.op === 'and' || (e.op === 'bitand' && oneBit(e))) {
    const out: string[] = [];
    for (const a of e.args) {
      const s = makeTrue(a, c, roles);
      if (!s) return null;
      out.push(...s);
    }
    return out;
  }
  if (e.op === 'or' || (e.op === 'bitor' && oneBit(e))) {
    for (const a of e.args) {
      const s = makeTrue(a, c, roles);
      if (!s) continue;
      // Only when no part holds already: the inputs keep their random values where they are legal.
      const whole = render(e, c);
      return whole === null ? s : [`if (!${whole}) begin ${s.join(' ')} end`];
    }
    return null;
  }
  const p = settable(e, c, roles);
  if (p) return p.width === 1 ? [`${p.text} = 1'b1;`] : null;
  if (isNot(e)) {
    const q = settable(e.args[0], c, roles);
    if (q) return [`${q.text} = '0;`];
    const inner = unwrap(e.args[0]);
    // !(sel ? a : b) is sel ? !a : !b.
    if (inner.op === 'cond')
      return makeTrue(
        { op: 'cond', args: [inner.args[0], { op: 'not', args: [inner.args[1]] }, { op: 'not', args: [inner.args[2]] }] },
        c,
        roles,
      );
    const n = negate(e.args[0]);
    return n ? makeTrue(n, c, roles) : null;
  }
  if (e.op === 'eq' || e.op === 'ne') {
    const [l, r] = e.args;
    const q = settable(l, c, roles) ?? settable(r, c, roles);
    const other = settable(l, c, roles) ? r : l;
    const k = other.op === 'const' ? other.value : null;
    if (!q || k === null) return null;
    return e.op === 'eq' ? [`${q.text} = ${k};`] : [`if (${q.text} == ${k}) ${q.text} = ${q.text} + 1'b1;`];
  }
  if (e.op === 'lt' || e.op === 'le' || e.op === 'gt' || e.op === 'ge') return bound(e.op, e.args[0], e.args[1], c, roles);
  if (e.op === 'cond' && oneBit(e.args[1]) && oneBit(e.args[2])) {
    // `sel ? a : b`: whichever arm the select (as the inputs hold it) picks.
    const sel = render(e.args[0], c);
    const [a, b] = [makeTrue(e.args[1], c, roles), makeTrue(e.args[2], c, roles)];
    return sel === null || !a || !b ? null : [`if (${sel}) begin ${a.join(' ')} end else begin ${b.join(' ')} end`];
  }
  if (e.op === 'call') {
    if (e.name === '$stable' && e.args[0]) {
      // $stable(x & MASK): each input in it keeps its previous value.
      const leaves = settableLeaves(e.args[0], c, roles);
      if (!leaves || !leaves.length) return null;
      const out: string[] = [];
      for (const l of leaves) {
        const reg = pastOfLeaf(l, c);
        if (!reg) return null;
        out.push(`${l.text} = ${reg};`);
      }
      return out;
    }
    if (e.name === '$onehot0' && e.args[0]) {
      const parts = bitsOf(e.args[0]);
      if (parts) return atMostOne(parts, c, roles);
    }
    const q = e.args[0] ? settable(e.args[0], c, roles) : null;
    if (!q) return null;
    if (e.name === '$onehot0') return [`${q.text} = ${q.text} & (~${q.text} + 1'b1);`];
    if (e.name === '$onehot') return [`${q.text} = (${q.text} == '0) ? 1 : ${q.text} & (~${q.text} + 1'b1);`];
  }
  return null;
}

/** The 1-bit parts of a concatenation (a net its continuous assignments drive bit by bit, as the
 * front end reads it: `{1'(we_b), 1'(we_a)}`), highest first; null for anything else. */
function bitsOf(e: FactExpr): FactExpr[] | null {
  while (e.op === 'cast' && e.args[0].op === 'concat') e = e.args[0];
  if (e.op !== 'concat' || e.args.length < 2) return null;
  return e.args.every(oneBit) ? e.args : null;
}

/** Statements after which at most one of `parts` is true: each part is made false while one
 * before it holds (each test reads the inputs as the statements before it left them). */
function atMostOne(parts: FactExpr[], c: Ctx, roles: Roles): string[] | null {
  const out: string[] = [];
  for (let k = 1; k < parts.length; k++) {
    const before = parts.slice(0, k).map((p) => render(p, c));
    const off = makeTrue({ op: 'not', args: [parts[k]] }, c, roles);
    if (before.some((b) => b === null) || !off) return null;
    out.push(`if (${before.join(' || ')}) begin ${off.join(' ')} end`);
  }
  return out;
}

/** The register holding a leaf's value at the previous edge of the property's clock. */
function pastOfLeaf(l: Leaf, c: Ctx): string | null {
  if (!c.clock || l.port.unpackedDims.length) return null;
  const reg = pastName(l.text, c.clock.port);
  c.past.set(l.text, { reg, width: l.width });
  return reg;
}

/** `x < K` (and `<=`, `>`, `>=`, either side) for an input x and a constant K: a value in range,
 * drawn from x itself where it can be (`x % K`) so the stimulus still varies. `x <= y` for any y:
 * x at zero. */
function bound(op: 'lt' | 'le' | 'gt' | 'ge', l: FactExpr, r: FactExpr, c: Ctx, roles: Roles): string[] | null {
  let x = settable(l, c, roles);
  let k = r;
  if (!x) {
    x = settable(r, c, roles);
    k = l;
    op = ({ lt: 'gt', le: 'ge', gt: 'lt', ge: 'le' } as const)[op];
  }
  if (!x) return null;
  const n = constValue(k);
  // `x <= y` for a y the testbench cannot see (a design-internal limit): an unsigned x at zero
  // meets it whatever y is.
  if (n === null) return op === 'le' && !x.port.signed ? [`${x.text} = '0;`] : null;
  if (k.op !== 'const') return null;
  const K = k.value;
  const max = (1n << BigInt(x.width)) - 1n;
  const cond = `!(${x.text} ${BIN[op]} ${K})`;
  switch (op) {
    case 'lt':
      return n === 0n ? null : [`if (${cond}) ${x.text} = ${x.text} % ${K};`];
    case 'le':
      return [`if (${cond}) ${x.text} = ${x.text} % (${K} + 1);`];
    case 'gt':
      return n >= max ? null : [`if (${cond}) ${x.text} = ${K} + 1;`];
    case 'ge':
      return n > max ? null : [`if (${cond}) ${x.text} = ${K};`];
  }
}

/** `!x`, or `~x` of one bit (the same thing): the forms a negation takes in a property. */
function isNot(e: FactExpr): e is { op: 'not' | 'bitnot'; args: FactExpr[] } {
  if (e.op === 'not') return true;
  return e.op === 'bitnot' && oneBit(e.args[0]);
}

/** Conjunctions of `e` (negated when `neg`), each a list of parts: at most 8, or null. */
function dnf(e: FactExpr, neg: boolean): FactExpr[][] | null {
  e = unwrap(e);
  if (isNot(e)) return dnf(e.args[0], !neg);
  // A constant decides: true is a conjunction with nothing left to hold, false is none (`$error`
  // is a check of false under its conditions: the violation is the conditions alone).
  const k = constValue(e);
  if (k !== null) return (k !== 0n) !== neg ? [[]] : [];
  const logical = e.op === 'and' || e.op === 'or' || ((e.op === 'bitand' || e.op === 'bitor') && oneBit(e));
  if (logical && 'args' in e) {
    const conj = (e.op === 'and' || e.op === 'bitand') !== neg;
    const parts = e.args.map((a) => dnf(a, neg));
    if (parts.some((p) => p === null)) return null;
    const ps = parts as FactExpr[][][];
    if (!conj) {
      const all = ps.flat();
      return all.length > 8 ? null : all;
    }
    let acc: FactExpr[][] = [[]];
    for (const p of ps) {
      acc = acc.flatMap((x) => p.map((y) => [...x, ...y]));
      if (acc.length > 8) return null;
    }
    return acc;
  }
  return [[neg ? { op: 'not', args: [e] } : e]];
}

/**
 * Statements that keep `v` (a violation) false: for each of its conjunctions, one input part is
 * flipped whenever the others hold. Null when some conjunction has no input part to flip.
 */
function avoid(v: FactExpr, c: Ctx, roles: Roles): string[] | null {
  const conjs = dnf(v, false);
  if (!conjs || conjs.length === 0) return null;
  const out: string[] = [];
  for (const conj of conjs) {
    let done = false;
    // Prefer an input the violation needs high (dropping it is the least intrusive change).
    const order = [...conj.keys()].sort((a, b) => Number(isNot(conj[a])) - Number(isNot(conj[b])));
    for (const i of order) {
      const fix = makeTrue({ op: 'not', args: [conj[i]] }, c, roles) ?? flipNegated(conj[i], c, roles);
      if (!fix) continue;
      const rest = conj.filter((_, j) => j !== i).map((x) => render(x, c));
      if (rest.some((r) => r === null)) continue; // another part may have a fix the testbench can condition
      // A part the testbench cannot evaluate (`step > max_step`, max_step internal) whose fix holds
      // whatever it is: the fix applies whenever the rest holds.
      const self = render(conj[i], c);
      const cond = [...(rest as string[]), ...(self === null ? [] : [self])];
      out.push(cond.length ? `if (${cond.join(' && ')}) begin ${fix.join(' ')} end` : fix.join(' '));
      done = true;
      break;
    }
    if (!done) return null;
  }
  return out;
}

/** `!x` of a 1-bit input made false: x high. */
function flipNegated(e: FactExpr, c: Ctx, roles: Roles): string[] | null {
  if (!isNot(e)) return null;
  const inner = unwrap(e.args[0]);
  if (isNot(inner)) return makeTrue({ op: 'not', args: [inner.args[0]] }, c, roles);
  return makeTrue(inner, c, roles);
}

/**
 * The antecedent as the testbench can evaluate it: its top-level conjuncts that name only what the
 * testbench sees, a design-internal one (a formal property's `f_past_valid`) dropped. Dropping a
 * conjunct weakens the antecedent, so the rule binds at least whenever the property does: sound
 * both for obliging the consequent and for avoiding a violation. Null when nothing is left.
 */
function evaluable(e: FactExpr, c: Ctx): FactExpr | null {
  if (render(e, c) !== null) return e;
  if (e.op !== 'and') return null;
  const [l, r] = [evaluable(e.args[0], c), evaluable(e.args[1], c)];
  return l && r ? { op: 'and', args: [l, r] } : (l ?? r);
}

function siteOf(a: FactAssertion): string {
  return `${a.file.slice(a.file.lastIndexOf('/') + 1)}:${a.line}`;
}

/** Which of the roles' clocks a property samples on (its clock, traced to a top port). */
function clockOf(a: FactAssertion, roles: Roles): Ctx['clock'] {
  if (!a.clock) return null;
  const k = roles.clocks.find((c) => c.port.name === a.clock!.signal);
  return k ? { port: k.port.name, edge: a.clock.edge } : null;
}

function pastDeclarations(c: Ctx): string[] {
  if (!c.clock) return [];
  const out: string[] = [];
  for (const [leaf, { reg, width }] of c.past) {
    out.push(`logic ${width > 1 ? `[${width - 1}:0] ` : ''}${reg} = '0;`);
    out.push(`always @(${c.clock.edge}edge ${c.clock.port}) ${reg} <= ${leaf};`);
  }
  return out;
}

/**
 * The rule for one assertion, or null when its structure gives none (the generator then learns
 * from the assertion's failures). `preferAvoid`: the obligation did not stop the failures, or the
 * consequent cannot be met by inputs: keep the antecedent from matching instead.
 */
export function propertyRule(a: FactAssertion, roles: Roles, index: number, preferAvoid = false): PropertyRule | null {
  // A check of the starting state holds for what the testbench drives at time 0 (every input 0,
  // resets asserted: emit.ts declares them so); making it true in every step would hold its
  // inputs for the whole run (`initial assume (!i_cyc)` would forbid every bus cycle).
  if (a.action === 'cover' || a.initial) return null;
  const ports = new Map<string, PortInfo>([...roles.data, ...roles.outputs, ...roles.resets.map((r) => r.port)].map((p) => [p.name, p]));
  const c: Ctx = { ports, clock: clockOf(a, roles), past: new Map() };
  const site = siteOf(a);
  const cons = a.consequentExpr ?? null;
  if (!cons || (a.antecedent && !a.antecedentExpr)) return null;
  const ante = a.antecedentExpr ? evaluable(a.antecedentExpr, c) : null;
  if (a.antecedentExpr && !ante) return null;
  const delay = a.kind === 'concurrent' ? a.delay : 0;
  if (delay > 0 && !c.clock) return null;
  const anteText = ante ? render(ante, c) : "1'b1";
  if (anteText === null) return null;
  const oblige = preferAvoid ? null : makeTrue(cons, c, roles);
  if (oblige) {
    if (delay === 0) {
      return {
        site,
        level: 'oblige',
        statements: [ante ? `if (${anteText}) begin ${oblige.join(' ')} end` : oblige.join(' ')],
        declarations: pastDeclarations(c),
        why: `assertion at ${site}: ${a.text.slice(0, 80)} (the inputs meet its consequent${ante ? ' whenever its antecedent holds' : ''})`,
      };
    }
    const reg = `chorus_ante_${index}`;
    const decl = [
      `logic [${delay - 1}:0] ${reg} = '0;`,
      `always @(${c.clock!.edge}edge ${c.clock!.port}) ${reg} <= ${delay > 1 ? `{${reg}[${delay - 2}:0], ${anteText}}` : anteText};`,
      ...pastDeclarations(c),
    ];
    return {
      site,
      level: 'oblige',
      statements: [`if (${reg}[${delay - 1}]) begin ${oblige.join(' ')} end`],
      declarations: decl,
      why: `assertion at ${site}: ${a.text.slice(0, 80)} (${delay} cycle${delay > 1 ? 's' : ''} after its antecedent, the inputs meet its consequent)`,
    };
  }
  // The consequent is the design's to keep (or not settable): never match the antecedent in a way
  // that breaks it. With a delay, the antecedent alone is avoided (the consequent is in the future).
  const violation: FactExpr | null =
    delay === 0
      ? ante
        ? { op: 'and', args: [ante, { op: 'not', args: [cons] }] }
        : { op: 'not', args: [cons] }
      : preferAvoid
        ? ante
        : null;
  if (!violation) return null;
  const stmts = avoid(violation, c, roles);
  if (!stmts) return null;
  return {
    site,
    level: 'gate',
    statements: stmts,
    declarations: pastDeclarations(c),
    why: `assertion at ${site}: ${a.text.slice(0, 80)} (its violating input condition is never driven${delay > 0 ? ': its antecedent is not driven' : ''})`,
  };
}

/** The rules for every assertion of the design that its structure gives one for. */
export function propertyRules(assertions: FactAssertion[], roles: Roles): PropertyRule[] {
  const out: PropertyRule[] = [];
  const seen = new Set<string>();
  assertions.forEach((a, i) => {
    const r = propertyRule(a, roles, i);
    // Two instances of one checker module on the same ports give the same rule once.
    const key = r && !r.declarations.length ? `${r.site}\n${r.statements.join('\n')}` : null;
    if (!r || (key && seen.has(key))) return;
    if (key) seen.add(key);
    out.push(r);
  });
  return out;
}
