// The Verilator backend's check of the compiler's view: `verilator -E` with the build's flags and
// sources (the design's files first: their macros are defined when the testbench is read) and
// Verilator's parse of the exact build, both before anything is compiled. Each case here got past
// the checks that looked at the testbench alone, or at -E without the build's flags.
import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { counterTb, examples, read, scratchDir, sim } from '../helpers.js';
import { loadDesign } from '../../src/core/run/design.js';
import type { SimRequest } from '../../src/core/sim/simulator.js';
import { emptyDesign } from '../../src/core/design/types.js';

const counter = join(examples, 'counter', 'counter.sv');

/** A counter testbench with `extra` inside the module. */
const tb = (extra: string, before = ''): string =>
  counterTb(`${extra}\n  initial begin #10 $finish; end`, { name: 'tb_counter', pre: before });

async function simulate(files: string[], content: string, extra: Partial<SimRequest> = {}) {
  const { design, info } = await loadDesign({ files, top: extra.top });
  return sim.simulate({ design, top: info.top, testbench: { name: 'tb_counter.sv', content }, ...extra });
}

describe("the check sees what the build compiles (Verilator's -E and parse of the exact build)", () => {
  it('refuses $system that only the build defines into existence (`ifdef VERILATOR_TIMING, --timing)', async () => {
    const r = await simulate(
      [counter],
      tb('  initial `SYS(tem)("echo PWNED");', '`ifdef VERILATOR_TIMING\n`define SYS(x) $sys``x\n`else\n`define SYS(x) $display\n`endif\n'),
    );
    expect(r.status).toBe('rejected');
    expect(r.diagnostics.map((d) => [d.code, d.line])).toEqual([['CHORUS-SYSTEM', 13]]);
    expect(r.diagnostics[0].message).toMatch(/\(after macro expansion\)$/);
    expect(r.timings.build).toBeUndefined();
  });

  it("refuses $system built from a macro of the design's own files (the build reads them first)", async () => {
    const dir = scratchDir('chorus-dutmacro-');
    writeFileSync(join(dir, 'counter.sv'), `\`define RUN(x) $sys\`\`x\n${read(counter)}`);
    const r = await simulate([join(dir, 'counter.sv')], tb('`ifdef RUN\n  initial `RUN(tem)("echo PWNED");\n`endif'));
    expect(r.status).toBe('rejected');
    expect(r.diagnostics.map((d) => d.code)).toEqual(['CHORUS-SYSTEM']);
  });

  it('stops at the parse when Verilator cannot read the build: its messages are the lint result, nothing is compiled', async () => {
    const r = await simulate([counter], tb('  initial begin x = ; end'));
    expect([r.status, r.stage]).toEqual(['xrun_failed', 'lint']);
    expect(r.diagnostics.some((d) => d.severity === 'error' && d.file === 'tb_counter.sv' && d.line === 8)).toBe(true);
    expect(r.timings.lint).toBeUndefined();
    expect(r.timings.build).toBeUndefined();
  });

  it('refuses a macro-built `pragma (it hides the next lines from -E, not from the build; the parse sees them)', async () => {
    const r = await simulate([counter], tb('`PR fz /*\n  initial $system("echo PWNED");\n// */', '`define PR `pragma\n'));
    expect(r.status).toBe('rejected');
    expect(r.diagnostics.map((d) => d.code)).toEqual(['CHORUS-PRAGMA']);
  });

  it('still builds an ordinary testbench, and says what the check cost', async () => {
    const r = await simulate([counter], read(join(examples, 'counter', 'tb_counter.sv')));
    expect(r.status).toBe('success');
    expect(r.timings.check).toBeGreaterThan(0);
  });

  it("builds flat when the testbench's text depends on the design's macros (the library build reads it without them)", async () => {
    const dir = scratchDir('chorus-dutlib-');
    writeFileSync(join(dir, 'counter.sv'), `\`define COUNTER_W 8\n${read(counter)}`);
    const dependent = await simulate(
      [join(dir, 'counter.sv')],
      tb('`ifdef COUNTER_W\n  initial $display("width %0d", `COUNTER_W);\n`endif'),
      { build: 'dut-library' },
    );
    expect(dependent.status).toBe('success');
    expect(dependent.build?.mode).toBe('flat');
    const plain = await simulate([join(dir, 'counter.sv')], tb('  initial $display("plain");'), { build: 'dut-library' });
    expect(plain.status).toBe('success');
    expect(plain.build?.mode).toBe('dut-library');
  });

  it('judges the testbench, not the -v library files read after it; a testbench may not redefine their modules', async () => {
    const dir = scratchDir('chorus-vlib-');
    writeFileSync(join(dir, 'sub.v'), 'module sub(output logic y); assign y = 1\'b1; initial $display("lib %m"); endmodule\n');
    writeFileSync(join(dir, 'dut.sv'), 'module dut(output logic y); sub s(.y(y)); endmodule\n');
    const design = { ...emptyDesign(), files: [join(dir, 'dut.sv')], libraryFiles: [join(dir, 'sub.v')] };
    const run = (content: string) => sim.simulate({ design, top: 'dut', testbench: { name: 'tb_dut.sv', content } });
    const body = 'module tb_dut; logic y; dut uut(.y(y)); initial begin #1 $display("%b", y); $finish; end endmodule\n';
    const ok = await run(body);
    expect(ok.status).toBe('success');
    const redefined = await run(`module sub(output logic y); assign y = 1'b0; endmodule\n${body}`);
    expect(redefined.status).toBe('rejected');
    expect(redefined.diagnostics.map((d) => [d.code, d.line])).toEqual([['CHORUS-REDEFINE', 1]]);
  });

  it("leaves the design's own constructs alone: only the testbench's part of -E and of the parse is judged", async () => {
    const dir = scratchDir('chorus-dutown-');
    writeFileSync(
      join(dir, 'counter.sv'),
      // The design's own logger, instantiated by the design (a testbench may not instantiate it).
      `${read(counter).replace(/endmodule\s*$/, '  logger lg();\nendmodule\n')}\nmodule logger; integer fd; initial fd = $fopen("/tmp/chorus_dut_log", "w"); endmodule\n`,
    );
    const r = await simulate([join(dir, 'counter.sv')], tb(''), { top: 'counter' });
    expect(r.diagnostics.filter((d) => d.stage === 'check')).toEqual([]);
    expect(r.status).toBe('success');
  });
});
