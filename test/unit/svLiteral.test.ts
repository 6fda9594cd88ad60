// The one reader of SystemVerilog integer literals (src/core/design/svLiteral.ts): every form of
// IEEE 1800 §5.7.1 the callers meet, the sizing rules (truncation, x/z extension), and the texts
// that look like literals but are not.
import { describe, expect, it } from 'vitest';
import { MAX_LITERAL_WIDTH, parseSvLiteral, svLiteralSigned, svLiteralValue, type SvLiteral } from '../../src/core/design/svLiteral.js';

const lit = (text: string): SvLiteral => {
  const r = parseSvLiteral(text);
  if (!r) throw new Error(`not a literal: ${text}`);
  return r;
};

describe('parseSvLiteral: sized based literals', () => {
  it('reads each base, upper and lower case', () => {
    expect(lit("8'hFF")).toEqual({ form: 'based', width: 8, signed: false, base: 16, value: 255n, xMask: 0n, zMask: 0n, overflow: false });
    expect(lit("8'hff").value).toBe(255n);
    expect(lit("8'HFF").value).toBe(255n);
    expect(lit("4'b1010")).toMatchObject({ base: 2, width: 4, value: 10n });
    expect(lit("4'B1010").value).toBe(10n);
    expect(lit("6'o17")).toMatchObject({ base: 8, width: 6, value: 15n });
    expect(lit("6'O17").value).toBe(15n);
    expect(lit("10'd999")).toMatchObject({ base: 10, width: 10, value: 999n });
    expect(lit("10'D999").value).toBe(999n);
  });

  it('takes underscores in the digits and the size', () => {
    expect(lit("32'h_dead_beef").value).toBe(0xdeadbeefn);
    expect(lit("32'hDEAD_BEEF_").value).toBe(0xdeadbeefn);
    expect(lit("8'b1111_0000").value).toBe(0xf0n);
    expect(lit("1_6'h1234")).toMatchObject({ width: 16, value: 0x1234n });
    expect(lit("16'd65_535").value).toBe(65535n);
  });

  it('takes white space between size and base and between base and digits, and around the literal', () => {
    expect(lit("8 'hFF")).toMatchObject({ width: 8, value: 255n });
    expect(lit("8'h FF")).toMatchObject({ width: 8, value: 255n });
    expect(lit("8 \t'h\nFF")).toMatchObject({ width: 8, value: 255n });
    expect(lit("  8'hFF  ").value).toBe(255n);
    // Not inside the base specifier, nor inside the digits or the size.
    expect(parseSvLiteral("8' hFF")).toBeNull();
    expect(parseSvLiteral("8's hFF")).toBeNull();
    expect(parseSvLiteral("8'hF F")).toBeNull();
    expect(parseSvLiteral("1 6'hFF")).toBeNull();
  });

  it('reads the signed marker in either case', () => {
    expect(lit("4'sd3")).toMatchObject({ signed: true, width: 4, base: 10, value: 3n });
    expect(lit("4'Sd3").signed).toBe(true);
    expect(lit("32'sh8")).toMatchObject({ signed: true, width: 32, value: 8n });
    expect(lit("4'sb1111")).toMatchObject({ signed: true, value: 15n });
    expect(lit("4'b1111").signed).toBe(false);
  });

  it('zero-extends short digits and truncates long ones to the size, saying so', () => {
    expect(lit("8'h1")).toMatchObject({ value: 1n, overflow: false });
    expect(lit("4'h1F")).toMatchObject({ value: 0xfn, overflow: true });
    expect(lit("3'd9")).toMatchObject({ value: 1n, overflow: true });
    expect(lit("2'b0111")).toMatchObject({ value: 3n, overflow: true });
    // Leading zero digits past the size are no overflow: no bit is lost.
    expect(lit("4'h0F")).toMatchObject({ value: 0xfn, overflow: false });
    expect(lit("1'b1").overflow).toBe(false);
    expect(lit("64'hFFFF_FFFF_FFFF_FFFF").value).toBe(2n ** 64n - 1n);
    expect(lit("128'h1_0000_0000_0000_0000").value).toBe(2n ** 64n);
  });
});

describe('parseSvLiteral: unsized and plain decimal literals', () => {
  it('keeps every bit of an unsized based literal', () => {
    expect(lit("'hFF")).toEqual({
      form: 'based',
      width: undefined,
      signed: false,
      base: 16,
      value: 255n,
      xMask: 0n,
      zMask: 0n,
      overflow: false,
    });
    expect(lit("'b1010").value).toBe(10n);
    expect(lit("'sd5")).toMatchObject({ signed: true, width: undefined, value: 5n });
    expect(lit("'h1_0000_0000").value).toBe(2n ** 32n);
  });

  it('reads plain decimals as signed, unsized, base 10', () => {
    expect(lit('42')).toEqual({ form: 'decimal', signed: true, base: 10, value: 42n, xMask: 0n, zMask: 0n, overflow: false });
    expect(lit('0').value).toBe(0n);
    expect(lit('007').value).toBe(7n);
    expect(lit('1_000_000').value).toBe(1_000_000n);
    expect(lit('123456789012345678901234567890').value).toBe(123456789012345678901234567890n);
  });
});

describe('parseSvLiteral: unbased unsized fills', () => {
  it("reads '0 '1 'x 'z as one bit that fills the context", () => {
    expect(lit("'0")).toEqual({ form: 'fill', signed: false, base: 2, value: 0n, xMask: 0n, zMask: 0n, overflow: false });
    expect(lit("'1")).toMatchObject({ form: 'fill', value: 1n });
    expect(lit("'x")).toMatchObject({ form: 'fill', value: undefined, xMask: 1n, zMask: 0n });
    expect(lit("'X")).toMatchObject({ form: 'fill', xMask: 1n });
    expect(lit("'z")).toMatchObject({ form: 'fill', value: undefined, xMask: 0n, zMask: 1n });
    expect(lit("'Z").zMask).toBe(1n);
    expect(lit(" '1 ").value).toBe(1n);
  });

  it('refuses what is not a fill', () => {
    expect(parseSvLiteral("'?")).toBeNull();
    expect(parseSvLiteral("'2")).toBeNull();
    expect(parseSvLiteral("'10")).toBeNull();
    expect(parseSvLiteral("8'1")).toBeNull();
  });
});

describe('parseSvLiteral: x, z and ? digits', () => {
  it('marks x and z bits and gives no value', () => {
    expect(lit("4'b1x0z")).toMatchObject({ value: undefined, xMask: 0b0100n, zMask: 0b0001n });
    expect(lit("4'b10?1")).toMatchObject({ value: undefined, xMask: 0n, zMask: 0b0010n });
    expect(lit("8'hxF")).toMatchObject({ value: undefined, xMask: 0xf0n, zMask: 0n });
    expect(lit("8'hZ0")).toMatchObject({ zMask: 0xf0n });
    expect(lit("6'o7x")).toMatchObject({ xMask: 0o07n });
  });

  it('extends a leftmost x or z over the size, and a leftmost 0 or 1 with zeros', () => {
    expect(lit("8'hx")).toMatchObject({ xMask: 0xffn, zMask: 0n, overflow: false });
    expect(lit("8'bz")).toMatchObject({ zMask: 0xffn });
    expect(lit("8'bx1")).toMatchObject({ xMask: 0xfen });
    expect(lit("8'b?1")).toMatchObject({ zMask: 0xfen });
    expect(lit("8'b1x")).toMatchObject({ xMask: 0b01n });
    // Unsized: over 32 bits.
    expect(lit("'hx")).toMatchObject({ width: undefined, xMask: 0xffff_ffffn });
    expect(lit("'bz0")).toMatchObject({ zMask: 0xffff_fffen });
  });

  it('reads a decimal x or z as the only digit, over the whole size', () => {
    expect(lit("4'dx")).toMatchObject({ base: 10, width: 4, value: undefined, xMask: 0xfn, zMask: 0n });
    expect(lit("4'dZ")).toMatchObject({ zMask: 0xfn });
    expect(lit("4'd?")).toMatchObject({ zMask: 0xfn });
    expect(lit("4'dx_")).toMatchObject({ xMask: 0xfn });
    expect(lit("'dx")).toMatchObject({ xMask: 0xffff_ffffn });
    expect(parseSvLiteral("4'd1x")).toBeNull();
    expect(parseSvLiteral("4'dxx")).toBeNull();
  });

  it('truncates x bits past the size like any other', () => {
    expect(lit("4'hxx")).toMatchObject({ xMask: 0xfn, overflow: true });
  });
});

describe('parseSvLiteral: not integer literals', () => {
  it.each([
    '',
    ' ',
    "'",
    "8'",
    "8'h",
    "8'h_",
    "'h",
    "8'q1",
    "4'b102",
    "4'o8",
    "4'dA",
    "8'hG",
    "0'h1",
    "00'b1",
    "_8'h1",
    '-5',
    '+5',
    '1.5',
    '1e3',
    '10ns',
    '1step',
    "8'(x)",
    'x',
    'FF',
    "8'hFF;",
    "8'hFF 1",
    '"8\'hFF"',
    "'{1, 2}",
  ])('%j', (text) => {
    expect(parseSvLiteral(text)).toBeNull();
  });

  it('refuses sizes past the bound', () => {
    expect(lit(`${MAX_LITERAL_WIDTH}'h1`).width).toBe(MAX_LITERAL_WIDTH);
    expect(parseSvLiteral(`${MAX_LITERAL_WIDTH + 1}'h1`)).toBeNull();
    expect(parseSvLiteral("99999999999999999999'h1")).toBeNull();
  });
});

describe('svLiteralValue', () => {
  it('gives the value of a literal with no x/z bits that is not a fill', () => {
    expect(svLiteralValue("32'sh8")).toBe(8n);
    expect(svLiteralValue("2'h3")).toBe(3n);
    expect(svLiteralValue("1'b1")).toBe(1n);
    expect(svLiteralValue("'hA")).toBe(10n);
    expect(svLiteralValue('12')).toBe(12n);
    expect(svLiteralValue(' 12 ')).toBe(12n);
    // Verilator prints a negative parameter as its bit pattern; the value is that pattern.
    expect(svLiteralValue("32'shfffffffe")).toBe(0xfffffffen);
    expect(svLiteralValue("3'd9")).toBe(1n);
  });

  it('is null for fills, x/z bits and non-literals', () => {
    expect(svLiteralValue("'1")).toBeNull();
    expect(svLiteralValue("'0")).toBeNull();
    expect(svLiteralValue("2'b1x")).toBeNull();
    expect(svLiteralValue("8'hzz")).toBeNull();
    expect(svLiteralValue('"abc"')).toBeNull();
    expect(svLiteralValue('1.0')).toBeNull();
    expect(svLiteralValue('WIDTH')).toBeNull();
  });
});

describe('svLiteralSigned', () => {
  it("reads a sized signed literal's bits as two's complement", () => {
    expect(svLiteralSigned(lit("4'sb1111"))).toBe(-1n);
    expect(svLiteralSigned(lit("4'sb0111"))).toBe(7n);
    expect(svLiteralSigned(lit("4'sb1000"))).toBe(-8n);
    expect(svLiteralSigned(lit("32'shfffffffe"))).toBe(-2n);
    expect(svLiteralSigned(lit("1'sb1"))).toBe(-1n);
    // Truncation first, then the sign: 4'sh1F is 4'shF.
    expect(svLiteralSigned(lit("4'sh1F"))).toBe(-1n);
  });

  it('leaves unsigned and unsized literals as they are, and x/z without a value', () => {
    expect(svLiteralSigned(lit("4'b1111"))).toBe(15n);
    expect(svLiteralSigned(lit("'sd5"))).toBe(5n);
    expect(svLiteralSigned(lit('42'))).toBe(42n);
    expect(svLiteralSigned(lit("4'sbx111"))).toBeUndefined();
  });
});
