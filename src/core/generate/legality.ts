// Legal stimulus: when the design's own assertions fire (immediate or concurrent assertions,
// `unique`/`priority` violations, `if (...) $error` in a design file), find the input condition
// that preceded each one from its source line and stop producing it. The antecedent is read from
// the design (`assert (!(push && full))`, `assert property (@(posedge clk) push |-> !full)`,
// `if (pop && empty) $error(...)`, `unique case (sel)`), its signals mapped to the DUT's inputs and
// status outputs, and the testbench gates the input on the status (`if (full) push = 1'b0;`) in
// every step. What cannot be understood falls back to something sound: the inputs the statement
// names are held at zero. Nothing here knows a design by name.
import { existsSync, readFileSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import type { DesignInfo, PortInfo } from '../design/types.js';
import type { SimResult } from '../sim/result.js';
import { significant, tokenize, type Token } from '../design/svTokens.js';
import { svLiteralValue } from '../design/svLiteral.js';
import type { Roles } from './roles.js';
import type { FactAssertion } from '../design/facts.js';
import { propertyRule } from './propertyRules.js';
import { literal } from './values.js';

/** One DUT assertion site that failed in a run. */
export interface DutFailure {
  file: string;
  line: number;
  kind: string;
  message: string;
  count: number;
}

/**
 * The DUT assertion failures of a run: `dutAssertions` when the simulator reports them, else the
 * run-stage error diagnostics attributed to a design file (one entry per site).
 */
export function dutFailures(r: SimResult | null | undefined): DutFailure[] {
  if (!r) return [];
  if (r.dutAssertions?.length)
    return r.dutAssertions.map((a) => ({ file: a.file, line: a.line, kind: a.kind, message: a.message, count: a.count }));
  const sites = new Map<string, DutFailure>();
  for (const d of r.diagnostics ?? []) {
    if (d.origin !== 'dut' || d.stage !== 'run' || d.severity !== 'error' || d.code?.startsWith('CHORUS-')) continue;
    const key = `${d.file}:${d.line}`;
    const s = sites.get(key);
    if (s) s.count++;
    else sites.set(key, { file: d.file, line: d.line, kind: d.code === 'ASSERT' ? 'assertion' : 'error', message: d.message, count: 1 });
  }
  return [...sites.values()];
}

/** How many DUT assertion failures a run had (0: legal stimulus). */
export function illegalCount(r: SimResult | null | undefined): number {
  return dutFailures(r).reduce((a, f) => a + Math.max(1, f.count), 0);
}

/** What the testbench does against one failing site, applied in every step before the edge. */
export interface LegalityRule {
  /** `file:line` of the assertion. */
  site: string;
  /** `oblige`: the inputs meet the property's consequent (propertyRules.ts); `gate`: understood,
   * the input is gated on the condition; `restrict`: a case selector input takes only its case
   * items; `freeze`: not understood, the inputs named there are held at 0. */
  level: 'oblige' | 'gate' | 'restrict' | 'freeze';
  /** SystemVerilog statements for step(). */
  statements: string[];
  /** Module-level declarations the statements need (registers that remember an antecedent or a
   * past value at the property's clock). */
  declarations?: string[];
  /** In words, for the header comment. */
  why: string;
}

// ---------------------------------------------------------------- expressions

type Ex =
  | { k: 'id'; name: string }
  | { k: 'num'; value: bigint; text: string }
  | { k: 'not'; e: Ex }
  | { k: 'and'; a: Ex; b: Ex }
  | { k: 'or'; a: Ex; b: Ex }
  | { k: 'cmp'; op: '==' | '!='; a: Ex; b: Ex }
  | { k: 'opaque' };

const MULTI = ['|->', '|=>', '===', '!==', '&&', '||', '==', '!=', '<=', '>=', '->', '##'];

/** Single-character operator tokens merged into the operators SystemVerilog writes. */
function mergeOps(toks: Token[]): Token[] {
  const out: Token[] = [];
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i];
    if (t.kind !== 'op') {
      out.push(t);
      continue;
    }
    let merged = t;
    for (const m of MULTI) {
      if (m.length <= merged.value.length) continue;
      let ok = true;
      let end = t.end;
      for (let j = 1; j < m.length; j++) {
        const u = toks[i + j];
        if (!u || u.kind !== 'op' || u.value !== m[j] || u.start !== end) {
          ok = false;
          break;
        }
        end = u.end;
      }
      if (ok && t.value === m[0]) merged = { kind: 'op', start: t.start, end, value: m };
    }
    out.push(merged);
    i += merged.value.length - 1;
  }
  return out;
}

class Parser {
  i = 0;
  constructor(private t: Token[]) {}
  peek(): Token | undefined {
    return this.t[this.i];
  }
  isOp(v: string): boolean {
    const p = this.peek();
    return p?.kind === 'op' && p.value === v;
  }
  parse(): Ex {
    const e = this.or();
    return this.i === this.t.length ? e : { k: 'opaque' };
  }
  or(): Ex {
    return this.chain('||', 'or', () => this.and());
  }
  and(): Ex {
    return this.chain('&&', 'and', () => this.cmp());
  }
  /** Operands read by `operand`, joined by `op` to the left: a || b || c is (a || b) || c. */
  chain(op: '||' | '&&', k: 'or' | 'and', operand: () => Ex): Ex {
    let a = operand();
    while (this.isOp(op)) {
      this.i++;
      a = { k, a, b: operand() };
    }
    return a;
  }
  cmp(): Ex {
    const a = this.unary();
    for (const op of ['==', '!=', '===', '!==']) {
      if (this.isOp(op)) {
        this.i++;
        const b = this.unary();
        return { k: 'cmp', op: op.startsWith('!') ? '!=' : '==', a, b };
      }
    }
    // Any other binary operator: the expression is not a plain condition.
    const p = this.peek();
    if (p?.kind === 'op' && !['||', '&&', ')', ']', ',', ':', '|->', '|=>'].includes(p.value)) {
      this.skipRest();
      return { k: 'opaque' };
    }
    return a;
  }
  skipRest(): void {
    let depth = 0;
    while (this.i < this.t.length) {
      const v = this.t[this.i].value;
      if (this.t[this.i].kind === 'op' && (v === '(' || v === '[' || v === '{')) depth++;
      if (this.t[this.i].kind === 'op' && (v === ')' || v === ']' || v === '}')) {
        if (depth === 0) return;
        depth--;
      }
      if (depth === 0 && this.t[this.i].kind === 'op' && (v === '&&' || v === '||')) return;
      this.i++;
    }
  }
  unary(): Ex {
    if (this.isOp('!') || this.isOp('~')) {
      this.i++;
      return { k: 'not', e: this.unary() };
    }
    const p = this.peek();
    if (!p) return { k: 'opaque' };
    if (p.kind === 'op' && p.value === '(') {
      this.i++;
      const e = this.or();
      if (this.isOp(')')) this.i++;
      else this.skipRest();
      return e;
    }
    if (p.kind === 'id') {
      this.i++;
      if (this.isOp('[') || this.isOp('.') || this.isOp('(')) {
        this.skipRest();
        return { k: 'opaque' };
      }
      return { k: 'id', name: p.value };
    }
    if (p.kind === 'number') {
      this.i++;
      const v = svLiteralValue(p.value);
      return v === null ? { k: 'opaque' } : { k: 'num', value: v, text: p.value };
    }
    this.i++;
    this.skipRest();
    return { k: 'opaque' };
  }
}

/** A condition literal: a signal true/false, or a signal equal/unequal to a constant. */
interface Lit {
  name: string;
  /** Boolean literal: true when negated. */
  neg: boolean;
  /** For a comparison: the constant and whether it is `!=`. */
  value?: bigint;
}
type Conj = Array<Lit | null>; // null: a literal that could not be understood

/** Disjunctive normal form of `e` (or of its negation), at most 8 conjunctions. */
function dnf(e: Ex, negate: boolean): Conj[] | null {
  switch (e.k) {
    case 'not':
      return dnf(e.e, !negate);
    case 'id':
      return [[{ name: e.name, neg: negate }]];
    case 'num':
      return (e.value !== 0n) !== negate ? [[]] : [];
    case 'cmp': {
      const [id, num] = e.a.k === 'id' && e.b.k === 'num' ? [e.a, e.b] : e.b.k === 'id' && e.a.k === 'num' ? [e.b, e.a] : [null, null];
      if (!id || !num) return [[null]];
      const eq = (e.op === '==') !== negate;
      // 1-bit flags compared with 0/1 are boolean literals.
      if (num.value === 0n || num.value === 1n) return [[{ name: id.name, neg: eq === (num.value === 0n) }]];
      return [[{ name: id.name, neg: !eq, value: num.value }]];
    }
    case 'and':
    case 'or': {
      const isAnd = (e.k === 'and') !== negate;
      const a = dnf(e.a, negate);
      const b = dnf(e.b, negate);
      if (!a || !b) return null;
      if (!isAnd) return a.length + b.length > 8 ? null : [...a, ...b];
      if (a.length * b.length > 8) return null;
      return a.flatMap((x) => b.map((y) => [...x, ...y]));
    }
    default:
      return [[null]];
  }
}

// ---------------------------------------------------------------- source statements

function readSource(file: string, info: DesignInfo): string | null {
  const cands = [
    file,
    ...info.files.filter((f) => basename(f) === basename(file)),
    ...info.modules.map((m) => m.file).filter((f) => basename(f) === basename(file)),
  ];
  for (const c of cands) {
    try {
      const p = resolve(c);
      if (existsSync(p)) return readFileSync(p, 'utf8');
    } catch {
      // try the next
    }
  }
  return null;
}

/** The tokens inside the parentheses that open at `open` (exclusive), and the index after `)`. */
function parenBody(t: Token[], open: number): { body: Token[]; next: number } | null {
  if (t[open]?.value !== '(') return null;
  let depth = 0;
  for (let i = open; i < t.length; i++) {
    if (t[i].kind !== 'op') continue;
    if (t[i].value === '(') depth++;
    else if (t[i].value === ')' && --depth === 0) return { body: t.slice(open + 1, i), next: i + 1 };
  }
  return null;
}

const KEYS = new Set(['assert', 'assume', 'if', 'case', 'casez', 'casex']);

interface Statement {
  kind: 'assert' | 'if' | 'case';
  tokens: Token[];
  /** For a case: the selector and the item constants. */
  items?: bigint[];
}

/** The statement a failure's line belongs to: on the line itself, else the nearest before it. */
function statementAt(src: string, line: number): Statement | null {
  const t = mergeOps(significant(tokenize(src)));
  let lineStart = 0;
  for (let l = 1; l < line && lineStart >= 0; l++) lineStart = src.indexOf('\n', lineStart) + 1;
  if (line > 1 && lineStart <= 0) return null;
  const lineEnd = src.indexOf('\n', lineStart) < 0 ? src.length : src.indexOf('\n', lineStart);
  const first = t.findIndex((x) => x.start >= lineStart);
  if (first < 0) return null;
  // On the line itself an assertion wins over the `if (rst_n)` guarding it, a case over an `if`.
  let at = -1;
  const rank = (v: string): number => (v === 'assert' || v === 'assume' ? 0 : v === 'if' ? 2 : 1);
  for (let i = first; i < t.length && t[i].start < lineEnd; i++)
    if (t[i].kind === 'id' && KEYS.has(t[i].value) && (at < 0 || rank(t[i].value) < rank(t[at].value))) at = i;
  // `default: $error(...)` (or an assertion there): the selector took a value no item names, so
  // the enclosing case is the statement.
  let dflt = -1;
  for (let i = first; i < t.length && t[i].start < lineEnd; i++)
    if (t[i].kind === 'id' && t[i].value === 'default' && t[i + 1]?.value === ':') dflt = i;
  for (let i = dflt - 1, depth = 0; dflt >= 0 && i >= 0 && i >= dflt - 4000; i--) {
    const v = t[i].kind === 'id' ? t[i].value : '';
    if (v === 'endcase') depth++;
    else if (v === 'case' || v === 'casez' || v === 'casex') {
      if (depth === 0) {
        at = i;
        break;
      }
      depth--;
    }
  }
  if (at < 0)
    for (let i = first - 1; i >= 0 && i >= first - 80; i--) {
      if (t[i].kind === 'op' && t[i].value === ';') break;
      if (t[i].kind === 'id' && KEYS.has(t[i].value)) {
        at = i;
        break;
      }
    }
  if (at < 0) return null;
  const key = t[at].value;
  if (key === 'case' || key === 'casez' || key === 'casex') {
    const h = parenBody(t, at + 1);
    if (!h) return null;
    const items: bigint[] = [];
    let depth = 0;
    for (let i = h.next; i < t.length && i < h.next + 4000; i++) {
      const x = t[i];
      if (x.kind === 'id' && (x.value === 'case' || x.value === 'casez' || x.value === 'casex')) depth++;
      if (x.kind === 'id' && x.value === 'endcase') {
        if (depth === 0) break;
        depth--;
      }
      if (depth === 0 && x.kind === 'number' && t[i + 1]?.kind === 'op' && (t[i + 1].value === ':' || t[i + 1].value === ',')) {
        const prev = t[i - 1];
        if (i === h.next || (prev.kind === 'op' && [';', ','].includes(prev.value)) || (prev.kind === 'id' && prev.value === 'end')) {
          const v = svLiteralValue(x.value);
          if (v !== null) items.push(v);
        }
      }
    }
    return { kind: 'case', tokens: h.body, items };
  }
  let j = at + 1;
  if (key !== 'if') while (t[j]?.kind === 'id' && ['property', 'final'].includes(t[j].value)) j++;
  if (t[j]?.kind === 'op' && t[j].value === '#') j += 2;
  const b = parenBody(t, j);
  if (!b) return null;
  return { kind: key === 'if' ? 'if' : 'assert', tokens: b.body };
}

/** The violation condition of an assertion body, or null (`|=>`, sequences: not understood). */
function violation(st: Statement): Conj[] | null {
  let toks = st.tokens;
  // Clocking event and disable condition of a concurrent assertion.
  if (toks[0]?.value === '@') {
    const ev = toks[1]?.value === '(' ? parenBody(toks, 1) : null;
    toks = ev ? toks.slice(ev.next) : toks.slice(2);
  }
  if (toks[0]?.value === 'disable' && toks[1]?.value === 'iff') {
    const d = parenBody(toks, 2);
    if (!d) return null;
    toks = toks.slice(d.next);
  }
  if (toks.some((x) => x.kind === 'op' && (x.value === '|=>' || x.value === '##'))) return null;
  if (st.kind === 'if') return dnf(new Parser(toks).parse(), false);
  const imp = toks.findIndex((x) => x.kind === 'op' && x.value === '|->');
  if (imp >= 0) {
    const a = new Parser(toks.slice(0, imp)).parse();
    const c = new Parser(toks.slice(imp + 1)).parse();
    return dnf({ k: 'and', a, b: { k: 'not', e: c } }, false);
  }
  return dnf(new Parser(toks).parse(), true);
}

// ---------------------------------------------------------------- mapping to ports

const bare = (n: string): string =>
  n
    .toLowerCase()
    .replace(/^(i|o|in|out)_/, '')
    .replace(/_(i|o|in|out)$/, '');

function portFor(name: string, ports: PortInfo[]): PortInfo | undefined {
  return ports.find((p) => p.name === name) ?? ports.find((p) => bare(p.name) === bare(name));
}

function litText(l: Lit, p: PortInfo): string {
  if (l.value !== undefined) return `(${p.name} ${l.neg ? '!=' : '=='} ${literal(p.width, l.value)})`;
  return p.width === 1 ? `${l.neg ? '!' : ''}${p.name}` : `(${p.name} ${l.neg ? '==' : '!='} '0)`;
}

/** Input ports a statement names (for the fallback). */
function namedInputs(st: Statement, roles: Roles): PortInfo[] {
  const out = new Set<PortInfo>();
  for (const x of st.tokens)
    if (x.kind === 'id') {
      const p = portFor(x.value, roles.data);
      if (p && p.unpackedDims.length === 0) out.add(p);
    }
  return [...out];
}

function freezeRule(site: string, inputs: PortInfo[], why: string): LegalityRule {
  return {
    site,
    level: 'freeze',
    statements: inputs.map((p) => `${p.name} = '0;`),
    why: `${why}: ${inputs.length ? `${inputs.map((p) => p.name).join(', ')} held at 0` : 'no input named there to hold'}`,
  };
}

/**
 * The rule for one failing site. `prevLevel`: the level of an earlier rule for it that did not stop
 * the failures: the next level is taken (at last the inputs it names held at 0).
 */
export function ruleFor(f: DutFailure, info: DesignInfo, roles: Roles, prevLevel?: LegalityRule['level']): LegalityRule | null {
  const site = `${basename(f.file)}:${f.line}`;
  // The property as slang elaborated it, where the front end has it: its structure decides. An
  // obligation that did not stop the failures gives way to keeping the antecedent from matching;
  // what still fires holds the inputs the property names at zero.
  const fact = factAt(f, info);
  if (fact) {
    const avoid = prevLevel === undefined || prevLevel === 'oblige' ? propertyRule(fact.a, roles, fact.i, true) : null;
    if (avoid?.level === 'gate') return avoid;
    const named = roles.data.filter((p) => p.unpackedDims.length === 0 && fact.a.signals.some((x) => x.top === p.name));
    return freezeRule(site, named, prevLevel ? `the rule for ${site} did not stop it` : `the property at ${site} gives no input condition`);
  }
  const escalate = prevLevel !== undefined;
  const src = readSource(f.file, info);
  const st = src === null ? null : statementAt(src, f.line);
  if (!st) return escalate ? freezeRule(site, [], `the assertion at ${site} could not be read`) : null;
  const inputs = roles.data.filter((p) => p.unpackedDims.length === 0 && p.kind !== 'enum');
  const ports = [...inputs, ...roles.outputs.filter((p) => p.unpackedDims.length === 0), ...roles.resets.map((r) => r.port)];
  if (escalate) return freezeRule(site, namedInputs(st, roles), `the rule for ${site} did not stop it`);
  if (st.kind === 'case') {
    const sel = st.tokens.length === 1 && st.tokens[0].kind === 'id' ? portFor(st.tokens[0].value, inputs) : undefined;
    const items = [...new Set(st.items ?? [])].filter((v) => sel && v < 1n << BigInt(sel.width));
    if (sel && items.length) {
      const set = items.map((v) => literal(sel.width, v)).join(', ');
      return {
        site,
        level: 'restrict',
        statements: [`if (!(${sel.name} inside {${set}})) ${sel.name} = ${literal(sel.width, items[0])};`],
        why: `${f.kind} case at ${site}: ${sel.name} takes only its case items (${set})`,
      };
    }
    return freezeRule(site, namedInputs(st, roles), `${f.kind} case at ${site} on an internal selector`);
  }
  const conjs = violation(st);
  const stmts: string[] = [];
  const said: string[] = [];
  for (const c of conjs ?? []) {
    if (c.some((l) => l === null)) {
      stmts.length = 0;
      break;
    }
    const lits = (c as Lit[]).map((l) => ({ l, p: portFor(l.name, ports) }));
    if (lits.some((x) => !x.p)) {
      stmts.length = 0;
      break;
    }
    // The input to gate: a boolean data input, preferably one the condition needs high.
    const cands = lits.filter((x) => x.l.value === undefined && x.p!.width === 1 && inputs.includes(x.p!));
    const target = cands.find((x) => !x.l.neg) ?? cands[0];
    if (!target) {
      stmts.length = 0;
      break;
    }
    const rest = lits.filter((x) => x !== target).map((x) => litText(x.l, x.p!));
    const set = `${target.p!.name} = 1'b${target.l.neg ? 1 : 0};`;
    stmts.push(rest.length ? `if (${rest.join(' && ')}) ${set}` : set);
    said.push(`${target.p!.name} ${target.l.neg ? 'held high' : 'dropped'}${rest.length ? ` while ${rest.join(' && ')}` : ''}`);
  }
  if (conjs && conjs.length && stmts.length)
    return { site, level: 'gate', statements: stmts, why: `assertion at ${site} ("${f.message.slice(0, 60)}"): ${said.join('; ')}` };
  return freezeRule(site, namedInputs(st, roles), `the condition of the assertion at ${site} is not understood`);
}

/** How many lines an assertion macro's arguments may span: a failure inside a macro reports the
 * line its expansion ends on (`__LINE__`), the front end the line the macro call starts on. */
const MACRO_SPAN = 12;

/** The design's assertion (the front end's facts) a failure site is, with its index: the one that
 * starts on the failing line, else the assertion macro call the line is inside of. */
function factAt(f: DutFailure, info: DesignInfo): { a: FactAssertion; i: number } | null {
  const all = info.facts?.assertions ?? [];
  const sameFile = (a: FactAssertion): boolean => a.file === f.file || basename(a.file) === basename(f.file);
  const i = all.findIndex((a) => a.line === f.line && sameFile(a));
  if (i >= 0) return { a: all[i], i };
  let best = -1;
  all.forEach((a, k) => {
    if (!sameFile(a) || a.line > f.line) return;
    if (best < 0 || a.line > all[best].line) best = k;
  });
  const a = best < 0 ? null : all[best];
  return a && a.fromMacro && f.line - a.line <= MACRO_SPAN ? { a, i: best } : null;
}

/** Rules for a run's failures, given the rules already in force (ineffective ones escalate). */
export function legalityRules(
  result: SimResult,
  info: DesignInfo,
  roles: Roles,
  prev: LegalityRule[] = [],
  escalate = true,
): LegalityRule[] {
  const out = [...prev];
  for (const f of dutFailures(result)) {
    const site = `${basename(f.file)}:${f.line}`;
    const k = out.findIndex((r) => r.site === site);
    if (k >= 0) {
      if (escalate && out[k].level !== 'freeze') {
        const esc = ruleFor(f, info, roles, out[k].level);
        if (esc)
          out[k] = {
            ...esc,
            statements: [...out[k].statements, ...esc.statements],
            declarations: [...(out[k].declarations ?? []), ...(esc.declarations ?? [])],
          };
      }
      continue;
    }
    const r = ruleFor(f, info, roles);
    if (r) out.push(r);
  }
  return out;
}
