// Refinement without a model as an edit of the user's testbench, not a replacement: the built-in
// generator's stimulus (emit.ts) is added to the testbench the user wrote, which is otherwise kept
// byte for byte (its module name, its ports and signals, its own stimulus, its comments).
//
//   - the generator's tasks and helper declarations go before the testbench's `endmodule`, their
//     names prefixed `chorus_` so they cannot clash with the user's;
//   - its stimulus becomes one task, `chorus_refine()`, called right before the `$finish` that ends
//     the testbench's own stimulus: the new stimulus runs after the user's, on the user's clock;
//   - the generator's port names become the signals the testbench connects to those ports.
//
// The testbench is read only for where to put things (its DUT instance and connections, its last
// `$finish`, its `endmodule`); whether the result is a legal testbench is for the simulator to say,
// as for any candidate. When the testbench cannot be edited safely (an input connected to an
// expression, no `$finish` that ends its stimulus, a clock it does not toggle, ...), readSite says
// why and the caller writes a new testbench instead, saying so.
import type { PortInfo } from '../design/types.js';
import { blankComments, renameIdentifiers } from '../design/lexer.js';
import { instancesIn, splitTop, tokenize, type Tok } from './tbText.js';

/** Where the generator's stimulus goes in the user's testbench, and the signals it drives. */
export interface SpliceSite {
  text: string;
  /** Offset of the testbench module's `endmodule`. */
  endmodule: number;
  /** Offset of the statement (its timing controls included) that holds the closing `$finish`. */
  finish: number;
  /** DUT port -> the testbench signal connected to it (null: unconnected or an expression). */
  connections: Map<string, string | null>;
  /** DUT port -> what it is connected to, as written (for messages). */
  written: Map<string, string>;
}

export type SpliceResult = { ok: true; text: string } | { ok: false; why: string };

const ID = /^[A-Za-z_][\w$]*$/;
const PREFIX = 'chorus_';
/** The task that holds the generator's stimulus. */
export const REFINE_TASK = `${PREFIX}refine`;

const escapeRe = (s: string): string => s.replace(/[$\\]/g, '\\$&');

/** The port connections of the one instance of `top` in the module body `body` (comments and
 * strings blanked), read with the coverage layer's module-body reader, or why there are none. */
function dutConnections(
  body: string,
  top: string,
  ports: PortInfo[],
): { connections: Map<string, string | null>; written: Map<string, string> } | { why: string } {
  const sites = instancesIn(tokenize(body)).filter((i) => i.module === top);
  if (sites.length === 0) return { why: `no instance of ${top} was found in it` };
  if (sites.length > 1) return { why: `it instantiates ${top} ${sites.length} times` };
  const items = sites[0]!.ports.length ? splitTop(sites[0]!.ports) : [];
  const text = (ts: Tok[]): string => ts.map((x) => x.t).join(' ');
  const written = new Map<string, string>();
  let wildcard = false;
  const named = items.filter((it) => it[0]?.t === '.');
  if (named.length && named.length !== items.length) return { why: `its ${top} instance mixes named and positional connections` };
  if (named.length) {
    for (const item of items) {
      if (item.length === 2 && item[1]!.t === '*') {
        wildcard = true;
        continue;
      }
      const name = item[1]?.t;
      const open = item.length === 2 || (item[2]?.t === '(' && item[item.length - 1]!.t === ')');
      if (!name || !ID.test(name) || !open)
        return { why: `its ${top} instance has a connection that could not be read (${text(item).slice(0, 40)})` };
      written.set(name, item.length === 2 ? name : text(item.slice(3, -1)));
    }
  } else {
    items.forEach((item, k) => {
      const p = ports[k];
      if (p) written.set(p.name, text(item));
    });
  }
  if (wildcard) for (const p of ports) if (!written.has(p.name)) written.set(p.name, p.name);
  const connections = new Map<string, string | null>();
  for (const p of ports) {
    const w = written.get(p.name);
    connections.set(p.name, w !== undefined && ID.test(w) ? w : null);
  }
  return { connections, written };
}

/** Offset of the statement that holds `$finish` at `at`: its timing controls (`#10 `, `@(posedge clk) `) included. */
function statementStart(code: string, from: number, at: number): number {
  let s = at;
  for (;;) {
    let j = s;
    while (j > from && /\s/.test(code[j - 1]!)) j--;
    if (code[j - 1] === ')') {
      // `#(...)` or `@(...)`: find the open bracket.
      let depth = 0;
      let k = j - 1;
      for (; k >= from; k--) {
        if (code[k] === ')') depth++;
        else if (code[k] === '(') {
          depth--;
          if (depth === 0) break;
        }
      }
      let b = k;
      while (b > from && /\s/.test(code[b - 1]!)) b--;
      if (code[b - 1] === '#' || code[b - 1] === '@') {
        s = b - 1;
        continue;
      }
      return s;
    }
    const word = /(?:[#@]\s*)([\w$.']+)$/.exec(code.slice(Math.max(from, j - 64), j));
    if (word) {
      s = j - word[0].length;
      continue;
    }
    return s;
  }
}

/** A process whose only work is to end the simulation after a delay (`initial #1e6 $finish;`). */
function isWatchdog(code: string, processStart: number, finishAt: number): boolean {
  const between = code
    .slice(processStart, finishAt)
    .replace(/^\s*initial\b/, '')
    .replace(/\$(?:display|write|error|fatal|warning|info)\s*\([^;]*\)\s*;/g, '')
    .replace(/#\s*(?:\([^()]*\)|[\w.']+)/g, '')
    .replace(/\b(?:begin|end)\b(?:\s*:\s*[A-Za-z_][\w$]*)?/g, '')
    .replace(/[;\s]/g, '');
  return between === '';
}

/**
 * Where the generator's stimulus can go in `text` (the testbench module `tbModule`, which
 * instantiates `top` with `ports`), or why it cannot: the reason completes "the testbench could not
 * be edited: ...".
 */
export function readSite(text: string, tbModule: string, top: string, ports: PortInfo[]): SpliceSite | { why: string } {
  const code = blankComments(text, true);
  const head = new RegExp(`\\bmodule\\s+(?:(?:static|automatic)\\s+)?${escapeRe(tbModule)}(?![\\w$])`).exec(code);
  if (!head) return { why: `its module ${tbModule} was not found` };
  const semi = code.indexOf(';', head.index);
  const endRe = /\bendmodule\b/g;
  endRe.lastIndex = semi;
  const end = endRe.exec(code);
  if (semi < 0 || !end) return { why: `its module ${tbModule} has no endmodule` };
  const body = semi + 1;
  const conn = dutConnections(code.slice(body, end.index), top, ports);
  if ('why' in conn) return conn;

  // The `$finish` that ends the testbench's own stimulus: in an initial block (or a task), a
  // statement of its own (not the branch of an `if`), and not a watchdog that only waits.
  let finish = -1;
  for (const m of code.slice(body, end.index).matchAll(/\$finish\b/g)) {
    const at = body + m.index!;
    const process = [...code.slice(body, at).matchAll(/\b(initial|always(?:_ff|_comb|_latch)?|final|task|function)\b/g)].pop();
    if (!process || (process[1] !== 'initial' && process[1] !== 'task')) continue;
    const s = statementStart(code, body, at);
    const before = code.slice(body, s).trimEnd();
    if (!/(?:;|\bbegin|\bend|\bjoin(?:_any|_none)?|\bfork)$/.test(before)) continue;
    if (isWatchdog(code, body + process.index!, at)) continue;
    finish = s;
  }
  if (finish < 0) return { why: 'it has no $finish that ends its stimulus in an initial block' };
  return { text, endmodule: end.index, finish, connections: conn.connections, written: conn.written };
}

/** The parts of a generated testbench (emit.ts's layout) that the edit adds. */
interface GeneratedParts {
  /** Module-level items: tasks, tables, the state of the property rules. */
  items: string[];
  /** The statements of the stimulus (the main initial block), `$finish` left out. */
  stimulus: string[];
  /** Ports the generator clocks (its `always #N clk = ~clk;`). */
  clocks: string[];
  header: string[];
  /** `round N, seed S`, from the generator's header. */
  round: string;
}

function generatedParts(generated: string, top: string, ports: PortInfo[]): GeneratedParts | { why: string } {
  const lines = generated.split('\n');
  const mod = lines.findIndex((l) => /^module\s+[\w$]+\s*;/.test(l));
  const lastIndex = (f: (l: string) => boolean): number => {
    for (let k = lines.length - 1; k >= 0; k--) if (f(lines[k]!)) return k;
    return -1;
  };
  const endm = lastIndex((l) => /^endmodule\b/.test(l));
  const main = lastIndex((l) => l === '  initial begin');
  const mainEnd = main < 0 ? -1 : lines.findIndex((l, k) => k > main && l === '  end');
  if (mod < 0 || endm < 0 || main < 0 || mainEnd < 0) return { why: "the generated stimulus's layout was not recognised" };
  const portNames = new Set(ports.map((p) => p.name));
  const clocks: string[] = [];
  const items: string[] = [];
  for (let k = mod + 1; k < endm; k++) {
    if (k >= main && k <= mainEnd) continue;
    const l = lines[k]!;
    if (l.startsWith(`  ${top} `) || l.startsWith(`  ${top}#`)) {
      while (k < endm && lines[k] !== '  );') k++;
      continue;
    }
    if (/\/\/ drives [\w$]+ \(see below\)$/.test(l)) return { why: 'an unpacked-array input is driven through a copy on every clock edge' };
    // A port's variable, with its first value or not: the testbench has its own signal.
    const decl = /^ {2}(?![\s]|always\b|initial\b|assign\b)[^=(]*?\b([A-Za-z_][\w$]*)\s*(?:\[[^\]]*\]\s*)*(?:=[^;]*)?;$/.exec(l);
    if (decl && portNames.has(decl[1]!)) continue;
    const clk = /^ {2}always #\S+ ([\w$]+) = ~([\w$]+);$/.exec(l);
    if (clk && clk[1] === clk[2] && portNames.has(clk[1]!)) {
      clocks.push(clk[1]!);
      continue;
    }
    if (/^ {2}initial [\w$]+ = 1'b0;$/.test(l) && portNames.has(/^ {2}initial ([\w$]+)/.exec(l)![1]!)) continue;
    if (/^ {2}\/\/ Clock [\w$]+:/.test(l)) continue;
    items.push(l);
  }
  const stimulus = lines.slice(main + 1, mainEnd).filter((l) => !/^\s*\$finish\s*;\s*$/.test(l));
  // The generator's notes on this round (`// - ...`, scaled parameters, recognised interfaces).
  const header = lines.slice(0, mod).filter((l) => /^\/\/ (?:- |Parameter |Recognised: )/.test(l));
  const round = /Round \d+, seed \d+/.exec(lines.slice(0, mod).join('\n'))?.[0]?.toLowerCase() ?? '';
  // Blank lines collapse to one.
  const tidy = items.filter((l, k) => l.trim() !== '' || (k > 0 && items[k - 1]!.trim() !== ''));
  while (tidy.length && tidy[0]!.trim() === '') tidy.shift();
  while (tidy.length && tidy[tidy.length - 1]!.trim() === '') tidy.pop();
  return { items: tidy, stimulus, clocks, header, round };
}

/** Names the generator declares at module level (tasks, functions, variables, tables). */
function declaredNames(items: string[]): string[] {
  const out = new Set<string>();
  for (const l of items) {
    if (!/^ {2}\S/.test(l) || /^ {2}(?:\/\/|always|initial|assign|end)/.test(l)) continue;
    const sub = /^ {2}(?:task|function)\b(?:\s+(?:automatic|static))?(?:\s+[\w$:]+(?:\s*\[[^\]]*\])*)??\s+([A-Za-z_][\w$]*)\s*[(;]/.exec(l);
    if (sub) {
      out.add(sub[1]!);
      continue;
    }
    if (/^ {2}(?:task|function)\b/.test(l)) continue;
    const v = /(?<![\w$])([A-Za-z_][\w$]*)\s*(?:\[[^\]]*\]\s*)*(?:=|;|,)/.exec(l.replace(/\/\/.*$/, ''));
    if (v) out.add(v[1]!);
  }
  return [...out];
}

/**
 * The user's testbench with the generated stimulus added (see the top of this file), or why the
 * generated testbench cannot be added to it.
 */
export function spliceStimulus(site: SpliceSite, generated: string, top: string, ports: PortInfo[]): SpliceResult {
  const parts = generatedParts(generated, top, ports);
  if ('why' in parts) return { ok: false, why: parts.why };
  const body = [...parts.items, ...parts.stimulus].join('\n');
  const code = blankComments(body, true);
  const used = new Set(code.match(/(?<![\w$.'\\])[A-Za-z_][\w$]*/g) ?? []);
  const renames = new Map<string, string>();
  const userCode = blankComments(site.text, true);
  const userIds = new Set(userCode.match(/(?<![\w$.'\\])[A-Za-z_][\w$]*/g) ?? []);
  for (const name of declaredNames(parts.items)) {
    let to = name.startsWith(PREFIX) ? name : PREFIX + name;
    while (userIds.has(to)) to = PREFIX + to;
    renames.set(name, to);
  }
  for (const p of ports) {
    if (!used.has(p.name)) continue;
    const sig = site.connections.get(p.name);
    if (!sig) {
      const w = site.written.get(p.name);
      return {
        ok: false,
        why: w ? `it connects ${p.name} to ${w.slice(0, 40)}, not to a signal of its own` : `it leaves ${p.name} unconnected`,
      };
    }
    if (
      p.direction === 'input' &&
      new RegExp(`\\b(?:wire|tri|wand|wor|supply[01])\\b[^;]*(?<![\\w$])${escapeRe(sig)}(?![\\w$])`).test(userCode)
    )
      return { ok: false, why: `it declares ${sig} (connected to ${p.name}) as a net: the added stimulus assigns it procedurally` };
    // A variable may not have a continuous and a procedural driver (IEEE 1800 6.5).
    if (p.direction === 'input' && new RegExp(`\\bassign\\s+${escapeRe(sig)}\\s*(?:\\[[^\\]]*\\]\\s*)*=`).test(userCode))
      return {
        ok: false,
        why: `it drives ${sig} (connected to ${p.name}) with a continuous assign: the added stimulus assigns it procedurally`,
      };
    if (sig !== p.name) {
      if (used.has(sig) && !ports.some((q) => q.name === sig))
        return { ok: false, why: `its signal ${sig} has the name of one of the generator's own` };
      renames.set(p.name, sig);
    }
  }
  for (const c of parts.clocks) {
    const sig = site.connections.get(c) ?? c;
    if (!new RegExp(`[~!]\\s*\\(?\\s*${escapeRe(sig)}(?![\\w$])`).test(userCode))
      return { ok: false, why: `it does not toggle ${sig}, the clock the added stimulus steps on` };
  }
  let task = REFINE_TASK;
  while (userIds.has(task)) task = PREFIX + task;
  const items = renameIdentifiers(parts.items.join('\n'), renames);
  const stimulus = renameIdentifiers(parts.stimulus.join('\n'), renames);
  const added = [
    '',
    `  // ---- Added by CHORUS refine (the built-in generator${parts.round ? `, ${parts.round}` : ''}): stimulus aimed at what`,
    '  // this testbench left uncovered.',
    ...parts.header.map((l) => `  ${l}`),
    `  // It runs after this testbench's own stimulus (${task}() is called before its $finish),`,
    '  // on the same signals; everything it declares is named chorus_*.',
    ...(items ? items.split('\n') : []),
    '',
    `  task automatic ${task}();`,
    ...stimulus.split('\n'),
    '  endtask',
    '  // ---- End of what CHORUS refine added.',
    '',
  ].join('\n');
  const { text } = site;
  // Insert the call on a line of its own, indented as the $finish statement.
  const lineStart = text.lastIndexOf('\n', site.finish - 1) + 1;
  const lead = text.slice(lineStart, site.finish);
  const call = /^\s*$/.test(lead)
    ? `${task}(); // added by CHORUS refine: more stimulus, aimed at what this testbench left uncovered\n${lead}`
    : `${task}(); `;
  const endLineStart = text.lastIndexOf('\n', site.endmodule - 1) + 1;
  const beforeEnd = /^\s*$/.test(text.slice(endLineStart, site.endmodule)) ? endLineStart : site.endmodule;
  return {
    ok: true,
    text:
      text.slice(0, site.finish) +
      call +
      text.slice(site.finish, beforeEnd) +
      (text[beforeEnd - 1] === '\n' ? '' : '\n') +
      added +
      text.slice(beforeEnd),
  };
}
