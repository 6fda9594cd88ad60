// One pass of an always_comb / always @* block, bit by bit, for the 2-state rule on constant bits
// of combinational blocks (twoState.ts): each bit is 0, 1, or unknown (2). Inputs and every other
// signal are unknown, loops with constant bounds are unrolled, both arms of an unknown condition
// are merged. A bit the pass always leaves at the same value is constant: toggle coverage samples
// between passes, so that bit never toggles under 2-state simulation. Anything this pass does not
// follow throws Unsupported, and the caller makes no claim about that block.
import { parseSvLiteral } from '../design/svLiteral.js';
import { nextTopLevel, splitTop } from './brackets.js';
import { assignmentOf, type Stmt, type Tok } from './svStatements.js';

/** What a module's declarations say about names: the values of the fixed ones, and which are constants. */
export interface ConstantNames {
  /** localparams and enum members (and parameters at their defaults) with their value, null when unknown. */
  fixed: Map<string, bigint | null>;
  /** Every constant name, parameters included. */
  constants: Set<string>;
}

type Bit = 0 | 1 | 2;
interface AV {
  w: number;
  /** LSB first. */
  b: Bit[];
}
export class Unsupported extends Error {}

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

/** Names declared as unpacked arrays, and packed vectors whose range is not `[w-1:0]`. */
export interface DeclShape {
  memories: Set<string>;
  offset: Set<string>;
}

/** System tasks that only print or end the run: they write no variable of the design. */
export const PRINT_TASK = /^\$(?:display|displayb|displayh|displayo|write|writeb|writeh|writeo|strobe|strobeb|strobeh|strobeo|monitor|monitoron|monitoroff|info|warning|error|fatal|finish|stop)$/;

export interface CombEnv {
  vars: Map<string, AV>;
}

export class CombEval {
  steps = 0;
  constructor(
    readonly m: ConstantNames,
    readonly widthOf: (name: string) => number | undefined,
    readonly declWidth: Map<string, number>,
    /** What the declarations say beyond widths: unpacked arrays (memories) and packed ranges
     * that are not `[w-1:0]`. A memory element read through any index is unknown (this pass keeps
     * no memory contents: a ROM filled in `initial` holds different words), and a select on a
     * vector whose bits are not numbered from 0 is not followed. */
    readonly shape: DeclShape = { memories: new Set(), offset: new Set() },
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
    const lit = parseSvLiteral(t);
    if (lit?.form === 'fill') {
      // `'0` is 0 at any width. `'1` is all ones of the context's width, which this pass does not
      // work out inside an expression (an operand of a shift or a comparison is wider than the
      // target): not followed there; `assign` reads a whole right-hand side `'1` itself.
      if (lit.value !== 0n) throw new Unsupported(t);
      return fromBig(0n, Math.max(1, ctx));
    }
    // Sized: its own width; unsized (`'hF`, `42`): 32 bits. x/z bits make the whole value unknown.
    if (lit) return lit.value === undefined ? unknown(lit.width ?? 32) : fromBig(lit.value, lit.width ?? 32);
    if (/^[A-Za-z_]/.test(t)) {
      if (ts[p.i]?.t === '(' || ts[p.i]?.t === '::' || ts[p.i]?.t === '.' || ts[p.i]?.t === "'") throw new Unsupported(t);
      if (this.shape.memories.has(t)) {
        // A memory element: unknown whatever the index (no contents are tracked), one element wide.
        if (ts[p.i]?.t !== '[') throw new Unsupported(t);
        p.i++;
        this.select(ts, p, env); // the index is read (and consumed); its value does not matter
        const w = this.declWidth.get(t);
        if (!w || w > MAX_W || ts[p.i]?.t === '[') throw new Unsupported(t);
        return unknown(w);
      }
      if (this.shape.offset.has(t) && ts[p.i]?.t === '[') throw new Unsupported(t);
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
    const end = nextTopLevel(ts, p.i, (x) => x.t === ']');
    const inner = ts.slice(p.i, end);
    p.i = end + 1;
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
      else if (PRINT_TASK.test(s.toks[0].t)) return; // $display and the like change nothing
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
    if (this.shape.memories.has(name) || (this.shape.offset.has(name) && a.lhs.length > 1)) throw new Unsupported(name);
    const cur = env.vars.get(name) ?? unknown(this.width(name));
    let rhs: Tok[] = a.rhs;
    const fill = a.rhs.length === 1 && (a.op === '=' || a.op === '<=') ? parseSvLiteral(a.rhs[0].t) : undefined;
    if (fill?.form === 'fill' && fill.value !== 0n) {
      // `x = '1` (or 'x, 'z): every bit of the target, all ones (unknown for x and z).
      written.add(name);
      if (a.lhs.length !== 1) throw new Unsupported('lhs');
      env.vars.set(name, fill.value === 1n ? { w: cur.w, b: new Array<Bit>(cur.w).fill(1) } : unknown(cur.w));
      return;
    }
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

