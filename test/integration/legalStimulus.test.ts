// Legal stimulus from the property, checked the way an engineer would: the built-in generator
// writes a testbench for each fixture (written from the language reference: `|->` on outputs,
// `|=>` with `$stable`, `$past`, `disable iff`, `|-> ##2`, `$onehot0`, an enum-typed input, an
// active-low synchronous reset, assertions a macro hides from Verilator, two clock domains, checks
// over internal nets, per-element checks of a generate loop, sums of concatenations, checks of
// the starting state in `initial` blocks), and
// the best one is rebuilt by PLAIN Verilator (`--binary --timing --assert`, no CHORUS code), as
// Verilator compiles the design and without VERILATOR defined (as any other simulator would), and
// run: the design's assertions never fire. Roles come from the design's use (the slang front end).
import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadDesign } from '../../src/core/run/design.js';
import { generateTestbench } from '../../src/core/generate/generator.js';
import { rebuildAndRun } from '../../bench/ip/rebuild.js';
import { fixtures, scratchDir, sim } from '../helpers.js';

const legal = join(fixtures, 'legal');

async function generateAndRebuild(file: string, attempts = 2) {
  const { design, info } = await loadDesign({ files: [join(legal, file)] });
  const g = await generateTestbench(sim, design, info, { attempts });
  const dir = scratchDir('chorus-legal-');
  const tbFile = join(dir, `tb_${info.top}.sv`);
  writeFileSync(tbFile, g.best.testbench);
  const tbTop = /^\s*module\s+(\w+)/m.exec(g.best.testbench)![1];
  const rebuilt = [];
  for (const flags of [[], ['-UVERILATOR']]) {
    rebuilt.push(
      await rebuildAndRun({
        verilator: process.env.CHORUS_VERILATOR ?? 'verilator',
        repoDir: legal,
        designFiles: [join(legal, file)],
        flags,
        tbFile,
        tbTop,
        dutInstance: 'uut',
        reset: null,
        workDir: join(dir, flags.length ? 'other' : 'verilator'),
        buildTimeoutS: 300,
        runTimeoutS: 120,
      }),
    );
  }
  return { g, info, rebuilt };
}

describe('legal stimulus from the property, rebuilt by plain Verilator', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['|-> on outputs (push while full), active-low synchronous reset', 'push_full.sv', /if \(\(?full\)? && push\) begin push = '0; end/],
    [
      '|=> with $stable and disable iff',
      'handshake_stable.sv',
      /chorus_ante_\d+\[0\]\) begin valid = 1'b1; data = chorus_past_clk_data; end/,
    ],
    ['$past: a start pulse of one cycle', 'past_start.sv', /chorus_past_clk_start/],
    ['$onehot0 on a select input', 'onehot_sel.sv', /sel = sel & \(~sel \+ 1'b1\);/],
    ['|=> on an input, and a forbidden encoding', 'delay_ack.sv', /if \(chorus_ante_\d+\[0\]\) begin done = 1'b1; end/],
    ['assertions a macro hides from Verilator', 'hidden_macro.sv', /rd = '0;/],
    [
      'a property over internal nets, read through their continuous assignments',
      'credit_gate.sv',
      /if \(\(credit_o == '0\) && !\(give_i\) && take_i\) begin take_i = '0; end/,
    ],
    [
      'per-input checks of a generate loop over packed-array ports',
      'sel_array.sv',
      /if \(valid_i\[1\]\) begin if \(!\(sel_i\[3:2\] < 32'd3\)\) sel_i\[3:2\] = sel_i\[3:2\] % 32'd3; end/,
    ],
    [
      'a sum of concatenations compared as written',
      'bound_sum.sv',
      /\(\(\{1'd0, q_o\} \+ \{1'd0, delta_i\}\) > \{1'd0, bound_i\}\) && en_i\) begin en_i = '0; end/,
    ],
  ];
  for (const [name, file, rule] of cases) {
    it(`${name}: no assertion fires with or without VERILATOR`, async () => {
      const { g, rebuilt } = await generateAndRebuild(file);
      expect(g.best.testbench).toMatch(rule);
      for (const r of rebuilt) {
        expect(r.status, r.error).toBe('ran');
        expect(r.failures, r.sites.join(', ')).toBe(0);
      }
      // Legal from the first round: the rules come from the properties, not from failures.
      expect(g.rounds[0].result.dutAssertions ?? []).toEqual([]);
      expect(g.best.result.coverage!.waived.overall).toBeGreaterThan(0.5);
    });
  }

  it('a property over internal state that only a build without VERILATOR checks: learned from that build, the input spaced out', async () => {
    const { g, rebuilt } = await generateAndRebuild('pulse_space.sv', 5);
    // The first round fired it in the build without VERILATOR; its own run could not see it.
    expect(g.rounds[0].notes.join('\n')).toMatch(/a build without VERILATOR .* fired \d+ assertion failures? this run does not check/);
    expect(g.rounds[0].result.dutAssertions?.map((a) => a.line)).toEqual([34]);
    expect(g.best.testbench).toMatch(/if \(chorus_quiet_pulse_space_sv_34_\d+ < \d+\) begin start_i = '0; end/);
    for (const r of rebuilt) {
      expect(r.status, r.error).toBe('ran');
      expect(r.failures, r.sites.join(', ')).toBe(0);
    }
    expect(g.best.result.dutAssertions ?? []).toEqual([]);
    expect(g.best.result.coverage!.waived.overall).toBeGreaterThan(0.8);
  });

  it('checks of the starting state (`initial assert (i_reset)`, `(!i_cyc)`): met at time 0, never rules of every step', async () => {
    const { g, rebuilt } = await generateAndRebuild('start_state.sv');
    // Inputs hold their first values from time 0, before any initial block runs.
    expect(g.best.testbench).toMatch(/logic i_reset = 1'b1;/);
    expect(g.best.testbench).toMatch(/logic i_cyc = '0;/);
    // Only the every-cycle check on inputs became a rule: the bus cycle itself is never held off,
    // and the check after a reset is kept by the idle step that follows each release.
    expect(g.best.testbench).toMatch(/legal stimulus: assertion at start_state\.sv:29:/);
    expect(g.best.testbench).not.toMatch(/assertion at start_state\.sv:(2[3-7]|34)/);
    for (const r of rebuilt) {
      expect(r.status, r.error).toBe('ran');
      expect(r.failures, r.sites.join(', ')).toBe(0);
    }
    expect(g.rounds[0].result.dutAssertions ?? []).toEqual([]);
    // o_ack toggles only with bus cycles: full toggle coverage of the outputs needs them.
    expect(g.best.result.coverage!.waived.overall).toBeGreaterThan(0.9);
  });

  it('look-alike: the same FIFO without its checks gets no legality rules', async () => {
    const dir = scratchDir('chorus-legal-');
    const src = join(dir, 'no_checks.sv');
    const { readFileSync } = await import('node:fs');
    writeFileSync(
      src,
      readFileSync(join(legal, 'push_full.sv'), 'utf8')
        .replace(/^\s*no_\w+: assert.*$/gm, '')
        .replace('module push_full', 'module no_checks'),
    );
    const { design, info } = await loadDesign({ files: [src] });
    const g = await generateTestbench(sim, design, info, { attempts: 1 });
    expect(g.best.testbench).not.toMatch(/Legal stimulus only/);
  });
});

describe('resets and clocks from use', () => {
  it('an active-low synchronous reset is driven low first, then released; its evidence is in the header', async () => {
    const { design, info } = await loadDesign({ files: [join(legal, 'push_full.sv')] });
    expect(info.facts?.resets).toEqual([expect.objectContaining({ signal: 'rst_ni', activeLow: true, async: false })]);
    const g = await generateTestbench(sim, design, info, { attempts: 1 });
    expect(g.best.testbench).toMatch(/Reset: rst_ni \(active-low, synchronous: /);
    expect(g.best.testbench).toMatch(/rst_ni = 1'b0;[\s\S]*rst_ni = 1'b1;/);
  });

  it('two clock domains: both clocks from use, resets never driven as clocks, related periods in the first round', async () => {
    const { design, info } = await loadDesign({ files: [join(legal, 'cdc_pair.sv')] });
    const g = await generateTestbench(sim, design, info, { attempts: 2 });
    const tb0 = g.rounds[0].testbench;
    expect(tb0).toMatch(/always #5 clk_src = ~clk_src;/);
    expect(tb0).toMatch(/always #5 clk_dst = ~clk_dst;/);
    expect(tb0).not.toMatch(/always #\d+ rst_/);
    expect(tb0).toMatch(/Reset: rst_src_n \(active-low, asynchronous/);
    // The next round runs the crossing at another ratio.
    if (g.rounds.length > 1) expect(g.rounds[1].testbench).toMatch(/always #7 clk_dst = ~clk_dst;/);
  });
});
