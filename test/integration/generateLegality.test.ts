// The built-in generator on real Verilator: stimulus the design's own assertions forbid is
// never driven (from the property) or learned from and stopped (immediate, concurrent and unique-case assertions), the best round is
// a legal one; clocks by use; bus registers loaded from write data get their compared constants.
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { loadDesign } from '../../src/core/run/design.js';
import { generateTestbench } from '../../src/core/generate/generator.js';
import { illegalCount } from '../../src/core/generate/legality.js';
import { examples, fixtures, sim } from '../helpers.js';

const gen = async (file: string, attempts = 4) => {
  const { design, info } = await loadDesign({ files: [file] });
  return generateTestbench(sim, design, info, { attempts });
};

describe('built-in generator: legal stimulus', () => {
  // Coverage the generator reached on these before it kept its stimulus legal (all 100%, with
  // assertion failures in the best round); the legal best round may be at most 2 points lower.
  const cases = [
    // Legal from the first round: the rule comes from the property (the slang front end's facts).
    [
      'FIFO: push/pop while full/empty (immediate assertions)',
      join(examples, 'fifo', 'sync_fifo.sv'),
      /if \(rst_n && full && push\) begin push = '0; end/,
      0,
    ],
    [
      'unique case without a default on an opcode input',
      join(fixtures, 'designs', 'legality', 'ucase_alu.sv'),
      /if \(!\(\(\(op == 2'd0\) \|\| \(op == 2'd1\)\) \|\| \(op == 2'd2\)\)\) begin/,
      0,
    ],
    [
      'concurrent assertion take |-> !dry',
      join(fixtures, 'designs', 'legality', 'token_bucket.sv'),
      /if \(dry && take\) begin take = '0; end/,
      0,
    ],
  ] as const;
  // firstFired: 0 where the property gives the rule before any run (a `unique case` without a
  // default is the check that its selector is one of the items).
  for (const [name, file, rule, firstFired] of cases) {
    it(`${name}: the best testbench breaks no assertion, coverage within 2 points`, async () => {
      const g = await gen(file);
      expect(illegalCount(g.rounds[0].result) > 0 ? 1 : 0).toBe(firstFired);
      expect(g.best.result.status).toBe('success');
      expect(illegalCount(g.best.result)).toBe(0);
      expect(g.best.result.coverage!.waived.overall).toBeGreaterThanOrEqual(0.98);
      expect(g.best.testbench).toMatch(rule);
    });
  }

  it('look-alike: a design whose assertions never fire gets no legality rules', async () => {
    const g = await gen(join(examples, 'counter', 'counter.sv'));
    expect(g.best.testbench).not.toMatch(/Legal stimulus only/);
    expect(g.rounds.length).toBe(1);
  });
});

describe('built-in generator: clocks and bus registers', () => {
  it('steps on the clock most registers use; a clock-like enable is data', async () => {
    const g = await gen(join(fixtures, 'designs', 'clockuse', 'clockuse.sv'));
    expect(g.best.testbench).toMatch(/@\(negedge clk\);/);
    expect(g.best.testbench).not.toMatch(/en_clk_x = ~en_clk_x/);
    expect(g.best.result.coverage!.waived.overall).toBe(1);
  });

  it('case items compared through a width extension and the mode constants written in order: 100% in the first round', async () => {
    const g = await gen(join(fixtures, 'designs', 'regmode', 'regmode.sv'));
    expect(g.best.testbench).toMatch(/Phase P0d: registers compared against constants \(mode at 8'h18\)/);
    expect(g.best.result.coverage!.waived.overall).toBe(1);
    expect(g.rounds.length).toBe(1);
  });
});
