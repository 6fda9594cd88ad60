// What a module's declarations say about its names, for the 2-state rules (twoState.ts): bit
// widths, unpacked arrays, which names are plain unsigned vectors; and writes the statement
// reader does not see: assignments in declarations and module-level text, and hierarchical ones
// from other modules. Also the bits a constant select writes.
import { itemEnd, splitTop } from './brackets.js';
import type { DeclShape } from './combBits.js';
import type { ModuleFacts } from './moduleFacts.js';
import { evalConst, type Tok } from './svStatements.js';

/** Bit widths from declarations (`logic [7:0] a, b;`, `integer i;`), evaluated where constant;
 * `shape` collects the names whose packed range is not `[w-1:0]`. */
export function declaredWidths(toks: Tok[], m: ModuleFacts, shape?: DeclShape): Map<string, number> {
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

/** Keywords that may stand before a name without declaring it: a name after one of these is not
 * a declarator. */
export const STATEMENT_KEYWORD =
  /^(?:begin|end|else|do|assign|deassign|force|release|always|always_comb|always_ff|always_latch|initial|final|forever|fork|join|join_any|join_none|return|default|posedge|negedge|edge|or|iff|unique|unique0|priority|if|case|casez|casex|endcase|while|repeat|for|foreach|wait|disable)$/;

/**
 * Names declared as unpacked arrays (`logic [11:0] rom [0:7];`, `int q [4]`): an identifier
 * after a type (an identifier or a packed range's `]`) followed by `[...]` and then the end of a
 * declarator. Found from the tokens alone, whatever the element type, so a memory is never read
 * as a packed vector.
 */
export function unpackedArrays(toks: Tok[]): Set<string> {
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
export function unsignedNames(toks: Tok[], m: ModuleFacts): Set<string> {
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
      const n = itemEnd(toks, j + 1, (x) => x.t === ',' || x.t === ';');
      if (toks[n]?.t !== ',' || /^(?:input|output|inout)$/.test(toks[n + 1]?.t ?? '')) break;
      j = n + 1;
    }
  }
  const signed = signedNames(toks, m);
  return new Set([...cand].filter((n) => !other.has(n) && !signed.has(n) && !m.constants.has(n)));
}

const ASSIGN_OP = /^(?:=|<=|\+=|-=|\*=|\/=|&=|\|=|\^=|<<=|>>=|\+\+|--)$/;

/** True when some occurrence of `name` outside the processes' statements this reader follows is
 * an assignment target (`wire x = a;`, `logic x = 1;`, `force x = ...`): a write rules must see. */
export function assignedInPlace(toks: Tok[], name: string): boolean {
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
export function hierarchicalTargets(toks: Tok[]): Set<string> {
  const out = new Set<string>();
  for (let k = 1; k < toks.length; k++)
    if (toks[k - 1].t === '.' && /^[A-Za-z_]/.test(toks[k].t) && k >= 2 && /^[A-Za-z_\]]/.test(toks[k - 2].t)) {
      let j = k + 1;
      while (toks[j]?.t === '[') j = toks.findIndex((x, n) => n > j && x.t === ']') + 1 || toks.length;
      if (ASSIGN_OP.test(toks[j]?.t ?? '') || toks[j]?.t === '.') out.add(toks[k].t);
    }
  return out;
}

/** The bits a constant select writes (`[3]`, `[7:4]`, `[2 +: 3]`), or null when not constant;
 * `env` gives the names' values (default: the module's fixed constants). */
export function constSelect(sel: Tok[], m: ModuleFacts, env: Map<string, bigint | null> = m.fixed): number[] | null {
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
