// Reusing the compiled DUT: same coverage as the flat build, and a clean fallback when the
// testbench needs the flat build.
import { describe, expect, it } from 'vitest';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { examples, read, benchData, simulateFiles } from '../helpers.js';
import type { SimResult } from '../../src/core/sim/result.js';

const counter = join(examples, 'counter', 'counter.sv');

function sameCoverage(a: SimResult, b: SimResult): void {
  expect(a.status).toBe(b.status);
  expect(a.coverage!.waived.tallies).toEqual(b.coverage!.waived.tallies);
  expect(a.coverage!.waived.overall).toBe(b.coverage!.waived.overall);
  expect(a.uncovered.map((u) => `${u.type}:${u.line}:${u.label}:${u.hier}`)).toEqual(
    b.uncovered.map((u) => `${u.type}:${u.line}:${u.label}:${u.hier}`),
  );
}

describe('DUT library reuse', () => {
  it('is used for a plain testbench and gives exactly the flat coverage on the examples', async () => {
    const cases: Array<[string, string]> = [
      [counter, join(examples, 'counter', 'tb_counter_weak.sv')],
      [join(examples, 'fsm', 'seq_detector.sv'), join(examples, 'fsm', 'tb_seq_detector.sv')],
      [join(examples, 'fifo', 'sync_fifo.sv'), join(examples, 'fifo', 'tb_sync_fifo.sv')],
    ];
    for (const [dut, tb] of cases) {
      const name = tb.split('/').pop()!;
      const lib = await simulateFiles([dut], name, read(tb), { build: 'dut-library' });
      const flat = await simulateFiles([dut], name, read(tb), { build: 'flat' });
      // The FIFO testbench overrides DEPTH/WIDTH in its instantiation: that needs the flat build.
      expect(lib.build?.mode, name).toBe(name === 'tb_sync_fifo.sv' ? 'flat' : 'dut-library');
      expect(flat.build?.mode).toBe('flat');
      sameCoverage(lib, flat);
      // DUT assertion diagnostics survive the library boundary too.
      expect(lib.diagnostics.filter((d) => d.code === 'ASSERT').length).toBe(flat.diagnostics.filter((d) => d.code === 'ASSERT').length);
    }
  });

  it('auto mode keeps small DUTs flat (the library does not pay off) and says why', async () => {
    // The decision compares the DUT's measured compile time with a threshold; a loaded machine can
    // take seconds for the counter, so the threshold is set far above any compile time here.
    const saved = process.env.CHORUS_DUT_LIBRARY_MIN_S;
    process.env.CHORUS_DUT_LIBRARY_MIN_S = '1000';
    try {
      const r = await simulateFiles([counter], 'tb_counter_weak.sv', read(join(examples, 'counter', 'tb_counter_weak.sv')));
      expect(r.status).toBe('success');
      expect(r.build).toMatchObject({ mode: 'flat', fallbackReason: expect.stringMatching(/compiles in [\d.]+s: below 1000s/) });
    } finally {
      if (saved === undefined) delete process.env.CHORUS_DUT_LIBRARY_MIN_S;
      else process.env.CHORUS_DUT_LIBRARY_MIN_S = saved;
    }
  });

  it('falls back to the flat build for hierarchical references and parameter overrides', async () => {
    // `state` is internal to the FSM: only the flat build can reach it.
    const fsm = join(examples, 'fsm', 'seq_detector.sv');
    const hier = `module tb; reg clk = 0, reset = 1, bit_in = 0, valid = 0; wire detected; wire [3:0] hits;
  seq_detector uut(.*);
  always #5 clk = ~clk;
  initial begin #12 reset = 0; valid = 1; bit_in = 1; #40 $display("state %0d", uut.state); $finish; end
endmodule
`;
    const r = await simulateFiles([fsm], 'tb.sv', hier, { build: 'dut-library' });
    expect(r.status).toBe('success');
    expect(r.build).toMatchObject({ mode: 'flat', fallbackReason: expect.stringMatching(/needs the flat build/) });
    const param = `module tb; logic clk = 0, rst_n = 0, en = 1, load = 0, up = 1; logic [7:0] din = 0, count; logic wrap;
  counter #(.WIDTH(8)) uut(.*);
  always #5 clk = ~clk;
  initial begin #12 rst_n = 1; #40 $finish; end
endmodule
`;
    const p = await simulateFiles([counter], 'tb.sv', param, { build: 'dut-library' });
    expect(p.status).toBe('success');
    expect(p.build?.mode).toBe('flat');
  });

  it('matches the flat build on VerilogEval reference designs with their human testbenches', async () => {
    const dir = join(benchData, 'verilog-eval-v2');
    const picks = readdirSync(dir)
      .filter((f) => f.endsWith('_ref.sv'))
      .sort()
      .filter((_, i) => i % 13 === 5); // a fixed spread of 12 designs, combinational and clocked
    expect(picks.length).toBe(12);
    let libraryRuns = 0;
    for (const ref of picks) {
      const refPath = join(dir, ref);
      // The human testbench compares RefModule with TopModule: give it a TopModule copy in the
      // testbench file so only RefModule (the DUT file) is measured.
      const top = read(refPath).replace(/\bmodule\s+RefModule\b/, 'module TopModule');
      const tb = read(refPath.replace('_ref.sv', '_test.sv')) + '\n' + top;
      const lib = await simulateFiles([refPath], 'tb.sv', tb, { build: 'dut-library' }, 'RefModule');
      const flat = await simulateFiles([refPath], 'tb.sv', tb, { build: 'flat' }, 'RefModule');
      expect(flat.status, `${ref}: ${flat.err_msg}`).toBe('success');
      sameCoverage(lib, flat);
      if (lib.build?.mode === 'dut-library') libraryRuns += 1;
    }
    // These testbenches only drive ports: the library path must carry nearly all of them.
    expect(libraryRuns).toBeGreaterThanOrEqual(10);
  });
});
