// SystemVerilog integer literals (IEEE 1800-2017 §5.7.1), read in one place. Literal text reaches
// this tool from three directions: the DUT's source (the constants of uncovered conditions the
// generator tries), Verilator's netlist (`32'sh8` parameter values, compared
// constants, string consts) and the user. Each reader used to carry its own regular expression,
// and they disagreed at the edges (upper-case bases, underscores, x/z digits, digits past the
// size); this module is the one reading, and each caller picks from its result what it needs.
//
// What is read: `8'hFF`, `8 'h FF` (white space is allowed between the size and the base and
// between the base and the digits, not inside `'sh`), `'b1010` (unsized), `4'sd3` (signed),
// `32'h_dead_beef` (underscores anywhere after the first digit of the size and anywhere in the
// digits), x/z/? digits (`?` is z), `8'dx` (a decimal x or z is the only digit), plain decimals
// `42` / `1_000`, and the unbased unsized fills `'0 '1 'x 'z`. Reals (`1.5`, `1e3`), time
// literals (`10ns`), a leading minus (an operator, not part of the literal) and casts (`8'(x)`)
// are not integer literals: the result is null.
//
// Sizing follows §5.7.1: digits past a sized literal's width are dropped (`4'h1F` is 4'hF,
// `overflow` says it happened); a leftmost x or z digit fills the high bits the digits leave with
// x or z, up to the size or to 32 bits when unsized (`8'hx` is eight x bits), and a leftmost 0 or
// 1 digit zero-extends. An unsized literal's value (`'hF`, `42`) is what its digits give: the
// language sizes it to at least 32 bits, and a caller that needs that width applies it.

export type SvLiteralBase = 2 | 8 | 10 | 16;

export interface SvLiteral {
  /**
   * `based`: `8'hFF`, `'b1`, `4'sd3`; `decimal`: a plain decimal number, `42`; `fill`: an unbased
   * unsized `'0 '1 'x 'z`, which sets every bit of the context it stands in.
   */
  form: 'based' | 'decimal' | 'fill';
  /** The size written before the base (`8` in `8'hFF`); undefined when unsized. */
  width?: number;
  /** `'s` in the base, or a plain decimal (which the language takes as signed). */
  signed: boolean;
  /** 10 for a plain decimal; 2 for a fill. */
  base: SvLiteralBase;
  /**
   * The literal's bits as an unsigned number, truncated to `width` when sized; undefined when any
   * bit is x or z. A fill's value is its one bit (`'1` is 1n): the context's width decides how
   * many bits it stands for.
   */
  value?: bigint;
  /**
   * Bits that are x (a fill: bit 0). A leftmost x digit extends over the size, or over 32 bits
   * when unsized (§5.7.1). 0n when none.
   */
  xMask: bigint;
  /** Bits that are z or ?, as `xMask` is for x. 0n when none. */
  zMask: bigint;
  /** Digits gave bits at or past `width` (dropped, with Verilator's WIDTH warning). */
  overflow: boolean;
}

/**
 * Sizes this reader refuses, a bound of our own well above the 65536 bits IEEE 1800 §5.7.1 asks
 * tools to support: an x-filled mask of an absurd size would otherwise be built bit by bit.
 */
export const MAX_LITERAL_WIDTH = 1 << 24;

const BASES: Record<string, SvLiteralBase> = { b: 2, o: 8, d: 10, h: 16 };
const BITS: Record<number, bigint> = { 2: 1n, 8: 3n, 16: 4n };

const BASED = /^([0-9][0-9_]*)?\s*'([sS]?)([bBoOdDhH])\s*([0-9a-fA-FxXzZ?_]+)$/;
const DECIMAL = /^[0-9][0-9_]*$/;
const FILL = /^'([01xXzZ])$/;

/** Reads one integer literal (surrounding white space allowed); null when `text` is not one. */
export function parseSvLiteral(text: string): SvLiteral | null {
  const s = text.trim();
  if (DECIMAL.test(s)) {
    return { form: 'decimal', signed: true, base: 10, value: BigInt(s.replace(/_/g, '')), xMask: 0n, zMask: 0n, overflow: false };
  }
  const fill = FILL.exec(s);
  if (fill) {
    const c = fill[1].toLowerCase();
    return {
      form: 'fill',
      signed: false,
      base: 2,
      value: c === '0' || c === '1' ? BigInt(c) : undefined,
      xMask: c === 'x' ? 1n : 0n,
      zMask: c === 'z' ? 1n : 0n,
      overflow: false,
    };
  }
  const m = BASED.exec(s);
  if (!m) return null;
  let width: number | undefined;
  if (m[1] !== undefined) {
    width = Number(m[1].replace(/_/g, ''));
    if (width < 1 || width > MAX_LITERAL_WIDTH) return null;
  }
  const base = BASES[m[3].toLowerCase()];
  const digits = m[4].replace(/_/g, '').toLowerCase();
  if (!digits) return null;
  let value = 0n;
  let xMask = 0n;
  let zMask = 0n;
  /** How many bits the digits give. */
  let span: bigint;
  if (base === 10) {
    if (/^[xz?]$/.test(digits)) {
      // A decimal x or z is the only digit; it extends like a leftmost x or z (below).
      if (digits === 'x') xMask = 1n;
      else zMask = 1n;
      span = 1n;
    } else if (/^[0-9]+$/.test(digits)) {
      value = BigInt(digits);
      span = BigInt(value.toString(2).length);
    } else return null;
  } else {
    const per = BITS[base];
    const ones = (1n << per) - 1n;
    for (const c of digits) {
      value <<= per;
      xMask <<= per;
      zMask <<= per;
      if (c === 'x') xMask |= ones;
      else if (c === 'z' || c === '?') zMask |= ones;
      else {
        const d = parseInt(c, 16);
        if (!(d < base)) return null;
        value |= BigInt(d);
      }
    }
    span = per * BigInt(digits.length);
  }
  // A leftmost x or z digit extends over the high bits up to the size (32 when unsized).
  const full = BigInt(width ?? 32);
  if (span < full && (((xMask | zMask) >> (span - 1n)) & 1n) !== 0n) {
    const high = ((1n << full) - 1n) & ~((1n << span) - 1n);
    if (((xMask >> (span - 1n)) & 1n) !== 0n) xMask |= high;
    else zMask |= high;
  }
  let overflow = false;
  if (width !== undefined) {
    const mask = (1n << BigInt(width)) - 1n;
    overflow = ((value | xMask | zMask) & ~mask) !== 0n;
    value &= mask;
    xMask &= mask;
    zMask &= mask;
  }
  const signed = m[2] !== '';
  return { form: 'based', width, signed, base, value: (xMask | zMask) !== 0n ? undefined : value, xMask, zMask, overflow };
}

/** The value of a literal with no x/z bits that is not a fill; null for anything else. */
export function svLiteralValue(text: string): bigint | null {
  const lit = parseSvLiteral(text);
  return lit && lit.form !== 'fill' && lit.value !== undefined ? lit.value : null;
}

/**
 * A sized signed literal's value as a two's-complement number (`4'sb1111` is -1n); the plain
 * value for every other literal with no x/z bits; undefined when it has x/z bits.
 */
export function svLiteralSigned(lit: SvLiteral): bigint | undefined {
  if (lit.value === undefined || !lit.signed || lit.width === undefined) return lit.value;
  const sign = 1n << BigInt(lit.width - 1);
  return lit.value & sign ? lit.value - (sign << 1n) : lit.value;
}
