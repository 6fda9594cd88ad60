// The formal engine (formal/reach.ts: slang places a check in each point's arm, Yosys's slang front
// end builds the model, ABC's PDR proves or refutes it) through the product's path: a real
// Verilator run with `formal` set, jailed like every tool that reads the design. What is proven is
// left out of the reachable ceiling; what is reached gets a witness, and the generator's replay of
// a witness covers a point its random rounds never reach. Nothing is claimed from a bounded search.
import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadDesign } from '../../src/core/run/design.js';
import { generateTestbench } from '../../src/core/generate/generator.js';
import { withFormal } from '../../src/core/sim/simulator.js';
import type { SimResult } from '../../src/core/sim/result.js';
import { fixtures, scratchDir, sim, simulateFiles } from '../helpers.js';

const dir = join(fixtures, 'formal');
const budget = { designS: 10, pointS: 4 };

/** A testbench that holds the design in reset: every arm but the reset one stays uncovered. */
const resetOnly = (top: string, ports: string): string => `module tb;
  logic clk = 0, rst_n = 0;
  ${ports}
  ${top} uut (.*);
  always #5 clk = ~clk;
  initial begin repeat (4) @(negedge clk); $finish; end
endmodule
`;

const reasonAt = (r: SimResult, line: number, label: string): string | undefined =>
  r.uncovered.find((u) => u.line === line && u.label === label && u.type !== 'toggle')?.reason?.kind;

describe('formal engine', () => {
  it('proves the default arms of a state machine unreachable (no enum type says which encodings are used) and finds the others reachable', async () => {
    const r = await simulateFiles(
      [join(dir, 'encoded_fsm.sv')],
      'tb.sv',
      resetOnly('encoded_fsm', 'logic go = 0, stop = 0; logic [1:0] phase;'),
      {
        formal: budget,
      },
    );
    expect(r.status).toBe('success');
    // Both defaults (the next-state case and the output case), proven.
    expect(reasonAt(r, 21, 'case')).toBe('unreachable-formal');
    expect(reasonAt(r, 30, 'case')).toBe('unreachable-formal');
    // The states the reset-only run never left are reachable, with a witness.
    for (const line of [16, 17, 18, 19, 20, 28, 29]) expect(reasonAt(r, line, 'case')).toBe('witness');
    expect(r.formal).toMatchObject({ ok: true, notProven: 0 });
    expect(r.uncovered.filter((u) => u.type !== 'toggle' && u.reason?.kind === 'unreachable-formal')).toHaveLength(2);
    expect(r.formal!.assumptions.join(' ')).toMatch(/registers start at zero/);
    // The ceiling leaves the two proven points out; the scored figure does not.
    expect(r.coverage!.ceiling!.byReason['unreachable-formal']).toBe(2);
    expect(r.coverage!.ceiling!.figures.overall!).toBeGreaterThan(r.coverage!.waived.overall!);
  });

  it('soundness: the points it proves are never covered by the generator, in any round', async () => {
    const { design, info } = await loadDesign({ files: [join(dir, 'encoded_fsm.sv')] });
    const g = await generateTestbench(withFormal(sim, budget), design, info, { attempts: 4, allAttempts: true });
    for (const round of g.rounds) {
      const claimed = round.result.uncovered.filter((u) => u.reason?.kind === 'unreachable-formal').map((u) => u.line);
      expect(claimed.sort()).toEqual([21, 30]);
    }
    // Every other arm was covered (the witnesses of the first round replayed where needed).
    expect(g.best.result.coverage!.waived.tallies.block).toEqual({ covered: expect.any(Number), total: expect.any(Number) });
    expect(g.best.result.uncovered.filter((u) => u.type !== 'toggle').map((u) => u.line)).toEqual([21, 30]);
  });

  it('a witness replayed by the generator covers the arms its random rounds never reach', async () => {
    const { design, info } = await loadDesign({ files: [join(dir, 'keyed_unlock.sv')] });
    const arms = (r: SimResult): string[] =>
      r.uncovered
        .filter((u) => u.type !== 'toggle')
        .map((u) => `${u.line}:${u.label}`)
        .sort();
    const plain = await generateTestbench(sim, design, info, { attempts: 3, allAttempts: true });
    expect(arms(plain.best.result)).toEqual(['20:elsif', '23:if']);
    const formal = await generateTestbench(withFormal(sim, budget), design, info, { attempts: 3 });
    expect(arms(formal.best.result)).toEqual([]);
    expect(formal.best.testbench).toMatch(/Phase W: input sequences the formal engine found/);
    expect(formal.rounds.flatMap((r) => r.notes).join('\n')).toMatch(/input sequences? from the formal engine replayed/);
  });

  it('toggle points: a bit that never moves is proven, one that moves is not, per module across its instances', async () => {
    const r = await simulateFiles(
      [join(dir, 'stuck_bits.sv')],
      'tb.sv',
      `module tb;
  logic clk = 0, rst_n = 0, seen;
  logic [3:0] d = 0, q, m0, m1;
  stuck_bits uut (.*);
  always #5 clk = ~clk;
  initial begin
    repeat (2) @(negedge clk); rst_n = 1;
    repeat (400) begin @(negedge clk); d = 4'($urandom); end
    $finish;
  end
endmodule
`,
      { formal: budget },
    );
    expect(r.status).toBe('success');
    const toggles = r.uncovered.filter((u) => u.type === 'toggle');
    const claimed = toggles
      .filter((u) => u.reason?.kind === 'unreachable-formal')
      .map((u) => `${u.hier.split('.').pop()}.${u.label}`)
      .sort();
    // The stuck bits of the top, and q[0] = r[0] ^ mode[0], both d[0] of the cycle before: always
    // 0, which no reading of the text says. masker's o[3] moves in u1, so u0's stuck o[3] is not
    // claimed.
    expect(claimed).toEqual(['uut.m0[3]', 'uut.mode[1]', 'uut.q[0]', 'uut.q[3]', 'uut.r[3]']);
    for (const u of toggles.filter((t) => t.reason?.kind === 'unreachable-formal'))
      expect(u.reason!.detail).toMatch(/the bit stays 0, so it never toggles/);
    // `seen` rises and never falls (one way only): uncovered, reachable, never claimed.
    expect(toggles.find((u) => u.label === 'seen')?.reason?.kind).toBe('witness');
    expect(toggles.find((u) => u.label === 'o[3]' && u.hier.endsWith('u0'))?.reason?.kind).toBe('witness');
    // A bit driven by the testbench is an input of the top: never asked, never claimed.
    expect(toggles.filter((u) => /^d\[/.test(u.label)).every((u) => u.reason?.kind !== 'unreachable-formal')).toBe(true);
  });

  it('never claims a point from a bounded search: a 20-bit terminal count is "not proven" (or reached), never unreachable', async () => {
    const r = await simulateFiles(
      [join(dir, 'wide_counter.sv')],
      'tb.sv',
      `module tb;
  logic clk = 0, rst_n = 0, en = 0, top, past_wrap;
  wide_counter uut (.*);
  always #5 clk = ~clk;
  initial begin repeat (2) @(negedge clk); rst_n = 1; en = 1; repeat (50) @(negedge clk); $finish; end
endmodule
`,
      { formal: { designS: 10, pointS: 3 } },
    );
    expect(r.status).toBe('success');
    // cnt == 20'hFFFFF is reachable (after 2^20 - 1 cycles): anything but a proof. Within the
    // budget, PDR finds no proof and the bounded search no witness: "not reached in N cycles".
    expect(reasonAt(r, 22, 'if')).toBe('bounded');
    const bounded = r.uncovered.find((u) => u.line === 22 && u.label === 'if' && u.type !== 'toggle')!;
    expect(bounded.reason!.detail).toMatch(
      /^not reached in \d+ cycles from reset by the formal engine's bounded search \(BMC\); not proven/,
    );
    expect(r.coverage!.ceiling!.byReason['unreachable-formal']).toBe(
      r.uncovered.filter((u) => u.reason?.kind === 'unreachable-formal').length,
    );
    expect(r.formal!.notProven).toBeGreaterThanOrEqual(1);
  });

  it('proves under the parameters the run elaborated: dead at the default, reachable under -G', async () => {
    const d = scratchDir('chorus-formal-');
    const f = join(d, 'pdepth.sv');
    writeFileSync(
      f,
      `module pdepth #(parameter int N = 4) (input logic clk, rst_n, output logic hit);
  logic [3:0] c;
  always_ff @(posedge clk)
    if (!rst_n) begin c <= '0; hit <= 1'b0; end
    else begin
      c <= (c == N - 1) ? '0 : c + 1'b1;
      if (c == 4'd9) hit <= 1'b1;
    end
endmodule
`,
    );
    const tb = (inst: string): string => `module tb; logic clk = 0, rst_n = 0, hit; ${inst} uut (.*); always #5 clk = ~clk;
  initial begin repeat (2) @(negedge clk); rst_n = 1; repeat (3) @(negedge clk); $finish; end endmodule
`;
    // At N = 4 the count never reaches 9: proven.
    const atDefault = await simulateFiles([f], 'tb.sv', tb('pdepth'), { formal: budget });
    expect(atDefault.status).toBe('success');
    expect(reasonAt(atDefault, 7, 'if')).toBe('unreachable-formal');
    // At N = 12 (the run's -G, and the testbench's instantiation) it is reached: never a proof.
    const { design, info } = await loadDesign({ files: [f], params: ['N=12'] });
    const at12 = await sim.simulate({
      design,
      top: info.top,
      testbench: { name: 'tb.sv', content: tb('pdepth #(.N(12))') },
      formal: budget,
    });
    expect(at12.err_msg).toBe('');
    // The testbench's instantiation (the parameters slang's elaboration of it read) is what the
    // engine elaborates: the arm is reached.
    expect(at12.formal).toMatchObject({ ok: true });
    expect(reasonAt(at12, 7, 'if')).toBe('witness');
    const own4 = await simulateFiles([f], 'tb.sv', tb('pdepth #(.N(4))'), { formal: budget });
    expect(reasonAt(own4, 7, 'if')).toBe('unreachable-formal');
  });

  it('a changed include file is a new answer, never a cached one', async () => {
    const d = scratchDir('chorus-formal-');
    const f = join(d, 'inc_limit.sv');
    writeFileSync(
      f,
      `\`include "limit.svh"
module inc_limit (input logic clk, rst_n, output logic hit);
  logic [3:0] c;
  always_ff @(posedge clk)
    if (!rst_n) begin c <= '0; hit <= 1'b0; end
    else begin
      c <= (c == \`LIMIT - 1) ? '0 : c + 1'b1;
      if (c == 4'd9) hit <= 1'b1;
    end
endmodule
`,
    );
    const tb = `module tb; logic clk = 0, rst_n = 0, hit; inc_limit uut (.*); always #5 clk = ~clk;
  initial begin repeat (2) @(negedge clk); rst_n = 1; repeat (3) @(negedge clk); $finish; end endmodule
`;
    const run = async (limit: number): Promise<SimResult> => {
      writeFileSync(join(d, 'limit.svh'), `\`define LIMIT ${limit}\n`);
      const { design, info } = await loadDesign({ files: [f], includeDirs: [d] });
      return sim.simulate({ design, top: info.top, testbench: { name: 'tb.sv', content: tb }, formal: budget });
    };
    // The count wraps at 4: 9 is never reached. At 12 it is, and the header alone changed.
    expect(reasonAt(await run(4), 8, 'if')).toBe('unreachable-formal');
    expect(reasonAt(await run(12), 8, 'if')).toBe('witness');
  });

  it('a design the engine cannot read is "not proven" everywhere, and the run is unaffected', async () => {
    const d = scratchDir('chorus-formal-');
    const f = join(d, 'realacc.sv');
    writeFileSync(
      f,
      `module realacc (input logic clk, rst_n, input logic [3:0] x, output logic big);
  real acc;
  always_ff @(posedge clk) begin
    if (!rst_n) begin acc <= 0.0; big <= 1'b0; end
    else begin acc <= acc + 0.5 * x; if (acc > 1.0e9) big <= 1'b1; end
  end
endmodule
`,
    );
    const r = await simulateFiles([f], 'tb.sv', resetOnly('realacc', 'logic [3:0] x = 0; logic big;'), { formal: budget });
    expect(r.status).toBe('success');
    expect(r.uncovered.some((u) => u.reason?.kind === 'unreachable-formal' || u.reason?.kind === 'witness')).toBe(false);
    expect(r.formal!.ok).toBe(false);
    expect(r.formal!.message).toMatch(/Yosys could not read the design/);
  });
});
