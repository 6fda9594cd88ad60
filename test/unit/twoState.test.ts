// The 2-state reachability analysis (src/core/coverage/twoState.ts) on hand-made coverage points:
// each rule fires on its pattern and stays silent on the look-alikes that a 2-state run can reach.
import { describe, expect, it } from 'vitest';
import { evalConst, twoStateUnreachable } from '../../src/core/coverage/twoState.js';
import type { CoveragePoint } from '../../src/core/coverage/model.js';

const FILE = '/d/m.sv';
const pt = (type: CoveragePoint['type'], line: number, label: string, count = 0, module = 'm'): CoveragePoint => ({
  type,
  file: FILE,
  line,
  column: 1,
  module,
  hier: 'tb.uut',
  label,
  count,
});
const bits = (name: string, w: number, line: number, count = 5, module = 'm'): CoveragePoint[] =>
  Array.from({ length: w }, (_, k) => pt('toggle', line, `${name}[${k}]`, count, module));
const run = (src: string, points: CoveragePoint[]) => twoStateUnreachable(points, () => src);

describe('full-case default arms', () => {
  const src = (labels: string[]) =>
    [
      'module m #(parameter P = 2) (input [1:0] s, output reg [3:0] y);', // 1
      "  localparam A = 2'd3;", // 2
      '  always @(*) begin', // 3
      '    case (s)', // 4
      ...labels.map((l) => `      ${l}: y = 1;`), // 5..
      '      default: y = 0;',
      '    endcase',
      '  end',
      'endmodule',
    ].join('\n');
  it('flags the default arm when the items list every value of the selector width (literals and localparams)', () => {
    // Three items (one with two labels): the default arm is on line 8.
    const s = src(["2'b00, 2'b01", "2'd2", 'A']);
    const r = run(s, [...bits('s', 2, 1), pt('line', 8, 'case'), pt('line', 5, 'case', 3)]);
    expect(r.count).toBe(1);
    expect(r.points[0]).toMatchObject({ line: 8, type: 'line', label: 'case' });
    expect(r.points[0].reason).toMatch(/all 4 values of the 2-bit selector 's'/);
    expect(r.figures.tallies.line).toEqual({ covered: 1, total: 1 });
  });
  it('stays silent when a value is missing, a label is an overridable parameter, or the arm was covered', () => {
    expect(run(src(["2'b00", "2'b01", "2'd2"]), [...bits('s', 2, 1), pt('line', 8, 'case')]).count).toBe(0);
    expect(run(src(["2'b00", "2'b01", "2'd2", 'P']), [...bits('s', 2, 1, 5, 'm__P1'), pt('line', 9, 'case', 0, 'm__P1')]).count).toBe(0);
    expect(run(src(["2'b00", "2'b01", "2'd2", 'A']), [...bits('s', 2, 1), pt('line', 9, 'case', 1)]).count).toBe(0);
  });
  it('a parameter is a known constant only when every instance has the defaults (plain module name)', () => {
    const s = src(["2'b00", "2'b01", "2'd2", 'P + 1']);
    expect(run(s, [...bits('s', 2, 1), pt('line', 9, 'case')]).count).toBe(1);
    expect(run(s, [...bits('s', 2, 1, 5, 'm__P3'), pt('line', 9, 'case', 0, 'm__P3')]).count).toBe(0);
  });
});

describe('constant variables and loop indices', () => {
  it('a loop index in a clocked block, a constant-only signal, an enum bit no member sets', () => {
    const src = [
      'module m (input clk, input [7:0] d, output reg [3:0] n, output z);', // 1
      '  typedef enum logic [2:0] {S0, S1, S2} st_t;', // 2
      '  st_t st;', // 3
      '  reg [3:0] k;', // 4
      '  always @(posedge clk) begin', // 5
      '    st <= (st == S2) ? S0 : (st == S0) ? S1 : S2;', // 6
      '    n <= 0;', // 7
      '    if (d[0]) for (k = 0; k < 8; k = k + 1) n <= n + d[k];', // 8
      '  end', // 9
      "  assign z = 1'b0;", // 10
      'endmodule',
    ].join('\n');
    const r = run(src, [
      ...bits('k', 4, 4, 1),
      ...bits('st', 3, 3),
      pt('toggle', 3, 'st[2]', 0),
      pt('toggle', 1, 'z', 0),
      ...bits('n', 4, 1, 0),
    ]);
    const by = Object.fromEntries(r.points.map((p) => [p.label, p]));
    expect(by.k).toMatchObject({ line: 8, points: 4 });
    expect(by.k.reason).toMatch(/for-loop index 'k' with constant bounds/);
    expect(by.z.reason).toMatch(/only ever assigned the constant 1'b0/);
    expect(by.st).toMatchObject({ line: 3, points: 1 });
    // n changes with the data: never claimed, even though this run left it uncovered.
    expect(by.n).toBeUndefined();
  });
  it('stays silent for two loops with different bounds, a write in a function, different constants', () => {
    const src = [
      'module m (input clk, input a, output reg [3:0] k, output reg f, output reg g);',
      '  function automatic void touch(); f = 1; endfunction',
      '  always @(posedge clk) begin',
      '    if (a) for (k = 0; k < 4; k++) ; else for (k = 0; k < 8; k++) ;',
      '    f = 0;',
      "    g <= a ? 1'b1 : 1'b1;",
      "    if (a) g <= 1'b0;",
      '  end',
      'endmodule',
    ].join('\n');
    const r = run(src, [...bits('k', 4, 1, 0), pt('toggle', 1, 'f', 0), pt('toggle', 1, 'g', 0)]);
    expect(r.points).toEqual([]);
  });
  it('bit by bit through a combinational block: shifts, concatenations, unrolled loops, merged arms', () => {
    const src = [
      'module m (input [3:0] d, input s, output reg [7:0] sh, output reg [3:0] y);', // 1
      '  integer i;', // 2
      '  always_comb begin', // 3
      "    sh = {4'b0, d};", // 4
      '    for (i = 0; i < 3; i = i + 1) sh = sh << 1;', // 5
      "    if (s) y = 4'b0101; else y = {2'b01, d[1:0]};", // 6
      '  end', // 7
      'endmodule',
    ].join('\n');
    const r = run(src, [...bits('sh', 8, 1, 0), ...bits('y', 4, 1, 0)]);
    const by = Object.fromEntries(r.points.map((p) => [p.label, p]));
    // sh = d << 3: bits 0-2 always 0, bit 7 always 0; y[3:2] = 2'b01 on both arms.
    expect(by.sh.points).toBe(4);
    expect(by.sh.reason).toMatch(/bits 0-2, 7 of 'sh'/);
    expect(by.y.points).toBe(2);
    expect(by.y.reason).toMatch(/bits 2-3 of 'y'/);
  });
});

describe('dead else arms', () => {
  it('after x >= 0 on an unsigned x, and after x == 0 ... else if (x > 0); never on a signed x', () => {
    const src = [
      'module m (input [2:0] a, input signed [2:0] b, input [4:0] c, output reg y);', // 1
      '  always @(*) begin', // 2
      '    y = 0;', // 3
      "    if (a >= 3'b000) y = 1;", // 4
      '    if (b >= 0) y = 1;', // 5
      '    if (c == 0) y = 0;', // 6
      '    else if (c > 0) y = 1;', // 7
      '    if (c == 0) y = 0;', // 8
      '    else if (c > 1) y = 1;', // 9
      '  end',
      'endmodule',
    ].join('\n');
    const arms = [4, 5, 7, 9].flatMap((l) => [pt('branch', l, 'if', 3), pt('branch', l, 'else')]);
    const r = run(src, [...arms, pt('branch', 6, 'if', 2)]);
    expect(r.points.map((p) => [p.line, p.label])).toEqual([
      [4, 'else'],
      [7, 'else'],
    ]);
    expect(r.points[0].reason).toMatch(/unsigned 'a' is always >= 0/);
    expect(r.points[1].reason).toMatch(/'c' that is not 0 is always > 0/);
  });
});

describe('evalConst', () => {
  it('reads sized, based and unsized literals, names and $clog2', () => {
    expect(evalConst(["4'hF"])).toBe(15n);
    expect(evalConst(["3'd9"])).toBe(1n);
    expect(evalConst(['(', '1', '<<', '3', ')', '-', '1'])).toBe(7n);
    expect(evalConst(['$clog2', '(', 'N', ')'], new Map([['N', 5n]]))).toBe(3n);
    expect(evalConst(['X'])).toBeNull();
    expect(evalConst(["2'b1x"])).toBeNull();
  });
});
