import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseVerilatorCoverage } from '../../src/core/coverage/verilatorDat.js';
import { figures, type CoveragePoint } from '../../src/core/coverage/model.js';

/** One coverage.dat line built from key/value pairs, in Verilator's \x01key\x02value encoding. */
function point(fields: Array<[string, string]>, count: number): string {
  return `C '${fields.map(([k, v]) => `\x01${k}\x02${v}`).join('')}' ${count}`;
}

const LINE_POINT = `C '\x01f\x02counter.sv\x01l\x0215\x01n\x023\x01page\x02v_line/counter\x01o\x02block\x01S\x0215-18\x01h\x02.tb_counter.uut' 538`;

describe('parseVerilatorCoverage', () => {
  it('reads a v_line point with every field (the documented example)', () => {
    expect(parseVerilatorCoverage(LINE_POINT)).toEqual<CoveragePoint[]>([
      {
        type: 'line',
        file: 'counter.sv',
        line: 15,
        column: 3,
        span: [15, 18],
        module: 'counter',
        hier: 'tb_counter.uut',
        label: 'block',
        count: 538,
      },
    ]);
  });

  it('reads v_branch, v_toggle and v_user points', () => {
    const text = [
      point(
        [
          ['f', 'counter.sv'],
          ['l', '27'],
          ['n', '9'],
          ['page', 'v_branch/counter'],
          ['o', 'else'],
          ['h', '.tb_counter.uut'],
        ],
        0,
      ),
      point(
        [
          ['f', 'counter.sv'],
          ['l', '4'],
          ['n', '22'],
          ['page', 'v_toggle/counter'],
          ['o', 'din[3]'],
          ['h', '.tb_counter.uut'],
        ],
        5,
      ),
      point(
        [
          ['f', 'counter.sv'],
          ['l', '40'],
          ['n', '3'],
          ['page', 'v_user/counter'],
          ['o', 'cover'],
          ['S', '40'],
          ['h', '.tb_counter.uut'],
        ],
        2,
      ),
    ].join('\n');
    expect(parseVerilatorCoverage(text)).toEqual<CoveragePoint[]>([
      {
        type: 'branch',
        file: 'counter.sv',
        line: 27,
        column: 9,
        span: undefined,
        module: 'counter',
        hier: 'tb_counter.uut',
        label: 'else',
        count: 0,
      },
      {
        type: 'toggle',
        file: 'counter.sv',
        line: 4,
        column: 22,
        span: undefined,
        module: 'counter',
        hier: 'tb_counter.uut',
        label: 'din[3]',
        count: 5,
      },
      {
        type: 'user',
        file: 'counter.sv',
        line: 40,
        column: 3,
        span: [40, 40],
        module: 'counter',
        hier: 'tb_counter.uut',
        label: 'cover',
        count: 2,
      },
    ]);
  });

  it('skips the header, blank lines, garbage and points of unknown pages', () => {
    const text = [
      '# SystemC::Coverage-3',
      '',
      'garbage that is not a point',
      "C 'not terminated 12",
      "C '\x01f\x02x.sv' notanumber",
      point(
        [
          ['f', 'x.sv'],
          ['l', '1'],
          ['page', 'v_fsm_state/x'],
          ['h', '.tb.x'],
        ],
        3,
      ), // unknown page
      point(
        [
          ['f', 'x.sv'],
          ['l', '1'],
        ],
        3,
      ), // no page at all
      LINE_POINT,
      '# trailing comment',
    ].join('\n');
    const pts = parseVerilatorCoverage(text);
    expect(pts).toHaveLength(1);
    expect(pts[0]).toMatchObject({ type: 'line', line: 15, count: 538 });
  });

  it('reads a multi-range span as [first, last] line', () => {
    const text = point(
      [
        ['f', 'a.sv'],
        ['l', '10'],
        ['n', '1'],
        ['page', 'v_line/a'],
        ['o', 'block'],
        ['S', '10-11,13-14'],
        ['h', '.tb.u'],
      ],
      1,
    );
    expect(parseVerilatorCoverage(text)[0].span).toEqual([10, 14]);
  });

  it('takes the smallest and largest line of an unordered span; a single line gives [n, n]', () => {
    const a = point(
      [
        ['f', 'a.sv'],
        ['l', '10'],
        ['page', 'v_line/a'],
        ['S', '20-22,12'],
        ['h', '.tb.u'],
      ],
      1,
    );
    const b = point(
      [
        ['f', 'a.sv'],
        ['l', '7'],
        ['page', 'v_line/a'],
        ['S', '7'],
        ['h', '.tb.u'],
      ],
      1,
    );
    expect(parseVerilatorCoverage(`${a}\n${b}`).map((p) => p.span)).toEqual([
      [12, 22],
      [7, 7],
    ]);
  });

  it('tolerates CRLF line endings and fields in any order', () => {
    const text =
      `C '\x01h\x02.tb.u\x01o\x02q[0]\x01page\x02v_toggle/m\x01n\x024\x01l\x029\x01f\x02m.sv' 2\r\n` +
      `C '\x01f\x02m.sv\x01l\x0211\x01page\x02v_line/m\x01h\x02.tb.u' 0\r\n`;
    expect(parseVerilatorCoverage(text)).toEqual<CoveragePoint[]>([
      { type: 'toggle', file: 'm.sv', line: 9, column: 4, span: undefined, module: 'm', hier: 'tb.u', label: 'q[0]', count: 2 },
      { type: 'line', file: 'm.sv', line: 11, column: 0, span: undefined, module: 'm', hier: 'tb.u', label: '', count: 0 },
    ]);
  });

  it('strips only one leading dot of the hierarchy and keeps other hierarchies as they are', () => {
    const a = point(
      [
        ['f', 'a.sv'],
        ['l', '1'],
        ['page', 'v_line/a'],
        ['h', 'TOP.tb.uut'],
      ],
      1,
    );
    const b = point(
      [
        ['f', 'a.sv'],
        ['l', '2'],
        ['page', 'v_line/a'],
        ['h', '.tb.uut.u_sub'],
      ],
      1,
    );
    const c = point(
      [
        ['f', 'a.sv'],
        ['l', '3'],
        ['page', 'v_line/a'],
      ],
      1,
    );
    expect(parseVerilatorCoverage([a, b, c].join('\n')).map((p) => p.hier)).toEqual(['TOP.tb.uut', 'tb.uut.u_sub', '']);
  });

  it('gives an empty module for a page without a module and empty file/label when absent', () => {
    const text = point(
      [
        ['l', '5'],
        ['page', 'v_line'],
      ],
      9,
    );
    expect(parseVerilatorCoverage(text)).toEqual<CoveragePoint[]>([
      { type: 'line', file: '', line: 5, column: 0, span: undefined, module: '', hier: '', label: '', count: 9 },
    ]);
  });

  it('keeps a label that contains quotes and separators', () => {
    const text = point(
      [
        ['f', 'a.sv'],
        ['l', '3'],
        ['page', 'v_user/a'],
        ['o', "cover 'x' : y"],
        ['h', '.tb.u'],
      ],
      4,
    );
    expect(parseVerilatorCoverage(text)[0]).toMatchObject({ label: "cover 'x' : y", count: 4 });
  });

  it('reads large hit counts exactly', () => {
    const text = point(
      [
        ['f', 'a.sv'],
        ['l', '3'],
        ['page', 'v_line/a'],
        ['h', '.tb.u'],
      ],
      123456789012,
    );
    expect(parseVerilatorCoverage(text)[0].count).toBe(123456789012);
  });

  it('returns [] for an empty database', () => {
    expect(parseVerilatorCoverage('')).toEqual([]);
    expect(parseVerilatorCoverage('# SystemC::Coverage-3\n')).toEqual([]);
  });

  it('reads a real Verilator 5.006 coverage.dat exactly', () => {
    const text = readFileSync(new URL('../fixtures/unit/covdat/sync_fifo.coverage.dat', import.meta.url), 'utf8');
    const pts = parseVerilatorCoverage(text);
    expect(pts).toHaveLength(27);
    const dut = pts.filter((p) => p.file === 'sync_fifo.sv');
    expect(dut).toHaveLength(15);
    expect(dut.every((p) => p.module === 'sync_fifo' && p.hier === 'TOP.tb.uut')).toBe(true);
    expect(dut.filter((p) => p.type === 'line').map((p) => [p.line, p.column, p.label, p.count, p.span])).toEqual([
      [10, 5, 'elsif', 2, [10, 10]],
      [13, 3, 'block', 1, [13, 13]],
      [9, 3, 'block', 12, [9, 9]],
    ]);
    expect(dut.filter((p) => p.type === 'branch').map((p) => [p.line, p.label, p.count, p.span])).toEqual([
      [11, 'if', 0, [11, 11]],
      [11, 'else', 10, undefined],
    ]);
    expect(dut.filter((p) => p.type === 'user').map((p) => [p.line, p.label, p.count])).toEqual([[15, 'cover', 0]]);
    expect(dut.filter((p) => p.type === 'toggle').map((p) => `${p.label}=${p.count}`)).toEqual([
      'clk=24',
      'push=2',
      'din[0]=0',
      'din[1]=0',
      'din[2]=0',
      'din[3]=0',
      'full=0',
      'cnt[0]=2',
      'cnt[1]=1',
    ]);
    // The testbench's own span 6-8 is the last point.
    expect(pts[26]).toMatchObject({ file: 'tb.sv', module: 'tb', hier: 'TOP.tb', line: 6, span: [6, 8], count: 1 });
    // Block 4/5 (line 3/3 + branch 1/2), toggle 3/9 (cnt[1] moved once only).
    const f = figures(dut);
    expect(f.tallies.block).toEqual({ covered: 4, total: 5 });
    expect(f.tallies.toggle).toEqual({ covered: 3, total: 9 });
    expect(f.overall).toBeCloseTo((4 / 5 + 3 / 9) / 2, 12);
  });
});

describe('parseVerilatorCoverage across Verilator versions', () => {
  const at = (o: string, count: number, page = 'v_toggle/counter', extra: Array<[string, string]> = []) =>
    point(
      [
        ['f', 'counter.sv'],
        ['l', '11'],
        ['n', '28'],
        ['t', page.split('_')[1].split('/')[0]],
        ['page', page],
        ['o', o],
        ...extra,
        ['h', 'tb_counter.uut'],
      ],
      count,
    );

  it('folds the per-direction toggle points of current releases into 5.006 single points (counts add)', () => {
    const current = [
      at('din[0]:0->1', 1),
      at('din[0]:1->0', 1),
      at('din[1]:0->1', 2),
      at('din[1]:1->0', 0),
      at('up:0->1', 0),
      at('up:1->0', 0),
    ].join('\n');
    const old = [at('din[0]', 2), at('din[1]', 2), at('up', 0)].join('\n');
    const a = parseVerilatorCoverage(current);
    expect(a.map((p) => [p.label, p.count])).toEqual([
      ['din[0]', 2],
      ['din[1]', 2],
      ['up', 0],
    ]);
    expect(a).toEqual(parseVerilatorCoverage(old));
    // Same covered/total, so the same c.
    expect(figures(a).tallies.toggle).toEqual({ covered: 2, total: 3 });
  });

  it('reads expression points and `?:` arms as the unscored kinds expr and cond', () => {
    const text = [
      at('(rst_n==0) => 1', 3, 'v_expr/counter'),
      at('(rst_n==1) => 0', 0, 'v_expr/counter'),
      at('cond_then', 6, 'v_branch/counter'),
      at('cond_else', 0, 'v_branch/counter'),
      at('if', 4, 'v_branch/counter'),
      at('else', 0, 'v_branch/counter'),
    ].join('\n');
    const pts = parseVerilatorCoverage(text);
    expect(pts.map((p) => p.type)).toEqual(['expr', 'expr', 'cond', 'cond', 'branch', 'branch']);
    const f = figures(pts);
    expect(f.expr).toBe(0.5);
    expect(f.cond).toBe(0.5);
    expect(f.tallies.branch).toEqual({ covered: 1, total: 2 });
    expect(f.overall).toBe(0.5); // block only: expression and ?: points are not part of c
    expect(figures(pts.filter((p) => p.type === 'branch')).overall).toBe(f.overall);
  });
});
