// Bracket nesting over the 2-state reader's tokens (svStatements.ts: a token's text in `t`): the
// bracket that closes an open one, the next token outside the brackets, where a list item ends,
// and a token list cut at its top-level separators. `(`, `[` and `{` open and `)`, `]` and `}`
// close, all alike (these readers never check that a `)` closes a `(`). What each scan makes of
// brackets that do not balance is part of its contract: its callers rely on it.

/** A token of the 2-state reader: its text. */
interface Text {
  t: string;
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

/**
 * The index of the first token from `from` on that no bracket opened since `from` encloses and
 * that `stop` accepts (a closing bracket too: `)` read from just inside a `(` is its close), or
 * where the scan ran off the end (tokens.length; `from` when it starts past the end). A closing
 * bracket `stop` does not accept takes the depth below 0 and the scan goes on.
 */
export function nextTopLevel<T extends Text>(tokens: readonly T[], from: number, stop: (tok: T, index: number) => boolean): number {
  let depth = 0;
  let j = from;
  for (; j < tokens.length; j++) {
    const t = tokens[j].t;
    if (depth === 0 && stop(tokens[j], j)) return j;
    if (opens(t)) depth++;
    else if (closes(t)) depth--;
  }
  return j;
}

/**
 * Where the list item that starts at `from` ends: at the first token outside its brackets that
 * `isEnd` accepts (never asked of a bracket), or at the bracket closing the list it sits in (a
 * closing bracket with no opening one since `from`); tokens.length when there is neither
 * (`from` when it starts past the end).
 */
export function itemEnd<T extends Text>(tokens: readonly T[], from: number, isEnd: (tok: T, index: number) => boolean): number {
  let depth = 0;
  let j = from;
  for (; j < tokens.length; j++) {
    const t = tokens[j].t;
    if (opens(t)) depth++;
    else if (closes(t)) {
      if (depth === 0) return j;
      depth--;
    } else if (depth === 0 && isEnd(tokens[j], j)) return j;
  }
  return j;
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
