// The rule of twoState.ts on array slots no write reaches: every write to an array indexes
// constants, or genvars of the generate-for loops around it unrolled under constant bounds, and
// the slots outside all of them never change (their toggle points are constant). Anything this
// reader cannot bound (a variable index, a task, a write it does not see) makes no claim.
import { closeOf, splitTop } from './brackets.js';
import { assignedInPlace, constSelect, STATEMENT_KEYWORD, unpackedArrays } from './declarations.js';
import { ranges, type Finding } from './finding.js';
import { maybeDriven, moduleLevel, writesOf, type ModuleFacts, type Write } from './moduleFacts.js';
import { condValue } from './params.js';
import { evalConst, parameterStatement, walk, type Tok } from './svStatements.js';

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
    const close = closeOf(toks, k + 1);
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
    const close = closeOf(toks, at + 1);
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
export function unwrittenSlots(m: ModuleFacts, toks: Tok[], fromElsewhere: Set<string>, labelsOf: (name: string) => string[]): Finding[] {
  const out: Finding[] = [];
  if (!m.complete || m.implicitConnect || writesThroughArguments(toks)) return out;
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
    const reach = slotsWritten({ m, toks, pos, loops, env }, name, ws);
    if (!reach) continue;
    const { written, genvars } = reach;
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

/** A function with an output, inout or ref argument, or a system function that fills its
 * arguments, may write any array it is given from inside an expression: none is judged. */
function writesThroughArguments(toks: Tok[]): boolean {
  if (toks.some((x) => /^\$(?:[fs]scanf|fread|fgets|readmem[hb]|value\$plusargs|cast)$/.test(x.t))) return true;
  for (let k = 0; k < toks.length; k++)
    if (toks[k].t === 'function') {
      const end = toks.findIndex((x, j) => j > k && x.t === 'endfunction');
      if (toks.slice(k, end < 0 ? undefined : end).some((x) => /^(?:output|inout|ref)$/.test(x.t))) return true;
    }
  return false;
}

/** What the rule reads of a module once for all its arrays: each token's index, the generate
 * loops, and the constants an index may use (loopEnv). */
interface SlotScope {
  m: ModuleFacts;
  toks: Tok[];
  pos: Map<Tok, number>;
  loops: GenLoop[];
  env: Map<string, bigint | null>;
}

/** The slots the writes to an array reach, and the genvars unrolled to find them. */
interface SlotsWritten {
  written: Set<number>;
  genvars: Set<string>;
}

/** The slots every write of `ws` reaches; null when some write's index is not constant. */
function slotsWritten(scope: SlotScope, name: string, ws: Write[]): SlotsWritten | null {
  const into: SlotsWritten = { written: new Set(), genvars: new Set() };
  for (const w of ws) if (!writeSlots(scope, name, w, into)) return null;
  return into;
}

/** Adds the slots one write reaches, under every binding of the generate loops around it, to
 * `into`; false when its index is not constant under some binding, or needs too many of them. */
function writeSlots(scope: SlotScope, name: string, w: Write, into: SlotsWritten): boolean {
  const { m, toks, pos, loops, env } = scope;
  const at = pos.get(w.lhs![0]);
  if (at === undefined) return false;
  // The generate loops around the write, outermost first.
  const around = loops.filter((l) => at > l.start && at <= l.end).sort((a, b) => a.start - b.start);
  const sels = indexSelects(w.lhs!, name);
  if (!sels || mayRebind(w, sels, env)) return false;
  // Every binding of the loops' genvars, each write's slots under it.
  let bindings = 0;
  const visit = (depth: number, local: Map<string, bigint | null>): boolean => {
    if (depth === around.length) {
      if (++bindings > MAX_BINDINGS) return false;
      for (const s of sels) {
        const slots = constSelect(s, m, local);
        if (!slots) return false;
        for (const x of slots) into.written.add(x);
      }
      return true;
    }
    const u = unrollLoop(around[depth], local);
    if (!u || redeclared(toks, around[depth], u.name)) return false;
    into.genvars.add(u.name);
    for (const v of u.values) if (!visit(depth + 1, new Map(local).set(u.name, v))) return false;
    return true;
  };
  return visit(0, env);
}

/** The select after each occurrence of the array in an assignment target: each must be
 * indexed. Null when one is not, or when there is none. */
function indexSelects(lhs: Tok[], name: string): Tok[][] | null {
  const sels: Tok[][] = [];
  for (let k = 0; k < lhs.length; k++) {
    if (lhs[k].t !== name || lhs[k - 1]?.t === '.') continue;
    if (lhs[k + 1]?.t !== '[') return null;
    sels.push(lhs.slice(k + 1, closeOf(lhs, k + 1) + 1));
  }
  return sels.length ? sels : null;
}

/** A procedural loop or a declaration in the process may rebind a name a genvar has: true when
 * the selects use a name that is not a constant and the write's process may rebind it. */
function mayRebind(w: Write, sels: Tok[][], env: Map<string, bigint | null>): boolean {
  const names = new Set(sels.flatMap((s) => s.filter((x) => /^[A-Za-z_]/.test(x.t) && !env.has(x.t)).map((x) => x.t)));
  if (!names.size || !w.process) return false;
  if (w.path.some((p) => p.kind === 'for' || p.kind === 'loop')) return true;
  return [...walk(w.process)].some(
    ({ s }) => s.kind === 'simple' && s.toks.some((x, k) => k > 0 && names.has(x.t) && (s.toks[k - 1].t === ']' || /^[A-Za-z_]/.test(s.toks[k - 1].t))),
  );
}

/** The genvar declared again in the loop's body (`integer i;`, `for (int i ...)`): a write there
 * may mean the other `i`. */
function redeclared(toks: Tok[], l: GenLoop, g: string): boolean {
  for (let k = closeOf(toks, l.start + 1) + 1; k <= l.end; k++)
    if (toks[k].t === g && (toks[k - 1].t === ']' || (/^[A-Za-z_]/.test(toks[k - 1].t) && !STATEMENT_KEYWORD.test(toks[k - 1].t)))) return true;
  return false;
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
