// The engine on real Verilator: known coverage, every failure class, safety, concurrency.
import { describe, expect, it } from 'vitest';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { examples, read, simulateFiles } from '../helpers.js';
import { processesNaming } from '../../src/core/util/proc.js';

const counter = join(examples, 'counter', 'counter.sv');
const counterTb = read(join(examples, 'counter', 'tb_counter.sv'));
const weakTb = read(join(examples, 'counter', 'tb_counter_weak.sv'));

const tbWith = (body: string, ports = '.*'): string => `\`timescale 1ns/1ps
module tb;
  logic clk = 0, rst_n = 0, en = 0, load = 0, up = 1;
  logic [7:0] din = 0;
  logic [7:0] count;
  logic wrap;
  counter uut (${ports});
${body}
endmodule
`;

describe('known coverage on the example designs', () => {
  it('thorough counter testbench reaches 100% with exact counts', async () => {
    const r = await simulateFiles([counter], 'tb_counter.sv', counterTb);
    expect(r.status).toBe('success');
    expect(r.stage).toBe('success');
    const w = r.coverage!.waived;
    expect(w.tallies.line).toEqual({ covered: 5, total: 5 });
    expect(w.tallies.branch).toEqual({ covered: 2, total: 2 });
    expect(w.tallies.toggle).toEqual({ covered: 22, total: 22 });
    expect(w.overall).toBe(1);
    expect(r.reward).toBe(2);
    expect(r.cov_info!.summary[0]).toMatchObject({ name: 'counter', level: 0, 'Overall Average': 1, Block: 1, Toggle: 1 });
    expect(r.uncovered).toEqual([]);
  });

  it('weak counter testbench: exact partial counts, uncovered lines with source', async () => {
    const r = await simulateFiles([counter], 'tb_counter_weak.sv', weakTb);
    expect(r.status).toBe('success');
    const w = r.coverage!.waived;
    // Never loads, never counts down, never disables: 3 of 5 line points, 1 of 2 branch arms.
    expect(w.tallies.line).toEqual({ covered: 3, total: 5 });
    expect(w.tallies.branch).toEqual({ covered: 1, total: 2 });
    expect(w.tallies.toggle.total).toBe(22);
    // Only clk, count[0] and count[1] move both ways (rst_n and en rise once; count reaches 4).
    expect(w.tallies.toggle.covered).toBe(3);
    expect(w.block).toBeCloseTo(4 / 7, 10);
    expect(w.overall).toBeCloseTo((4 / 7 + 3 / 22) / 2, 10);
    expect(r.reward).toBeCloseTo(1 + (4 / 7 + 3 / 22) / 2, 10);
    const lines = r.uncovered.filter((u) => u.type !== 'toggle').map((u) => `${u.line}:${u.type}:${u.source}`);
    expect(lines).toContain('19:line:end else if (load) begin');
    expect(r.cov_info!.detail).toMatch(/Uncovered code/);
    expect(r.cov_info!.detail).toMatch(/counter\.sv:19 \[line elsif\] end else if \(load\) begin/);
  });

  it('FSM and FIFO examples run to success with high coverage', async () => {
    const fsm = await simulateFiles(
      [join(examples, 'fsm', 'seq_detector.sv')],
      'tb_seq_detector.sv',
      read(join(examples, 'fsm', 'tb_seq_detector.sv')),
    );
    expect(fsm.status).toBe('success');
    expect(fsm.coverage!.waived.block).toBeGreaterThan(0.9);
    const fifo = await simulateFiles(
      [join(examples, 'fifo', 'sync_fifo.sv')],
      'tb_sync_fifo.sv',
      read(join(examples, 'fifo', 'tb_sync_fifo.sv')),
    );
    expect(fifo.status).toBe('success');
    // The deliberate overfill trips the DUT's own assertion: reported at the DUT line, run continues.
    const a = fifo.diagnostics.find((d) => d.code === 'ASSERT');
    expect(a).toBeDefined();
    expect(a!.origin).toBe('dut');
    expect(a!.file).toBe(join(examples, 'fifo', 'sync_fifo.sv'));
    expect(a!.line).toBe(44);
    expect(a!.message).toMatch(/push while full/);
    expect(a!.time).toMatch(/^\d+$/);
    expect(fifo.coverage!.waived.overall).toBeGreaterThan(0.8);
  });
});

describe('testbench failures are results with positions', () => {
  it('syntax error', async () => {
    const r = await simulateFiles([counter], 'tb.sv', tbWith('  initial begin\n    en = 1 +;\n  end'));
    expect(r.status).toBe('xrun_failed');
    expect(r.stage).toBe('lint');
    expect(r.reward).toBe(0);
    const e = r.diagnostics.find((d) => d.severity === 'error')!;
    expect(e).toMatchObject({ file: 'tb.sv', origin: 'testbench', line: 9 });
    expect(e.message).toMatch(/syntax error/);
  });

  it('wrong port name gets PINNOTFOUND with the suggestion', async () => {
    const r = await simulateFiles(
      [counter],
      'tb.sv',
      tbWith('  initial $finish;', '.clk(clk), .rst_n(rst_n), .enn(en), .load(load), .up(up), .din(din), .count(count), .wrap(wrap)'),
    );
    expect(r.status).toBe('xrun_failed');
    const e = r.diagnostics.find((d) => d.code === 'PINNOTFOUND')!;
    expect(e).toMatchObject({ file: 'tb.sv', line: 7, column: 43, suggestion: 'en', severity: 'error' });
    expect(e.endColumn).toBe(46);
    expect(r.err_msg).toMatch(/tb\.sv:7:43/);
  });

  it('misspelled DUT module', async () => {
    const r = await simulateFiles([counter], 'tb.sv', tbWith('  initial $finish;').replace('counter uut', 'countr uut'));
    expect(r.status).toBe('xrun_failed');
    const e = r.diagnostics.find((d) => d.severity === 'error')!;
    expect(e).toMatchObject({ file: 'tb.sv', line: 7 });
    expect(e.message).toMatch(/countr/);
  });

  it('missing $finish with a free-running clock hits the simulated-time limit, coverage still measured', async () => {
    const r = await simulateFiles([counter], 'tb.sv', tbWith('  always #5 clk = ~clk;\n  initial begin #12 rst_n = 1; en = 1; end'), {
      limits: { simTimeLimitNs: 10_000 },
    });
    expect(r.status).toBe('timeout');
    expect(r.reward).toBe(0);
    expect(r.diagnostics.some((d) => d.code === 'CHORUS-SIMTIME')).toBe(true);
    expect(r.coverage!.waived.tallies.line.covered).toBeGreaterThan(0);
  });

  it('wall-clock timeout kills the run, still yields coverage, and leaves no process behind', async () => {
    const r = await simulateFiles([counter], 'tb.sv', tbWith('  always #5 clk = ~clk;\n  initial begin #12 rst_n = 1; en = 1; end'), {
      // 5 s, not less: on a loaded 2-core machine the jailed harness can take seconds to start, and a
      // SIGTERM before its handler is set leaves no coverage (seen once at 3 s in a full run).
      limits: { simTimeLimitNs: null, timeoutS: 5 },
    });
    // What the run said, in the failure message: a rare full-suite failure had no coverage here.
    const why = JSON.stringify({ err: r.err_msg, timings: r.timings, log: r.log.slice(-2000) });
    expect(r.status, why).toBe('timeout');
    expect(r.diagnostics.some((d) => d.code === 'CHORUS-TIMEOUT')).toBe(true);
    expect(r.coverage, why).not.toBeNull();
    expect(r.coverage!.waived.tallies.line.covered).toBeGreaterThan(0);
    expect(r.timings.run!).toBeLessThan(10);
    const left = processesNaming(r.protection.scratchDir ?? '\0none');
    expect(left).toEqual([]);
  });

  it('$fatal fails the run but coverage up to it is kept', async () => {
    const r = await simulateFiles(
      [counter],
      'tb.sv',
      tbWith('  always #5 clk = ~clk;\n  initial begin #12 rst_n = 1; en = 1; #50 $fatal(1, "stimulus gave up"); end'),
    );
    expect(r.status).toBe('xrun_failed');
    expect(r.stage).toBe('run');
    expect(r.reward).toBe(0);
    expect(r.err_msg).toMatch(/stimulus gave up|\$fatal/);
    expect(r.coverage!.waived.tallies.line.covered).toBeGreaterThan(0);
  });

  it('endless output is cut at the output limit', async () => {
    const r = await simulateFiles(
      [counter],
      'tb.sv',
      tbWith('  initial forever begin $display("spam spam spam spam spam spam"); #1; end'),
      { limits: { outputLimitBytes: 64 * 1024, simTimeLimitNs: null, timeoutS: 20 } },
    );
    expect(r.status).toBe('xrun_failed');
    expect(r.diagnostics.some((d) => d.code === 'CHORUS-OUTPUT')).toBe(true);
    expect(r.log.length).toBeLessThanOrEqual(70 * 1024);
  });

  it('a testbench that never instantiates the DUT has no DUT coverage', async () => {
    const r = await simulateFiles([counter], 'tb.sv', 'module tb; initial begin #1 $finish; end endmodule\n');
    expect(r.status).toBe('imc_report_summary_failed');
    expect(r.reward).toBe(0);
    expect(r.err_msg).toMatch(/does not instantiate module 'counter'/);
  });
});

describe('safety', () => {
  it('$system is rejected before anything runs, at the exact position', async () => {
    const r = await simulateFiles(
      [counter],
      'tb.sv',
      tbWith('  initial begin\n    void\'($system("touch /tmp/chorus_pwned"));\n    $finish;\n  end'),
    );
    expect(r.status).toBe('rejected');
    expect(r.stage).toBe('check');
    expect(r.diagnostics[0]).toMatchObject({ code: 'CHORUS-SYSTEM', line: 9, column: 11 });
    expect(r.timings.lint).toBeUndefined();
  });

  it('DPI imports and writes outside the run directory are rejected', async () => {
    const dpi = await simulateFiles([counter], 'tb.sv', tbWith('  import "DPI-C" function int getpid();\n  initial $finish;'));
    expect(dpi.status).toBe('rejected');
    expect(dpi.diagnostics[0].code).toBe('CHORUS-DPI');
    const w = await simulateFiles(
      [counter],
      'tb.sv',
      tbWith('  integer fd;\n  initial begin fd = $fopen("/tmp/evil.txt", "w"); $finish; end'),
    );
    expect(w.status).toBe('rejected');
    expect(w.diagnostics[0]).toMatchObject({ code: 'CHORUS-FILE', line: 9 });
  });

  it('a $system call assembled by macros is rejected after preprocessing', async () => {
    const src = '`define SYS(x) $sys``x\n' + tbWith('  initial begin\n    `SYS(tem)("touch /tmp/chorus_pwned");\n    $finish;\n  end');
    const r = await simulateFiles([counter], 'tb.sv', src);
    expect(r.status).toBe('rejected');
    expect(r.diagnostics[0]).toMatchObject({ code: 'CHORUS-SYSTEM', file: 'tb.sv', line: 10 });
  });

  it('the jail stops a write through a path built at run time', async () => {
    const target = join(tmpdir(), `chorus-escape-${process.pid}.txt`);
    rmSync(target, { force: true });
    const half = target.slice(0, 5);
    const rest = target.slice(5);
    const r = await simulateFiles(
      [counter],
      'tb.sv',
      tbWith(
        `  integer fd; string p;\n  initial begin p = {"${half}", "${rest}"}; fd = $fopen(p, "w"); if (fd != 0) $fwrite(fd, "escaped"); $finish; end`,
      ),
    );
    expect(r.protection.jail).toBe('bubblewrap');
    expect(r.status).toBe('success');
    expect(existsSync(target)).toBe(false);
  });

  it('the scratch directory is removed after the run', async () => {
    const r = await simulateFiles([counter], 'tb_counter.sv', counterTb);
    expect(r.protection.scratchDir).toBeTruthy();
    expect(existsSync(r.protection.scratchDir!)).toBe(false);
  });
});

describe('concurrency', () => {
  it('two runs in parallel share no files and agree', async () => {
    const [a, b] = await Promise.all([
      simulateFiles([counter], 'tb_counter.sv', counterTb),
      simulateFiles([counter], 'tb_counter_weak.sv', weakTb),
    ]);
    expect(a.status).toBe('success');
    expect(b.status).toBe('success');
    expect(a.protection.scratchDir).not.toBe(b.protection.scratchDir);
    expect(a.coverage!.waived.overall).toBe(1);
    expect(b.coverage!.waived.tallies.line.covered).toBe(3);
  });
});
