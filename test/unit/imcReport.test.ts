import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { dutRow, parseCells, parseHeader, parseImcReport } from '../../src/core/sim/xcelium/imcReport.js';
import { formatCovered, formatGrade, imcRowFromFigures, renderImcTable, type ImcRow } from '../../src/core/coverage/imcTable.js';
import { figures, type CoveragePoint } from '../../src/core/coverage/model.js';
import type { CovSummaryRow } from '../../src/core/sim/result.js';

const fixture = (name: string): string => readFileSync(new URL(`../fixtures/imc/${name}`, import.meta.url), 'utf8');

/** The numeric part of a row, for compact exact comparisons. */
const nums = (r: CovSummaryRow | undefined) =>
  r && {
    name: r.name,
    level: r.level,
    oa: r['Overall Average'],
    oc: r['Overall Covered'],
    ca: r['Code Average'],
    cc: r['Code Covered'],
    t: r.Toggle,
    b: r.Block,
  };

describe('parseImcReport', () => {
  it('reads the LLM4Cov published example exactly (Block 91.67%, Toggle 90% -> Overall 90.83%)', () => {
    const rows = parseImcReport(fixture('llm4cov_example.txt'));
    expect(rows).toEqual([
      {
        name: 'binary_to_bcd',
        level: 0,
        'Overall Average': 0.9083,
        'Overall Covered': 47 / 52,
        'Code Average': 0.9083,
        'Code Covered': 47 / 52,
        'Fsm Average': null,
        'Fsm Covered': null,
        'Functional Average': null,
        'Functional Covered': null,
        Toggle: 0.9,
        Block: 0.9167,
        Assertion: null,
      },
    ]);
    expect(dutRow(rows, 'binary_to_bcd')?.['Overall Average']).toBe(0.9083);
  });

  it('reads the same report with Windows line endings', () => {
    const crlf = fixture('llm4cov_example.txt').replace(/\r?\n/g, '\r\n');
    expect(parseImcReport(crlf)).toEqual(parseImcReport(fixture('llm4cov_example.txt')));
  });

  it('keeps n/a columns as null and still reads the rest', () => {
    const [row, ...rest] = parseImcReport(fixture('na_columns.txt'));
    expect(rest).toHaveLength(0);
    expect(row).toMatchObject({ name: 'mux_wire', level: 0, 'Overall Average': 0.75, 'Overall Covered': 0.75, Toggle: 0.75 });
    expect(row?.Block).toBeNull();
    expect(row?.Assertion).toBeNull();
    expect(row?.['Fsm Average']).toBeNull();
  });

  it('reads a hierarchy: levels from connector columns, wrapped names, names touching their cells', () => {
    const rows = parseImcReport(fixture('hierarchical.txt'));
    expect(rows.map(nums)).toEqual([
      { name: 'tb_fifo', level: 0, oa: null, oc: null, ca: null, cc: null, t: null, b: null },
      { name: 'dut', level: 1, oa: 0.9, oc: 0.84, ca: 0.9, cc: 0.84, t: 0.8, b: 1 },
      { name: 'u_ctrl', level: 2, oa: 0.825, oc: 0.8, ca: 0.825, cc: 0.8, t: 0.75, b: 0.9 },
      { name: 'u_state_decoder_with_a_very_long_instance_name', level: 3, oa: 1, oc: 1, ca: 1, cc: 1, t: 1, b: 1 },
      { name: 'u_memory_bank_controller_instance_with_long_name', level: 2, oa: 0.5, oc: 0.4, ca: 0.5, cc: 0.4, t: 0.25, b: 0.75 },
      { name: 'u_bank0', level: 3, oa: 0.625, oc: 0.6, ca: 0.625, cc: 0.6, t: 0.5, b: 0.75 },
      { name: 'u_cell', level: 4, oa: 0, oc: 0, ca: 0, cc: 0, t: 0, b: 0 },
      { name: 'u_out', level: 2, oa: 1, oc: 1, ca: 1, cc: 1, t: 1, b: 1 },
    ]);
  });

  it('reads "Average Grade" headers, single-spaced header words and `c/t (pct%)` cells', () => {
    const [row] = parseImcReport(fixture('grade_headers.txt'));
    expect(nums(row)).toEqual({ name: 'counter', level: 0, oa: 0.95, oc: 0.94, ca: 0.95, cc: 0.94, t: 0.9, b: 1 });
  });

  it('ignores text that is not a table and returns [] without a header', () => {
    expect(parseImcReport('')).toEqual([]);
    expect(parseImcReport('xrun: *E,VLGERR: failed\ncounter 90.00% 90.00% (9/10)\n')).toEqual([]);
  });

  it('splits cells and headers', () => {
    expect(parseCells(' n/a   91.67% (11/12)  45/50 (90.00%)  12.5%')).toEqual([
      { pct: null },
      { pct: 91.67, covered: 11, total: 12 },
      { pct: 90, covered: 45, total: 50 },
      { pct: 12.5 },
    ]);
    expect(parseCells('90.00% exit')).toBeNull();
    expect(parseHeader('Overall Average  Block Average Grade Block Covered  Expression')).toEqual([
      'Overall Average',
      'Block Average Grade',
      'Block Covered',
      'Expression',
    ]);
  });
});

describe('dutRow', () => {
  const rows = parseImcReport(fixture('hierarchical.txt'));
  it('falls back to the instance name when the testbench is the root', () => {
    expect(dutRow(rows, 'fifo', 'dut')?.name).toBe('dut');
    expect(dutRow(rows, 'fifo')).toBeUndefined();
  });
  it('prefers the level-0 row named like the DUT module', () => {
    const r = parseImcReport(fixture('llm4cov_example.txt'));
    expect(dutRow(r, 'binary_to_bcd', 'dut')?.level).toBe(0);
  });
});

describe('renderImcTable', () => {
  const rows: ImcRow[] = [
    {
      name: 'counter',
      level: 0,
      overallAverage: 0.9083,
      overallCovered: [47, 52],
      codeAverage: 0.9083,
      codeCovered: [47, 52],
      block: [11, 12],
      toggle: [36, 40],
    },
    {
      name: 'u_sub',
      level: 1,
      overallAverage: null,
      overallCovered: null,
      codeAverage: null,
      codeCovered: null,
      block: null,
      toggle: [0, 0],
    },
    {
      name: 'u_leaf',
      level: 2,
      overallAverage: 1,
      overallCovered: [3, 3],
      codeAverage: 1,
      codeCovered: [3, 3],
      block: [3, 3],
      toggle: null,
    },
  ];

  it('prints the IMC text layout', () => {
    expect(renderImcTable(rows)).toBe(
      [
        'name          Overall Average  Overall Covered  Code Average  Code Covered    Toggle          Block',
        '------------------------------------------------------------------------------------------------------------',
        'counter       90.83%           90.38% (47/52)   90.83%        90.38% (47/52)  90.00% (36/40)  91.67% (11/12)',
        '|--u_sub      n/a              n/a              n/a           n/a             n/a             n/a',
        '|  |--u_leaf  100.00%          100.00% (3/3)    100.00%       100.00% (3/3)   n/a             100.00% (3/3)',
        '',
      ].join('\n'),
    );
    expect(renderImcTable([])).toBe('');
  });

  it('round-trips through parseImcReport', () => {
    const parsed = parseImcReport(renderImcTable(rows));
    expect(parsed.map(nums)).toEqual([
      { name: 'counter', level: 0, oa: 0.9083, oc: 47 / 52, ca: 0.9083, cc: 47 / 52, t: 0.9, b: 0.9167 },
      { name: 'u_sub', level: 1, oa: null, oc: null, ca: null, cc: null, t: null, b: null },
      { name: 'u_leaf', level: 2, oa: 1, oc: 1, ca: 1, cc: 1, t: null, b: 1 },
    ]);
  });

  it('prints optional FSM and assertion columns only when a row has them', () => {
    const text = renderImcTable([{ ...rows[0]!, fsm: [2, 4], assertion: null }]);
    expect(text.split('\n')[0]).toContain('Fsm');
    expect(text.split('\n')[0]).toMatch(/Block\s+Assertion$/);
    const [row] = parseImcReport(text);
    expect(row?.['Fsm Average']).toBe(0.5);
    expect(row?.['Fsm Covered']).toBe(0.5);
    expect(row?.Assertion).toBeNull();
  });

  it('builds rows from our own figures, with overall = mean(block, toggle)', () => {
    const p = (type: CoveragePoint['type'], count: number): CoveragePoint => ({
      type,
      file: '/d/c.sv',
      line: 1,
      column: 1,
      module: 'c',
      hier: 'tb.dut',
      label: '',
      count,
    });
    const pts = [p('line', 1), p('line', 0), p('branch', 1), p('branch', 1), p('toggle', 2), p('toggle', 1)];
    const row = imcRowFromFigures('c', 0, figures(pts));
    expect(row).toEqual({
      name: 'c',
      level: 0,
      overallAverage: 0.625,
      overallCovered: [4, 6],
      codeAverage: 0.625,
      codeCovered: [4, 6],
      block: [3, 4],
      toggle: [1, 2],
    });
    expect(parseImcReport(renderImcTable([row]))[0]?.['Overall Average']).toBe(0.625);
  });

  it('formats like IMC', () => {
    expect(formatGrade(0.90833)).toBe('90.83%');
    expect(formatGrade(null)).toBe('n/a');
    expect(formatCovered([45, 50])).toBe('90.00% (45/50)');
    expect(formatCovered([0, 0])).toBe('n/a');
  });
});
