// The event-driven copy of blocks that read what they write (src/core/sim/verilator/settle.ts):
// which blocks it rewrites, the event list it gives them, and that lines stay where they were.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventDrivenCopy } from '../../src/core/sim/verilator/settle.js';
import { fixtures } from '../helpers.js';

const div = join(fixtures, 'designs', 'selfread_div', 'selfread_div.sv');

describe('eventDrivenCopy', () => {
  it('gives the looping always @(*) an event list without the variables it writes, on the same lines', () => {
    const src = readFileSync(div, 'utf8');
    const c = eventDrivenCopy(
      src,
      ['tb.uut.nxt_cnt'].map((s) => s.split('.').pop()!),
      div,
    )!;
    expect(c.blocks).toHaveLength(1);
    expect(c.blocks[0].line).toBe(18);
    expect(c.blocks[0].writes).toEqual(['nxt_acc', 'nxt_busy', 'nxt_cnt', 'nxt_done', 'shifted']);
    expect(new Set(c.blocks[0].sensitivity)).toEqual(new Set(['acc', 'busy', 'go', 'a', 'cnt', 'N', 'b']));
    const lines = c.text.split('\n');
    // The `line directive names the original, then every line sits where it was.
    expect(lines[0]).toBe(`\`line 1 "${div}" 0`);
    expect(lines.length - 1).toBe(src.split('\n').length);
    expect(lines[18]).toBe('  always @(' + c.blocks[0].sensitivity.join(' or ') + ') begin');
    expect(lines.slice(19).join('\n')).toBe(src.split('\n').slice(18).join('\n'));
  });

  it('always_comb runs once first, then waits on its event list; other blocks stay as they are', () => {
    const src = [
      'module m(input logic [1:0] s, output logic [1:0] n);',
      '  logic [1:0] t;',
      '  always_comb begin // keeps t',
      "    if (n == 2'd3) n = 0; else n = s + 1;",
      '  end',
      '  always @* t = s;',
      '  always_comb',
      '    if (s) t = 1;',
      'endmodule',
    ].join('\n');
    const c = eventDrivenCopy(src, ['n'], '/d/m.sv')!;
    expect(c.blocks.map((b) => b.line)).toEqual([3]);
    expect(c.blocks[0].sensitivity).toEqual(['s']);
    const lines = c.text.split('\n').slice(1);
    expect(lines[2]).toBe('  always begin begin // keeps t');
    expect(lines[4]).toBe('  end @(s); end');
    expect(lines[5]).toBe('  always @* t = s;');
  });

  it('leaves out calls, casts, members, package items, literals, typedef names and locals', () => {
    const src = [
      'module m(input logic [3:0] s, input st_t st, output logic [3:0] n);',
      '  typedef enum logic [1:0] {A, B} k_t;',
      '  always @(*) begin',
      '    integer j;',
      "    j = 4'hA + $clog2(s) + f(s) + k_t'(st.f) + pkg::C + 1e3;",
      '    n = n ^ j[3:0];',
      '  end',
      'endmodule',
    ].join('\n');
    expect(eventDrivenCopy(src, ['n'], '/d/m.sv')!.blocks[0].sensitivity).toEqual(['s', 'st']);
  });

  it('rewrites nothing when no block writes a looping variable, or the path cannot go into a `line directive', () => {
    const src = readFileSync(div, 'utf8');
    expect(eventDrivenCopy(src, ['acc'], div)).toBeUndefined();
    expect(eventDrivenCopy(src, ['nxt_cnt'], '/d/we"ird.sv')).toBeUndefined();
    expect(eventDrivenCopy('module m; always @* if (a) b = b + 1; endmodule', ['b'], '/d/m.sv')).toBeUndefined();
  });
});
