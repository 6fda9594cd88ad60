// The built-in generator on real Verilator: coverage it reaches on designs of every port kind,
// and the testbench it writes.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { existsSync, readFileSync, writeFileSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadDesign } from '../../src/core/run/design.js';
import { generateTestbench, refinePlan, initialPlan } from '../../src/core/generate/generator.js';
import { runGeneration } from '../../src/core/run/generation.js';
import { overallCoverage } from '../../src/core/sim/ranking.js';
import { withFormal } from '../../src/core/sim/simulator.js';
import { examples, fixtures, repoRoot, scratchDir, benchData, sim } from '../helpers.js';

const gen = async (files: string[], opts: { params?: string[]; rounds?: number; formal?: boolean } = {}) => {
  const { design, info } = await loadDesign({ files, params: opts.params });
  const simulator = opts.formal ? withFormal(sim, { designS: 20, pointS: 5 }) : sim;
  return { ...(await generateTestbench(simulator, design, info, { attempts: opts.rounds ?? 4 })), info, design };
};

describe('built-in generator', () => {
  it('counter: 100% in the first round, with a readable stimulus-only testbench', async () => {
    const g = await gen([join(examples, 'counter', 'counter.sv')]);
    expect(g.best.result.status).toBe('success');
    expect(g.best.result.coverage!.waived.overall).toBe(1);
    expect(g.rounds.length).toBe(1);
    const tb = g.best.testbench;
    expect(tb).toMatch(/\$finish;/);
    expect(tb).not.toMatch(/\bassert\b|\$error|\$fatal/);
    expect(tb).toMatch(/counter uut \(/);
    expect(tb).toMatch(/rst_n \(active-low, asynchronous: always_ff @\(posedge clk or negedge rst_n\) if \(!rst_n\) in counter/); // from use
    expect(tb).toMatch(/Phase 5: 8 combinations of the 1-bit controls \(en, load, up\)/);
  });

  it('FSM: everything but the unreachable default arm', async () => {
    const g = await gen([join(examples, 'fsm', 'seq_detector.sv')], { formal: true });
    const r = g.best.result;
    expect(r.status).toBe('success');
    expect(r.coverage!.waived.tallies.toggle).toEqual({ covered: 15, total: 15 });
    expect(r.uncovered.map((u) => `${u.type}:${u.line}:${u.label}`)).toEqual(['line:23:case']);
    // The one point left is proven unreachable by the formal engine: no round is spent chasing it.
    expect(r.uncovered.map((u) => u.reason?.kind)).toEqual(['unreachable-formal']);
    expect(g.rounds.length).toBe(1);
  });

  it('packed structs, unpacked arrays, a type parameter and two clocks: 100%', async () => {
    const d = join(fixtures, 'designs', 'pkg');
    const g = await gen([join(d, 'bus_pkg.sv'), join(d, 'arb.sv')]);
    expect(g.best.result.status).toBe('success');
    expect(g.best.result.coverage!.waived.tallies.toggle).toEqual({ covered: 68, total: 68 });
    expect(g.best.testbench).toMatch(/always #5 clk_b = ~clk_b;/); // related to clk_a in the first round
    expect(g.best.testbench).toMatch(/always @\(negedge clk_a\) req <= req_drv;/);
  });

  it('enum input ports get only legal values; valid/ready holds data while not accepted', async () => {
    const g = await gen([join(fixtures, 'designs', 'enumin', 'alu.sv')]);
    expect(g.best.result.status).toBe('success');
    // Only legal opcodes are driven, so the `default` arm is (rightly) the one thing not covered.
    expect(g.best.result.uncovered.map((u) => `${u.type}:${u.line}:${u.label}`)).toEqual(['line:36:case']);
    expect(g.best.result.coverage!.waived.toggle).toBe(1);
    expect(g.best.testbench).toMatch(/alu_pkg::op_t'\(legal\[\$urandom_range\(0, 4\)\]\)/);
    expect(g.best.testbench).toMatch(/if \(!\(in_valid && !in_ready\)\) a = /);
  });

  it('FIFO: the rules come from its assertions before any run, and the first round breaks none', async () => {
    const { design, info } = await loadDesign({ files: [join(examples, 'fifo', 'sync_fifo.sv')] });
    const plan = initialPlan(info, design, {});
    // The assertions sit under `if (rst_n)`: that condition is part of their antecedent.
    expect(plan.legality?.map((r) => r.statements).flat()).toEqual([
      "if (rst_n && full && push) begin push = '0; end",
      "if (rst_n && empty && pop) begin pop = '0; end",
    ]);
    const { emitTestbench } = await import('../../src/core/generate/emit.js');
    const first = await sim.simulate({ design, top: info.top, testbench: { name: 'tb.sv', content: emitTestbench(plan) } });
    expect(first.status).toBe('success');
    expect(first.dutAssertions).toBeUndefined();
    expect(first.diagnostics.filter((d) => d.code === 'ASSERT').length).toBe(0);
    // Look-alike: without the front end's facts the rule is learned from the failure instead.
    const bare = initialPlan({ ...info, facts: undefined }, design, {});
    expect(bare.legality).toBeUndefined();
    const fired = await sim.simulate({ design, top: info.top, testbench: { name: 'tb.sv', content: emitTestbench(bare) } });
    expect(fired.diagnostics.some((d) => d.code === 'ASSERT' && d.origin === 'dut')).toBe(true);
    const next = refinePlan(bare, fired, { ...info, facts: undefined });
    expect(next.respectFlags).toBe(true);
    const second = await sim.simulate({ design, top: info.top, testbench: { name: 'tb.sv', content: emitTestbench(next) } });
    expect(second.diagnostics.filter((d) => d.code === 'ASSERT').length).toBe(0);
  });

  it('small combinational designs get exhaustive stimulus', async () => {
    const g = await gen([join(benchData, 'verilog-eval-v2', 'Prob050_kmap1_ref.sv')]);
    expect(g.best.testbench).toMatch(/Phase 2: exhaustive: every one of the 2\^3 input combinations/);
    expect(g.best.result.coverage!.waived.overall).toBe(1);
  });

  it('parameter overrides (-G) reach the instantiation', async () => {
    const g = await gen([join(examples, 'counter', 'counter.sv')], { params: ['WIDTH=4'] });
    expect(g.best.testbench).toMatch(/counter #\(\.WIDTH\(4\)\) uut/);
    expect(g.best.testbench).toMatch(/logic \[3:0\] din = '0;/);
    expect(g.best.result.status).toBe('success');
    expect(g.best.result.coverage!.waived.tallies.toggle.total).toBe(1 + 1 + 1 + 1 + 1 + 4 + 4 + 1);
  });
});

describe('chorus generate', () => {
  const cli = join(repoRoot, 'dist', 'cli.js');
  it('says no model is configured, prints per-round coverage, never overwrites', async () => {
    const dir = scratchDir('chorus-gen-');
    copyFileSync(join(examples, 'counter', 'counter.sv'), join(dir, 'counter.sv'));
    const a = await execa(process.execPath, [cli, 'generate', join(dir, 'counter.sv')], { reject: false });
    expect(a.exitCode).toBe(0);
    expect(a.stdout).toMatch(/No model configured: using the built-in stimulus generator/);
    expect(a.stdout).toMatch(/round 1\/4: success {2}coverage 100\.00%/);
    // The testbench goes into a new run folder each time (test/integration/runFolder.test.ts),
    // never beside the design.
    const first = /written to (.*tb_counter\.sv)\n/.exec(a.stdout)![1];
    expect(existsSync(first)).toBe(true);
    expect(existsSync(join(dir, 'tb_counter.sv'))).toBe(false);
    const b = await execa(process.execPath, [cli, 'generate', join(dir, 'counter.sv')], { reject: false });
    expect(b.exitCode).toBe(0);
    const second = /written to (.*tb_counter\.sv)\n/.exec(b.stdout)![1];
    expect(second).not.toBe(first);
    expect(existsSync(first)).toBe(true);
    writeFileSync(join(dir, 'mine.sv'), '// my own testbench\n');
    const c = await execa(process.execPath, [cli, 'generate', '--out', join(dir, 'mine.sv'), join(dir, 'counter.sv')], { reject: false });
    expect(c.exitCode).toBe(2);
    expect(c.stderr).toMatch(/exists; choose another --out or pass --force/);
    expect(readFileSync(join(dir, 'mine.sv'), 'utf8')).toBe('// my own testbench\n');
  });

  it('--json prints the run record', async () => {
    const dir = scratchDir('chorus-gen-');
    const r = await execa(
      process.execPath,
      [cli, 'generate', '--json', '--out', join(dir, 'tb.sv'), join(examples, 'fsm', 'seq_detector.sv')],
      { reject: false },
    );
    expect(r.exitCode).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.generator).toBe('builtin');
    expect(j.rounds[0]).toMatchObject({ round: 0, parse_status: 'builtin' });
    expect(j.rounds[0].result.status).toBe('success');
    expect(j.best).toMatchObject({ round: 0 });
    expect(j.best.coverage).toBeCloseTo(j.rounds[0].result.coverage.waived.overall, 10);
    expect(readFileSync(join(dir, 'tb.sv'), 'utf8')).toBe(j.rounds[j.best.round].testbench);
  });
});

describe('cancel', () => {
  it('a cancel before the first round finished: no best round, nothing written, the round says cancelled', async () => {
    const { design, info } = await loadDesign({ files: [join(examples, 'fifo', 'sync_fifo.sv')], top: 'sync_fifo' });
    const ac = new AbortController();
    const run = runGeneration(
      { design, info, model: null, simulator: sim, rounds: 3, coverageTarget: 100 },
      (e) => {
        // Stop as soon as the first simulation starts: it ends cancelled.
        if (e.type === 'round-start') setTimeout(() => ac.abort(), 50);
      },
      ac.signal,
    );
    const r = await run;
    expect(r.best).toBeNull();
    expect(r.cancelled).toBe(true);
    expect(r.attempts.length).toBeGreaterThan(0);
    expect(r.attempts.every((a) => a.result?.status === 'exception' && a.result.err_msg === 'cancelled')).toBe(true);
  }, 120_000);
});

describe('rounds that earn their cost', () => {
  const files = [join(benchData, 'cvdp-cid012-dev', 'cvdp_copilot_binary_to_BCD_0030', 'binary_to_bcd.sv')];
  it('stops after a round that covered nothing new when the next would aim at nothing new, and says so; allAttempts runs them all', async () => {
    const { design, info } = await loadDesign({ files, top: 'binary_to_bcd' });
    const g = await generateTestbench(sim, design, info, { attempts: 4 });
    expect(g.rounds.length).toBeLessThan(4);
    expect(g.stopped).toMatch(
      /^stopped after round \d: it covered no new point, and the next round would aim at the same \d+ uncovered points/,
    );
    expect(g.rounds.at(-1)!.notes).toContain(g.stopped);
    const all = await generateTestbench(sim, design, info, { attempts: 4, allAttempts: true });
    expect(all.rounds.length).toBe(4);
    expect(all.stopped).toBeUndefined();
    // Nothing was lost by stopping: the extra rounds found nothing either.
    expect(overallCoverage(all.best.result)).toBe(overallCoverage(g.best.result));
  }, 240_000);
});
