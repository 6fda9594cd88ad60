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

const ident = (s: string): string => s.replace(/[^A-Za-z0-9_]/g, '_');

/** A name for the previous-cycle value of `port` at `clock`. */
const pastName = (port: string, clock: string): string => `chorus_past_${ident(clock)}_${ident(port)}`;

interface Ctx {
  ports: Map<string, PortInfo>;
  clock: { port: string; edge: 'pos' | 'neg' } | null;
  /** Past values the rendering needs: port -> register name. */
  past: Map<string, string>;
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
};

/** The top port an expression names directly, or null. */
function portOf(e: FactExpr, c: Ctx): PortInfo | null {
  return e.op === 'id' && e.top ? (c.ports.get(e.top) ?? null) : null;
}

function pastOf(e: FactExpr, c: Ctx): string | null {
  const p = portOf(e, c);
  if (!p || !c.clock) return null;
  const name = pastName(p.name, c.clock.port);
  c.past.set(p.name, name);
  return name;
}

/** `e` with each signal read one edge earlier (`$past` of a leaf); calls are left alone, so a
 * `$past` inside `$past` (two edges back) renders to nothing. */
function pastOfEach(e: FactExpr): FactExpr {
  switch (e.op) {
    case 'id':
      return { op: 'call', name: '$past', args: [e] };
    case 'const':
    case 'opaque':
      return e;
    case 'call':
      return { op: 'opaque', text: e.name };
    case 'select':
      return { ...e, base: pastOfEach(e.base) };
    default:
      return { ...e, args: e.args.map(pastOfEach) };
  }
}

/** SystemVerilog text of `e` over the top's ports, or null when it names anything else. */
export function render(e: FactExpr, c: Ctx): string | null {
  switch (e.op) {
    case 'id':
      return e.top && c.ports.has(e.top) ? e.top : null;
    case 'const':
      return e.value;
    case 'not':
    case 'bitnot': {
      const a = render(e.args[0], c);
      return a === null ? null : `${e.op === 'not' ? '!' : '~'}(${a})`;
    }
    case 'select': {
      const b = render(e.base, c);
      return b === null || !/^\[[0-9: +-]+\]$/.test(e.text) ? null : `${b}${e.text}`;
    }
    case 'call':
      return renderCall(e.name, e.args, c);
    case 'opaque':
      return null;
    default: {
      const parts = e.args.map((a) => render(a, c));
      if (parts.some((p) => p === null)) return null;
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
      return args[0].op === 'id' ? pastOf(args[0], c) : render(pastOfEach(args[0]), c);
    }
    case '$stable':
    case '$changed':
    case '$rose':
    case '$fell': {
      const p = pastOf(args[0], c);
      if (!p) return null;
      if (name === '$stable') return `(${a} == ${p})`;
      if (name === '$changed') return `(${a} != ${p})`;
      return name === '$rose' ? `(${a}[0] && !${p}[0])` : `(!${a}[0] && ${p}[0])`;
    }
    default:
      return null;
  }
}

/** An input the stimulus may set: a data input (not a clock or reset) of the top. */
function settable(e: FactExpr, c: Ctx, roles: Roles): PortInfo | null {
  const p = portOf(e, c);
  return p && roles.data.includes(p) && p.unpackedDims.length === 0 ? p : null;
}

/**
 * Statements that make `e` true by setting inputs only, or null. Conjunctions set each part; a
 * disjunction its first part that can be made true; `!x`, `x == K`, `$stable(x)`, `$onehot0(x)`
 * and `$onehot(x)` of an input each have one assignment that satisfies them.
 */
export function makeTrue(e: FactExpr, c: Ctx, roles: Roles): string[] | null {
  if (e.op === 'and') {
    const out: string[] = [];
    for (const a of e.args) {
      const s = makeTrue(a, c, roles);
      if (!s) return null;
      out.push(...s);
    }
    return out;
  }
  if (e.op === 'or') {
    for (const a of e.args) {
      const s = makeTrue(a, c, roles);
      if (s) return s;
    }
    return null;
  }
  const p = settable(e, c, roles);
  if (p) return p.width === 1 ? [`${p.name} = 1'b1;`] : null;
  if (isNot(e)) {
    const q = settable(e.args[0], c, roles);
    return q ? [`${q.name} = '0;`] : null;
  }
  if (e.op === 'eq' || e.op === 'ne') {
    const [l, r] = e.args;
    const q = settable(l, c, roles) ?? settable(r, c, roles);
    const other = settable(l, c, roles) ? r : l;
    const k = other.op === 'const' ? other.value : null;
    if (!q || k === null) return null;
    return e.op === 'eq' ? [`${q.name} = ${k};`] : [`if (${q.name} == ${k}) ${q.name} = ${q.name} + 1'b1;`];
  }
  if (e.op === 'call') {
    const q = e.args[0] ? settable(e.args[0], c, roles) : null;
    if (!q) return null;
    if (e.name === '$stable') {
      const p = pastOf(e.args[0], c);
      return p ? [`${q.name} = ${p};`] : null;
    }
    if (e.name === '$onehot0') return [`${q.name} = ${q.name} & (~${q.name} + 1'b1);`];
    if (e.name === '$onehot') return [`${q.name} = (${q.name} == '0) ? 1 : ${q.name} & (~${q.name} + 1'b1);`];
  }
  return null;
}

/** `!x`, or `~x` of one bit (the same thing): the forms a negation takes in a property. */
function isNot(e: FactExpr): e is { op: 'not' | 'bitnot'; args: FactExpr[] } {
  if (e.op === 'not') return true;
  if (e.op !== 'bitnot') return false;
  const a = e.args[0];
  return a.op === 'id' && a.width === 1;
}

/** Conjunctions of `e` (negated when `neg`), each a list of parts: at most 8, or null. */
function dnf(e: FactExpr, neg: boolean): FactExpr[][] | null {
  if (isNot(e)) return dnf(e.args[0], !neg);
  if (e.op === 'and' || e.op === 'or') {
    const conj = (e.op === 'and') !== neg;
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
      if (rest.some((r) => r === null)) return null;
      const cond = [...(rest as string[]), render(conj[i], c)!].join(' && ');
      out.push(`if (${cond}) begin ${fix.join(' ')} end`);
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
  const inner = e.args[0];
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
  for (const [port, reg] of c.past) {
    const p = c.ports.get(port)!;
    out.push(`logic ${p.width > 1 ? `[${p.width - 1}:0] ` : ''}${reg} = '0;`);
    out.push(`always @(${c.clock.edge}edge ${c.clock.port}) ${reg} <= ${port};`);
  }
  return out;
}

/**
 * The rule for one assertion, or null when its structure gives none (the generator then learns
 * from the assertion's failures). `preferAvoid`: the obligation did not stop the failures, or the
 * consequent cannot be met by inputs: keep the antecedent from matching instead.
 */
export function propertyRule(a: FactAssertion, roles: Roles, index: number, preferAvoid = false): PropertyRule | null {
  if (a.action === 'cover') return null;
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
  if (oblige && render(cons, c) !== null) {
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
  assertions.forEach((a, i) => {
    const r = propertyRule(a, roles, i);
    if (r) out.push(r);
  });
  return out;
}
