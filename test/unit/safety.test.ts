import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { scratchDir } from '../helpers.js';
import { join } from 'node:path';
import { checkPreprocessed, checkTestbench, includedFileProblems } from '../../src/core/sim/safety.js';
import { blankComments } from '../../src/core/design/lexer.js';
import type { Diagnostic } from '../../src/core/sim/result.js';

const JAILED = { jailed: true, file: 'tb_x.sv' };
const OPEN = { jailed: false, file: 'tb_x.sv' };

/** Wraps statements in an initial block: the first statement is on line 4. */
const tb = (...stmts: string[]): string =>
  ['module tb;', '  integer fd;', '  initial begin', ...stmts.map((s) => `    ${s}`), '  end', 'endmodule', ''].join('\n');

const where = (ds: Diagnostic[]) => ds.map((d) => [d.code, d.line, d.column, d.endColumn]);

const sp = (n: number): string => ' '.repeat(n);

describe('blankComments', () => {
  it('blanks line comments up to the newline, keeping every offset', () => {
    const src = 'a = 1; // $system("x")\nb = 2;';
    const out = blankComments(src);
    expect(out).toBe(`a = 1; ${sp(15)}\nb = 2;`);
    expect(out).toHaveLength(src.length);
  });

  it('blanks block comments but keeps their newlines', () => {
    expect(blankComments('x /* one\ntwo */ y')).toBe(`x ${sp(6)}\n${sp(6)} y`);
  });

  it('blanks an unterminated block comment to the end', () => {
    expect(blankComments('a /* b c')).toBe(`a ${sp(6)}`);
  });

  it('keeps string bodies unless asked, and never treats // or /* inside a string as a comment', () => {
    const src = 's = "http://x/*y*/"; // c';
    expect(blankComments(src)).toBe(`s = "http://x/*y*/"; ${sp(4)}`);
    expect(blankComments(src, true)).toBe(`s = "${sp(13)}"; ${sp(4)}`);
  });

  it('handles escaped quotes inside strings', () => {
    const src = 'x = "ab\\"c"; // z';
    expect(blankComments(src, false)).toBe(`x = "ab\\"c"; ${sp(4)}`);
    expect(blankComments(src, true)).toBe(`x = "${sp(5)}"; ${sp(4)}`);
  });

  it('ends an unterminated string at the newline', () => {
    expect(blankComments('a "bc\nd // e', true)).toBe(`a "${sp(2)}\nd${sp(5)}`);
  });

  it('does not treat quotes inside comments as strings', () => {
    expect(blankComments('// "a\nb "c" // "d', true)).toBe(`${sp(5)}\nb " " ${sp(5)}`);
  });
});

describe('checkTestbench: shell escapes', () => {
  it('rejects $system with its exact position and every diagnostic field', () => {
    const ds = checkTestbench(tb('$system("ls");'), OPEN);
    expect(ds).toEqual<Diagnostic[]>([
      {
        file: 'tb_x.sv',
        origin: 'testbench',
        line: 4,
        column: 5,
        endColumn: 12,
        severity: 'error',
        code: 'CHORUS-SYSTEM',
        message: '$system runs a shell command on the host; testbenches may not do that',
        suggestion: 'Remove the $system call; drive the DUT from SystemVerilog only.',
        stage: 'check',
      },
    ]);
    // The jail does not make $system acceptable.
    expect(where(checkTestbench(tb('$system("ls");'), JAILED))).toEqual([['CHORUS-SYSTEM', 4, 5, 12]]);
  });

  it('does not flag $system inside comments or strings', () => {
    const src = tb(
      '// $system("rm -rf /");',
      '/* $system("x"); */',
      '$display("$system is never called");',
      '$display("a // b"); /* $system */',
    );
    expect(checkTestbench(src, OPEN)).toEqual([]);
  });

  it('finds $system after a string or comment on the same line, at the right column', () => {
    const src = 'module tb; initial begin $display("x"); /* c */ $system("id"); end endmodule';
    expect(where(checkTestbench(src, JAILED))).toEqual([['CHORUS-SYSTEM', 1, 49, 56]]);
  });

  it('does not take $systemx or $display for $system', () => {
    expect(checkTestbench(tb('$systemx("a");', '$display("b");'), OPEN)).toEqual([]);
  });
});

describe('checkTestbench: foreign code', () => {
  it('rejects import "DPI-C" and export "DPI-C" (and the old "DPI" form)', () => {
    const src = [
      'module tb;',
      '  import "DPI-C" function int system(input string cmd);',
      '  export   "DPI-C" task t;',
      'import "DPI" function void f();',
      'endmodule',
    ].join('\n');
    const ds = checkTestbench(src, JAILED);
    expect(where(ds)).toEqual([
      ['CHORUS-DPI', 2, 3, 17],
      ['CHORUS-DPI', 3, 3, 19],
      ['CHORUS-DPI', 4, 1, 13],
    ]);
    expect(ds[0].message).toBe('DPI imports/exports link foreign code into the simulation; testbenches may not do that');
    expect(ds[0].suggestion).toBe('Remove the DPI declaration and write the stimulus in SystemVerilog.');
  });

  it('does not flag a DPI import that is commented out', () => {
    expect(checkTestbench('module tb;\n  // import "DPI-C" function int f();\n  /* export "DPI-C" task t; */\nendmodule\n', OPEN)).toEqual(
      [],
    );
  });

  it('rejects $c( and $cNN( inline C++ but not $cast or $clog2', () => {
    const src = tb('$c("std::system(\\"ls\\")");', 'x = $c32 ("1");', '$cast(a, b);', 'y = $clog2(8);');
    const ds = checkTestbench(src, JAILED);
    expect(where(ds)).toEqual([
      ['CHORUS-CCODE', 4, 5, 8],
      ['CHORUS-CCODE', 5, 9, 15],
    ]);
    expect(ds[0].message).toBe("Verilator's inline C++ ($c, `systemc_*) would run arbitrary host code; testbenches may not use it");
  });

  it('rejects `systemc_header and friends', () => {
    const src = ['module tb;', '`systemc_header', '#include <cstdlib>', '`verilog', '  `systemc_ctor', 'endmodule'].join('\n');
    expect(where(checkTestbench(src, JAILED))).toEqual([
      ['CHORUS-CCODE', 2, 1, 16],
      ['CHORUS-CCODE', 5, 3, 16],
    ]);
  });

  it('does not flag $c( inside a string or comment', () => {
    expect(checkTestbench(tb('$display("$c(1)");', '// $c("x");'), OPEN)).toEqual([]);
  });
});

describe('checkTestbench: file writes', () => {
  it('rejects $fopen of an absolute path for writing, with the whole call underlined', () => {
    const ds = checkTestbench(tb('fd = $fopen("/etc/x","w");'), JAILED);
    expect(ds).toEqual<Diagnostic[]>([
      {
        file: 'tb_x.sv',
        origin: 'testbench',
        line: 4,
        column: 10,
        endColumn: 30,
        severity: 'error',
        code: 'CHORUS-FILE',
        message: "$fopen writes to '/etc/x', outside the run directory",
        suggestion: 'Use a plain relative file name (no leading /, no ..) or drop the file output.',
        stage: 'check',
      },
    ]);
  });

  it('rejects paths that climb out with .. or start at ~', () => {
    const ds = checkTestbench(tb('fd = $fopen("../x","w");', 'fd = $fopen("out/../../y", "a");', 'fd = $fopen("~/z", "w");'), JAILED);
    expect(ds.map((d) => [d.line, d.message])).toEqual([
      [4, "$fopen writes to '../x', outside the run directory"],
      [5, "$fopen writes to 'out/../../y', outside the run directory"],
      [6, "$fopen writes to '~/z', outside the run directory"],
    ]);
  });

  it('allows plain relative file names, jailed or not', () => {
    const src = tb(
      'fd = $fopen("ok.txt","w");',
      'fd = $fopen( "out/log.txt" , "a" );',
      '$dumpfile("waves.vcd");',
      '$writememh("mem.hex", mem);',
      'fd = $fopen("x..y.txt", "w");',
    );
    expect(checkTestbench(src, OPEN)).toEqual([]);
    expect(checkTestbench(src, JAILED)).toEqual([]);
  });

  // Changed (issue 12): reads used to be free; whatever a testbench reads it can print, and the
  // print travels back to the model endpoint. Reads outside the run directory are refused.
  it('refuses reading an absolute or climbing path with mode "r", jailed or not; allows relative reads', () => {
    for (const opts of [OPEN, JAILED]) {
      const ds = checkTestbench(
        tb('fd = $fopen("/etc/passwd","r");', 'fd = $fopen("../golden.txt", "r");', 'fd = $fopen("golden.txt", "r");'),
        opts,
      );
      expect(ds.map((d) => [d.code, d.line, d.column, d.endColumn, d.message])).toEqual([
        ['CHORUS-FILE', 4, 10, 35, "$fopen reads '/etc/passwd', outside the run and design directories"],
        ['CHORUS-FILE', 5, 10, 38, "$fopen reads '../golden.txt', outside the run and design directories"],
      ]);
      expect(ds[0].suggestion).toMatch(/plain relative name/);
    }
  });

  it('treats $fopen without a mode, or with "r+", as a write', () => {
    expect(where(checkTestbench(tb('fd = $fopen("/tmp/a");', 'fd = $fopen("/tmp/b", "r+");'), JAILED))).toEqual([
      ['CHORUS-FILE', 4, 10, 26],
      ['CHORUS-FILE', 5, 10, 32],
    ]);
  });

  it('allows a file name computed at run time only when jailed', () => {
    const src = tb('fd = $fopen(name_var,"w");');
    expect(checkTestbench(src, JAILED)).toEqual([]);
    const ds = checkTestbench(src, OPEN);
    expect(ds).toHaveLength(1);
    expect(ds[0]).toMatchObject({
      code: 'CHORUS-FILE',
      line: 4,
      column: 10,
      endColumn: 30,
      message: '$fopen with a file name computed at run time cannot be confined without an OS jail (bubblewrap is not available)',
      suggestion: 'Use a literal relative file name, or install bubblewrap so the run is jailed.',
    });
  });

  it('rejects $writememh/$writememb/$dumpfile to absolute paths', () => {
    const ds = checkTestbench(tb('$writememh("/tmp/x", mem);', '$writememb("/tmp/y", mem, 0, 3);', '$dumpfile("/tmp/w.vcd");'), JAILED);
    expect(ds.map((d) => [d.code, d.line, d.column, d.endColumn, d.message])).toEqual([
      ['CHORUS-FILE', 4, 5, 30, "$writememh writes to '/tmp/x', outside the run directory"],
      ['CHORUS-FILE', 5, 5, 36, "$writememb writes to '/tmp/y', outside the run directory"],
      ['CHORUS-FILE', 6, 5, 28, "$dumpfile writes to '/tmp/w.vcd', outside the run directory"],
    ]);
  });

  it('rejects $writememh to a computed name when not jailed', () => {
    expect(where(checkTestbench(tb('$writememh(fname, mem);'), OPEN))).toEqual([['CHORUS-FILE', 4, 5, 27]]);
    expect(checkTestbench(tb('$writememh(fname, mem);'), JAILED)).toEqual([]);
  });

  it('ignores file writes inside comments and strings', () => {
    const src = tb('// fd = $fopen("/etc/x","w");', '/* $writememh("/tmp/x", mem); */', '$display("$fopen(\\"/etc/x\\",\\"w\\")");');
    expect(checkTestbench(src, OPEN)).toEqual([]);
  });

  it('judges the path even with a comment between the arguments', () => {
    expect(where(checkTestbench(tb('fd = $fopen("/etc/x" /* why */, "w");'), JAILED))).toEqual([['CHORUS-FILE', 4, 10, 41]]);
  });
});

describe('checkTestbench: several findings', () => {
  it('reports every finding sorted by line then column', () => {
    const src = [
      'module tb; initial begin fd = $fopen("/x", "w"); $system("a"); end',
      '  import "DPI-C" function void f();',
      'endmodule',
    ].join('\n');
    expect(where(checkTestbench(src, OPEN))).toEqual([
      ['CHORUS-FILE', 1, 31, 48],
      ['CHORUS-SYSTEM', 1, 50, 57],
      ['CHORUS-DPI', 2, 3, 17],
    ]);
  });

  it('accepts an ordinary testbench', () => {
    const src = [
      'module tb_counter;',
      '  logic clk = 0; integer fd;',
      '  counter uut (.clk(clk));',
      '  always #5 clk = ~clk;',
      '  initial begin',
      '    fd = $fopen("trace.txt", "w");',
      '    $fdisplay(fd, "t=%0t", $time);',
      '    $fclose(fd);',
      '    $readmemh("init.hex", mem);',
      '    if (uut.q !== 0) $error("bad");',
      '    $finish;',
      '  end',
      'endmodule',
    ].join('\n');
    expect(checkTestbench(src, OPEN)).toEqual([]);
  });
});

describe('checkPreprocessed: macros cannot hide an escape', () => {
  // The engine runs `verilator -E` on testbenches that use the preprocessor and checks the
  // expanded text too; these used to slip through the plain-text check (verified to run shell
  // commands under Verilator 5.006 before the fix).
  const preprocess = (src: string): string => {
    const dir = scratchDir('chorus-pp-');
    writeFileSync(join(dir, 'tb.sv'), src);
    return execFileSync('verilator', ['-E', 'tb.sv'], { cwd: dir, encoding: 'utf8' });
  };
  it('rejects a DPI import whose "DPI-C" string comes from a macro', () => {
    const src = [
      '`define DPI "DPI-C"',
      'module tb;',
      '  import `DPI function int system(input string cmd);',
      '  initial void\'(system("id"));',
      'endmodule',
    ].join('\n');
    expect(checkTestbench(src, JAILED)).toEqual([]);
    const ds = checkPreprocessed(preprocess(src), JAILED);
    expect(ds.map((d) => [d.code, d.line])).toEqual([['CHORUS-DPI', 3]]);
  });

  it('rejects $system assembled by macro token pasting', () => {
    const src = ['`define SYS(x) $sys``x', 'module tb;', '  initial `SYS(tem)("id");', 'endmodule'].join('\n');
    const ds = checkPreprocessed(preprocess(src), JAILED);
    expect(ds.map((d) => [d.code, d.line])).toEqual([['CHORUS-SYSTEM', 3]]);
    expect(ds[0].message).toMatch(/after macro expansion/);
  });

  it('rejects $c hidden behind a macro', () => {
    const src = ['`define CC $c', 'module tb;', '  initial `CC("system(\\"id\\");");', 'endmodule'].join('\n');
    const ds = checkPreprocessed(preprocess(src), JAILED);
    expect(ds.map((d) => d.code)).toEqual(['CHORUS-CCODE']);
  });

  it('finds nothing in an innocent testbench that uses macros', () => {
    const src = ['`define N 4', 'module tb;', '  initial begin repeat (`N) #1; $finish; end', 'endmodule'].join('\n');
    expect(checkPreprocessed(preprocess(src), JAILED)).toEqual([]);
  });
});

describe('checkTestbench: string escapes and read modes', () => {
  // Fixed: the literal path used to be judged before string escapes were decoded. Verilator turns
  // "\/tmp/x" into /tmp/x and "\056\056/x" into ../x (verified: $fopen("\/tmp/...","w") wrote
  // the absolute path). Without a jail these writes escape the run directory. Expected
  // CHORUS-FILE for both; actual: no diagnostic.
  it('rejects absolute or climbing paths spelled with string escapes (no jail)', () => {
    const ds = checkTestbench(tb('fd = $fopen("\\/tmp/x", "w");', 'fd = $fopen("\\056\\056/x", "w");'), OPEN);
    expect(ds.map((d) => d.code)).toEqual(['CHORUS-FILE', 'CHORUS-FILE']);
  });

  // Fixed (was a false positive): only mode "r" is taken as a read; "rb" (binary read, IEEE
  // 1800-2017 21.3.1) is rejected. Expected no diagnostic; actual: CHORUS-FILE.
  // Changed again (issue 12): "rb" is a read like "r"; a relative binary read is fine, an
  // absolute one is refused as a read (not as a write).
  it('treats mode "rb" as a read', () => {
    expect(checkTestbench(tb('fd = $fopen("golden.bin","rb");'), OPEN)).toEqual([]);
    expect(checkTestbench(tb('fd = $fopen("/data/golden.bin","rb");'), OPEN).map((d) => d.message)).toEqual([
      "$fopen reads '/data/golden.bin', outside the run and design directories",
    ]);
  });
});

describe('checkTestbench: reads and `include (issue 12)', () => {
  it('refuses `include of absolute, ~, .. or hidden names, with the directive underlined', () => {
    const src = [
      '`include "/etc/shadow"',
      '`include <~/x.vh>',
      '`include "../up.vh"',
      '`include ".env"',
      '`include "defs.vh"',
      'module tb; endmodule',
    ].join('\n');
    const ds = checkTestbench(src, OPEN);
    expect(ds.map((d) => [d.code, d.line, d.column, d.endColumn])).toEqual([
      ['CHORUS-FILE', 1, 1, 23],
      ['CHORUS-FILE', 2, 1, 18],
      ['CHORUS-FILE', 3, 1, 20],
      ['CHORUS-FILE', 4, 1, 16],
    ]);
    expect(ds[0].message).toBe('`include "/etc/shadow" refused: \'/etc/shadow\' is outside the testbench and design directories');
    expect(ds[3].message).toBe('`include ".env" refused: \'.env\' names a hidden file');
    expect(ds[0].suggestion).toMatch(/plain relative name/);
    // The same with a jail: the compile steps are jailed too, but the check does not rely on it.
    expect(checkTestbench(src, JAILED)).toHaveLength(4);
  });

  it('refuses an `include whose name is not a literal (a macro), even jailed', () => {
    const src = '`define P "x.vh"\n`include `P\nmodule tb; endmodule\n';
    const ds = checkTestbench(src, JAILED);
    expect(ds.map((d) => [d.line, d.column])).toEqual([[2, 1]]);
    expect(ds[0].message).toMatch(/^`include refused: its file name is not a string literal \('`P'\)/);
  });

  it('follows a relative `include to the file: a symlink out of the design directory is refused', () => {
    const design = scratchDir('chorus-inc-');
    const outside = scratchDir('chorus-inc-out-');
    writeFileSync(join(outside, 'secret.vh'), 'x');
    writeFileSync(join(design, 'defs.vh'), '`define A 1\n');
    symlinkSync(join(outside, 'secret.vh'), join(design, 'leak.vh'));
    const paths = { includeDirs: [design], roots: [realpathSync(design)] };
    expect(checkTestbench('`include "defs.vh"\nmodule tb; endmodule\n', { ...JAILED, paths })).toEqual([]);
    const ds = checkTestbench('module tb;\n`include "leak.vh"\nendmodule\n', { ...JAILED, paths });
    expect(ds.map((d) => [d.code, d.line, d.column])).toEqual([['CHORUS-FILE', 2, 1]]);
    expect(ds[0].message).toMatch(/leads outside the design directories \(a symbolic link\?\)/);
  });

  it('a plain name that links to a dot-file of the design directory is refused (the jail hides that file)', () => {
    const design = scratchDir('chorus-inc-');
    writeFileSync(join(design, '.secret'), 'x');
    symlinkSync(join(design, '.secret'), join(design, 'a.vh'));
    const paths = { includeDirs: [design], roots: [realpathSync(design)] };
    const ds = checkTestbench('module tb;\n`include "a.vh"\nendmodule\n', { ...OPEN, paths });
    expect(ds.map((d) => [d.code, d.line])).toEqual([['CHORUS-FILE', 2]]);
  });

  it('refuses $readmemh/$readmemb of absolute or climbing paths; a computed one only without a jail', () => {
    const src = tb('$readmemh("/data/x.hex", mem);', '$readmemb("../x.bin", mem);', '$readmemh("ok.hex", mem);', '$readmemh(name, mem);');
    expect(where(checkTestbench(src, JAILED))).toEqual([
      ['CHORUS-FILE', 4, 5, 34],
      ['CHORUS-FILE', 5, 5, 31],
    ]);
    expect(checkTestbench(src, JAILED)[0].message).toBe("$readmemh reads '/data/x.hex', outside the run and design directories");
    expect(where(checkTestbench(src, OPEN)).map((w) => w[1])).toEqual([4, 5, 7]);
  });

  it('without a jail, refuses strings that name a path outside the run directory (a DUT parameter could open it)', () => {
    const src = tb('$display("a/b is fine, / alone too");', 'x = "/etc/shadow";', 'y = "../up.hex";');
    expect(where(checkTestbench(src, JAILED))).toEqual([]);
    const ds = checkTestbench(src, OPEN);
    expect(where(ds)).toEqual([
      ['CHORUS-FILE', 5, 9, 22],
      ['CHORUS-FILE', 6, 9, 20],
    ]);
    expect(ds[0].message).toMatch(/^the string '\/etc\/shadow' names a path outside the run directory/);
  });

  it('every file the preprocessor entered must lie in the run or design directories', () => {
    const run = scratchDir('chorus-pp-run-');
    const pre = [
      '`line 1 "tb.sv" 1',
      'module tb;',
      '`line 2 "tb.sv" 0',
      '`line 1 "/etc/hostname" 1',
      'host',
      '`line 2 "/etc/hostname" 2',
      '`line 3 "tb.sv" 0',
      'endmodule',
    ].join('\n');
    const ds = includedFileProblems(pre, { ...JAILED, paths: { runDir: run, includeDirs: [], roots: [] } });
    expect(ds.map((d) => [d.code, d.file, d.line])).toEqual([['CHORUS-FILE', 'tb.sv', 2]]);
    expect(ds[0].message).toBe(
      "the preprocessor was made to include '/etc/hostname', outside the testbench and design directories (after macro expansion)",
    );
  });
});

describe('checkTestbench: lexical forms that hid code from the old check (escaped identifiers, attributes, `pragma)', () => {
  it('sees code between two escaped identifiers holding /* and */', () => {
    const src = ['module tb;', '  wire \\c1/* ;', '  initial $c("std::abort();");', '  wire \\c2*/ ;', 'endmodule'].join('\n');
    expect(where(checkTestbench(src, JAILED))).toEqual([['CHORUS-CCODE', 3, 11, 14]]);
  });

  it('sees code after an escaped identifier holding a quote', () => {
    const src = ['module tb;', '  wire \\q" ;', '  import "DPI-C" function int f();', '  wire \\r" ;', 'endmodule'].join('\n');
    expect(where(checkTestbench(src, JAILED))).toEqual([['CHORUS-DPI', 3, 3, 17]]);
  });

  it('does not take an escaped identifier for the thing it names: \\$system is a wire', () => {
    expect(checkTestbench('module tb; wire \\$system ; wire \\import ; endmodule\n', OPEN)).toEqual([]);
  });

  it('sees code between two attributes whose "strings" the parser never reads', () => {
    const src = 'module tb;\n  (* a = " *) initial $system("id"); (* b = " *) wire w;\nendmodule\n';
    expect(where(checkTestbench(src, JAILED))).toEqual([['CHORUS-SYSTEM', 2, 23, 30]]);
  });

  it('ignores what an attribute holds', () => {
    expect(checkTestbench('module tb; (* note = "$system(1) import \\"DPI-C\\"" *) wire w; endmodule\n', OPEN)).toEqual([]);
  });

  it('sees code after a `pragma line whose /* the build never reads, and refuses the `pragma', () => {
    const src = ['module tb;', '`pragma foo /*', '  initial $system("id");', '// */', 'endmodule'].join('\n');
    const ds = checkTestbench(src, JAILED);
    expect(where(ds)).toEqual([
      ['CHORUS-PRAGMA', 2, 1, 15],
      ['CHORUS-SYSTEM', 3, 11, 18],
    ]);
    expect(ds[0].message).toMatch(/passes the rest of that line on unread but its -E pass reads it/);
    expect(ds[0].suggestion).toMatch(/Remove the `pragma/);
  });

  it('refuses a `pragma inside a macro, and accepts a plain one', () => {
    expect(where(checkTestbench('`define PR `pragma\nmodule tb; endmodule\n', JAILED))).toEqual([['CHORUS-PRAGMA', 1, 12, 19]]);
    expect(checkTestbench('`pragma protect begin\nmodule tb; endmodule\n', JAILED)).toEqual([]);
  });

  it('reads strings with \\" and line continuations as one literal', () => {
    const src = tb('$display("a\\" $system(1) \\', 'still the string \\" // not a comment");', '$system("x");');
    expect(where(checkTestbench(src, JAILED))).toEqual([['CHORUS-SYSTEM', 6, 5, 12]]);
  });

  it("takes a `define body's /* */ comment for code: it is part of the value and expands", () => {
    const src = '`define X \\x/* ; initial $system("id"); /* */\nmodule tb; wire `X\nendmodule\n';
    expect(checkTestbench(src, JAILED).map((d) => [d.code, d.line])).toEqual([['CHORUS-SYSTEM', 1]]);
  });

  it('leaves `begin_keywords, `timescale and a `line naming the testbench alone', () => {
    const src = '`begin_keywords "1800-2017"\n`timescale 1ns/1ps\nmodule tb;\n`line 10 "tb_x.sv" 0\nendmodule\n`end_keywords\n';
    expect(checkTestbench(src, JAILED)).toEqual([]);
  });
});

describe('checkTestbench: DPI by any string, $cpure', () => {
  it('refuses import or export followed by any string literal, escapes decoded or not', () => {
    const src = [
      'module tb;',
      '  import "\\104PI-C" function int a();',
      '  import "DPI-SC" function int b();',
      '  export "" task t;',
      '  import (* x *) "DPI-C" function int c();',
      'endmodule',
    ].join('\n');
    expect(where(checkTestbench(src, JAILED))).toEqual([
      ['CHORUS-DPI', 2, 3, 20],
      ['CHORUS-DPI', 3, 3, 18],
      ['CHORUS-DPI', 4, 3, 12],
      ['CHORUS-DPI', 5, 3, 25],
    ]);
  });

  it('does not take a package import for DPI', () => {
    expect(checkTestbench('module tb; import pkg::*; endmodule\n', JAILED)).toEqual([]);
  });

  it("refuses current releases' $cpure like $c", () => {
    expect(where(checkTestbench(tb('x = $cpure64("1");'), JAILED))).toEqual([['CHORUS-CCODE', 4, 9, 18]]);
  });
});

describe('checkTestbench: `verilator_config, `line, redefinitions (coverage integrity)', () => {
  it('refuses a `verilator_config block', () => {
    const src = '`verilator_config\ncoverage_off -file "*counter.sv"\n`verilog\nmodule tb; endmodule\n';
    const ds = checkTestbench(src, JAILED);
    expect(ds).toEqual<Diagnostic[]>([
      {
        file: 'tb_x.sv',
        origin: 'testbench',
        line: 1,
        column: 1,
        endColumn: 18,
        severity: 'error',
        code: 'CHORUS-CONFIG',
        message:
          "a `verilator_config block changes how Verilator builds the design (coverage_off on the design's files shrinks the coverage measured); testbenches may not contain one",
        suggestion: 'Remove the `verilator_config ... `verilog block; the testbench needs no Verilator configuration.',
        stage: 'check',
      },
    ]);
  });

  it('refuses a `line that names another file, written out or in a macro, and one it cannot read', () => {
    const src = ['`line 1 "/rtl/counter.sv" 0', '`define L `line 5 "counter.sv" 1', 'module tb;', '`line 7 name 0', 'endmodule'].join('\n');
    const ds = checkTestbench(src, JAILED);
    expect(ds.map((d) => [d.code, d.line, d.column])).toEqual([
      ['CHORUS-LINE', 1, 1],
      ['CHORUS-LINE', 2, 11],
      ['CHORUS-LINE', 4, 1],
    ]);
    expect(ds[0].message).toBe(
      "`line names '/rtl/counter.sv', not the testbench: the testbench's code would claim to be in that file, and its coverage points to be the design's",
    );
    expect(ds[0].suggestion).toBe('Remove the `line directive; the testbench needs none.');
    expect(ds[2].message).toMatch(/^the `line directive '`line 7 name 0' names no file the check can read/);
  });

  it('refuses pasting onto a macro or directive name (it can build a `line)', () => {
    const ds = checkTestbench('`define T(x) `x``ine 1 "counter.sv" 0\nmodule tb; endmodule\n', JAILED);
    expect(ds.map((d) => [d.code, d.line, d.column])).toEqual([['CHORUS-LINE', 1, 14]]);
    expect(ds[0].message).toMatch(/^'`x``' pastes text onto a macro or directive name/);
    expect(checkTestbench('`define CAT(a, b) a``b\nmodule tb; endmodule\n', JAILED)).toEqual([]);
  });

  it("refuses a module, interface or package named like one of the design's, escaped names too", () => {
    const opts = { ...JAILED, designNames: ['counter', 'bus_if', 'cfg_pkg'] };
    const src = [
      'module \\counter (input clk);',
      'endmodule',
      'interface bus_if; endinterface',
      'package automatic cfg_pkg; endpackage',
      'module tb_counter;',
      '  virtual interface bus_if vif;',
      "  counter uut(.clk(1'b0));",
      'endmodule : tb_counter',
    ].join('\n');
    const ds = checkTestbench(src, opts);
    expect(ds.map((d) => [d.code, d.line, d.column, d.endColumn])).toEqual([
      ['CHORUS-REDEFINE', 1, 1, 16],
      ['CHORUS-REDEFINE', 3, 1, 17],
      ['CHORUS-REDEFINE', 4, 1, 26],
    ]);
    expect(ds[0].message).toBe(
      "the testbench declares 'counter', a name the design declares: it would replace the design's own 'counter' (and its coverage)",
    );
    expect(ds[0].suggestion).toBe(
      "Rename the testbench's 'counter' (tb_counter, say) and instantiate the design's 'counter' instead of redefining it.",
    );
    expect(checkTestbench(src, JAILED)).toEqual([]);
  });
});

describe('checkPreprocessed: the build view (design files first, then the testbench)', () => {
  const preprocessAll = (files: Record<string, string>, order: string[], args: string[] = []): string => {
    const dir = scratchDir('chorus-pp-');
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return execFileSync('verilator', ['-E', ...args, ...order], { cwd: dir, encoding: 'utf8' });
  };

  it('judges only the testbench: the design may do what the testbench may not', () => {
    const pre = preprocessAll(
      {
        'dut.sv': 'module dut; initial $system("date"); endmodule\n',
        'tb_x.sv': 'module tb; dut u(); endmodule\n',
      },
      ['dut.sv', 'tb_x.sv'],
    );
    expect(checkPreprocessed(pre, JAILED)).toEqual([]);
  });

  it("sees a macro of the design's files used in the testbench, and the build's defines", () => {
    const files = {
      'dut.sv': '`define RUN(x) $sys``x\nmodule dut; endmodule\n',
      'tb_x.sv': '`ifdef VERILATOR_TIMING\nmodule tb; initial `RUN(tem)("id"); endmodule\n`else\nmodule tb; endmodule\n`endif\n',
    };
    expect(checkPreprocessed(preprocessAll(files, ['dut.sv', 'tb_x.sv']), JAILED)).toEqual([]);
    const ds = checkPreprocessed(preprocessAll(files, ['dut.sv', 'tb_x.sv'], ['--timing']), JAILED);
    expect(ds.map((d) => [d.code, d.file, d.line])).toEqual([['CHORUS-SYSTEM', 'tb_x.sv', 2]]);
  });

  it('refuses a `line a macro built that names another file', () => {
    const pre = preprocessAll({ 'tb_x.sv': '`define T(x) `x``ine 20 "counter.sv" 0\nmodule tb;\n`T(l)\nendmodule\n' }, ['tb_x.sv']);
    const ds = checkPreprocessed(pre, JAILED);
    expect(ds.map((d) => [d.code, d.line])).toEqual([['CHORUS-LINE', 3]]);
    expect(ds[0].message).toMatch(/^a `line directive names 'counter.sv', not the testbench \(after macro expansion\)/);
  });

  it("accepts the testbench's own includes (their `line markers are no `line directive)", () => {
    const pre = preprocessAll({ 'defs.vh': 'localparam int N = 4;\n', 'tb_x.sv': 'module tb;\n`include "defs.vh"\nendmodule\n' }, [
      'tb_x.sv',
    ]);
    expect(checkPreprocessed(pre, JAILED)).toEqual([]);
  });
});

describe('checkTestbench: file names, more spellings', () => {
  it('reads a literal name inside parentheses as the literal', () => {
    expect(where(checkTestbench(tb('fd = $fopen(("/etc/x"), "w");'), JAILED))).toEqual([['CHORUS-FILE', 4, 10, 33]]);
  });

  it('reads an `include name after a comment', () => {
    expect(checkTestbench('`include /* why */ "defs.vh"\nmodule tb; endmodule\n', JAILED)).toEqual([]);
    expect(where(checkTestbench('`include /* why */ "/etc/x.vh"\nmodule tb; endmodule\n', JAILED))).toEqual([['CHORUS-FILE', 1, 1, 31]]);
  });
});

describe('blankComments: escaped identifiers and `pragma lines (as Verilator reads them)', () => {
  it('takes no comment or string start inside an escaped identifier, keeping every offset', () => {
    const src = 'wire \\c1/* ; $system("a"); wire \\q" ; // x';
    const out = blankComments(src, true);
    expect(out).toBe(`wire \\c1/* ; $system(" "); wire \\q" ; ${sp(4)}`);
    expect(out).toHaveLength(src.length);
  });

  it('leaves the rest of a `pragma line alone (the build reads it unlexed)', () => {
    expect(blankComments('`pragma x /* y\nz */')).toBe('`pragma x /* y\nz */');
  });
});
