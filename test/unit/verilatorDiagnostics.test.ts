import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  cxxToolProblem,
  didNotConverge,
  isNoise,
  loopSignals,
  parseVerilatorMessages,
  splitVarConfig,
  toolProblem,
  toolCrash,
  type FileClassifier,
} from '../../src/core/sim/verilator/diagnostics.js';
import type { Diagnostic } from '../../src/core/sim/result.js';

// Captured from Verilator 5.006 (see test/fixtures/unit/verilator/README.md).
const fixture = (name: string): string => readFileSync(new URL(`../fixtures/unit/verilator/${name}`, import.meta.url), 'utf8');

/** The testbench is known by its name; DUT files map to absolute paths; the rest is `other`. */
const classify: FileClassifier = (file) => {
  if (file === 'tb_pin.sv' || file === 'tb.sv') return { file, origin: 'testbench' };
  if (['syntax.sv', 'counter.sv', 'width.sv', 'sync_fifo.sv'].includes(file)) return { file: `/design/${file}`, origin: 'dut' };
  if (file.startsWith('/rtl/')) return { file, origin: 'dut' };
  return { file, origin: 'other' };
};

describe('parseVerilatorMessages: real compile-time output', () => {
  it('syntax error: file, line, column and the ^~~~ underline width; "Cannot continue" is not a diagnostic', () => {
    expect(parseVerilatorMessages(fixture('syntax.stderr'), classify, 'lint')).toEqual<Diagnostic[]>([
      {
        file: '/design/syntax.sv',
        origin: 'dut',
        line: 7,
        column: 1,
        endColumn: 10,
        severity: 'error',
        code: undefined,
        message: 'syntax error, unexpected endmodule',
        stage: 'lint',
      },
    ]);
  });

  it('PINNOTFOUND with its suggested alternative, after two warnings', () => {
    const ds = parseVerilatorMessages(fixture('pinnotfound.stderr'), classify, 'lint');
    expect(ds).toEqual<Diagnostic[]>([
      {
        file: 'tb_pin.sv',
        origin: 'testbench',
        line: 1,
        column: 8,
        endColumn: 10,
        severity: 'warning',
        code: 'DECLFILENAME',
        message: "Filename 'tb_pin' does not match MODULE name: 'tb'",
        stage: 'lint',
      },
      {
        file: 'tb_pin.sv',
        origin: 'testbench',
        line: 4,
        column: 11,
        endColumn: 14,
        severity: 'warning',
        code: 'PINMISSING',
        message: "Cell has missing pin: 'clk'",
        stage: 'lint',
      },
      {
        file: 'tb_pin.sv',
        origin: 'testbench',
        line: 4,
        column: 17,
        endColumn: 21,
        severity: 'error',
        code: 'PINNOTFOUND',
        message: "Pin not found: 'clkk'",
        suggestion: 'clk',
        stage: 'lint',
      },
    ]);
  });

  it('WIDTH warning: the "... In instance" continuation is not added to the message', () => {
    const ds = parseVerilatorMessages(fixture('width.stderr'), classify, 'lint');
    expect(ds.map((d) => [d.code, d.severity, d.file, d.origin, d.line, d.column, d.endColumn])).toEqual([
      ['DECLFILENAME', 'warning', '/design/width.sv', 'dut', 1, 8, 11],
      ['WIDTH', 'warning', '/design/width.sv', 'dut', 5, 12, 13],
      ['UNUSEDSIGNAL', 'warning', '/design/width.sv', 'dut', 9, 15, 16],
      ['UNUSEDSIGNAL', 'warning', '/design/width.sv', 'dut', 2, 22, 23],
    ]);
    expect(ds[1].message).toBe("Operator ASSIGNW expects 4 bits on the Assign RHS, but Assign RHS's VARREF 'a' generates 8 bits.");
    expect(ds[3].message).toBe("Bits of signal are not used: 'a'[7:4]");
    expect(ds.every((d) => d.suggestion === undefined && d.time === undefined)).toBe(true);
  });

  it('the "... For warning description" help lines do not leak into the message', () => {
    const [decl] = parseVerilatorMessages(fixture('width.stderr'), classify, 'lint');
    expect(decl.message).toBe("Filename 'width' does not match MODULE name: 'sub'");
  });
});

describe('parseVerilatorMessages: run-time output', () => {
  it('reads the assertion form with its simulation time and the ASSERT code', () => {
    const ds = parseVerilatorMessages('[65000] %Error: sync_fifo.sv:44: Assertion failed in tb.uut: push while full\n', classify, 'run');
    expect(ds).toEqual<Diagnostic[]>([
      {
        file: '/design/sync_fifo.sv',
        origin: 'dut',
        line: 44,
        column: 1,
        severity: 'error',
        code: 'ASSERT',
        message: 'Assertion failed in tb.uut: push while full',
        time: '65000',
        stage: 'run',
      },
    ]);
  });

  it('reads a real run log: the failed assertion, then the $stop it caused', () => {
    const ds = parseVerilatorMessages(fixture('assert_run.stderr'), classify, 'run');
    expect(ds.map((d) => [d.file, d.line, d.column, d.severity, d.code, d.message, d.time])).toEqual([
      ['/design/sync_fifo.sv', 14, 1, 'error', 'ASSERT', 'Assertion failed in TOP.tb.uut: push while full', '35'],
      ['/design/sync_fifo.sv', 14, 1, 'error', undefined, 'Verilog $stop', undefined],
    ]);
  });

  it('reads $fatal, $warning and $info forms, fractional times and an empty message', () => {
    const log = [
      '%Fatal: tb.sv:12: boom',
      '[1500.5] %Warning: tb.sv:20: late response',
      '%Info: tb.sv:3:',
      '[7] %Error-USER: other.sv:9: custom',
    ].join('\n');
    expect(
      parseVerilatorMessages(log, classify, 'run').map((d) => [d.file, d.origin, d.line, d.severity, d.code, d.message, d.time]),
    ).toEqual([
      ['tb.sv', 'testbench', 12, 'error', 'FATAL', 'boom', undefined],
      ['tb.sv', 'testbench', 20, 'warning', undefined, 'late response', '1500.5'],
      ['tb.sv', 'testbench', 3, 'info', undefined, '$info', undefined],
      ['other.sv', 'other', 9, 'error', 'USER', 'custom', '7'],
    ]);
  });
});

describe('parseVerilatorMessages: structure', () => {
  it('passes the stage through and accepts absolute paths and CRLF', () => {
    const log =
      '%Warning-WIDTH: /rtl/counter.sv:5:12: Operator ASSIGN expects 4 bits\r\n    5 |   assign q = d;\r\n      |            ^\r\n';
    expect(parseVerilatorMessages(log, classify, 'build')).toEqual<Diagnostic[]>([
      {
        file: '/rtl/counter.sv',
        origin: 'dut',
        line: 5,
        column: 12,
        endColumn: 13,
        severity: 'warning',
        code: 'WIDTH',
        message: 'Operator ASSIGN expects 4 bits',
        stage: 'build',
      },
    ]);
  });

  it('takes an underline only right after the echo of the same line', () => {
    const log = [
      '%Error: tb.sv:4:3: first',
      '      |  ^~~~', // no echo before it
      '%Error: tb.sv:8:5: second',
      '    9 | other line', // echo of another line
      '      |     ^~~',
    ].join('\n');
    const ds = parseVerilatorMessages(log, classify, 'lint');
    expect(ds.map((d) => [d.line, d.endColumn])).toEqual([
      [4, undefined],
      [8, undefined],
    ]);
  });

  it('adds other "... " continuation lines to the message but not "In instance" or "note:"', () => {
    const log = [
      "%Error: tb.sv:6:9: Duplicate declaration of signal: 'x'",
      '                 : ... Location of original declaration',
      '                 : ... In instance tb',
      '                 : ... note: In instance tb',
    ].join('\n');
    expect(parseVerilatorMessages(log, classify, 'lint')[0].message).toBe(
      "Duplicate declaration of signal: 'x' (Location of original declaration)",
    );
  });

  it('ignores text before the first message and lines that are not messages', () => {
    const log = [
      '- V e r i l a t i o n   R e p o r t',
      '    3 | echo with no message',
      "    : ... Suggested alternative: 'z'",
      '%Error: Exiting due to 2 error(s)',
      'make: *** [all] Error 1',
    ].join('\n');
    expect(parseVerilatorMessages(log, classify, 'lint')).toEqual([]);
  });

  it('returns [] for an empty log', () => {
    expect(parseVerilatorMessages('', classify, 'lint')).toEqual([]);
  });
});

describe('isNoise', () => {
  const d = (message: string): Diagnostic => ({
    file: 'x',
    origin: 'other',
    line: 1,
    column: 1,
    severity: 'error',
    message,
    stage: 'lint',
  });
  it('flags the trailing error count only', () => {
    expect(isNoise(d('Exiting due to 3 error(s)'))).toBe(true);
    expect(isNoise(d('Pin not found: ‘clkk’'))).toBe(false);
    expect(isNoise(d('Something; Exiting due to 3 error(s)'))).toBe(false);
  });
});

describe('Verilator version differences in messages', () => {
  it('toolProblem: options a version refuses and missing installation files are tool problems', () => {
    expect(
      toolProblem(
        '%Error: Invalid option: --xml-only\n        ... See the manual at https://verilator.org/verilator_doc.html?v=0.000 for more assistance.\n',
      ),
    ).toMatch(/does not accept the option --xml-only/);
    expect(toolProblem('%Error: The following cannot be used together: --lint-only, --json-only. Suggest see manual\n')).toMatch(
      /--lint-only, --json-only/,
    );
    expect(toolProblem("Can't locate Pod/Usage.pm in @INC (you may need to install the Pod::Usage module)")).toMatch(/Perl wrapper/);
    expect(toolProblem('%Error: /x/include/verilated_std.sv: Cannot find file\n')).toMatch(/verilated_std\.sv is missing/);
    // A crash on the code is the candidate's (toolCrash), not the toolchain's.
    expect(
      toolProblem(
        "%Error: Internal Error: tb.sv:132:141: /project/src/src/V3Ast.h:1053: AstNode is not of expected type, but instead has type 'XOR'\n",
      ),
    ).toBeUndefined();
    // The design's own errors are not.
    expect(toolProblem('%Error: counter.sv:3:1: syntax error, unexpected endmodule\n%Error: Exiting due to 1 error(s)\n')).toBeUndefined();
    expect(toolProblem("%Error: Specified --top-module 'nope' was not found in design.\n")).toBeUndefined();
  });

  it('toolCrash: internal errors, internal compiler errors and crash signals, with the position named', () => {
    const internal = toolCrash(
      {
        all: "%Error: Internal Error: tb.sv:132:141: /project/src/src/V3Ast.h:1053: AstNode is not of expected type, but instead has type 'XOR'\n",
        exitCode: 1,
        signal: null,
      },
      "Verilator's front end",
    );
    expect(internal).toMatchObject({ file: 'tb.sv', line: 132, column: 141 });
    expect(internal!.message).toMatch(/^Verilator's front end crashed with an internal error on this code \(.*V3Ast\.h:1053/);
    expect(
      toolCrash({ all: 'x.cpp:3:1: internal compiler error: Segmentation fault\n', exitCode: 1, signal: null }, 'g++')!.message,
    ).toMatch(/internal compiler error \(Segmentation fault\)/);
    expect(toolCrash({ all: '', exitCode: null, signal: 'SIGSEGV' }, 'v')!.message).toMatch(/crashed \(SIGSEGV\)/);
    expect(toolCrash({ all: '', exitCode: 139, signal: null }, 'v')!.message).toMatch(/exit 139/);
    // Not crashes: the OOM killer (SIGKILL, 137), our own timeout (SIGTERM), an ordinary error.
    expect(toolCrash({ all: '', exitCode: 137, signal: null }, 'v')).toBeUndefined();
    expect(toolCrash({ all: '', exitCode: null, signal: 'SIGTERM' }, 'v')).toBeUndefined();
    expect(toolCrash({ all: '%Error: tb.sv:3:1: syntax error\n', exitCode: 1, signal: null }, 'v')).toBeUndefined();
  });

  it('cxxToolProblem: a missing runtime header or an unknown option is the toolchain, a C++ error in the model is not', () => {
    expect(cxxToolProblem('chorus_unit0.cpp:1:10: fatal error: verilated.h: No such file or directory\ncompilation terminated.')).toMatch(
      /runtime header verilated\.h/,
    );
    expect(cxxToolProblem("g++: error: unrecognized command-line option '-fcoroutines'")).toMatch(/does not know the option -fcoroutines/);
    expect(cxxToolProblem('/usr/bin/ld: cannot find -latomic: No such file or directory')).toMatch(/libatomic/);
    expect(cxxToolProblem("Vtb___024root.cpp:12:5: error: 'foo' was not declared in this scope")).toBeUndefined();
  });

  it('didNotConverge reads 5.006 and current wording', () => {
    expect(didNotConverge('%Error: tb_rd.sv:5: Active region did not converge.\nAborting...\n')).toEqual({ region: 'Active', limit: null });
    expect(
      didNotConverge(
        "%Error-DIDNOTCONVERGE: tb_rd.sv:5: Active region did not converge after '--converge-limit' of 10000 tries\nAborting...\n",
      ),
    ).toEqual({ region: 'Active', limit: 10000 });
    expect(didNotConverge('%Error: tb.sv:9: Assertion failed in tb\n')).toBeUndefined();
  });

  it('loopSignals names the looping signals below the DUT instance; splitVarConfig asks to split them', () => {
    const log =
      "%Warning-UNOPTFLAT: /d/restore_division.sv:25:27: Signal unoptimizable: Circular combinational logic: 'tb_restoring_division.uut.next_count'\n";
    const diags = parseVerilatorMessages(log, (f) => ({ file: f, origin: 'dut' }), 'lint');
    const loops = loopSignals(diags);
    expect(loops.map((l) => l.name)).toEqual(['next_count']);
    expect(loops[0].at).toMatchObject({ file: '/d/restore_division.sv', line: 25, column: 27 });
    expect(splitVarConfig(['next_count', 'u_a.acc[3]'])).toBe(
      '`verilator_config\nsplit_var -module "*" -var "next_count"\nsplit_var -module "*" -var "acc"\n',
    );
  });
});
