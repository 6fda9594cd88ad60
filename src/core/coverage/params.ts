// Parameter values of module instances, as elaborated: the module's defaults, the top's `-G`
// overrides, and a submodule's instantiation (`sub #(.P(0)) u_sub`), each evaluated in order
// (a later parameter or localparam may use an earlier one). A value this reader cannot work out
// (a function, a package constant, a string, a negative number) is null: unknown, never guessed.
// For the dead-under-the-parameters rule (twoState.ts).
import { closeOf, splitTop } from './brackets.js';
import { evalConst, parameterStatement, tokenize, type Tok } from './svStatements.js';

export interface ParamDecl {
  name: string;
  local: boolean;
  expr: Tok[];
  /** Bits of a `bit`/`logic` typed parameter (values are truncated to it); undefined: unbounded. */
  width?: number;
  line: number;
}

/** The parameters and localparams of a module body (tokens), in order. */
export function paramDecls(toks: Tok[]): ParamDecl[] {
  const out: ParamDecl[] = [];
  // With a `#( )` parameter list in the header, a `parameter` in the body is a localparam.
  let header = -1;
  if (toks[0]?.t === '#' && toks[1]?.t === '(') {
    const close = closeOf(toks, 1);
    if (close < toks.length) header = close;
  }
  const headerHasParams = header > 0 && toks.slice(0, header).some((x) => x.t === 'parameter' || x.t === '=');
  for (let k = 0; k < toks.length; k++) {
    const t = toks[k].t;
    if (t === 'function' || t === 'task') {
      const end = toks.findIndex((x, j) => j > k && x.t === `end${t}`);
      k = end < 0 ? toks.length : end;
      continue;
    }
    if (t !== 'parameter' && t !== 'localparam') continue;
    const { stmt, end: j } = parameterStatement(toks, k);
    // The type of the first declarator applies to the rest of the list.
    let width: number | undefined;
    let typed = false;
    for (const part of splitTop(stmt)) {
      const eq = part.findIndex((x) => x.t === '=');
      if (eq < 1) continue;
      const head = part.slice(0, eq - 1);
      if (head.length) {
        typed = true;
        width = undefined;
        if (head.some((x) => x.t === 'type' || x.t === 'real' || x.t === 'string' || x.t === 'signed')) width = -1;
        else if (head.some((x) => x.t === 'bit' || x.t === 'logic' || x.t === 'reg')) {
          const open = head.findIndex((x) => x.t === '[');
          if (open < 0) width = 1;
          else {
            const close = head.findIndex((x, n) => n > open && x.t === ']');
            const r = splitTop(head.slice(open + 1, close), ':');
            const hi = r.length === 2 ? evalConst(r[0]) : null;
            const lo = r.length === 2 ? evalConst(r[1]) : null;
            width = hi !== null && lo !== null && lo === 0n && hi >= 0n ? Number(hi) + 1 : -1;
          }
        }
      } else if (!typed) width = undefined;
      out.push({ name: part[eq - 1].t, local: t === 'localparam' || (headerHasParams && k > header), expr: part.slice(eq + 1), width, line: part[eq - 1].line });
    }
    k = j;
  }
  return out;
}

/** Where a parameter's value came from, for the reason's text. */
export type ParamOrigin = 'default' | 'override' | 'instance';

export interface ParamEnv {
  values: Map<string, bigint | null>;
  origin: Map<string, ParamOrigin>;
}

const fit = (v: bigint | null, width: number | undefined): bigint | null => {
  if (v === null || v < 0n || width === -1) return null;
  return width === undefined ? v : v & ((1n << BigInt(width)) - 1n);
};

/**
 * The values of a module's parameters: `base` holds names known beforehand (enum members,
 * localparams that depend on nothing), `overrides` the values set from outside by name (already
 * evaluated; null: set to something unknown).
 */
export function elaborate(decls: ParamDecl[], overrides: Map<string, bigint | null>, base: Map<string, bigint | null> = new Map()): ParamEnv {
  const values = new Map(base);
  const origin = new Map<string, ParamOrigin>();
  for (const d of decls) {
    if (!d.local && overrides.has(d.name)) {
      values.set(d.name, fit(overrides.get(d.name)!, d.width));
      origin.set(d.name, 'override');
    } else {
      values.set(d.name, fit(evalConst(d.expr, values), d.width));
      origin.set(d.name, 'default');
    }
  }
  return { values, origin };
}

/** A `-G NAME=value` value as a number (a string, a real or anything else: null). */
export function overrideValue(text: string): bigint | null {
  try {
    return evalConst(tokenize(text));
  } catch {
    return null;
  }
}

/**
 * The overrides an instantiation's `#( )` sets on `decls` (the instantiated module's), evaluated
 * with the instantiating module's values: named (`.P(expr)`) or positional (in the order of the
 * non-local parameters).
 */
export function instanceOverrides(params: Tok[], decls: ParamDecl[], parent: Map<string, bigint | null>): Map<string, bigint | null> {
  const out = new Map<string, bigint | null>();
  if (!params.length) return out;
  const parts = splitTop(params);
  const visible = decls.filter((d) => !d.local);
  parts.forEach((part, k) => {
    if (part[0]?.t === '.' && part[1] && part[2]?.t === '(' && part.at(-1)?.t === ')') {
      const inner = part.slice(3, -1);
      out.set(part[1].t, inner.length ? evalConst(inner, parent) : null);
    } else if (part.length && visible[k]) out.set(visible[k].name, evalConst(part, parent));
    else if (part.length) out.set(`\0${k}`, null);
  });
  return out;
}

/**
 * The value of a condition made of constants (`P`, `!P`, `P == 2`, `A && B > 1`...), or null
 * when any part is unknown or could be negative (widths and signedness are not worked out).
 */
export function condValue(toks: Tok[], values: Map<string, bigint | null>): bigint | null {
  const ts = toks;
  const unwrap = (x: Tok[]): Tok[] => {
    // Unwrapped unless the first `(` closes before the last token.
    if (x[0]?.t === '(' && x.at(-1)?.t === ')') return closeOf(x, 0) < x.length - 1 ? x : unwrap(x.slice(1, -1));
    return x;
  };
  const top = (x: Tok[], ops: string[]): { left: Tok[]; op: string; right: Tok[] } | undefined => {
    // The last operator of these at depth 0 (left-associative).
    let depth = 0;
    for (let k = x.length - 1; k > 0; k--) {
      const t = x[k].t;
      if (')]}'.includes(t)) depth++;
      else if ('([{'.includes(t)) depth--;
      else if (depth === 0 && ops.includes(t)) return { left: x.slice(0, k), op: t, right: x.slice(k + 1) };
    }
    return undefined;
  };
  const ev = (x0: Tok[]): bigint | null => {
    const x = unwrap(x0);
    if (!x.length || x.some((t) => t.t === '?' || t.t === "'" || t.t === '$signed')) return null;
    for (const ops of [['||'], ['&&'], ['==', '!=', '===', '!=='], ['<', '<=', '>', '>=']]) {
      const s = top(x, ops);
      if (!s) continue;
      const a = ev(s.left);
      const b = ev(s.right);
      if (s.op === '||') return a === 1n || b === 1n || (a !== null && a !== 0n) || (b !== null && b !== 0n) ? 1n : a === null || b === null ? null : 0n;
      if (s.op === '&&') return a === 0n || b === 0n ? 0n : a === null || b === null ? null : 1n;
      if (a === null || b === null) return null;
      const r = { '==': a === b, '===': a === b, '!=': a !== b, '!==': a !== b, '<': a < b, '<=': a <= b, '>': a > b, '>=': a >= b }[s.op]!;
      return r ? 1n : 0n;
    }
    if (x[0].t === '!') {
      const v = ev(x.slice(1));
      return v === null ? null : v === 0n ? 1n : 0n;
    }
    const v = evalConst(x, values);
    return v === null || v < 0n || x.some((t) => t.t === '~' || t.t === '-') ? null : v;
  };
  return ev(ts);
}
