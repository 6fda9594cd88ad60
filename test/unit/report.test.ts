import { describe, expect, it } from 'vitest';
import { analyzeCoverage, type DutCoverage } from '../../src/core/coverage/analyze.js';
import type { CoveragePoint, PointType } from '../../src/core/coverage/model.js';
import { coverageDetail, summaryRows } from '../../src/core/coverage/report.js';
import { parseWaivers } from '../../src/core/coverage/waivers.js';
import type { CovSummaryRow } from '../../src/core/sim/result.js';

const C = '/rtl/counter.sv';
const S = '/rtl/sub.sv';

const sources: Record<string, string> = {
  [C]: [
    'module counter(',
    '  input logic clk,',
    '  output logic [3:0] q,',
    '  output logic full);',
    '  always_ff @(posedge clk) q <= q + 1;',
    '',
    '  if (en)',
    '',
    "     q <= 4'd0;",
    'endmodule',
  ].join('\n'),
  [S]: ['module sub(input logic [1:0] a);', '', '  initial $display("never");', '  always_comb y = a;', 'endmodule'].join('\n'),
};

function at(file: string, module: string, hier: string) {
  return (type: PointType, line: number, count: number, label: string, extra: Partial<CoveragePoint> = {}): CoveragePoint => ({
    type,
    file,
    line,
    column: 3,
    module,
    hier,
    label,
    count,
    ...extra,
  });
}

/** DUT `counter` at tb.uut with a `sub` at tb.uut.u_sub. */
function points(): CoveragePoint[] {
  const c = at(C, 'counter', 'tb.uut');
  const s = at(S, 'sub', 'tb.uut.u_sub');
  return [
    c('line', 5, 3, 'block'),
    c('line', 9, 0, 'block'),
    c('branch', 7, 2, 'if'),
    c('branch', 7, 0, 'else', { span: [9, 9] }),
    c('toggle', 3, 0, 'q[0]'),
    c('toggle', 3, 1, 'q[1]'),
    c('toggle', 3, 5, 'q[2]'),
    c('toggle', 3, 0, 'q[3]'),
    c('toggle', 4, 0, 'full'),
    s('line', 3, 0, 'block'),
    s('line', 4, 1, 'block'),
    s('toggle', 1, 0, 'a[0]'),
    s('toggle', 1, 2, 'a[1]'),
    // the testbench's own points (not DUT)
    { type: 'line', file: 'tb.sv', line: 1, column: 1, module: 'tb', hier: 'tb', label: 'block', count: 0 },
  ];
}

function analyze(pts: CoveragePoint[], waiverText = ''): DutCoverage {
  return analyzeCoverage(pts, {
    isDutFile: (f) => f.startsWith('/rtl/'),
    top: 'counter',
    waivers: waiverText ? parseWaivers(waiverText) : undefined,
    readSource: (f) => sources[f],
  });
}

const FIELDS = [
  'name',
  'level',
  'Overall Average',
  'Overall Covered',
  'Code Average',
  'Code Covered',
  'Fsm Average',
  'Fsm Covered',
  'Functional Average',
  'Functional Covered',
  'Toggle',
  'Block',
  'Assertion',
];

describe('summaryRows', () => {
  it('names the level-0 row after the top module with every LLM4Cov field', () => {
    const rows = summaryRows(analyze(points()), 'counter');
    expect(Object.keys(rows[0])).toEqual(FIELDS);
    expect(rows[0]).toEqual<CovSummaryRow>({
      name: 'counter',
      level: 0,
      'Overall Average': (0.5 + 2 / 7) / 2,
      'Overall Covered': 5 / 13,
      'Code Average': (0.5 + 2 / 7) / 2,
      'Code Covered': 5 / 13,
      'Fsm Average': null,
      'Fsm Covered': null,
      'Functional Average': null,
      'Functional Covered': null,
      Toggle: 2 / 7,
      Block: 0.5,
      Assertion: null,
    });
  });

  it('adds one row per sub-instance, named path (module), with its own figures', () => {
    const rows = summaryRows(analyze(points()), 'counter');
    expect(rows).toHaveLength(2);
    expect(rows[1]).toMatchObject({ name: 'uut.u_sub (sub)', 'Overall Average': 0.5, 'Overall Covered': 0.5, Block: 0.5, Toggle: 0.5 });
  });

  // Fixed (was a bug): report.ts summaryRows, single DUT instance: the DUT instance's own row is dropped (the
  // level-0 `counter` row stands for it) but its children keep `inst.level + 1`, so `uut.u_sub` is
  // reported at level 2 with no level-1 row above it. IMC (and the detail table from the same
  // data, which draws `|--u_sub` at level 1) puts a direct child of the DUT at level 1.
  // Expected level 1, actual 2.
  it('puts a direct child of a single DUT instance at level 1', () => {
    const rows = summaryRows(analyze(points()), 'counter');
    expect(rows[1].level).toBe(1);
  });

  it('with two DUT instances: the pooled top row, then each instance at level 1 and its children below', () => {
    const u0 = at(C, 'counter', 'tb.u0');
    const u1 = at(C, 'counter', 'tb.u1');
    const sub0 = at(S, 'sub', 'tb.u0.u_sub');
    const cov = analyze([
      u0('line', 5, 1, 'block'),
      u0('line', 9, 0, 'block'),
      sub0('line', 3, 1, 'block'),
      u1('line', 5, 1, 'block'),
      u1('toggle', 3, 2, 'q[0]'),
    ]);
    const rows = summaryRows(cov, 'counter');
    expect(rows.map((r) => [r.name, r.level, r['Overall Average'], r.Block, r.Toggle])).toEqual([
      ['counter', 0, (3 / 4 + 1) / 2, 3 / 4, 1],
      ['u0 (counter)', 1, 2 / 3, 2 / 3, null],
      ['u0.u_sub (sub)', 2, 1, 1, null],
      ['u1 (counter)', 1, 1, 1, 1],
    ]);
  });

  it('scores the waived figure on the top row', () => {
    const rows = summaryRows(analyze(points(), 'counter.sv:*:toggle  not scored'), 'counter');
    // Toggles of counter waived: block 3/6, toggle 1/2 (sub only).
    expect(rows[0]['Overall Average']).toBe((0.5 + 0.5) / 2);
    expect(rows[0].Toggle).toBe(0.5);
  });

  it('fills the functional columns from cover-property points', () => {
    const c = at(C, 'counter', 'tb.uut');
    const rows = summaryRows(
      analyze([c('line', 5, 1, 'block'), c('user', 9, 0, 'cover'), c('user', 9, 4, 'cover'), c('user', 9, 1, 'cover')]),
      'counter',
    );
    expect(rows).toHaveLength(1);
    expect(rows[0]['Functional Average']).toBe(2 / 3);
    expect(rows[0]['Functional Covered']).toBe(2 / 3);
    expect(rows[0]['Overall Average']).toBe(1);
  });

  it('returns no rows when the DUT was never instantiated', () => {
    const cov = analyze([at(S, 'sub', 'tb.u_sub')('line', 3, 1, 'block')]);
    expect(summaryRows(cov, 'counter')).toEqual([]);
  });
});

describe('coverageDetail', () => {
  it('starts with the IMC-style table: the DUT instance, then its child with a |-- connector', () => {
    const lines = coverageDetail(analyze(points()), 'counter').split('\n');
    expect(lines[0]).toMatch(/^name\s+Overall Average\s+Overall Covered\s+Code Average\s+Code Covered\s+Toggle\s+Block$/);
    expect(lines[1]).toMatch(/^-+$/);
    expect(lines[2]).toMatch(
      /^uut \(counter\)\s+39\.29%\s+38\.46% \(5\/13\)\s+39\.29%\s+38\.46% \(5\/13\)\s+28\.57% \(2\/7\)\s+50\.00% \(3\/6\)$/,
    );
    expect(lines[3]).toMatch(/^\|--u_sub\s+50\.00%\s+50\.00% \(2\/4\)\s+50\.00%\s+50\.00% \(2\/4\)\s+50\.00% \(1\/2\)\s+50\.00% \(1\/2\)$/);
    expect(lines[4]).toBe('');
  });

  it('states the scored figure, lists uncovered code with its source, and groups toggle bits per signal', () => {
    const text = coverageDetail(analyze(points()), 'counter');
    const tail = text.slice(text.indexOf("\nDUT 'counter'"));
    expect(tail).toBe(
      [
        '',
        "DUT 'counter': overall 39.29% = mean(block 50.00%, toggle 28.57%); line 50.00%, branch 50.00%",
        '',
        'Uncovered code (file:line [kind] source):',
        "  counter.sv:9 [line block] q <= 4'd0;",
        '  sub.sv:3 [line block] initial $display("never");',
        // the else arm at line 7 spans line 9: the line shown is where its code is
        "  counter.sv:9 [branch else] q <= 4'd0;",
        '',
        'Signals whose bits did not toggle both ways (instance.signal [bits]):',
        '  uut.q [0,1,3]',
        '  uut.full',
        '  uut.u_sub.a [0]',
        '',
      ].join('\n'),
    );
  });

  it('mentions waived points and the raw figure', () => {
    const text = coverageDetail(analyze(points(), 'counter.sv:9:line  reset path'), 'counter');
    // block 3/5 after the waiver; raw overall (0.5 + 2/7) / 2 = 39.29%
    expect(text).toContain(
      "DUT 'counter': overall 44.29% = mean(block 60.00%, toggle 28.57%); line 66.67%, branch 50.00%; 1 points waived (raw overall 39.29%)\n",
    );
    expect(text).not.toContain('[line block] q <=');
  });

  it('bounds both lists with maxLines', () => {
    const text = coverageDetail(analyze(points()), 'counter', 1);
    const tail = text.slice(text.indexOf('\nUncovered code'));
    expect(tail).toBe(
      [
        '',
        'Uncovered code (file:line [kind] source):',
        "  counter.sv:9 [line block] q <= 4'd0;",
        '  ... 2 more',
        '',
        'Signals whose bits did not toggle both ways (instance.signal [bits]):',
        '  uut.q [0,1,3]',
        '  ... 2 more signals',
        '',
      ].join('\n'),
    );
  });

  it('prints n/a for missing metrics and no uncovered sections when everything is covered', () => {
    const c = at(C, 'counter', 'tb.uut');
    const text = coverageDetail(analyze([c('line', 5, 1, 'block')]), 'counter');
    expect(text).toContain("DUT 'counter': overall 100.00% = mean(block 100.00%, toggle n/a); line 100.00%, branch n/a\n");
    expect(text).not.toContain('Uncovered code');
    expect(text).not.toContain('Signals whose bits');
    expect(text.endsWith('branch n/a\n')).toBe(true);
  });

  it('omits the source when it cannot be read', () => {
    const c = at('/rtl/gone.sv', 'counter', 'tb.uut');
    const text = coverageDetail(analyze([c('line', 5, 0, 'block')]), 'counter');
    expect(text).toContain('\n  gone.sv:5 [line block]\n');
  });
});
