import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { figures, isCovered, tally, type CoveragePoint, type PointType } from '../../src/core/coverage/model.js';
import { isWaived, loadWaivers, parseWaivers, WaiverError, type Waiver } from '../../src/core/coverage/waivers.js';
import { analyzeCoverage, type AnalyzeOptions } from '../../src/core/coverage/analyze.js';
import { toLcov } from '../../src/core/coverage/lcov.js';

function pt(type: PointType, line: number, count: number, extra: Partial<CoveragePoint> = {}): CoveragePoint {
  return {
    type,
    file: '/rtl/counter.sv',
    line,
    column: 1,
    module: 'counter',
    hier: 'tb.uut',
    label: type === 'branch' ? 'if' : 'block',
    count,
    ...extra,
  };
}

const many = (n: number, make: (i: number) => CoveragePoint): CoveragePoint[] => Array.from({ length: n }, (_, i) => make(i));

// ---------------------------------------------------------------------------------------------
describe('model: isCovered', () => {
  it('counts a block point hit once as covered and an unhit one as not', () => {
    expect(isCovered(pt('line', 1, 0))).toBe(false);
    expect(isCovered(pt('line', 1, 1))).toBe(true);
    expect(isCovered(pt('branch', 1, 0))).toBe(false);
    expect(isCovered(pt('branch', 1, 1))).toBe(true);
    expect(isCovered(pt('user', 1, 0))).toBe(false);
    expect(isCovered(pt('user', 1, 1))).toBe(true);
  });

  it('counts a toggle bit only when it moved both ways (count >= 2)', () => {
    expect(isCovered(pt('toggle', 1, 0, { label: 'q[0]' }))).toBe(false);
    expect(isCovered(pt('toggle', 1, 1, { label: 'q[0]' }))).toBe(false);
    expect(isCovered(pt('toggle', 1, 2, { label: 'q[0]' }))).toBe(true);
    expect(isCovered(pt('toggle', 1, 99, { label: 'q[0]' }))).toBe(true);
  });
});

describe('model: tally', () => {
  const pts = [pt('line', 1, 1), pt('line', 2, 0), pt('branch', 3, 4), pt('toggle', 4, 1), pt('toggle', 5, 2), pt('user', 6, 0)];
  it('counts covered and total over the requested types only', () => {
    expect(tally(pts, ['line'])).toEqual({ covered: 1, total: 2 });
    expect(tally(pts, ['line', 'branch'])).toEqual({ covered: 2, total: 3 });
    expect(tally(pts, ['toggle'])).toEqual({ covered: 1, total: 2 });
    expect(tally(pts, ['user'])).toEqual({ covered: 0, total: 1 });
    expect(tally(pts, [])).toEqual({ covered: 0, total: 0 });
    expect(tally([], ['line'])).toEqual({ covered: 0, total: 0 });
  });
});

describe('model: figures', () => {
  it('docs/protocol.md example: block 11/12 and toggle 9/10 -> overall (11/12 + 0.9) / 2', () => {
    const points = [
      ...many(8, (i) => pt('line', 10 + i, 1 + i)),
      ...many(3, (i) => pt('branch', 30 + i, 2)),
      pt('branch', 40, 0),
      ...many(9, (i) => pt('toggle', 2, 2 + i, { label: `q[${i}]` })),
      pt('toggle', 2, 1, { label: 'q[9]' }), // rose but never fell: not covered
    ];
    const f = figures(points);
    expect(f.tallies.block).toEqual({ covered: 11, total: 12 });
    expect(f.tallies.toggle).toEqual({ covered: 9, total: 10 });
    expect(f.tallies.line).toEqual({ covered: 8, total: 8 });
    expect(f.tallies.branch).toEqual({ covered: 3, total: 4 });
    expect(f.tallies.user).toEqual({ covered: 0, total: 0 });
    expect(f.block).toBe(11 / 12);
    expect(f.toggle).toBe(0.9);
    expect(f.overall).toBe((11 / 12 + 0.9) / 2);
    expect(f.overall!.toFixed(4)).toBe('0.9083');
    expect(f.overallCovered).toBe(20 / 22);
    expect(f.line).toBe(1);
    expect(f.branch).toBe(0.75);
    expect(f.user).toBeNull();
  });

  it('uses the toggle figure alone for a design with only toggle points', () => {
    const f = figures([
      pt('toggle', 1, 2, { label: 'a' }),
      pt('toggle', 1, 0, { label: 'b' }),
      pt('toggle', 1, 5, { label: 'c' }),
      pt('toggle', 1, 1, { label: 'd' }),
    ]);
    expect(f.block).toBeNull();
    expect(f.line).toBeNull();
    expect(f.branch).toBeNull();
    expect(f.toggle).toBe(0.5);
    expect(f.overall).toBe(0.5);
    expect(f.overallCovered).toBe(0.5);
    expect(f.tallies.block).toEqual({ covered: 0, total: 0 });
  });

  it('uses the block figure alone for a design with no toggle points', () => {
    const f = figures([pt('line', 1, 1), pt('line', 2, 0), pt('branch', 3, 1)]);
    expect(f.toggle).toBeNull();
    expect(f.block).toBe(2 / 3);
    expect(f.overall).toBe(2 / 3);
    expect(f.overallCovered).toBe(2 / 3);
  });

  it('returns null figures and zero tallies when there are no points', () => {
    const f = figures([]);
    expect(f).toEqual({
      overall: null,
      overallCovered: null,
      block: null,
      toggle: null,
      line: null,
      branch: null,
      user: null,
      expr: null,
      cond: null,
      tallies: {
        line: { covered: 0, total: 0 },
        branch: { covered: 0, total: 0 },
        block: { covered: 0, total: 0 },
        toggle: { covered: 0, total: 0 },
        user: { covered: 0, total: 0 },
        expr: { covered: 0, total: 0 },
        cond: { covered: 0, total: 0 },
      },
    });
  });

  it('keeps user (cover property) points out of overall and overallCovered', () => {
    const base = [pt('line', 1, 1), pt('toggle', 2, 0, { label: 'x' })];
    const withUser = [
      ...base,
      pt('user', 3, 0, { label: 'cover' }),
      pt('user', 4, 0, { label: 'cover' }),
      pt('user', 5, 3, { label: 'cover' }),
    ];
    expect(figures(withUser).overall).toBe(figures(base).overall);
    expect(figures(withUser).overall).toBe(0.5);
    expect(figures(withUser).overallCovered).toBe(0.5);
    expect(figures(withUser).user).toBe(1 / 3);
    expect(figures(withUser).tallies.user).toEqual({ covered: 1, total: 3 });
  });

  it('pools overallCovered by point count while overall averages the two ratios', () => {
    // block 1/1, toggle 1/4: average (1 + 0.25) / 2 = 0.625, pooled 2/5 = 0.4.
    const f = figures([pt('line', 1, 1), ...many(4, (i) => pt('toggle', 2, i === 0 ? 2 : 0, { label: `d[${i}]` }))]);
    expect(f.overall).toBe(0.625);
    expect(f.overallCovered).toBe(0.4);
  });

  it('reaches exactly 1 only when every block and toggle point is covered', () => {
    expect(figures([pt('line', 1, 1), pt('branch', 2, 1), pt('toggle', 3, 2, { label: 'x' })]).overall).toBe(1);
    expect(figures([pt('line', 1, 1), pt('branch', 2, 1), pt('toggle', 3, 1, { label: 'x' })]).overall).toBe(0.5);
  });
});

// ---------------------------------------------------------------------------------------------
describe('waivers: parseWaivers', () => {
  it('reads every field of the documented examples', () => {
    const text = [
      '# exclusions for the counter',
      'counter.sv:27:branch:else   default arm, unreachable in 2-state simulation',
      '',
      'fifo.sv:*:toggle:rdata[7]   MSB tied off in this configuration',
      '   top.sv:12   whole line  # trailing comment',
      'a.sv:3:*   anything on line 3',
    ].join('\n');
    expect(parseWaivers(text)).toEqual<Waiver[]>([
      {
        file: 'counter.sv',
        line: 27,
        type: 'branch',
        label: 'else',
        reason: 'default arm, unreachable in 2-state simulation',
        origin: 'waivers:2',
      },
      { file: 'fifo.sv', line: '*', type: 'toggle', label: 'rdata[7]', reason: 'MSB tied off in this configuration', origin: 'waivers:4' },
      { file: 'top.sv', line: 12, type: '*', label: undefined, reason: 'whole line', origin: 'waivers:5' },
      { file: 'a.sv', line: 3, type: '*', label: undefined, reason: 'anything on line 3', origin: 'waivers:6' },
    ]);
  });

  it('keeps colons inside a label, accepts CRLF and names the origin given', () => {
    const w = parseWaivers('x.sv:4:user:cov:a   label with a colon\r\n\r\nrtl/y.sv:9:line  r\r\n', 'proj.waive');
    expect(w).toEqual<Waiver[]>([
      { file: 'x.sv', line: 4, type: 'user', label: 'cov:a', reason: 'label with a colon', origin: 'proj.waive:1' },
      { file: 'rtl/y.sv', line: 9, type: 'line', label: undefined, reason: 'r', origin: 'proj.waive:3' },
    ]);
  });

  it('returns [] for a file of comments and blank lines', () => {
    expect(parseWaivers('# only\n\n   # comments\n\t\n')).toEqual([]);
  });

  it('rejects a pattern without a line, naming the file line', () => {
    expect(() => parseWaivers('# c\ncounter.sv  no line here')).toThrowError(WaiverError);
    expect(() => parseWaivers('# c\ncounter.sv  no line here')).toThrowError(
      "waivers:2: expected <file>:<line>[:<type>[:<label>]] <reason>, got 'counter.sv  no line here'",
    );
  });

  it('rejects a line that is neither a number nor *', () => {
    expect(() => parseWaivers('a.sv:x:line  reason', 'w.txt')).toThrowError("w.txt:1: line must be a number or '*', got 'x'");
  });

  it('rejects an unknown point type', () => {
    expect(() => parseWaivers('a.sv:3:expr  reason')).toThrowError("waivers:1: type must be line, branch, toggle, user or '*', got 'expr'");
  });

  it('requires a reason', () => {
    expect(() => parseWaivers('\n\na.sv:3:line')).toThrowError('waivers:3: every waiver needs a reason (text after the pattern)');
    // A comment is not a reason.
    expect(() => parseWaivers('a.sv:3:line   # unreachable')).toThrowError('every waiver needs a reason');
  });

  it('loadWaivers reads a file and names it in origins; a missing file is a WaiverError', () => {
    const dir = mkdtempSync(join(tmpdir(), 'chorus-waive-'));
    try {
      const file = join(dir, 'cov.waive');
      writeFileSync(file, '\nq.sv:2:toggle:q[0]  stuck\n');
      expect(loadWaivers(file)).toEqual<Waiver[]>([
        { file: 'q.sv', line: 2, type: 'toggle', label: 'q[0]', reason: 'stuck', origin: `${file}:2` },
      ]);
      expect(() => loadWaivers(join(dir, 'none.waive'))).toThrowError(WaiverError);
      expect(() => loadWaivers(join(dir, 'none.waive'))).toThrowError(`cannot read waiver file ${join(dir, 'none.waive')}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('waivers: isWaived', () => {
  const p = pt('branch', 27, 0, { file: '/proj/rtl/counter.sv', label: 'else' });
  const w = (s: string): Waiver => parseWaivers(s)[0];

  it('matches the file by exact path or by path suffix at a folder boundary', () => {
    expect(isWaived(p, [w('counter.sv:27  r')])).toBeDefined();
    expect(isWaived(p, [w('rtl/counter.sv:27  r')])).toBeDefined();
    expect(isWaived(p, [w('./counter.sv:27  r')])).toBeDefined();
    expect(isWaived(p, [w('/proj/rtl/counter.sv:27  r')])).toBeDefined();
    expect(isWaived(p, [w('ounter.sv:27  r')])).toBeUndefined();
    expect(isWaived(p, [w('other/counter.sv:27  r')])).toBeUndefined();
    expect(isWaived(p, [w('counter.v:27  r')])).toBeUndefined();
  });

  it('matches the line, or any line with *', () => {
    expect(isWaived(p, [w('counter.sv:28  r')])).toBeUndefined();
    expect(isWaived(p, [w('counter.sv:*  r')])).toBeDefined();
  });

  it('matches the type, or any type with *', () => {
    expect(isWaived(p, [w('counter.sv:27:line  r')])).toBeUndefined();
    expect(isWaived(p, [w('counter.sv:27:branch  r')])).toBeDefined();
    expect(isWaived(p, [w('counter.sv:27:*  r')])).toBeDefined();
  });

  it('matches the label exactly when one is given', () => {
    expect(isWaived(p, [w('counter.sv:27:branch:else  r')])).toBeDefined();
    expect(isWaived(p, [w('counter.sv:27:branch:if  r')])).toBeUndefined();
    expect(isWaived(p, [w('counter.sv:27:branch:els  r')])).toBeUndefined();
    const bit = pt('toggle', 4, 0, { file: '/proj/rtl/counter.sv', label: 'rdata[7]' });
    expect(isWaived(bit, [w('counter.sv:*:toggle:rdata[7]  r')])).toBeDefined();
    expect(isWaived(bit, [w('counter.sv:*:toggle:rdata[6]  r')])).toBeUndefined();
  });

  it('returns the first matching waiver, or undefined for none', () => {
    const list = parseWaivers('other.sv:27  a\ncounter.sv:*  b\ncounter.sv:27  c');
    expect(isWaived(p, list)).toBe(list[1]);
    expect(isWaived(p, list)?.reason).toBe('b');
    expect(isWaived(p, [])).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------
const C = '/rtl/counter.sv';
const S = '/rtl/sub.sv';
const TB = 'tb_counter.sv';

/** DUT `counter` at tb.uut with a sub-instance `sub` at tb.uut.u_sub, plus testbench points. */
function designPoints(): CoveragePoint[] {
  const c = (type: PointType, line: number, count: number, label: string): CoveragePoint => ({
    type,
    file: C,
    line,
    column: 3,
    module: 'counter',
    hier: 'tb.uut',
    label,
    count,
  });
  const s = (type: PointType, line: number, count: number, label: string): CoveragePoint => ({
    type,
    file: S,
    line,
    column: 3,
    module: 'sub',
    hier: 'tb.uut.u_sub',
    label,
    count,
  });
  return [
    // testbench points: never part of the DUT
    { type: 'line', file: TB, line: 2, column: 1, module: 'tb', hier: 'tb', label: 'block', count: 0 },
    { type: 'toggle', file: TB, line: 1, column: 1, module: 'tb', hier: 'tb', label: 'clk', count: 0 },
    // a point without a file (never DUT)
    { type: 'line', file: '', line: 1, column: 1, module: 'counter', hier: 'tb.uut', label: 'block', count: 0 },
    s('toggle', 1, 0, 'a'),
    s('toggle', 1, 2, 'b'),
    s('branch', 6, 0, 'if'),
    s('line', 4, 1, 'block'),
    s('line', 3, 0, 'block'),
    c('user', 11, 0, 'cover'),
    c('toggle', 2, 1, 'q[1]'),
    c('toggle', 2, 4, 'q[0]'),
    c('line', 9, 0, 'block'),
    c('branch', 7, 0, 'else'),
    c('branch', 7, 2, 'if'),
    c('line', 5, 3, 'block'),
  ];
}

const sources: Record<string, string> = {
  [C]: [
    'module counter(',
    '  input logic clk,',
    '  output logic [1:0] q);',
    '  sub u_sub();',
    '  always_ff @(posedge clk) q <= q + 1;',
    '',
    '  if (en)',
    '',
    "     q <= 2'd0;   ",
    '',
    '  cover property (@(posedge clk) q == 3);',
    'endmodule',
  ].join('\n'),
  [S]: [
    'module sub(input logic a, b);',
    '',
    '  initial $display("never");   ',
    '  always_comb y = a;',
    '',
    '  if (a) z = 1;',
    'endmodule',
  ].join('\r\n'),
};

const baseOpts = (extra: Partial<AnalyzeOptions> = {}): AnalyzeOptions => ({
  isDutFile: (f) => f.startsWith('/rtl/'),
  top: 'counter',
  readSource: (f) => sources[f],
  ...extra,
});

describe('analyzeCoverage', () => {
  it('keeps only DUT-file points (testbench and file-less points are dropped)', () => {
    const cov = analyzeCoverage(designPoints(), baseOpts());
    expect(cov.points).toHaveLength(12);
    expect(cov.points.every((p) => p.file === C || p.file === S)).toBe(true);
  });

  it('reports raw figures on every DUT point when there are no waivers', () => {
    const cov = analyzeCoverage(designPoints(), baseOpts());
    const { raw, waived, waivedPoints } = cov.breakdown;
    expect(waivedPoints).toBe(0);
    expect(raw.tallies.block).toEqual({ covered: 3, total: 7 });
    expect(raw.tallies.toggle).toEqual({ covered: 2, total: 4 });
    expect(raw.tallies.user).toEqual({ covered: 0, total: 1 });
    expect(raw.overall).toBe((3 / 7 + 0.5) / 2);
    expect(raw.overallCovered).toBe(5 / 11);
    expect(waived).toEqual(raw);
  });

  it('scores the waived figure and keeps the raw one beside it', () => {
    const waivers = parseWaivers('counter.sv:7:branch:else  unreachable\nsub.sv:*:toggle:a  tied off\nnone.sv:*  matches nothing');
    const cov = analyzeCoverage(designPoints(), baseOpts({ waivers }));
    const { raw, waived, waivedPoints } = cov.breakdown;
    expect(waivedPoints).toBe(2);
    expect(raw.overall).toBe((3 / 7 + 0.5) / 2);
    expect(waived.tallies.block).toEqual({ covered: 3, total: 6 });
    expect(waived.tallies.toggle).toEqual({ covered: 2, total: 3 });
    expect(waived.overall).toBe((0.5 + 2 / 3) / 2);
    expect(waived.overallCovered).toBe(5 / 9);
    // `points` stays the full DUT set, waived points included.
    expect(cov.points).toHaveLength(12);
    // Waived points are not reported as uncovered.
    expect(cov.uncovered.some((u) => u.label === 'else' || u.label === 'a')).toBe(false);
  });

  it('lists the DUT instance at level 0 and its sub-instance at level 1 with their own figures', () => {
    const waivers = parseWaivers('counter.sv:7:branch:else  unreachable\nsub.sv:*:toggle:a  tied off');
    const cov = analyzeCoverage(designPoints(), baseOpts({ waivers }));
    expect(cov.dutInstances).toEqual(['tb.uut']);
    expect(cov.instances.map((i) => ({ path: i.path, module: i.module, level: i.level }))).toEqual([
      { path: 'uut', module: 'counter', level: 0 },
      { path: 'uut.u_sub', module: 'sub', level: 1 },
    ]);
    const [top, sub] = cov.instances;
    // The DUT instance aggregates its subtree (= the waived DUT figure here).
    expect(top.figures).toEqual(cov.breakdown.waived);
    expect(sub.figures.tallies.block).toEqual({ covered: 1, total: 3 });
    expect(sub.figures.tallies.toggle).toEqual({ covered: 1, total: 1 });
    expect(sub.figures.overall).toBe((1 / 3 + 1) / 2);
  });

  it('orders uncovered points line, branch, user, then toggle; by file and line inside each kind', () => {
    const cov = analyzeCoverage(designPoints(), baseOpts());
    expect(cov.uncovered.map((u) => `${u.type} ${u.file.split('/').pop()}:${u.line} ${u.label}`)).toEqual([
      'line counter.sv:9 block',
      'line sub.sv:3 block',
      'branch counter.sv:7 else',
      'branch sub.sv:6 if',
      'user counter.sv:11 cover',
      'toggle counter.sv:2 q[1]',
      'toggle sub.sv:1 a',
    ]);
  });

  it('attaches the trimmed source line from readSource, reading each file once', () => {
    const reads: string[] = [];
    const cov = analyzeCoverage(designPoints(), baseOpts({ readSource: (f) => (reads.push(f), sources[f]) }));
    const notHit = { kind: 'not-hit', detail: expect.any(String) };
    expect(cov.uncovered[0]).toEqual({
      type: 'line',
      file: C,
      line: 9,
      label: 'block',
      hier: 'tb.uut',
      count: 0,
      source: "q <= 2'd0;",
      reason: notHit,
    });
    expect(cov.uncovered[1]).toEqual({
      type: 'line',
      file: S,
      line: 3,
      label: 'block',
      hier: 'tb.uut.u_sub',
      count: 0,
      source: 'initial $display("never");',
      reason: notHit,
    });
    expect(cov.uncovered[3].source).toBe('if (a) z = 1;');
    expect(cov.uncovered[4].source).toBe('cover property (@(posedge clk) q == 3);');
    expect(cov.uncovered[5]).toMatchObject({ type: 'toggle', label: 'q[1]', count: 1, source: 'input logic clk,' });
    expect(reads.sort()).toEqual([C, S]);
  });

  it('takes a block point source from the first line of its span; a toggle keeps its own line and no span', () => {
    const cov = analyzeCoverage(
      [pt('branch', 7, 0, { label: 'else', span: [9, 10] }), pt('toggle', 2, 0, { label: 'q[0]', span: [3, 4] })],
      baseOpts(),
    );
    const notHit = { kind: 'not-hit', detail: expect.any(String) };
    expect(cov.uncovered).toEqual([
      { type: 'branch', file: C, line: 7, span: [9, 10], label: 'else', hier: 'tb.uut', count: 0, source: "q <= 2'd0;", reason: notHit },
      {
        type: 'toggle',
        file: C,
        line: 2,
        span: undefined,
        label: 'q[0]',
        hier: 'tb.uut',
        count: 0,
        source: 'input logic clk,',
        reason: notHit,
      },
    ]);
    expect('span' in cov.uncovered[1] ? cov.uncovered[1].span : undefined).toBeUndefined();
  });

  it('leaves source undefined when the file cannot be read or the line does not exist', () => {
    const cov = analyzeCoverage(
      [pt('line', 3, 0, { file: '/rtl/gone.sv' }), pt('line', 99, 0, { file: C })],
      baseOpts({ readSource: (f) => sources[f] }),
    );
    expect(cov.uncovered.map((u) => u.source)).toEqual([undefined, undefined]);
  });

  it('caps the uncovered list at maxUncovered, keeping the first in order', () => {
    const cov = analyzeCoverage(designPoints(), baseOpts({ maxUncovered: 3 }));
    expect(cov.uncovered.map((u) => `${u.type}:${u.line}`)).toEqual(['line:9', 'line:3', 'branch:7']);
    expect(analyzeCoverage(designPoints(), baseOpts({ maxUncovered: 0 })).uncovered).toEqual([]);
  });

  it('finds every DUT instance when the testbench instantiates the top twice', () => {
    const pts = [
      pt('line', 5, 1, { hier: 'tb.u1' }),
      pt('line', 5, 0, { hier: 'tb.u0' }),
      pt('toggle', 2, 2, { hier: 'tb.u0', label: 'q[0]' }),
    ];
    const cov = analyzeCoverage(pts, baseOpts());
    expect(cov.dutInstances).toEqual(['tb.u0', 'tb.u1']);
    expect(cov.instances.map((i) => [i.path, i.level, i.figures.overall])).toEqual([
      ['u0', 0, 0.5],
      ['u1', 0, 1],
    ]);
    expect(cov.breakdown.waived.overall).toBe((0.5 + 1) / 2);
  });

  it('does not take a nested instance of the top module for a second DUT instance', () => {
    const pts = [pt('line', 5, 1, { hier: 'tb.uut' }), pt('line', 5, 0, { hier: 'tb.uut.u_inner' })];
    const cov = analyzeCoverage(pts, baseOpts());
    expect(cov.dutInstances).toEqual(['tb.uut']);
    expect(cov.instances.map((i) => [i.path, i.module, i.level])).toEqual([
      ['uut', 'counter', 0],
      ['uut.u_inner', 'counter', 1],
    ]);
  });

  it('has no DUT instance when the top module is never instantiated', () => {
    const pts = [pt('line', 5, 1, { module: 'sub', hier: 'tb.u_sub', file: S })];
    const cov = analyzeCoverage(pts, baseOpts());
    expect(cov.dutInstances).toEqual([]);
    expect(cov.instances).toEqual([]);
  });

  // Fixed (was a bug): analyze.ts scores every point whose *file* is a DUT file, wherever it sits in the
  // hierarchy. A testbench that instantiates a design sub-module next to the DUT (here `sub` at
  // tb.u_extra, fully covered) raises the DUT's scored figure, although IMC's DUT row only covers
  // the DUT instance's subtree. Expected: the extra instance is ignored (waived.overall = 0.5);
  // actual: it is pooled in (waived.overall = 0.75).
  it('scores only points inside the DUT instance subtree (extra design instances in the testbench do not count)', () => {
    const pts = [
      pt('line', 5, 1, { hier: 'tb.uut' }),
      pt('line', 6, 0, { hier: 'tb.uut' }),
      pt('line', 3, 1, { file: S, module: 'sub', hier: 'tb.u_extra' }),
      pt('line', 4, 1, { file: S, module: 'sub', hier: 'tb.u_extra' }),
    ];
    const cov = analyzeCoverage(pts, baseOpts());
    expect(cov.breakdown.waived.overall).toBe(0.5);
  });
});

// ---------------------------------------------------------------------------------------------
describe('toLcov', () => {
  const A = '/rtl/a.sv';
  const B = '/rtl/b.sv';
  const p = (type: PointType, file: string, line: number, column: number, count: number, hier = 'tb.u', label = ''): CoveragePoint => ({
    type,
    file,
    line,
    column,
    module: 'm',
    hier,
    label,
    count,
  });

  it('writes DA per line point, BRDA per arm, BRF/BRH, LF/LH and end_of_record; toggles and user points left out', () => {
    const points = [
      p('line', B, 3, 1, 2),
      p('toggle', A, 2, 5, 5, 'tb.u', 'q[0]'),
      p('line', A, 5, 3, 4),
      p('line', A, 5, 3, 7, 'tb.v'), // same line, another instance: the hits add up
      p('branch', A, 8, 12, 0, 'tb.u', 'else'),
      p('branch', A, 8, 9, 3, 'tb.u', 'if'),
      p('branch', A, 8, 9, 0, 'tb.v', 'if'),
      p('line', A, 10, 3, 0),
      p('user', A, 12, 3, 1, 'tb.u', 'cover'),
      p('toggle', '/rtl/t.sv', 1, 1, 9, 'tb.u', 'x'), // a toggle-only file gets no record
    ];
    expect(toLcov(points)).toBe(
      [
        'TN:chorus',
        'SF:/rtl/a.sv',
        'BRDA:8,0,0,3',
        'BRDA:8,1,0,-',
        'BRDA:8,0,1,-',
        'BRF:3',
        'BRH:1',
        'DA:5,11',
        'DA:10,0',
        'LF:2',
        'LH:1',
        'end_of_record',
        'TN:chorus',
        'SF:/rtl/b.sv',
        'DA:3,2',
        'LF:1',
        'LH:1',
        'end_of_record',
        '',
      ].join('\n'),
    );
  });

  it('keeps branch arms out of the line figures and names the test', () => {
    const out = toLcov([p('line', A, 4, 1, 1), p('branch', A, 4, 1, 6, 'tb.u', 'if'), p('branch', A, 4, 2, 6, 'tb.u', 'else')], 'run7');
    expect(out).toBe(
      ['TN:run7', 'SF:/rtl/a.sv', 'BRDA:4,0,0,6', 'BRDA:4,0,1,6', 'BRF:2', 'BRH:2', 'DA:4,1', 'LF:1', 'LH:1', 'end_of_record', ''].join(
        '\n',
      ),
    );
  });

  it('numbers branch blocks per line in line order', () => {
    const out = toLcov([p('branch', A, 20, 1, 0), p('branch', A, 10, 1, 1), p('branch', A, 10, 5, 0)]);
    expect(out.split('\n').filter((l) => l.startsWith('BR'))).toEqual([
      'BRDA:10,0,0,1',
      'BRDA:10,0,1,-',
      'BRDA:20,1,0,-',
      'BRF:3',
      'BRH:1',
    ]);
    expect(out.split('\n').filter((l) => /^(DA|LF|LH)/.test(l))).toEqual(['LF:0', 'LH:0']);
  });

  it('shows a line point where its code starts, leaves waived points out, and calls a line with an unhit point unhit', () => {
    // Verilator files an `else` arm under its `if` line (5) with the arm's lines (8) as its span:
    // the summary lists it at 8, and so does lcov; the `if` arm at 5 ran.
    const elseArm = { ...p('line', A, 5, 3, 0, 'tb.u', 'else'), span: [8, 8] as [number, number] };
    const ifArm = { ...p('line', A, 5, 3, 9, 'tb.u', 'if'), span: [5, 6] as [number, number] };
    const waived = { ...p('line', A, 12, 3, 0), waived: true as const };
    const out = toLcov([ifArm, elseArm, waived, p('line', A, 20, 1, 3), p('line', A, 20, 1, 0, 'tb.v')]);
    expect(out.split('\n').filter((l) => /^(DA|LF|LH)/.test(l))).toEqual(['DA:5,9', 'DA:8,0', 'DA:20,0', 'LF:3', 'LH:1']);
  });

  it('is empty for no points and for toggle-only points', () => {
    expect(toLcov([])).toBe('');
    expect(toLcov([p('toggle', A, 1, 1, 3, 'tb.u', 'x')])).toBe('');
  });
});
