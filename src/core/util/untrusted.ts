// Text that came from outside the engine (what a testbench printed, what a model replied, what a
// remote reward service answered) is data: shown as text, never as instructions to a terminal, the
// editor or a model. One rule, applied where results are made (the simulator backends, the remote
// scorer) and again where text is shown (CLI output, status line, output channel, dashboard):
//
// - every C0 control but newline and tab (NUL, BEL, BS, ESC, CR, ...), DEL and every C1 control
//   (U+0080-U+009F: CSI U+009B, OSC U+009D, ...) is written as a visible escape: ESC as `\x1b`,
//   so `ESC [2J` shows as `\x1b[2J` and an OSC 52 clipboard write as `\x1b]52;c;...\x07`. With
//   its introducer escaped no escape sequence (CSI, OSC with BEL or ST, DCS, single-character ESC)
//   can act, and the engineer still sees what the testbench printed;
// - CR LF becomes LF (a line end, harmless); a lone CR (which rewinds and overwrites a line) is
//   escaped like the rest;
// - invisible characters that can disguise text are escaped too (`\u202e`): Unicode format
//   characters (bidi embeddings, overrides and isolates U+202A-U+202E / U+2066-U+2069, marks,
//   zero-width characters, the byte-order mark, the invisible tag characters U+E0000-U+E007F),
//   the line and paragraph separators U+2028/U+2029, lone surrogates, the variation selectors
//   U+E0100-U+E01EF and the Hangul fillers (blank-looking letters).
//
// Backslashes are not doubled: the output is for reading, not for decoding, and it is a fixed
// point (sanitizing twice changes nothing). Text with nothing to escape comes back as the same
// string after one regular-expression test, so multi-megabyte logs cost one linear scan.
// No Node imports: any bundle (the extension host, the webview) can take it.

/** Invisible characters that can disguise text (everything but the controls). */
const INVISIBLE = String.raw`\p{Cf}\p{Cs}\p{Zl}\p{Zp}\u{E0100}-\u{E01EF}\u115F\u1160\u3164\uFFA0`;
/** One line: every control character (newline and tab included) and every invisible one. */
const UNSAFE_LINE = new RegExp(`[\\p{Cc}${INVISIBLE}]`, 'u');
const UNSAFE_LINE_G = new RegExp(UNSAFE_LINE.source, 'gu');
/** Multi-line text: CR LF (a line end), or any control but newline and tab, or an invisible character. */
const UNSAFE_TEXT = new RegExp(`\\r\\n|[\\0-\\x08\\x0b-\\x1f\\x7f-\\x9f${INVISIBLE}]`, 'u');
const UNSAFE_TEXT_G = new RegExp(UNSAFE_TEXT.source, 'gu');

/** `\x1b`, `\u202e`, `\u{e0041}`: how one unsafe character is shown. */
export function visibleEscape(ch: string): string {
  const cp = ch.codePointAt(0)!;
  if (cp <= 0xff) return `\\x${cp.toString(16).padStart(2, '0')}`;
  if (cp <= 0xffff) return `\\u${cp.toString(16).padStart(4, '0')}`;
  return `\\u{${cp.toString(16)}}`;
}

const escapeText = (m: string): string => (m === '\r\n' ? '\n' : visibleEscape(m));

/**
 * `text` safe to show on a terminal, in the editor or in a prompt: newlines and tabs kept, every
 * other control character, escape sequence introducer and disguising invisible character written
 * as a visible escape (see the rule at the top of this file). Returns `text` itself when clean.
 */
export function safeText(text: string): string {
  if (!UNSAFE_TEXT.test(text)) return text;
  return text.replace(UNSAFE_TEXT_G, escapeText);
}

/** As safeText, for one line (a status line, a notification, a label): newlines and tabs escaped too. */
export function safeLine(text: string): string {
  if (!UNSAFE_LINE.test(text)) return text;
  return text.replace(UNSAFE_LINE_G, visibleEscape);
}

/** True when safeText would change `text`. */
export function isUnsafeText(text: string): boolean {
  return UNSAFE_TEXT.test(text);
}

const JSON_UNSAFE_G = new RegExp(`[\\x7f-\\x9f${INVISIBLE}]`, 'gu');
const jsonEscape = (ch: string): string =>
  ch
    .split('')
    .map((u) => `\\u${u.charCodeAt(0).toString(16).padStart(4, '0')}`)
    .join('');

/**
 * JSON.stringify for a terminal or a log: JSON already writes C0 controls as escapes; this writes
 * DEL, the C1 controls and the invisible characters of the rule as `\u` escapes too. Lossless: it
 * parses back to the same value (raw model replies and testbenches keep every character).
 */
export function safeJson(value: unknown, indent = 2): string {
  const s = JSON.stringify(value, null, indent) as string | undefined;
  return s === undefined ? 'null' : s.replace(JSON_UNSAFE_G, jsonEscape);
}

function isPlainObject(v: object): v is Record<string, unknown> {
  const p = Object.getPrototypeOf(v) as unknown;
  return p === Object.prototype || p === null;
}

/**
 * safeText applied to every string in a JSON-like value (plain objects and arrays, keys included),
 * copy on write: what is already clean is returned as is (the same objects), so a clean record
 * costs one scan of its strings and no allocation. Other objects (class instances) are left alone.
 */
export function safeDeep<T>(value: T): T {
  return deep(value, 0) as T;
}

function deep(v: unknown, depth: number): unknown {
  if (typeof v === 'string') return safeText(v);
  if (v === null || typeof v !== 'object' || depth > 64) return v;
  if (Array.isArray(v)) {
    let out: unknown[] | null = null;
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      const y = deep(x, depth + 1);
      if (y !== x && out === null) out = v.slice(0, i);
      if (out !== null) out.push(y);
    }
    return out ?? v;
  }
  if (!isPlainObject(v)) return v;
  let out: Record<string, unknown> | null = null;
  const keys = Object.keys(v);
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i];
    const x = v[k];
    const y = deep(x, depth + 1);
    const k2 = safeLine(k);
    if ((y !== x || k2 !== k) && out === null) {
      out = {};
      for (let j = 0; j < i; j++) out[keys[j]] = v[keys[j]];
    }
    if (out !== null) out[k2] = y;
  }
  return out ?? v;
}
