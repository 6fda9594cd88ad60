// The slang front end through the product's own path (sim/slang/frontEnd.ts, jailed like every
// tool that reads untrusted text): both readings of a design, the assertion union with the
// readings that hold each, the cache, and the errors a user can act on.
import { describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { designFacts, readDesign } from '../../src/core/sim/slang/frontEnd.js';
import { loadDesign } from '../../src/core/run/design.js';
import { emptyDesign, type DesignSpec } from '../../src/core/design/types.js';
import { fixtures, scratchDir } from '../helpers.js';

const spec = (files: string[], extra: Partial<DesignSpec> = {}): DesignSpec => ({ ...emptyDesign(), files, ...extra });

describe('slang front end', () => {
  it('an assertion a macro hides from Verilator is in the union, seen only by the other reading', async () => {
    const f = await designFacts(spec([join(fixtures, 'legal', 'hidden_macro.sv')]));
    expect(f.top).toBe('hidden_macro');
    expect(f.assertions.map((a) => [a.line, a.seenWith])).toEqual([
      [18, ['other']],
      [19, ['other']],
      [20, ['other']],
    ]);
    expect(f.resets).toEqual([expect.objectContaining({ signal: 'rst_n', activeLow: true, async: true })]);
    expect(f.clocks).toEqual([{ signal: 'clk', edge: 'pos', uses: expect.any(Number) }]);
  });

  it('loadDesign carries the facts and says which assertions only another simulator checks', async () => {
    const { info, notes } = await loadDesign({ files: [join(fixtures, 'legal', 'hidden_macro.sv')] });
    expect(info.facts?.assertions).toHaveLength(3);
    expect(notes.join('\n')).toMatch(
      /3 of the design's assertions are compiled only without the VERILATOR define \(hidden_macro\.sv:18, hidden_macro\.sv:19, hidden_macro\.sv:20\)/,
    );
  });

  it('an included file is read (and its change is a new reading, not a cached one)', async () => {
    const dir = scratchDir('chorus-slang-');
    writeFileSync(join(dir, 'body.svh'), "always_ff @(posedge clk) if (!rst_n) q <= 1'b0; else q <= d;\n");
    const top = join(dir, 'inc_top.sv');
    writeFileSync(top, 'module inc_top(input logic clk, rst_n, d, output logic q);\n`include "body.svh"\nendmodule\n');
    const s = spec([top], { includeDirs: [dir] });
    const [first] = await readDesign(s);
    expect(first.includes.map((i) => i.file)).toEqual([join(dir, 'body.svh')]);
    expect(first.resets).toEqual([expect.objectContaining({ signal: 'rst_n', activeLow: true, async: false })]);
    writeFileSync(join(dir, 'body.svh'), "always_ff @(posedge clk) if (rst_n) q <= 1'b0; else q <= d;\n");
    const [second] = await readDesign(s);
    expect(second.resets).toEqual([expect.objectContaining({ signal: 'rst_n', activeLow: false, async: false })]);
  });

  it('a host file a design includes never comes back in its facts (jailed: it does not exist there)', async () => {
    const dir = scratchDir('chorus-slang-');
    const top = join(dir, 'leak.sv');
    writeFileSync(top, 'module leak(input logic a, output logic y);\n`include "/etc/passwd"\nassign y = a;\nendmodule\n');
    const [reading] = await readDesign(spec([top]));
    expect(reading.ok).toBe(false);
    expect(JSON.stringify(reading)).not.toMatch(/root:x:0:0/);
  });

  it('a missing install is an error that says how to install it', async () => {
    const saved = process.env.CHORUS_SLANG_PYTHON;
    process.env.CHORUS_SLANG_PYTHON = '/nonexistent/python';
    try {
      await expect(
        designFacts(spec([join(fixtures, 'legal', 'onehot_sel.sv')], { top: 'onehot_sel', defines: { X: '2' } })),
      ).rejects.toThrow(/CHORUS_SLANG_PYTHON=\/nonexistent\/python does not exist/);
    } finally {
      if (saved === undefined) delete process.env.CHORUS_SLANG_PYTHON;
      else process.env.CHORUS_SLANG_PYTHON = saved;
    }
  });
});
