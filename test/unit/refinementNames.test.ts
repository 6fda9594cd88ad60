// A refinement keeps the testbench's module name (core/run/refinement.ts keepModuleName): what a
// model calls its revision's module never renames the user's testbench.
import { describe, expect, it } from 'vitest';
import { keepModuleName } from '../../src/core/run/refinement.js';

describe('keepModuleName', () => {
  it("renames the revision's top and its uses as identifiers, never comments or strings", () => {
    const revision = [
      '// tb_counter drives the counter',
      'module tb_counter;',
      '  initial $dumpvars(0, tb_counter);',
      '  string s = "tb_counter";',
      '  wire x = tb_counter.uut.q, y = tb_counter_x;',
      'endmodule',
      '',
    ].join('\n');
    const r = keepModuleName(revision, 'tb_counter_weak');
    expect(r.renamed).toMatch(/module tb_counter is named tb_counter_weak/);
    expect(r.text).toBe(
      [
        '// tb_counter drives the counter',
        'module tb_counter_weak;',
        '  initial $dumpvars(0, tb_counter_weak);',
        '  string s = "tb_counter";',
        '  wire x = tb_counter_weak.uut.q, y = tb_counter_x;',
        'endmodule',
        '',
      ].join('\n'),
    );
  });

  it('leaves a revision that already has the name, or several tops, or an unknown name as it is', () => {
    const same = 'module tb_w;\nendmodule\n';
    expect(keepModuleName(same, 'tb_w')).toEqual({ text: same });
    const two = 'module a;\nendmodule\nmodule b;\nendmodule\n';
    expect(keepModuleName(two, 'tb_w')).toEqual({ text: two });
    expect(keepModuleName(same, undefined)).toEqual({ text: same });
    // A revision that declares the name beside another top is not renamed into a clash.
    const both = 'module tb_x;\n tb_w u();\nendmodule\nmodule tb_w;\nendmodule\n';
    expect(keepModuleName(both, 'tb_w').text).toBe(both);
  });
});
