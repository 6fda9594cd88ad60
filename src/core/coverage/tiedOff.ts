// Proofs about one module or one instance beyond 2-state simulation (twoState.ts): signals whose
// toggle points no simulation can cover. Signals never assigned, or assigned only at time 0; the
// high bits of a counter that never passes a bound; bits of a vector no assignment writes; and
// inputs an instantiation ties to a constant or leaves unconnected.
import { splitTop } from './brackets.js';
import type { DeclShape } from './combBits.js';
import { assignedInPlace, constSelect, declaredWidths, unpackedArrays, unsignedNames } from './declarations.js';
import { ranges, type Finding } from './finding.js';
import type { CoveragePoint } from './model.js';
import { maybeDriven, moduleLevel, writesOf, type ModuleFacts, type ModuleSource, type Write } from './moduleFacts.js';
import { evalConst, walk, type Tok } from './svStatements.js';

/**
 * Signals no assignment changes after time 0: never assigned at all (they keep their initial
 * value), or assigned only in `initial` blocks with no delay, event or wait inside (one change at
 * most, all at time 0); and the bits of a vector that no assignment writes when every assignment
 * writes constant bits of it (`ctrl[3:0] <= d;`: bits 7-4 are never written).
 */
export function tiedOffSignals(m: ModuleFacts, toks: Tok[], fromElsewhere: Set<string>, labelsOf: (name: string) => string[]): Finding[] {
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

/**
 * Inputs of an instance tied to a constant (or left unconnected) by its instantiation:
 * `sub u (.en(1'b1), .mode(MODE))`. Nothing inside may write an input, so its bits never move.
 */
export function tiedInputs(points: CoveragePoint[], modules: Map<string, ModuleSource | null>): Finding[] {
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
