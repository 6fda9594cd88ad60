// Issue 40: a testbench may read the design's internals (checkers do) but never change them, and
// the scored configuration is the one instance under test with the requested parameters. Each
// probe below is the honest twin (test/fixtures/reach/tb_reach.sv) plus one way an RL policy
// would reach coverage without driving the ports: hierarchical writes (plain, through a macro, an
// escaped name, a generate block, a task's output argument, an output port connection), force and
// release, a call of the design's task, defparam, bind, a second instance, an instance with other
// parameters, a submodule on its own. The rule: refused before compile, with the code that names
// the way, and never above the honest twin. Run jailed and with CHORUS_NO_JAIL=1.
import { beforeAll, describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { fixtures, read } from '../helpers.js';
import { loadDesign } from '../../src/core/run/design.js';
import { VerilatorSimulator } from '../../src/core/sim/verilator/backend.js';
import type { SimResult } from '../../src/core/sim/result.js';
import type { DesignInfo, DesignSpec } from '../../src/core/design/types.js';

const sim = new VerilatorSimulator();
const dir = join(fixtures, 'reach');
const honest = read(join(dir, 'tb_reach.sv'));

/** The honest testbench with `body` added before its endmodule (and `after` after it). */
const withBody = (body: string, after = ''): string => honest.replace(/endmodule\s*$/, `${body}\nendmodule\n${after}`);

interface Probe {
  name: string;
  tb: string;
  code: string;
  /** Verilator 5.006 itself refuses to build it (a lint error first): the probe must then fail
   * there, with reward 0, if it is not refused before. */
  verilatorRefuses?: boolean;
}

const PROBES: Probe[] = [
  {
    name: 'a blocking hierarchical write into a submodule',
    tb: withBody("  initial #30 uut.u_fsm.state = 2'd3;"),
    code: 'CHORUS-HIERWRITE',
  },
  {
    name: 'a nonblocking write through a macro',
    tb: `\`define LVL uut.level\n${withBody("  initial #30 `LVL <= 3'd5;")}`,
    code: 'CHORUS-HIERWRITE',
  },
  {
    name: 'an escaped name in a generate block',
    tb: withBody("  if (1) begin : g\n    initial #30 \\uut .state = 2'd1;\n  end"),
    code: 'CHORUS-HIERWRITE',
  },
  {
    name: "a task's output argument bound to a design signal",
    tb: withBody("  task automatic put(output logic [1:0] o); o = 2'd3; endtask\n  initial #30 put(uut.u_fsm.state);"),
    code: 'CHORUS-HIERWRITE',
  },
  {
    name: "a helper module's output port connected to a design signal",
    tb: withBody('  drive_two d2 (.o(uut.u_fsm.state));', "module drive_two (output logic [1:0] o);\n  assign o = 2'd2;\nendmodule\n"),
    code: 'CHORUS-HIERWRITE',
  },
  { name: 'an increment of a design signal', tb: withBody('  initial #30 uut.level++;'), code: 'CHORUS-HIERWRITE' },
  {
    name: "a task's ref argument bound to a design signal",
    tb: withBody("  task automatic bump(ref logic [1:0] r); r = 2'd3; endtask\n  initial #30 bump(uut.u_fsm.state);"),
    code: 'CHORUS-HIERWRITE',
  },
  { name: "$readmemh into the design's memory", tb: withBody('  initial $readmemh("hist.hex", uut.hist);'), code: 'CHORUS-HIERWRITE' },
  {
    name: "$random with the design's variable as its seed",
    tb: withBody('  int r;\n  initial #30 r = $random(uut.seed);'),
    code: 'CHORUS-HIERWRITE',
  },
  { name: "a trigger of the design's event", tb: withBody('  initial #30 -> uut.tick;'), code: 'CHORUS-HIERWRITE' },
  {
    name: "disable of the design's named block",
    tb: withBody('  initial #30 disable uut.count_blk;'),
    code: 'CHORUS-HIERCALL',
    verilatorRefuses: true,
  },
  {
    name: 'a write hidden next to code the front end rejects (nothing it dropped goes unjudged)',
    // Assigning a localparam, in the statement that writes the design: Verilator builds it, slang
    // refuses the whole assignment (and so cannot see the write in it).
    tb: withBody('  localparam int P = 1;\n  initial begin #30 {uut.level, P} = 35; end'),
    code: 'CHORUS-CHECK',
  },
  {
    name: 'force and release on a design wire',
    tb: withBody("  initial begin #30 force uut.state = 2'd2; #20 release uut.state; end"),
    code: 'CHORUS-FORCE',
  },
  { name: "a call of the design's own task", tb: withBody('  initial #30 uut.kick();'), code: 'CHORUS-HIERCALL' },
  { name: 'defparam on the design', tb: withBody('  defparam uut.DEPTH = 2;'), code: 'CHORUS-DEFPARAM' },
  {
    name: 'bind into a design module',
    tb: withBody(
      '',
      'module watch (input logic clk, input logic [1:0] s);\n  always @(posedge clk) if (s == 2\'d3) $display("three");\nendmodule\nbind reach_fsm watch w (.clk(clk), .s(state));\n',
    ),
    code: 'CHORUS-BIND',
  },
  {
    name: 'a second instance of the design with another parameter',
    tb: withBody("  reach_top #(.DEPTH(2)) u2 (.clk, .rst_n, .start(1'b1), .busy(), .level());"),
    code: 'CHORUS-INSTANCE',
  },
  {
    name: 'the design instantiated twice by a generate loop',
    tb: withBody("  for (genvar i = 0; i < 2; i++) begin : many\n    reach_top u (.clk, .rst_n, .start(1'b1), .busy(), .level());\n  end"),
    code: 'CHORUS-INSTANCE',
  },
  {
    name: 'a design submodule on its own (its points would count as the scored ones)',
    tb: withBody("  reach_fsm lone (.clk, .rst_n, .go(1'b1), .state());"),
    code: 'CHORUS-INSTANCE',
  },
  {
    name: 'the one instance with another parameter than the scored one',
    tb: honest.replace('reach_top uut', 'reach_top #(.DEPTH(4)) uut'),
    code: 'CHORUS-PARAM',
  },
];

/** Honest variants that must keep running: reads of internals, the testbench's own force, helpers. */
const HONEST: { name: string; tb: string }[] = [
  { name: 'the honest twin (reads uut.state)', tb: honest },
  { name: "force and release on the testbench's own signal", tb: withBody("  initial begin force start = 1'b1; #20 release start; end") },
  {
    name: "an index read from the design in a write to the testbench's own array",
    tb: withBody('  logic [1:0] seen [4];\n  always @(posedge clk) seen[uut.state] <= uut.u_fsm.state;'),
  },
  { name: 'the scored parameter written out', tb: honest.replace('reach_top uut', 'reach_top #(.DEPTH(8)) uut') },
];

let design: DesignSpec;
let info: DesignInfo;
let twin: SimResult;

const run = (tb: string): Promise<SimResult> => sim.simulate({ design, top: info.top, testbench: { name: 'tb_reach.sv', content: tb } });

beforeAll(async () => {
  ({ design, info } = await loadDesign({ files: [join(dir, 'reach_top.sv')], top: 'reach_top' }));
  twin = await run(honest);
  expect(twin.status, twin.err_msg).toBe('success');
  expect(twin.reward).toBeGreaterThan(1);
}, 120_000);

describe(`testbench reach into the design (${process.env.CHORUS_NO_JAIL === '1' ? 'no jail' : 'jailed'})`, () => {
  for (const p of PROBES)
    it(`refuses ${p.name}`, async () => {
      const r = await run(p.tb);
      expect(r.reward).toBe(0);
      if (p.verilatorRefuses && r.status !== 'rejected') {
        expect(r.status, r.err_msg).toBe('xrun_failed');
        return;
      }
      expect(r.status, r.err_msg).toBe('rejected');
      expect(r.diagnostics.map((d) => d.code)).toContain(p.code);
      const d = r.diagnostics.find((x) => x.code === p.code)!;
      expect(d.file).toBe('tb_reach.sv');
      expect(d.suggestion).toMatch(p.code === 'CHORUS-CHECK' ? /SystemVerilog/ : /reach_top/);
      expect(r.reward).toBe(0);
      expect(r.reward).toBeLessThanOrEqual(twin.reward);
    }, 60_000);

  for (const h of HONEST)
    it(`keeps ${h.name}`, async () => {
      const r = await run(h.tb);
      expect(r.status, r.err_msg).toBe('success');
      expect(r.reward).toBeGreaterThan(1);
    }, 60_000);
});
