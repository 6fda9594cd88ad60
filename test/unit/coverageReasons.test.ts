// The proofs behind uncovered points' reasons (coverage/twoState.ts, params.ts) on hand-made
// points: each rule fires on its pattern and stays silent on a look-alike a run can reach; and
// the soundness fixes (memories, fill literals, signed operands, casts, task outputs, ranges not
// numbered from 0, -G overrides).
import { describe, expect, it } from 'vitest';
import { evalConst, twoStateUnreachable, type TwoStateOptions } from '../../src/core/coverage/twoState.js';
import { analyzeCoverage } from '../../src/core/coverage/analyze.js';
import type { CoveragePoint } from '../../src/core/coverage/model.js';
import { uncoveredByReason } from '../../src/core/coverage/report.js';

const FILE = '/d/m.sv';
const pt = (type: CoveragePoint['type'], line: number, label: string, extra: Partial<CoveragePoint> = {}): CoveragePoint => ({
  type,
  file: FILE,
  line,
  column: 1,
  module: 'm',
  hier: 'tb.uut',
  label,
  count: 0,
  ...extra,
});
const bits = (name: string, w: number, extra: Partial<CoveragePoint> = {}): CoveragePoint[] =>
  Array.from({ length: w }, (_, k) => pt('toggle', 1, `${name}[${k}]`, extra));
const proofs = (src: string, points: CoveragePoint[], opts: TwoStateOptions = { top: 'm', params: {} }) => {
  const r = twoStateUnreachable(points, () => src, opts);
  return (label: string, hier = 'tb.uut') => [...r.proven].find(([p]) => p.label === label && p.hier === hier)?.[1];
};
const mod = (body: string[], header = 'module m (input clk, input [3:0] in, input [2:0] a, output logic [3:0] o);') =>
  [header, ...body, 'endmodule'].join('\n');

describe('soundness of the 2-state rules', () => {
  it('a memory read through a variable index is unknown; a word built from constants is not', () => {
    const rom = mod([
      '  logic [7:0] rom [0:3];',
      '  logic [7:0] w;',
      "  initial begin rom[0] = 8'h00; rom[1] = 8'hA5; rom[2] = 8'h5A; rom[3] = 8'hFF; end",
      '  always @* begin w = rom[a[1:0]]; o = w[7:4]; end',
    ]);
    const p = proofs(rom, [...bits('w', 8), ...bits('o', 4)]);
    for (let k = 0; k < 8; k++) expect(p(`w[${k}]`)).toBeUndefined();
    expect(p('o[0]')).toBeUndefined();
    const lit = mod(['  logic [7:0] w;', "  always @* begin w = {4'b0000, in}; o = w[7:4]; end"]);
    expect(proofs(lit, bits('w', 8))('w[7]')?.kind).toBe('unreachable-2state');
  });

  it("reads '1 as all ones: bits set by '1 in one arm and '0 in the other are not constant", () => {
    const both = mod(['  logic [3:0] w;', "  always @* begin if (in[0]) w = '1; else w = '0; o = w; end"]);
    const p = proofs(both, bits('w', 4));
    for (let k = 0; k < 4; k++) expect(p(`w[${k}]`)).toBeUndefined();
    const ones = mod(['  logic [3:0] w;', "  always @* begin w = '1; o = w ^ in; end"]);
    expect(proofs(ones, bits('w', 4))('w[3]')?.kind).toBe('unreachable-2state');
    expect(evalConst(["'1"])).toBeNull();
    expect(evalConst(["'0"])).toBe(0n);
  });

  it("a case listing '1 among its labels does not make a full case", () => {
    const src = mod([
      '  always @* case (a[1:0])',
      "    2'b00: o = 1;",
      "    2'b10: o = 2;",
      "    2'b11: o = 3;",
      "    '1: o = 4;",
      '    default: o = 0;',
      '  endcase',
    ]);
    expect(proofs(src, [...bits('a', 3), pt('line', 8, 'case')])('case')).toBeUndefined();
  });

  it('an int or integer may be negative: the else of if (i >= 0) is reachable; a plain logic vector is not', () => {
    const int = mod(['  integer i;', '  always @(posedge clk) begin i <= i - 1; if (i >= 0) o <= 1; else o <= 2; end']);
    expect(proofs(int, [pt('line', 3, 'else', { span: [3, 3] })])('else')).toBeUndefined();
    const vec = mod(['  logic [3:0] u;', '  always @(posedge clk) begin u <= in; if (u >= 0) o <= 1;', '  else o <= 2; end']);
    expect(proofs(vec, [pt('line', 4, 'else', { span: [4, 4] })])('else')?.kind).toBe('unreachable-2state');
  });

  it('an enum assigned through a cast, or a port, may hold any value; one assigned members only may not', () => {
    const enumSrc = (assign: string) =>
      mod(['  typedef enum logic [2:0] {S0, S1, S2} st_t;', '  st_t st;', `  always @(posedge clk) ${assign}`, '  assign o = st;']);
    expect(proofs(enumSrc("st <= st_t'(in[2:0]);"), bits('st', 3))('st[2]')).toBeUndefined();
    expect(proofs(enumSrc('st <= (st == S2) ? S0 : (st == S0) ? S1 : S2;'), bits('st', 3))('st[2]')?.kind).toBe('unreachable-2state');
  });

  it('a task call may write its arguments: a variable passed to one is never called constant', () => {
    const call = mod([
      '  logic [3:0] x;',
      '  task automatic get(output logic [3:0] v); v = in; endtask',
      "  always @(posedge clk) begin x <= 4'd0; get(x); end",
      '  assign o = x;',
    ]);
    expect(proofs(call, bits('x', 4))('x[0]')).toBeUndefined();
    const plain = mod(['  logic [3:0] x;', "  always @(posedge clk) begin x <= 4'd0; end", '  assign o = x;']);
    expect(proofs(plain, bits('x', 4))('x[0]')?.kind).toBe('unreachable-2state');
    const scan = mod(['  logic [3:0] x;', '  always @* begin x = 0; $sscanf("5", "%d", x); o = x; end']);
    expect(proofs(scan, bits('x', 4))('x[0]')).toBeUndefined();
  });

  it('a vector numbered from 1 is not followed bit by bit', () => {
    const src = mod(['  logic [8:1] x;', '  always @* begin x = 0; x[8] = in[0]; o = x[4:1]; end']);
    const labels = Array.from({ length: 8 }, (_, k) => pt('toggle', 1, `x[${k + 1}]`));
    expect(proofs(src, labels)('x[8]')).toBeUndefined();
  });

  it('-G on the top: its parameters are not the defaults any more', () => {
    const src = mod(
      [
        '  localparam int L = 3;',
        '  always @* case (a[1:0])',
        "    2'd0: o = 1;",
        "    2'd1: o = 2;",
        "    2'd2: o = 3;",
        '    P: o = 4;',
        '    default: o = 0;',
        '  endcase',
      ],
      'module m #(parameter P = 3) (input [2:0] a, output logic [3:0] o);',
    );
    const pts = [...bits('a', 3), pt('line', 8, 'case')];
    expect(proofs(src, pts, { top: 'm', params: {} })('case')?.kind).toBe('unreachable-2state');
    expect(proofs(src, pts, { top: 'm', params: { P: '1' } })('case')).toBeUndefined();
  });
});

describe('dead under the chosen parameters', () => {
  const src = [
    'module m #(parameter ARB_BLOCK = 0, parameter int MODE = 2) (input clk, input a, output logic [3:0] o);', // 1
    '  always @(posedge clk) begin', // 2
    '    if (ARB_BLOCK) begin', // 3
    '      o <= 1;', // 4
    '    end', // 5
    '    if (ARB_BLOCK && a) o <= 2;', // 6
    '    if (MODE == 2)', // 7
    '      o <= 3;', // 8
    '    else', // 9
    '      o <= 4;', // 10
    '    case (MODE)', // 11
    '      0: o <= 5;', // 12
    '      2: o <= 6;', // 13
    '      default: o <= 7;', // 14
    '    endcase', // 15
    '    if (a) o <= 8;', // 16
    '  end', // 17
    'endmodule', // 18
    'module top (input clk, input a, output [3:0] o);', // 19
    '  m #(.ARB_BLOCK(1), .MODE(0)) u_m (.clk(clk), .a(a), .o(o));', // 20
    'endmodule', // 21
  ].join('\n');
  const points = (hier = 'tb.uut', module = 'm') => [
    pt('branch', 3, 'if', { span: [3, 5], hier, module }),
    pt('branch', 3, 'else', { hier, module }),
    pt('branch', 6, 'if', { span: [6, 6], hier, module }),
    pt('line', 7, 'if', { span: [7, 8], hier, module }),
    pt('line', 7, 'else', { span: [10, 10], hier, module }),
    pt('line', 12, 'case', { span: [12, 12], hier, module }),
    pt('line', 13, 'case', { span: [13, 13], hier, module }),
    pt('line', 14, 'case', { span: [14, 14], hier, module }),
    pt('branch', 16, 'if', { span: [16, 16], hier, module }),
    pt('branch', 16, 'else', { hier, module }),
  ];
  it('if, else and case arms decided by the top parameters, with the -G that enables them', () => {
    const p = proofs(src, points());
    expect(p('if')).toBeDefined();
    const r = twoStateUnreachable(points(), () => src, { top: 'm', params: {} });
    const at = (line: number, label: string) => [...r.proven].find(([q]) => q.line === line && q.label === label)?.[1];
    expect(at(3, 'if')).toMatchObject({ kind: 'dead-param', enable: '-G ARB_BLOCK=1' });
    expect(at(3, 'if')!.detail).toMatch(/if \(ARB_BLOCK\)', false with ARB_BLOCK = 0/);
    expect(at(6, 'if')).toMatchObject({ kind: 'dead-param' }); // false whatever a is
    // Only the parameter has a value to show: the signal beside it is not "a = undefined".
    expect(at(6, 'if')!.detail).toMatch(/false with ARB_BLOCK = 0(?!, a)/);
    expect(at(6, 'if')!.detail).not.toMatch(/undefined/);
    expect(at(7, 'else')).toMatchObject({ kind: 'dead-param', enable: '-G MODE=0' });
    expect(at(12, 'case')).toMatchObject({ kind: 'dead-param', enable: '-G MODE=0' });
    expect(at(14, 'case')).toMatchObject({ kind: 'dead-param' });
    // Reachable: the live arms, a condition on a signal, the implicit else of if (ARB_BLOCK).
    expect(at(7, 'if')).toBeUndefined();
    expect(at(13, 'case')).toBeUndefined();
    expect(at(16, 'if')).toBeUndefined();
    expect(at(16, 'else')).toBeUndefined();
    expect(at(3, 'else')).toBeUndefined();
    expect(r.count).toBe(0); // none of them is a 2-state matter
  });
  it('-G overrides decide instead of the defaults; unknown overrides decide nothing', () => {
    const r = twoStateUnreachable(points(), () => src, { top: 'm', params: { ARB_BLOCK: '1', MODE: '0' } });
    const at = (line: number, label: string) => [...r.proven].find(([q]) => q.line === line && q.label === label)?.[1];
    expect(at(3, 'if')).toBeUndefined();
    expect(at(6, 'if')).toBeUndefined(); // ARB_BLOCK && a: depends on a
    expect(at(3, 'else')?.kind).toBe('dead-param');
    expect(at(7, 'if')?.kind).toBe('dead-param');
    expect(at(12, 'case')).toBeUndefined();
    expect(at(13, 'case')?.kind).toBe('dead-param');
    const blind = twoStateUnreachable(points(), () => src, { top: 'm' });
    expect([...blind.proven.values()].filter((v) => v.kind === 'dead-param')).toEqual([]);
    const str = twoStateUnreachable(points(), () => src, { top: 'm', params: { MODE: '"x"' } });
    expect([...str.proven].filter(([q, v]) => v.kind === 'dead-param' && q.line >= 7)).toEqual([]);
  });
  it('a parameter fixed by a submodule instantiation, per instance', () => {
    const sub = points('tb.uut.u_m', 'm__A1_M0');
    const top = [pt('toggle', 19, 'a', { module: 'top', hier: 'tb.uut', count: 3 })];
    const r = twoStateUnreachable([...top, ...sub], () => src, { top: 'top', params: {} });
    const at = (line: number, label: string) => [...r.proven].find(([q]) => q.line === line && q.label === label)?.[1];
    expect(at(3, 'if')).toBeUndefined();
    expect(at(13, 'case')).toMatchObject({ kind: 'dead-param' });
    expect(at(13, 'case')!.detail).toMatch(/fixed by the instantiation 'u_m'/);
    expect(at(13, 'case')!.enable).toBeUndefined();
    expect(at(12, 'case')).toBeUndefined();
  });
});

describe('tied off or constant signals', () => {
  it('never assigned, written only at time 0, a field no assignment writes: flagged', () => {
    const src = mod([
      '  logic [3:0] spare, cfg;',
      '  logic [7:0] ctrl;',
      "  initial cfg = 4'h5;",
      '  always @(posedge clk) ctrl[3:0] <= in ^ spare ^ cfg;',
      '  assign o = ctrl[3:0];',
    ]);
    const p = proofs(src, [...bits('spare', 4), ...bits('cfg', 4), ...bits('ctrl', 8)]);
    expect(p('spare[1]')).toMatchObject({ kind: 'constant' });
    expect(p('cfg[0]')!.detail).toMatch(/only at time 0/);
    expect(p('ctrl[7]')!.detail).toMatch(/bits 4-7 of 'ctrl'/);
    expect(p('ctrl[2]')).toBeUndefined();
  });
  it('look-alikes a run can change: driven by an instance, a gate, a delayed assign, a timed initial, a variable index, a hierarchical write', () => {
    const src = [
      'module m (input clk, input [3:0] in, input [1:0] a, output logic [3:0] o);',
      '  logic [3:0] byinst, bygate, bydelay, timed;',
      '  logic [7:0] ctrl;',
      '  sub u_s (.q(byinst));',
      '  and (bygate, in[0], in[1]);',
      '  assign #1 bydelay = in;',
      "  initial begin timed = 4'h1; #5 timed = 4'h2; end",
      '  always @(posedge clk) ctrl[a*4 +: 4] <= in;',
      '  assign o = byinst ^ bygate ^ bydelay ^ timed ^ ctrl[3:0];',
      'endmodule',
      'module other;',
      "  initial tb.uut.hidden = 1'b1;",
      'endmodule',
    ].join('\n');
    const hidden = mod(['  logic hidden;', "  assign o = {3'b0, hidden};"]);
    const p = proofs(src, [...bits('byinst', 4), ...bits('bygate', 4), ...bits('bydelay', 4), ...bits('timed', 4), ...bits('ctrl', 8)]);
    for (const l of ['byinst[0]', 'bygate[0]', 'bydelay[0]', 'timed[0]', 'ctrl[7]']) expect(p(l), l).toBeUndefined();
    const r = twoStateUnreachable([pt('toggle', 2, 'hidden')], (f) => (f === FILE ? hidden : undefined), { top: 'm', params: {} });
    expect(r.proven.size).toBe(1); // alone: never assigned
    const both = twoStateUnreachable(
      [pt('toggle', 2, 'hidden'), pt('toggle', 1, 'x', { file: '/d/o.sv', module: 'other', hier: 'tb.o', count: 2 })],
      (f) => (f === FILE ? hidden : "module other;\n  initial tb.uut.hidden = 1'b1;\nendmodule"),
      { top: 'm', params: {} },
    );
    expect(both.proven.size).toBe(0);
  });
  it('a counter that counts by one under a bound never sets its upper bits; look-alikes that can pass the bound do', () => {
    const counter = (body: string[]) => proofs(mod(['  logic [7:0] cnt;', ...body, '  assign o = cnt[3:0];']), bits('cnt', 8));
    const p = counter(["  always @(posedge clk) if (in[0]) cnt <= 8'd0; else if (cnt < 8'd9) cnt <= cnt + 8'd1;"]);
    expect(p('cnt[4]')!.detail).toMatch(/never exceeds 9, so its bits from 4 up are never set/);
    expect(p('cnt[7]')!.kind).toBe('constant');
    expect(p('cnt[3]')).toBeUndefined();
    const down = counter(["  always @(posedge clk) if (in[0]) cnt <= 8'd5; else if (cnt != 0) cnt <= cnt - 1;"]);
    expect(down('cnt[3]')!.kind).toBe('constant');
    expect(down('cnt[2]')).toBeUndefined();
    // Unbounded, a != bound below a constant written, a decrement with no guard, data loaded.
    expect(counter(['  always @(posedge clk) cnt <= cnt + 1;'])('cnt[7]')).toBeUndefined();
    expect(counter(["  always @(posedge clk) if (in[0]) cnt <= 8'd20; else if (cnt != 8'd9) cnt <= cnt + 1;"])('cnt[7]')).toBeUndefined();
    expect(counter(["  always @(posedge clk) if (in[0]) cnt <= 8'd5; else cnt <= cnt - 1;"])('cnt[7]')).toBeUndefined();
    expect(
      counter(["  always @(posedge clk) if (in[0]) cnt <= {4'd0, in}; else if (cnt < 8'd9) cnt <= cnt + 1;"])('cnt[7]'),
    ).toBeUndefined();
  });

  it('an input tied to a constant by its instantiation is constant; one driven by a signal is not', () => {
    const src = [
      'module top (input clk, input d, output [1:0] q);', // 1
      "  sub u_a (.clk(clk), .en(1'b1), .d(d), .q(q[0]));", // 2
      '  sub u_b (.clk(clk), .en(d), .d(d), .q(q[1]));', // 3
      'endmodule',
      'module sub (input clk, input en, input d, output logic q);', // 5
      '  always @(posedge clk) if (en) q <= d;',
      'endmodule',
    ].join('\n');
    const pts = [
      pt('toggle', 5, 'en', { module: 'sub', hier: 'tb.uut.u_a' }),
      pt('toggle', 5, 'en', { module: 'sub', hier: 'tb.uut.u_b' }),
      pt('toggle', 1, 'd', { module: 'top', count: 4 }),
    ];
    const p = proofs(src, pts, { top: 'top', params: {} });
    expect(p('en', 'tb.uut.u_a')!.detail).toMatch(/tied to 1'b1 by the instantiation 'u_a'/);
    expect(p('en', 'tb.uut.u_b')).toBeUndefined();
  });
});

describe('array slots no assignment writes', () => {
  /** Toggle points of an array: `name[slot][bit]`. */
  const slots = (name: string, n: number, w: number, from = 0): CoveragePoint[] =>
    Array.from({ length: n }, (_, s) => Array.from({ length: w }, (_, b) => pt('toggle', 2, `${name}[${s + from}][${b}]`))).flat();
  const claimed = (src: string, points: CoveragePoint[], opts?: TwoStateOptions) => {
    const r = twoStateUnreachable(points, () => src, opts);
    return new Set([...r.proven].filter(([, q]) => q.kind === 'constant').map(([p]) => p.label));
  };
  const bySlot = (labels: Set<string>) => [...new Set([...labels].map((l) => Number(/\[(\d+)\]/.exec(l)![1])))].sort((a, b) => a - b);
  const tree = (level: string) =>
    mod(
      [
        '  localparam int N = 4;',
        '  logic [3:0] tree [0:3*N-1];',
        '  for (genvar i = 0; i < N; i++) begin : g_leaf',
        "    assign tree[i] = in ^ 4'(i);",
        '  end',
        level,
        '  assign o = tree[2*N];',
      ],
      'module m #(parameter int P = 2) (input clk, input [3:0] in, input [2:0] a, input [3:0] d, output logic [3:0] o);',
    );
  const levels = [
    '  for (genvar l = 1; l <= $clog2(N); l++) begin : g_level',
    '    for (genvar i = 0; i < (N >> l); i++) begin : g_node',
    '      assign tree[l*N + i] = tree[(l-1)*N + 2*i] ^ tree[(l-1)*N + 2*i + 1];',
    '    end',
    '  end',
  ].join('\n');

  it('a tree stored level by level in a full-width array: the slots between levels are flagged', () => {
    const points = slots('tree', 12, 4);
    const r = twoStateUnreachable(points, () => tree(levels), { top: 'm', params: {} });
    const got = new Set([...r.proven].filter(([, q]) => q.kind === 'constant').map(([p]) => p.label));
    expect(bySlot(got)).toEqual([6, 7, 9, 10, 11]);
    expect(got.has('tree[6][0]') && got.has('tree[11][3]')).toBe(true);
    const why = [...r.proven].find(([p]) => p.label === 'tree[6][2]')![1];
    expect(why.detail).toBe(
      "slots 6-7, 9-11 of 'tree' are never written: every write indexes 0-5, 8 (constant indices and the generate loops over 'i', 'l' unrolled)",
    );
    // Not a 2-state matter: the 2-state count is unchanged.
    expect(r.count).toBe(0);
    // A parameter in the bounds at its default value (no -G): followed; with a -G, unknown.
    const byP = tree(levels.replace('l <= $clog2(N)', 'l <= P'));
    expect(bySlot(claimed(byP, points, { top: 'm', params: {} }))).toEqual([6, 7, 9, 10, 11]);
    expect(claimed(byP, points, { top: 'm', params: { P: '3' } }).size).toBe(0);
  });

  it('constant indices in an always block: the slots none names are flagged, one slot says so', () => {
    const src = mod([
      '  logic [3:0] chain [0:7];',
      '  always_ff @(posedge clk) begin',
      '    chain[0] <= in;',
      '    if (a[0]) chain[1] <= chain[0];',
      '    chain[3] <= chain[1];',
      '    chain[5:4] <= {chain[3], chain[3]};',
      '  end',
      '  assign o = chain[5];',
    ]);
    const r = twoStateUnreachable(slots('chain', 8, 4), () => src, { top: 'm', params: {} });
    const got = [...r.proven].filter(([, q]) => q.kind === 'constant');
    expect(bySlot(new Set(got.map(([p]) => p.label)))).toEqual([2, 6, 7]);
    const one = mod([
      '  logic [3:0] chain [0:2];',
      '  always_ff @(posedge clk) begin chain[0] <= in; chain[2] <= chain[0]; end',
      '  assign o = chain[2];',
    ]);
    const q = twoStateUnreachable(slots('chain', 3, 4), () => one, { top: 'm', params: {} });
    expect([...q.proven].find(([p]) => p.label === 'chain[1][0]')![1].detail).toBe(
      "slot 1 of 'chain' is never written: every write indexes 0, 2 (constant indices)",
    );
    // A packed array of words, numbered [H:0]: the same.
    const packed = mod([
      '  logic [3:0][3:0] pk;',
      '  always_ff @(posedge clk) begin pk[0] <= in; pk[2] <= pk[0]; end',
      '  assign o = pk[2];',
    ]);
    expect(bySlot(claimed(packed, slots('pk', 4, 4), { top: 'm', params: {} }))).toEqual([1, 3]);
    // Numbered [0:H], the labels run the other way: not followed.
    expect(claimed(packed.replace('[3:0][3:0] pk', '[0:3][3:0] pk'), slots('pk', 4, 4), { top: 'm', params: {} }).size).toBe(0);
  });

  it('look-alikes whose every slot a run may reach: a variable index, a loop reaching every slot, a runtime bound, the whole array', () => {
    const arr = (body: string[]) => mod(['  logic [3:0] arr [0:7];', '  logic [3:0] other [0:7];', ...body, '  assign o = arr[a];']);
    const none = (body: string[]) =>
      expect(claimed(arr(body), slots('arr', 8, 4), { top: 'm', params: {} }), body.join(' ')).toEqual(new Set());
    // The same array with one constant write: the rule fires, so each look-alike below is silent for its own reason.
    expect(bySlot(claimed(arr(['  always_ff @(posedge clk) arr[0] <= in;']), slots('arr', 8, 4), { top: 'm', params: {} }))).toEqual([
      1, 2, 3, 4, 5, 6, 7,
    ]);
    none(['  always_ff @(posedge clk) begin arr[0] <= in; arr[a] <= in; end']);
    none(['  for (genvar i = 0; i < 8; i++) begin : g', "    assign arr[i] = in ^ 4'(i);", '  end']);
    none(['  for (genvar i = 0; i < 8; i += 2) begin : g', '    assign arr[i] = in;', '    assign arr[i+1] = ~in;', '  end']);
    none(['  always @(posedge clk) for (int i = 0; i < a; i++) arr[i] = in;']);
    none(['  always @(posedge clk) for (int i = 0; i < 2; i++) arr[i] = in;']);
    none(['  always_ff @(posedge clk) begin arr[0] <= in; arr <= other; end']);
    none(["  always_ff @(posedge clk) if (a[0]) arr <= '{default: 0}; else arr[1] <= in;"]);
    // A write at time 0 beside another write; a system task, a task and an instance port.
    none(["  initial arr[5] = 4'h3;", '  always_ff @(posedge clk) arr[0] <= in;']);
    none(['  initial $readmemh("x.hex", arr);', '  always_ff @(posedge clk) arr[0] <= in;']);
    none([
      '  task automatic put(output logic [3:0] x [0:7]); x[6] = 1; endtask',
      '  always_ff @(posedge clk) begin arr[0] <= in; put(arr); end',
    ]);
    none(['  sub u_s (.q(arr));', '  always_ff @(posedge clk) arr[0] <= in;']);
    // A function with an output argument, or a system function that fills one, inside an expression.
    none([
      "  function automatic logic f(output logic [3:0] x); x = 4'h1; return 1'b1; endfunction",
      '  logic ok;',
      '  always_ff @(posedge clk) begin arr[0] <= in; ok <= f(arr[a]); end',
    ]);
    none(['  integer fd, n;', '  always_ff @(posedge clk) begin arr[0] <= in; n = $fscanf(fd, "%h", arr[a]); end']);
    // A loop bound that is not constant, a function in the index, a genvar shadowed in the process.
    none(['  for (genvar i = 0; i < a; i++) begin : g', '    assign arr[i] = in;', '  end']);
    none([
      '  function automatic int base(int l); return l * 2; endfunction',
      '  for (genvar i = 0; i < 2; i++) begin : g',
      '    assign arr[base(i)] = in;',
      '  end',
    ]);
    none(['  for (genvar i = 0; i < 2; i++) begin : g', '    always_ff @(posedge clk) begin int i; i = a; arr[i] <= in; end', '  end']);
    // A hierarchical write from another module.
    const r = twoStateUnreachable(
      [...slots('arr', 8, 4), pt('toggle', 1, 'x', { file: '/d/o.sv', module: 'other', hier: 'tb.o', count: 2 })],
      (f) => (f === FILE ? arr(['  always_ff @(posedge clk) arr[0] <= in;']) : "module other;\n  initial tb.uut.arr[3] = 4'h1;\nendmodule"),
      { top: 'm', params: {} },
    );
    expect([...r.proven].filter(([, q]) => q.kind === 'constant')).toEqual([]);
  });
});

describe('reasons on the uncovered list, the ceiling and the text for people', () => {
  it('every uncovered point gets a reason; the ceiling leaves the proven ones out; the scored figure stays', () => {
    const src = mod(['  logic [3:0] spare;', '  always @(posedge clk) o <= in ^ spare;']);
    const pts = [...bits('spare', 4), ...bits('o', 4, { count: 2 }), pt('line', 3, 'block', { count: 5 }), pt('toggle', 1, 'in[0]')];
    const cov = analyzeCoverage(pts, { isDutFile: () => true, top: 'm', params: {}, readSource: () => src });
    expect(cov.uncovered.map((u) => u.reason!.kind)).toEqual(['constant', 'constant', 'constant', 'constant', 'not-hit']);
    expect(cov.breakdown.waived.overall).toBeCloseTo((1 + 4 / 9) / 2, 10);
    expect(cov.breakdown.ceiling).toMatchObject({ excluded: 4, byReason: { constant: 4, 'dead-param': 0, 'unreachable-2state': 0 } });
    expect(cov.breakdown.ceiling!.figures.overall).toBeCloseTo((1 + 4 / 5) / 2, 10);
    const text = uncoveredByReason(cov.uncovered, cov.breakdown);
    expect(text).toEqual([
      'uncovered points by reason (5):',
      '  reachable, not hit (1):',
      '    uut.in [0]',
      '  tied off / constant (4):',
      "    uut.spare [0,1,2,3] -- 'spare' is never assigned: it keeps its initial value",
      'reachable ceiling: coverage excluding the 4 points proven unreachable (4 tied off / constant): 90.00% (block 100.00%, toggle 80.00%); the scored figure stays 72.22%',
    ]);
  });
  it('bounds each reason to max entries with a count of the rest', () => {
    const src = mod(['  always @(posedge clk) o <= in;']);
    const cov = analyzeCoverage(
      bits('o', 4).map((p, k) => ({ ...p, label: `s${k}` })),
      { isDutFile: () => true, top: 'm', params: {}, readSource: () => src },
    );
    expect(uncoveredByReason(cov.uncovered, cov.breakdown, 2)).toEqual([
      'uncovered points by reason (4):',
      '  reachable, not hit (4):',
      '    uut.s0',
      '    uut.s1',
      '    ... 2 more',
    ]);
  });
});
