// A reader of a testbench's text for splice.ts: its tokens with their lines, the module instances
// in it (to find the DUT's instance and its connections) and bracket-aware list splitting. It
// reads the user's testbench to know where to put things, never a design (slang reads designs:
// design/frontEnd.ts), and gives up on what it cannot follow (splice.ts then writes a new
// testbench instead, saying why). Tokens come from the design layer's lexer (svTokens.ts).
import { significant, tokenize as lexTokens } from '../design/svTokens.js';

/** A token of the reader: its text. */
interface Text {
  t: string;
}

export interface Tok {
  t: string;
  line: number;
}

/** Operators of more than one character, longest first where one begins another. */
const OPERATORS = [
  '::',
  '<<<',
  '>>>',
  '<<=',
  '>>=',
  '===',
  '!==',
  '==',
  '!=',
  '<=',
  '>=',
  '&&',
  '||',
  '++',
  '--',
  '+=',
  '-=',
  '*=',
  '/=',
  '&=',
  '|=',
  '^=',
  '<<',
  '>>',
  '**',
  '->',
];

/**
 * Tokens of `code` (comments already blanked) with their lines. The lexer gives operators one
 * character at a time; adjacent ones that form an operator above are joined. A number's white
 * space (`8 'hFF`) is dropped, a string is one token as written, a directive or macro use is two
 * tokens (`` ` `` and its name; `timescale and the like take the rest of their line, as in
 * Verilator), an escaped identifier keeps its backslash, and (* attributes *) are left out.
 */
export function tokenize(code: string): Tok[] {
  const out: Tok[] = [];
  const toks = significant(lexTokens(code));
  let line = 1;
  let at = 0;
  const lineOf = (offset: number): number => {
    for (; at < offset; at++) if (code.charCodeAt(at) === 10) line++;
    return line;
  };
  for (let k = 0; k < toks.length; k++) {
    const x = toks[k];
    const ln = lineOf(x.start);
    if (x.kind === 'op') {
      const op = OPERATORS.find(
        (o) => code.startsWith(o, x.start) && [...o].every((_, j) => toks[k + j]?.kind === 'op' && toks[k + j].start === x.start + j),
      );
      out.push({ t: op ?? x.value, line: ln });
      if (op) k += op.length - 1;
    } else if (x.kind === 'number') out.push({ t: x.value.replace(/\s+/g, ''), line: ln });
    else if (x.kind === 'directive') out.push({ t: '`', line: ln }, { t: x.value, line: ln });
    else out.push({ t: code.slice(x.start, x.end), line: ln });
  }
  return out;
}

const opens = (t: string): boolean => '([{'.includes(t);
const closes = (t: string): boolean => ')]}'.includes(t);

/** The index of the bracket closing the one at `open` (the first token at which as many brackets
 * have closed as opened from `open` on), or tokens.length when it never closes. */
export function closeOf(tokens: readonly Text[], open: number): number {
  let depth = 0;
  for (let j = open; j < tokens.length; j++) {
    if (opens(tokens[j].t)) depth++;
    else if (closes(tokens[j].t) && --depth === 0) return j;
  }
  return tokens.length;
}

/** `tokens` cut at each `sep` outside brackets (the separators dropped): always one part more
 * than there are such separators. */
export function splitTop<T extends Text>(tokens: readonly T[], sep = ','): T[][] {
  const out: T[][] = [[]];
  let depth = 0;
  for (const x of tokens) {
    if (opens(x.t)) depth++;
    else if (closes(x.t)) depth--;
    if (x.t === sep && depth === 0) out.push([]);
    else out[out.length - 1].push(x);
  }
  return out;
}

/** A module instance in a module body: `sub #(.P(1)) u_sub (.a(x), .b());`. */
export interface Instance {
  module: string;
  name: string;
  /** Tokens inside `#( )`, empty when there is none. */
  params: Tok[];
  /** Tokens inside the port list's `( )`. */
  ports: Tok[];
  line: number;
}

const NOT_A_MODULE =
  /^(?:assign|always|always_comb|always_ff|always_latch|initial|final|function|task|assert|assume|cover|restrict|property|sequence|bind|default|clocking|import|export|typedef|parameter|localparam|input|output|inout|wire|reg|logic|bit|int|integer|genvar|generate|endgenerate|if|else|for|case|begin|end|module|endmodule|return|struct|union|enum|byte|shortint|longint|real|time|string|tri|var|signed|unsigned|modport|interface)$/;

const PRIMITIVE =
  /^(?:and|or|nand|nor|xor|xnor|buf|not|bufif0|bufif1|notif0|notif1|pullup|pulldown|tran|tranif0|tranif1|rtran|rtranif0|rtranif1|nmos|pmos|cmos|rnmos|rpmos|rcmos)$/;

/** The module instances of a module body (tokens), found by their shape; gate primitives too. */
export function instancesIn(toks: Tok[]): Instance[] {
  const out: Instance[] = [];
  for (let k = 0; k < toks.length; k++) {
    const a = toks[k];
    if (!/^[A-Za-z_]/.test(a.t) || NOT_A_MODULE.test(a.t)) continue;
    if (k > 0 && !/^(?:;|end|begin|endgenerate|generate|\)|else|:)$/.test(toks[k - 1].t) && !/^end/.test(toks[k - 1].t)) continue;
    let j = k + 1;
    let params: Tok[] = [];
    if (PRIMITIVE.test(a.t) && toks[j]?.t === '(') {
      // A gate without an instance name: `and (y, a, b);`.
      const close = closeOf(toks, j);
      if (close < toks.length) out.push({ module: a.t, name: '', params, ports: toks.slice(j + 1, close), line: a.line });
      continue;
    }
    if (toks[j]?.t === '#' && toks[j + 1]?.t === '(') {
      const close = closeOf(toks, j + 1);
      if (close >= toks.length) continue;
      params = toks.slice(j + 2, close);
      j = close + 1;
    }
    // One or more instances: `name [range] ( ports )` separated by commas.
    for (;;) {
      const b = toks[j];
      if (!b || !/^[A-Za-z_]/.test(b.t)) break;
      let n = j + 1;
      while (toks[n]?.t === '[') {
        const close = toks.findIndex((x, i) => i > n && x.t === ']');
        if (close < 0) break;
        n = close + 1;
      }
      if (toks[n]?.t !== '(') break;
      const close = closeOf(toks, n);
      if (close >= toks.length) break;
      out.push({ module: a.t, name: b.t, params, ports: toks.slice(n + 1, close), line: b.line });
      j = close + 1;
      if (toks[j]?.t === ',') j++;
      else break;
    }
    if (j > k + 1) k = j - 1;
  }
  return out;
}
