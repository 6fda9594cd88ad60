// The two lexers of design/svTokens.ts against what Verilator 5.006 and 5.048 were seen to do
// (the expectations were checked with `verilator -E` and `--xml-only` / `--json-only`).
import { describe, expect, it } from 'vitest';
import { decodeSvString, scanPreprocessor, significant, tokenize, withoutComments } from '../../src/core/design/svTokens.js';

/** The parser's tokens of a source text, as kind:value. */
const toks = (src: string): string[] => significant(tokenize(withoutComments(src))).map((t) => `${t.kind}:${t.value}`);
const spans = (src: string, list: Array<{ start: number; end: number }>): string[] => list.map((s) => src.slice(s.start, s.end));

describe('scanPreprocessor: what the preprocessor takes for comments and strings', () => {
  it('reads an escaped identifier whole: a quote or comment mark inside it starts nothing', () => {
    const src = 'wire \\q" ;\ninitial $c("x");\nwire \\c1/* ;\ninitial $system("id");\nwire \\c2*/ ;\n';
    const scan = scanPreprocessor(src);
    expect(scan.comments).toEqual([]);
    expect(spans(src, scan.strings)).toEqual(['"x"', '"id"']);
  });

  it('ends an escaped identifier at white space only', () => {
    const src = 'wire \\a"b\tc /* x */ d;';
    expect(spans(src, scanPreprocessor(src).comments)).toEqual(['/* x */']);
  });

  it('reads strings with \\" escapes and a backslash-newline continuation', () => {
    const src = 'x = "a\\"b // c"; y = "d\\\ne /* f */"; // g\n';
    const scan = scanPreprocessor(src);
    expect(spans(src, scan.strings)).toEqual(['"a\\"b // c"', '"d\\\ne /* f */"']);
    expect(spans(src, scan.comments)).toEqual(['// g']);
  });

  it('ends an unterminated string at the newline', () => {
    const src = 'x = "abc\n/* real */';
    expect(spans(src, scanPreprocessor(src).comments)).toEqual(['/* real */']);
  });

  it('reads a triple-quoted string across lines, a single quote inside', () => {
    const src = 'x = """a " // b\nc"""; // d';
    const scan = scanPreprocessor(src);
    expect(spans(src, scan.strings)).toEqual(['"""a " // b\nc"""']);
    expect(spans(src, scan.comments)).toEqual(['// d']);
  });

  it('passes the rest of a `pragma line on unread: a /* there starts no comment', () => {
    const src = '`pragma foo /*\ninitial $system("id");\n// */\n';
    const scan = scanPreprocessor(src);
    expect(spans(src, scan.raw)).toEqual([' foo /*']);
    expect(spans(src, scan.comments)).toEqual(['// */']);
  });

  it('reads a `line directive at the start of a line whole', () => {
    const src = '  `line 3 "tb.sv" 0 /* x\ninitial $system("id");\n';
    const scan = scanPreprocessor(src);
    expect(spans(src, scan.raw)).toEqual(['`line 3 "tb.sv" 0 /* x']);
    expect(scan.comments).toEqual([]);
  });

  it('keeps /* */ comments of a `define body in the value (they expand), drops its // comments', () => {
    const src = '`define X \\x/* $system("id"); */ y // z\nwire a;\n';
    const scan = scanPreprocessor(src);
    expect(spans(src, scan.valueComments)).toEqual(['/* $system("id"); */']);
    expect(spans(src, scan.comments)).toEqual(['// z']);
    expect(spans(src, scan.defines)).toEqual(['`define X \\x/* $system("id"); */ y // z']);
    // The expansion site reads `\x/*` as an escaped identifier: the comment's text is code there.
    expect(withoutComments(src)).toContain('\\x   $system("id");    y');
  });

  it('continues a `define value over backslash-newlines and after a // comment ending in a backslash', () => {
    const src = '`define X a \\\n b // c \\\n d\nwire e;\n';
    const scan = scanPreprocessor(src);
    expect(spans(src, scan.defines)).toEqual(['`define X a \\\n b // c \\\n d']);
  });

  it('reads the argument list of a macro with formals: a backslash only escapes a character there', () => {
    const src = '`define M(a) a\n`M(\\q" // ")\n';
    const scan = scanPreprocessor(src);
    expect(spans(src, scan.strings)).toEqual(['" // "']);
    expect(scan.comments).toEqual([]);
  });

  it('reads `include <...> unlexed, and no comment in a `"...`" stringification', () => {
    const src = '`include <a//b.vh>\n`define S(x) `"x /* y */`"\n';
    const scan = scanPreprocessor(src);
    expect(spans(src, scan.raw)).toEqual(['<a//b.vh>']);
    expect(scan.comments).toEqual([]);
  });
});

describe('tokenize: what the parser lexes', () => {
  it('skips an attribute whole, quotes inside it included', () => {
    expect(toks('(* a = " *) initial $system("id"); (* b = " *) wire w;')).toEqual([
      'id:initial',
      'system:$system',
      'op:(',
      'string:id',
      'op:)',
      'op:;',
      'id:wire',
      'id:w',
      'op:;',
    ]);
  });

  it('takes (*) for an operator, not an attribute', () => {
    expect(toks('always @(*) x = 1;').slice(0, 5)).toEqual(['id:always', 'op:@', 'op:(', 'op:*', 'op:)']);
  });

  it('names an escaped identifier without its backslash', () => {
    expect(toks('wire \\c1/* ; wire \\import ;')).toEqual(['id:wire', 'escid:c1/*', 'op:;', 'id:wire', 'escid:import', 'op:;']);
  });

  it('decodes strings: escapes, octal and hex, a continuation', () => {
    expect(toks('x = "\\104PI-C" "\\x41\\"" "a\\\nb";').filter((t) => t.startsWith('string'))).toEqual([
      'string:DPI-C',
      'string:A"',
      'string:a\nb',
    ]);
    expect(decodeSvString('\\/tmp\\056\\056')).toBe('/tmp..');
  });

  it('takes a string without backslashes across lines, as flex does, and """ for a triple-quoted one', () => {
    expect(toks('x = """a "b" c"""; y = "p\nq";').filter((t) => t.startsWith('string'))).toEqual(['string:a "b" c', 'string:p\nq']);
  });

  it('lets `line, `pragma and `timescale take the rest of their line', () => {
    expect(toks('`pragma foo $system("x")\n`timescale 1ns/1ps $c("y")\n`line 3 "a.sv" 0 /* z\nwire w;')).toEqual([
      'directive:pragma',
      'directive:timescale',
      'directive:line',
      'id:wire',
      'id:w',
      'op:;',
    ]);
  });

  it('reads `begin_keywords and its string as two tokens', () => {
    expect(toks('`begin_keywords "1800-2017"\nmodule m; endmodule\n`end_keywords').slice(0, 3)).toEqual([
      'directive:begin_keywords',
      'string:1800-2017',
      'id:module',
    ]);
  });

  it('reads the lines after `systemc_* as C++ up to a line that starts with a backtick', () => {
    const all = tokenize('`systemc_header\n#include "x.h" // "\n`verilog\nwire w;');
    expect(all.map((t) => t.kind)).toEqual(['directive', 'cxx', 'directive', 'id', 'id', 'op']);
  });

  it('takes // and star-free /* */ comments (the preprocessor leaves only metacomments)', () => {
    expect(toks('/*verilator public*/ wire /**/ w; // $system("x")')).toEqual(['id:wire', 'id:w', 'op:;']);
  });

  it('keeps $c and $cpure with digits as one system token, apart from $cast', () => {
    expect(toks('$c32("1"); $cpure("2"); $cast(a, b);').filter((t) => t.startsWith('system'))).toEqual([
      'system:$c32',
      'system:$cpure',
      'system:$cast',
    ]);
  });
});
