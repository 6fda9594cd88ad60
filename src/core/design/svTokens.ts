// SystemVerilog text as Verilator reads it, in its two lexers (the rules below follow Verilator's
// own: src/V3PreLex.l and src/verilog.l, the same in 5.006 and current releases where it matters):
//
// 1. The preprocessor's (scanPreprocessor): which text is a comment (dropped), a string, an
//    escaped identifier, a `define body, the argument list of a macro call, or passed on unread
//    (the rest of a `pragma line and of a `line line, `protected blocks, `include <...>). Escaped
//    identifiers (IEEE 1800 5.6.1: a backslash, then any printable characters up to white space)
//    hide quotes and comment starts: `\q"` and `\c1/*` are identifiers, not a string or a comment.
//    Inside a `define body and a macro's argument list a backslash only escapes the next
//    character; a /* */ comment in a `define body stays in the macro's value and is read again
//    wherever the macro expands.
// 2. The parser's (tokenize), on what the preprocessor hands on: attributes (* ... *) are skipped
//    whole (quotes inside mean nothing), a string runs from " to " (also across lines when it holds
//    no backslash), """ opens a triple-quoted string, directives such as `line, `pragma and
//    `timescale swallow the rest of their line, `systemc_* opens a block of C++ lines.
//
// Offsets are kept everywhere: a span or token indexes the text it was read from.

export interface Span {
  start: number;
  end: number;
}

/** What Verilator's preprocessor makes of a text (all spans sorted by start). */
export interface PreprocessorScan {
  /** Comments the preprocessor drops. */
  comments: Span[];
  /** Block comments inside `define bodies: part of the macro's value, read again where it expands. */
  valueComments: Span[];
  /** String literals, quotes included. */
  strings: Span[];
  /** `define directives, from the backtick to the end of the value. */
  defines: Span[];
  /** Text the build's preprocessor passes on without reading it (no comments, no strings inside). */
  raw: Span[];
}

const WS = /[ \t\f\r]/;
const ID_START = /[A-Za-z_]/;
const ID_REST = /[A-Za-z0-9_$]/;

/** End (exclusive) of a "..." string that starts at `q` (V3PreLex STRMODE; a newline ends it, in error). */
function preString(src: string, q: number): number {
  let j = q + 1;
  while (j < src.length) {
    const c = src[j];
    if (c === '"') return j + 1;
    if (c === '\n') return j;
    if (c === '\\') {
      const cont = /\\\r*\n/y;
      cont.lastIndex = j;
      if (cont.test(src)) {
        j = cont.lastIndex;
        continue;
      }
      // A backslash, blanks, then the newline: Verilator warns and takes the backslash alone.
      const blanks = /\\[ \t\f]+\r*\n/y;
      blanks.lastIndex = j;
      j += blanks.test(src) || j + 1 >= src.length ? 1 : 2;
      continue;
    }
    j++;
  }
  return src.length;
}

/** End (exclusive) of a """...""" string that starts at `q` (QQQMODE: newlines allowed). */
function tripleString(src: string, q: number): number {
  let j = q + 3;
  while (j < src.length) {
    if (src.startsWith('"""', j)) return j + 3;
    j += src[j] === '\\' && j + 1 < src.length ? 2 : 1;
  }
  return src.length;
}

function stringAt(src: string, q: number): number {
  return src.startsWith('"""', q) ? tripleString(src, q) : preString(src, q);
}

function lineEnd(src: string, p: number): number {
  const e = src.indexOf('\n', p);
  return e < 0 ? src.length : e;
}

function blockCommentEnd(src: string, p: number): number {
  const e = src.indexOf('*/', p + 2);
  return e < 0 ? src.length : e + 2;
}

/** A symbol (identifier or escaped identifier) at `p`, or -1. `noTick`: symbdef (no backtick in it). */
function symbolEnd(src: string, p: number, noTick = false): number {
  if (ID_START.test(src[p] ?? '')) {
    let j = p + 1;
    while (j < src.length && ID_REST.test(src[j])) j++;
    return j;
  }
  if (src[p] === '\\') {
    let j = p + 1;
    while (j < src.length && !/[ \t\f\r\n]/.test(src[j]) && !(noTick && src[j] === '`')) j++;
    return j > p + 1 ? j : -1;
  }
  return -1;
}

/**
 * Reads `src` as Verilator's preprocessor does (see the top of this file). Every region of the
 * text is lexed, `ifdef'd out or not: the preprocessor lexes those too.
 */
export function scanPreprocessor(src: string): PreprocessorScan {
  return new PreprocessorScanner(src).scan();
}

/** One pass of the preprocessor's lexer over a text: each method reads one construct from a
 * position and returns the position just after it, recording its spans in `out`. */
class PreprocessorScanner {
  readonly out: PreprocessorScan = { comments: [], valueComments: [], strings: [], defines: [], raw: [] };
  readonly n: number;
  /** Macros defined here with formal arguments: their uses read an argument list (ARGMODE). */
  readonly withFormals = new Set<string>();

  constructor(readonly src: string) {
    this.n = src.length;
  }

  scan(): PreprocessorScan {
    const { src, n } = this;
    let i = 0;
    while (i < n) {
      const c = src[i];
      const line = i === 0 || src[i - 1] === '\n' ? this.lineDirective(i) : -1;
      if (line >= 0) i = line;
      else if (c === '`') i = this.backtick(i);
      else if (c === '"') i = this.str(i);
      else if (c === '/' && (src[i + 1] === '/' || src[i + 1] === '*')) i = this.comment(i);
      else {
        const s = symbolEnd(src, i);
        i = s > i ? s : i + 1;
      }
    }
    for (const list of Object.values(this.out)) (list as Span[]).sort((a, b) => a.start - b.start);
    return this.out;
  }

  str(p: number): number {
    const e = stringAt(this.src, p);
    this.out.strings.push({ start: p, end: e });
    return e;
  }

  comment(p: number, list: Span[] = this.out.comments): number {
    const e = this.src[p + 1] === '/' ? lineEnd(this.src, p) : blockCommentEnd(this.src, p);
    list.push({ start: p, end: e });
    return e;
  }

  /** `line at the start of a line (at `i`): the whole line is the directive, read unlexed. The
   * position of the line's newline, or -1 when the line is no `line. */
  lineDirective(i: number): number {
    const m = /[ \t\f\r]*`line[ \t\f\r]+[^\n]*\n/y;
    m.lastIndex = i;
    if (!m.test(this.src)) return -1;
    this.out.raw.push({ start: this.src.indexOf('`', i), end: m.lastIndex - 1 });
    return m.lastIndex - 1;
  }

  /** What a backtick at `i` opens: an escape, a stringification, a directive or a macro use. */
  backtick(i: number): number {
    const { src } = this;
    if (src.startsWith('``', i)) return i + 2;
    if (src.startsWith('`\\`"', i)) return i + 4;
    if (src.startsWith('`"', i)) return this.strify(i);
    const nameEnd = symbolEnd(src, i + 1, true);
    if (nameEnd < 0) return i + 1;
    const name = src.slice(i + 1, nameEnd);
    if (name === 'pragma') return this.pragma(nameEnd);
    if (name === 'define') return this.define(i, nameEnd);
    if (name === 'protected') return this.protectedBlock(nameEnd);
    if (name === 'include') return this.include(nameEnd);
    return this.withFormals.has(name) ? this.args(nameEnd) : nameEnd;
  }

  /** A non-empty `pragma: the build passes the rest of the line on unread. */
  pragma(nameEnd: number): number {
    const { src, n } = this;
    let j = nameEnd;
    while (j < n && (src[j] === ' ' || src[j] === '\t' || src[j] === '\f')) j++;
    if (j >= n || src[j] === '\n' || src[j] === '\r') return nameEnd;
    const e = lineEnd(src, j);
    this.out.raw.push({ start: nameEnd, end: e });
    return e;
  }

  /** `protected ... `endprotected: passed on unread. */
  protectedBlock(nameEnd: number): number {
    const e = this.src.indexOf('`endprotected', nameEnd);
    const end = e < 0 ? this.n : e + '`endprotected'.length;
    this.out.raw.push({ start: nameEnd, end });
    return end;
  }

  /** `include <...>: the file name is passed on unread (a "..." one is an ordinary string). */
  include(nameEnd: number): number {
    const { src, n } = this;
    let j = nameEnd;
    while (j < n && (src[j] === ' ' || src[j] === '\t')) j++;
    if (src[j] !== '<') return nameEnd;
    let k = j + 1;
    while (k < n && src[k] !== '>' && src[k] !== '\n') k += src[k] === '\\' ? 2 : 1;
    const end = Math.min(n, src[k] === '>' ? k + 1 : k);
    this.out.raw.push({ start: j, end });
    return end;
  }

  /** `"..."` stringification (STRIFY): strings inside, no comments; ends at the next `". */
  strify(p: number): number {
    const { src, n } = this;
    let j = p + 2;
    while (j < n) {
      if (src.startsWith('`\\`"', j)) j += 4;
      else if (src.startsWith('`"', j)) return j + 2;
      else if (src[j] === '"') j = this.str(j);
      else {
        const s = symbolEnd(src, j, true);
        j = s > j ? s : j + 1;
      }
    }
    return n;
  }

  /** A macro call's argument list (ARGMODE), from just after the macro name. */
  args(p: number): number {
    const { src, n } = this;
    let j = p;
    // White space and comments may stand before the "(".
    while (j < n) {
      if (/[ \t\f\r\n]/.test(src[j])) j++;
      else if (src.startsWith('//', j) || src.startsWith('/*', j)) j = this.comment(j);
      else break;
    }
    if (src[j] !== '(') return p;
    return this.bracketed(j, 'arguments');
  }

  /**
   * From an opening bracket to just after its match: strings and comments skipped whole; in a
   * macro call's arguments `\`" and `"..`" too, in a `define's formals a backslash escapes the
   * next character. n when it never closes.
   */
  bracketed(p: number, within: 'arguments' | 'formals'): number {
    const { src, n } = this;
    let j = p;
    let depth = 0;
    while (j < n) {
      const c = src[j];
      if (c === '"') j = this.str(j);
      else if (src.startsWith('//', j) || src.startsWith('/*', j)) j = this.comment(j);
      else if (within === 'arguments' && src.startsWith('`\\`"', j)) j += 4;
      else if (within === 'arguments' && src.startsWith('`"', j)) j = this.strify(j);
      else if (within === 'formals' && c === '\\') j += 2;
      else if (c === '(' || c === '[' || c === '{') {
        depth++;
        j++;
      } else if (c === ')' || c === ']' || c === '}') {
        depth--;
        j++;
        if (depth === 0) return j;
      } else j++;
    }
    return n;
  }

  /** `define: the name, the formals, the value up to an unescaped newline (DEFFORM / DEFVAL). */
  define(tick: number, p: number): number {
    const { src, n } = this;
    let j = p;
    while (j < n) {
      if (WS.test(src[j])) j++;
      else if (src.startsWith('/*', j)) j = this.comment(j);
      else break;
    }
    const nameEnd = symbolEnd(src, j, true);
    if (nameEnd < 0) return p;
    const name = src.slice(j, nameEnd);
    j = nameEnd;
    if (src[j] === '(') {
      this.withFormals.add(name);
      j = this.bracketed(j, 'formals');
    }
    j = this.defineValue(j);
    this.out.defines.push({ start: tick, end: Math.min(j, n) });
    return j;
  }

  /** A `define's value, from `p` to the newline no backslash escapes. */
  defineValue(p: number): number {
    const { src, n } = this;
    let j = p;
    while (j < n) {
      const c = src[j];
      if (c === '\n' || (c === '\r' && /^\r*\n/.test(src.slice(j, j + 8)))) break;
      if (src.startsWith('/*', j)) j = this.comment(j, this.out.valueComments);
      else if (src.startsWith('//', j)) {
        const e = lineEnd(src, j);
        this.out.comments.push({ start: j, end: e });
        // A // comment that ends in a backslash continues the value on the next line.
        if (/\\\r*$/.test(src.slice(j, e))) j = e + 1;
        else j = e;
      } else if (c === '"') j = this.str(j);
      else if (c === '\\') {
        if (/^\\\r*\n/.test(src.slice(j, j + 8))) j = lineEnd(src, j) + 1;
        else if (/^\\[ \t\f]+\r*\n/.test(src.slice(j, lineEnd(src, j) + 1))) j++;
        else j += 2;
      } else j++;
    }
    return j;
  }
}

/** Copies `src`, replacing the characters of the spans (but not their newlines) with spaces. */
export function blankSpans(src: string, spans: Span[], keep: (s: Span) => Span | null = () => null): string {
  const out = src.split('');
  for (const s of spans) {
    const inner = keep(s);
    for (let k = s.start; k < s.end && k < out.length; k++) {
      if (inner && k >= inner.start && k < inner.end) continue;
      if (out[k] !== '\n') out[k] = ' ';
    }
  }
  return out.join('');
}

/**
 * The text the parser is handed for a source file, at the same offsets: comments blanked. The
 * block comments of `define bodies keep their text (only their delimiters go): they are part of
 * the macro's value, and an escaped identifier before them makes them code where it expands.
 */
export function withoutComments(src: string, scan: PreprocessorScan = scanPreprocessor(src)): string {
  return blankSpans(blankSpans(src, scan.comments), scan.valueComments, (s) => ({ start: s.start + 2, end: s.end - 2 }));
}

export type TokenKind =
  | 'id'
  | 'escid'
  | 'system'
  | 'string'
  | 'number'
  | 'directive'
  | 'op'
  /** (* attribute *): skipped by the parser. */
  | 'attribute'
  | 'comment'
  /** The C++ lines of a `systemc_* block. */
  | 'cxx';

export interface Token {
  kind: TokenKind;
  start: number;
  end: number;
  /** The token's text; for an escaped identifier the name (no backslash); for a directive its
   * name (no backtick); for a string the decoded value. */
  value: string;
}

/** Directives whose rule in verilog.l takes the rest of the line. */
const LINE_DIRECTIVES = new Set(['line', 'pragma', 'timescale', 'default_decay_time', 'default_trireg_strength', 'uselib']);
const SYSTEMC = /^systemc_(header|interface|imp_header|implementation|ctor|dtor)$/;

/** Decodes a SystemVerilog string literal body the way the simulator will (\056 is '.', \/ is '/'). */
export function decodeSvString(body: string): string {
  return body.replace(/\\(\r*\n|x[0-9a-fA-F]{1,2}|[0-7]{1,3}|.)/g, (_, e: string) => {
    if (e.endsWith('\n')) return '\n';
    if (e[0] === 'x') return String.fromCharCode(parseInt(e.slice(1), 16));
    if (/^[0-7]/.test(e)) return String.fromCharCode(parseInt(e, 8));
    return ({ n: '\n', t: '\t', v: '\v', f: '\f', a: '\x07' } as Record<string, string>)[e] ?? e;
  });
}

/**
 * Tokens of `text` as Verilator's parser lexes it (verilog.l). `text` is preprocessed output, or a
 * source file's text with its comments blanked (withoutComments). White space is not a token.
 */
export function tokenize(text: string): Token[] {
  const out: Token[] = [];
  const n = text.length;
  const push = (kind: TokenKind, start: number, end: number, value = text.slice(start, end)): void => {
    out.push({ kind, start, end, value });
  };
  let i = 0;
  while (i < n) {
    const c = text[i];
    if (c === ' ' || c === '\t' || c === '\f' || c === '\r' || c === '\n') {
      i++;
      continue;
    }
    if (c === '(' && text[i + 1] === '*') {
      // "(*" white space, then an identifier: an attribute, skipped up to the first "*)".
      const m = /\(\*[ \t\f\r\n]*(?:[A-Za-z_]|\\[^ \t\f\r\n])/y;
      m.lastIndex = i;
      if (m.test(text)) {
        const e = text.indexOf('*)', i + 2);
        const end = e < 0 ? n : e + 2;
        push('attribute', i, end);
        i = end;
        continue;
      }
    }
    if (c === '/' && text[i + 1] === '/') {
      const e = lineEnd(text, i);
      push('comment', i, e);
      i = e;
      continue;
    }
    if (c === '/' && text[i + 1] === '*') {
      // Only /* ... */ without a star inside is a comment to verilog.l (the preprocessor took the rest).
      const m = /\/\*(?:\*\/|[^*]+\*\/)/y;
      m.lastIndex = i;
      if (m.test(text)) {
        push('comment', i, m.lastIndex);
        i = m.lastIndex;
        continue;
      }
    }
    if (c === '\\') {
      const e = symbolEnd(text, i);
      if (e > i) {
        push('escid', i, e, text.slice(i + 1, e));
        i = e;
        continue;
      }
    }
    if (ID_START.test(c)) {
      const e = symbolEnd(text, i);
      push('id', i, e);
      i = e;
      continue;
    }
    if (c === '$') {
      let j = i + 1;
      while (j < n && ID_REST.test(text[j])) j++;
      if (j > i + 1) {
        push('system', i, j);
        i = j;
        continue;
      }
    }
    if (c === '"') {
      // flex takes the longest match: "[^"\\]*" (across lines), or """ (triple), or " (STRING).
      const fast = /"[^"\\]*"/y;
      fast.lastIndex = i;
      const fastEnd = fast.test(text) ? fast.lastIndex : -1;
      let end: number;
      let body: string;
      if (text.startsWith('"""', i) && fastEnd - i <= 3) {
        end = tripleString(text, i);
        body = text.slice(i + 3, Math.max(i + 3, end - 3));
      } else if (fastEnd > 0) {
        end = fastEnd;
        body = text.slice(i + 1, end - 1);
      } else {
        end = preString(text, i);
        body = text.slice(i + 1, text[end - 1] === '"' && end - 1 > i ? end - 1 : end);
      }
      push('string', i, end, decodeSvString(body));
      i = end;
      continue;
    }
    if (c === '`') {
      let j = i + 1;
      while (j < n && /[A-Za-z0-9_]/.test(text[j])) j++;
      if (j > i + 1) {
        const name = text.slice(i + 1, j);
        let end = j;
        if (LINE_DIRECTIVES.has(name) && (name === 'pragma' || /[ \t\f\r]/.test(text[j] ?? ''))) end = lineEnd(text, j);
        out.push({ kind: 'directive', start: i, end, value: name });
        i = end;
        if (SYSTEMC.test(name)) {
          // C++ lines up to a line that starts with a backtick (`verilog or another directive).
          const start = i;
          let k = i;
          while (k < n) {
            const e = lineEnd(text, k);
            if (k > start && /^[ \t\f\r]*`/.test(text.slice(k, e))) break;
            k = e + 1;
          }
          if (k > start) push('cxx', start, Math.min(k, n));
          i = Math.min(k, n);
        }
        continue;
      }
    }
    if (/[0-9]/.test(c) || (c === "'" && /[sSbBoOdDhH01xXzZ]/.test(text[i + 1] ?? ''))) {
      const m = /(?:[0-9][0-9_]*(?:\.[0-9_]+)?(?:[eE][-+]?[0-9_]+)?)?(?:[ \t\n]*'[sS]?[bBoOdDhH][ \t\n]*[0-9a-fA-FxXzZ_?]*|'[01xXzZ])?/y;
      m.lastIndex = i;
      m.test(text);
      const end = Math.max(m.lastIndex, i + 1);
      push('number', i, end);
      i = end;
      continue;
    }
    push('op', i, i + 1);
    i++;
  }
  return out;
}

/** Tokens that mean something to the parser (no comments, attributes or C++ lines). */
export function significant(tokens: Token[]): Token[] {
  return tokens.filter((t) => t.kind !== 'comment' && t.kind !== 'attribute' && t.kind !== 'cxx');
}
