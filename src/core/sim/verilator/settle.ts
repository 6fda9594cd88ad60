// The last retry for a DUT whose combinational logic Verilator cannot settle: run the looping
// `always @*` / `always_comb` blocks as event-driven processes, on a copy of the design in the
// run's scratch directory (the user's files are never edited).
//
// Why this can work: a block such as
//     always @(*) if (next_count == WIDTH) next_count = 0; else next_count = count + 1;
// reads what it writes. IEEE 1800-2017 §9.4.2 and §9.2.2.2.1: a process is not woken by its own
// writes (it is not waiting on its event control while it runs), so an event-driven simulator
// runs it once per change of its other inputs and it keeps the value of that one pass. Verilator
// schedules it as combinational logic and re-evaluates until nothing changes, which for such a
// block can oscillate forever ("Active region did not converge"). Giving the block an explicit
// event list without the variables it writes itself makes Verilator (--timing) schedule it as a
// process, the way event-driven simulators run the original.
import { blankComments } from '../../design/lexer.js';

export interface EventDrivenBlock {
  /** 1-based line of the block's `always` keyword. */
  line: number;
  /** The event list the copy gives it. */
  sensitivity: string[];
  /** Variables the block writes itself, left out of the list. */
  writes: string[];
}

export interface EventDrivenCopy {
  /** The copy's text: same lines as the original, after a `line directive naming the original. */
  text: string;
  blocks: EventDrivenBlock[];
}

/** Words that are never signals (a broad list: a keyword wrongly kept would break the copy). */
const KEYWORDS = new Set(
  (
    'always always_comb always_ff always_latch and assign automatic begin bit break buf byte case casex casez const continue ' +
    'default disable do else end endcase endfunction endtask for foreach forever fork function genvar if iff ' +
    'inside int integer join join_any join_none localparam logic longint negedge nor not or parameter posedge priority ' +
    'real reg repeat return shortint signed static string struct task time tri type typedef union unique unique0 ' +
    'unsigned var void wait while wire xor xnor enum packed input output inout null this'
  ).split(' '),
);

const HEADER = /\balways\s*@\s*(?:\(\s*\*\s*\)|\*)|\balways_comb\b/g;

/** End (exclusive) of the statement starting at `i` in comment-free `code`, or -1 when unsure. */
function statementEnd(code: string, i: number): number {
  const word = /^\s*([A-Za-z_]\w*)/.exec(code.slice(i, i + 64))?.[1];
  const nested = (open: RegExp, close: RegExp): number => {
    const re = new RegExp(`\\b(?:${open.source}|${close.source})\\b`, 'g');
    re.lastIndex = i;
    let depth = 0;
    for (let m = re.exec(code); m; m = re.exec(code)) {
      if (new RegExp(`^(?:${open.source})$`).test(m[0])) depth++;
      else if (--depth === 0) return m.index + m[0].length;
    }
    return -1;
  };
  if (word === 'begin') return nested(/begin/, /end/);
  if (word === 'case' || word === 'casez' || word === 'casex') return nested(/case|casez|casex/, /endcase/);
  // An `if` without begin, or another compound statement: not worth guessing its end.
  if (word && /^(?:if|for|while|repeat|forever|fork|unique|priority)$/.test(word)) return -1;
  const semi = code.indexOf(';', i);
  return semi < 0 ? -1 : semi + 1;
}

/** Names the block assigns: `x =`, `x[3] <=`-free blocking forms, `x++`, `x += ...`, `{a, b} =`. */
function writtenIn(body: string): Set<string> {
  const out = new Set<string>();
  for (const m of body.matchAll(/(?<![\w$.'`])([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*(?:=(?!=)|\+\+|--|(?:[-+*/%&|^]|<<|>>)=)/g)) out.add(m[1]);
  for (const m of body.matchAll(/\{([^{}]*)\}\s*=(?!=)/g)) for (const n of m[1].matchAll(/(?<![\w$.'`])[A-Za-z_]\w*/g)) out.add(n[0]);
  return out;
}

/** Identifiers read in the block that may be signals: no calls, casts, members, package items, macros. */
function identifiersIn(body: string): Set<string> {
  const out = new Set<string>();
  for (const m of body.matchAll(/(?<![\w$.'`]|::)([A-Za-z_]\w*)\b(?!\s*(?:\(|'|::))/g)) if (!KEYWORDS.has(m[1])) out.add(m[1]);
  return out;
}

/** Type names a typedef declares in the file (they may appear in a block, and are no signals). */
function typedefNames(code: string): Set<string> {
  const out = new Set<string>();
  for (const m of code.matchAll(/\btypedef\b/g)) {
    let i = m.index + 7;
    let depth = 0;
    for (; i < code.length; i++) {
      const c = code[i];
      if (c === '{') depth++;
      else if (c === '}') depth--;
      else if (c === ';' && depth === 0) break;
    }
    const name = /([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*$/.exec(code.slice(m.index, i))?.[1];
    if (name) out.add(name);
  }
  return out;
}

/**
 * A copy of `src` in which every `always @*` / `always @(*)` / `always_comb` block that writes one
 * of `loopVars` runs as an event-driven process; undefined when no such block can be rewritten.
 * `originalPath` goes into a `line directive, so messages and coverage points name the original
 * file at the original lines.
 */
export function eventDrivenCopy(src: string, loopVars: string[], originalPath: string): EventDrivenCopy | undefined {
  if (/["\n\\]/.test(originalPath)) return undefined;
  const code = blankComments(src, true);
  const types = typedefNames(code);
  const wanted = new Set(loopVars.map((v) => v.split('.').pop()!.replace(/\[.*$/, '')));
  const edits: Array<{ at: number; end: number; text: string }> = [];
  const blocks: EventDrivenBlock[] = [];
  for (const h of code.matchAll(HEADER)) {
    const bodyStart = h.index + h[0].length;
    const end = statementEnd(code, bodyStart);
    if (end < 0) continue;
    const body = code.slice(bodyStart, end);
    const writes = writtenIn(body);
    if (![...writes].some((w) => wanted.has(w))) continue;
    // Names declared inside the block are local to it: no event list outside can name them.
    const locals = new Set<string>();
    for (const d of body.matchAll(/\b(?:logic|reg|bit|byte|int|integer|shortint|longint)\b[^;]*;/g))
      for (const n of d[0].matchAll(/([A-Za-z_]\w*)\s*(?=[,;=[])/g)) locals.add(n[1]);
    const sensitivity = [...identifiersIn(body)].filter((n) => !writes.has(n) && !locals.has(n) && !types.has(n));
    if (sensitivity.length === 0) continue;
    const list = `@(${sensitivity.join(' or ')})`;
    const keepLines = '\n'.repeat((h[0].match(/\n/g) ?? []).length);
    if (h[0].startsWith('always_comb')) {
      // always_comb also runs once at time zero: body first, then wait.
      edits.push({ at: h.index, end: bodyStart, text: `always begin${keepLines}` });
      edits.push({ at: end, end, text: ` ${list}; end` });
    } else edits.push({ at: h.index, end: bodyStart, text: `always ${list}${keepLines}` });
    blocks.push({ line: code.slice(0, h.index).split('\n').length, sensitivity, writes: [...writes].sort() });
  }
  if (!blocks.length) return undefined;
  let text = src;
  for (const e of edits.sort((a, b) => b.at - a.at)) text = text.slice(0, e.at) + e.text + text.slice(e.end);
  return { text: `\`line 1 "${originalPath}" 0\n${text}`, blocks };
}
