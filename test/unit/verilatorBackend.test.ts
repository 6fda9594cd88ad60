import { describe, expect, it } from 'vitest';
import { classifyRun, designArgs, stopPositions } from '../../src/core/sim/verilator/backend.js';
import type { SimRequest } from '../../src/core/sim/simulator.js';
import type { SimLimits } from '../../src/core/vocabulary/types.js';
import type { RunResult } from '../../src/core/util/proc.js';
import { emptyDesign, type DesignSpec } from '../../src/core/design/types.js';
import { runResult } from '../helpers.js';

const LIMITS: SimLimits = {
  timeoutS: 30,
  simTimeLimitNs: 5000,
  outputLimitBytes: 1024,
  memoryLimitMb: 512,
  buildTimeoutS: 100,
  buildMemoryLimitMb: 1024,
  runDirLimitBytes: 1 << 20,
};

const run = (fields: Partial<RunResult>): RunResult => runResult(fields);

const runDiag = (code: string, message: string, severity: 'error' | 'warning' = 'error') => ({
  file: '',
  origin: 'testbench',
  line: 1,
  column: 1,
  severity,
  code,
  message,
  stage: 'run',
});

const TIMEOUT_MSG =
  'the simulation did not finish within 30s of wall-clock time: the testbench must end with $finish (a free-running clock never runs out of events)';

describe('classifyRun', () => {
  it('spawnError -> exception, before anything else', () => {
    expect(classifyRun(run({ spawnError: 'ENOENT', exitCode: null, timedOut: true, cancelled: true }), LIMITS)).toEqual({
      status: 'exception',
      message: 'cannot start the simulation: ENOENT',
    });
  });

  it('cancelled -> exception "cancelled", before overflow and timeout', () => {
    expect(classifyRun(run({ cancelled: true, outputOverflow: true, timedOut: true, exitCode: null, signal: 'SIGTERM' }), LIMITS)).toEqual({
      status: 'exception',
      message: 'cancelled',
    });
  });

  it('outputOverflow -> xrun_failed with CHORUS-OUTPUT naming the byte limit, before timeout', () => {
    const m = 'the simulation printed more than 1024 bytes (the output limit) and was stopped';
    expect(classifyRun(run({ outputOverflow: true, timedOut: true, exitCode: null, signal: 'SIGTERM' }), LIMITS)).toEqual({
      status: 'xrun_failed',
      message: m,
      diagnostic: runDiag('CHORUS-OUTPUT', m),
    });
  });

  it('timedOut -> timeout with CHORUS-TIMEOUT naming the wall-clock limit', () => {
    expect(classifyRun(run({ timedOut: true, exitCode: null, signal: 'SIGKILL' }), LIMITS)).toEqual({
      status: 'timeout',
      message: TIMEOUT_MSG,
      diagnostic: runDiag('CHORUS-TIMEOUT', TIMEOUT_MSG),
    });
  });

  it('exit 124 (the in-jail timeout) -> the same timeout', () => {
    expect(classifyRun(run({ exitCode: 124 }), LIMITS)).toEqual({
      status: 'timeout',
      message: TIMEOUT_MSG,
      diagnostic: runDiag('CHORUS-TIMEOUT', TIMEOUT_MSG),
    });
  });

  it('exit 125 -> timeout with CHORUS-SIMTIME naming the simulated-time limit', () => {
    const m = 'the simulation reached the simulated-time limit of 5000 ns without $finish: add $finish after the stimulus';
    expect(classifyRun(run({ exitCode: 125 }), LIMITS)).toEqual({
      status: 'timeout',
      message: m,
      diagnostic: runDiag('CHORUS-SIMTIME', m),
    });
  });

  it('exit 3 (out of events) -> success with a CHORUS-NOFINISH warning', () => {
    const m = 'the simulation ran out of events without $finish; end the stimulus with $finish';
    expect(classifyRun(run({ exitCode: 3 }), LIMITS)).toEqual({
      status: 'success',
      message: m,
      diagnostic: runDiag('CHORUS-NOFINISH', m, 'warning'),
    });
  });

  it('SIGABRT or exit 134 -> xrun_failed (aborted), no diagnostic', () => {
    const expected = { status: 'xrun_failed', message: 'the simulation aborted ($fatal, $stop or a fatal run-time error)' };
    expect(classifyRun(run({ exitCode: null, signal: 'SIGABRT' }), LIMITS)).toEqual(expected);
    expect(classifyRun(run({ exitCode: 134 }), LIMITS)).toEqual(expected);
  });

  it('SIGXFSZ, or exit 153 through bwrap -> xrun_failed with CHORUS-OUTPUT naming the file-size limit and its value', () => {
    const m = 'the testbench wrote a file larger than the file-size limit of 1024 bytes (outputLimitBytes) and was stopped';
    const expected = { status: 'xrun_failed', message: m, diagnostic: runDiag('CHORUS-OUTPUT', m) };
    expect(classifyRun(run({ exitCode: null, signal: 'SIGXFSZ' }), LIMITS)).toEqual(expected);
    expect(classifyRun(run({ exitCode: 153 }), LIMITS)).toEqual(expected);
  });

  it('a crash signal names the memory limit it may come from; any other signal is named', () => {
    expect(classifyRun(run({ exitCode: null, signal: 'SIGSEGV' }), LIMITS)).toEqual({
      status: 'xrun_failed',
      message: 'the simulation crashed with SIGSEGV (an allocation past the memory limit of 512 MiB of address space ends this way too)',
    });
    expect(classifyRun(run({ exitCode: 139 }), { ...LIMITS, memoryLimitMb: null }).message).toBe('the simulation crashed with SIGSEGV');
    expect(classifyRun(run({ exitCode: null, signal: 'SIGTERM' }), LIMITS).message).toBe('the simulation was killed by SIGTERM');
  });

  it('SIGKILL from outside before the time limit -> exception (scored again), not the testbench failing', () => {
    expect(classifyRun(run({ exitCode: null, signal: 'SIGKILL', durationS: 0.1 }), LIMITS)).toMatchObject({ status: 'exception' });
    expect(classifyRun(run({ exitCode: 137, signal: null, durationS: 0.1 }), LIMITS).message).toMatch(
      /killed by SIGKILL from outside the run/,
    );
    expect(classifyRun(run({ exitCode: null, signal: 'SIGKILL', durationS: LIMITS.timeoutS + 1 }), LIMITS).status).toBe('xrun_failed');
  });

  it('exit 0 and exit 1 -> success with no message', () => {
    expect(classifyRun(run({ exitCode: 0 }), LIMITS)).toEqual({ status: 'success', message: '' });
    expect(classifyRun(run({ exitCode: 1 }), LIMITS)).toEqual({ status: 'success', message: '' });
  });

  it('any other exit code -> xrun_failed naming the code', () => {
    expect(classifyRun(run({ exitCode: 2 }), LIMITS)).toEqual({ status: 'xrun_failed', message: 'the simulation exited with code 2' });
    expect(classifyRun(run({ exitCode: 200 }), LIMITS)).toEqual({ status: 'xrun_failed', message: 'the simulation exited with code 200' });
  });

  it('a timed-out run is a timeout even when it also exited 125 or 3', () => {
    expect(classifyRun(run({ timedOut: true, exitCode: 125 }), LIMITS).status).toBe('timeout');
    expect(classifyRun(run({ timedOut: true, exitCode: 3 }), LIMITS).diagnostic?.code).toBe('CHORUS-TIMEOUT');
  });
});

describe('stopPositions', () => {
  it('lists base:line of every $fatal and $stop call, file by file', () => {
    const tb = ['module tb;', '  initial begin', '    if (x) $fatal(1, "bad");', '    $stop;', '    $finish;', '  end', 'endmodule'].join(
      '\n',
    );
    const dut = ['module counter;', '  always @* if (q > 3) $stop();', 'endmodule'].join('\n');
    expect(
      stopPositions([
        { name: 'tb_counter.sv', content: tb },
        { name: '/abs/rtl/counter.sv', content: dut },
      ]),
    ).toEqual(['tb_counter.sv:3', 'tb_counter.sv:4', 'counter.sv:2']);
  });

  it('ignores $fatal/$stop in comments and strings, and similar names', () => {
    const src = [
      '// $fatal(1);',
      '/* $stop; */',
      '$display("$fatal is not called");',
      '$stopped = 1;',
      '$fatalx();',
      '$error("not a stop");',
      '$finish;',
    ].join('\n');
    expect(stopPositions([{ name: 'tb.sv', content: src }])).toEqual([]);
  });

  it('lists a line once even with two calls, and counts lines across a block comment', () => {
    const src = ['/* one', 'two */', '$stop; $fatal;', '$fatal(0)'].join('\n');
    expect(stopPositions([{ name: 'a/b/tb.sv', content: src }])).toEqual(['tb.sv:3', 'tb.sv:4']);
  });

  it('returns [] for no files', () => {
    expect(stopPositions([])).toEqual([]);
  });
});

describe('designArgs', () => {
  const req = (design: DesignSpec): SimRequest => ({ design, top: 'counter', testbench: { name: 'tb.sv', content: '' } });

  it('turns include dirs, defines and library files into Verilator arguments, in that order', () => {
    const design: DesignSpec = {
      files: ['/rtl/counter.sv'],
      libraryFiles: ['/lib/cells.v', '/lib/ram.v'],
      includeDirs: ['/rtl/inc', '/common'],
      defines: { SIM: null, WIDTH: '8', MSG: 'a b' },
      params: { DEPTH: '16' },
    };
    expect(designArgs(req(design))).toEqual([
      '-I/rtl/inc',
      '-I/common',
      '-DSIM',
      '-DWIDTH=8',
      '-DMSG=a b',
      '-v',
      '/lib/cells.v',
      '-v',
      '/lib/ram.v',
    ]);
  });

  it('leaves the library files out when asked', () => {
    const design: DesignSpec = { ...emptyDesign(), libraryFiles: ['/lib/cells.v'], includeDirs: ['/inc'], defines: { X: '' } };
    expect(designArgs(req(design), false)).toEqual(['-I/inc', '-DX=']);
  });

  it('gives nothing for a bare design (files and parameters are passed elsewhere)', () => {
    expect(designArgs(req({ ...emptyDesign(), files: ['/rtl/a.sv'], params: { W: '4' } }))).toEqual([]);
  });
});

describe('readsEarlierMacros', () => {
  // Changed: this used to decide whether the testbench was preprocessed and checked at all
  // (needsPreprocessing); now every testbench is, with the build's flags and files. It only
  // decides whether the library build's view of the testbench needs its own -E pass.
  it('is false for plain directives and escaped identifiers holding backticks; true for macros, conditionals and includes', async () => {
    const { readsEarlierMacros } = await import('../../src/core/sim/verilator/backend.js');
    expect(readsEarlierMacros('`timescale 1ns/1ps\n`default_nettype none\nmodule tb; wire \\a`FOO ; endmodule\n')).toBe(false);
    expect(readsEarlierMacros('module tb; initial $display("a `quoted` tick"); endmodule // `FOO')).toBe(false);
    expect(readsEarlierMacros('`define N 4\nmodule tb; endmodule\n')).toBe(false);
    expect(readsEarlierMacros('`define N 4\nmodule tb; initial repeat (`N) #1; endmodule\n')).toBe(true);
    expect(readsEarlierMacros('`ifdef WIDTH\n`endif\nmodule tb; endmodule\n')).toBe(true);
    expect(readsEarlierMacros('`include "defs.svh"\nmodule tb; endmodule\n')).toBe(true);
  });
});
