// Renders per-instance coverage as the text table Cadence IMC prints for `report -metrics overall`
// (the legacy text `report` command), so a model trained on IMC feedback (docs/protocol.md §3) sees the
// layout it knows even when the numbers come from Verilator.
//
// Layout, as IMC's text report prints it (no Cadence code or output copied; shape only):
//   name            Overall Average  Overall Covered   Code Average  Code Covered      Block ...
//   ------------------------------------------------------------------------------------------
//   counter         90.83%           90.38% (47/52)    90.83%        90.38% (47/52)    91.67% (11/12)
//   |--u_sub        ...
//   |  |--u_leaf    ...
// - a header row starting with `name`, a dashed separator, then one row per instance;
// - the hierarchy drawn with `|--` connectors and `|  ` per ancestor level;
// - "Average" cells are a grade `NN.NN%`; "Covered" and single-metric cells are `NN.NN% (c/t)`;
// - `n/a` where a metric has no items.
// The text report names its columns "Overall Average"/"Overall Covered"; the HTML report
// (`report_metrics`) calls the same numbers "Overall Average Grade". We follow the text report,
// which is what LLM4Cov's summary keys were read from.
import type { CoverageFigures } from './model.js';
import { pct } from '../util/format.js';

/** Covered and total item counts. */
export type CoveredTally = [covered: number, total: number];

export interface ImcRow {
  /** Instance name (the root row conventionally carries the DUT module name, as LLM4Cov reads it). */
  name: string;
  /** 0 for a root, 1 for its children, ... */
  level: number;
  /** Grade in [0,1]: IMC's "Overall Average" (mean of the metric grades); null prints `n/a`. */
  overallAverage: number | null;
  /** Pooled covered/total over every scored metric; null prints `n/a`. */
  overallCovered: CoveredTally | null;
  /** Grade in [0,1] over the code metrics (block, toggle, ... ). */
  codeAverage: number | null;
  codeCovered: CoveredTally | null;
  block: CoveredTally | null;
  toggle: CoveredTally | null;
  /** Optional metric columns: a column is printed when at least one row defines the field. */
  fsm?: CoveredTally | null;
  assertion?: CoveredTally | null;
}

/** `0.9083` -> `90.83%`; IMC prints two decimals. */
export function formatGrade(frac: number | null): string {
  return frac === null || !Number.isFinite(frac) ? 'n/a' : pct(frac);
}

/** `[47, 52]` -> `90.38% (47/52)`; no items -> `n/a`. */
export function formatCovered(t: CoveredTally | null | undefined): string {
  if (!t || t[1] <= 0) return 'n/a';
  return `${formatGrade(t[0] / t[1])} (${t[0]}/${t[1]})`;
}

interface Column {
  header: string;
  cell: (r: ImcRow) => string;
}

function columnsFor(rows: ImcRow[]): Column[] {
  const cols: Column[] = [
    { header: 'Overall Average', cell: (r) => formatGrade(r.overallAverage) },
    { header: 'Overall Covered', cell: (r) => formatCovered(r.overallCovered) },
    { header: 'Code Average', cell: (r) => formatGrade(r.codeAverage) },
    { header: 'Code Covered', cell: (r) => formatCovered(r.codeCovered) },
  ];
  if (rows.some((r) => r.fsm !== undefined)) cols.push({ header: 'Fsm', cell: (r) => formatCovered(r.fsm) });
  cols.push({ header: 'Toggle', cell: (r) => formatCovered(r.toggle) });
  cols.push({ header: 'Block', cell: (r) => formatCovered(r.block) });
  if (rows.some((r) => r.assertion !== undefined)) {
    cols.push({ header: 'Assertion', cell: (r) => formatCovered(r.assertion) });
  }
  return cols;
}

/** `|--` for children, one `|  ` per further ancestor level (IMC keeps every ancestor's bar). */
function treeName(r: ImcRow): string {
  const level = Math.max(0, Math.floor(r.level));
  return level === 0 ? r.name : `${'|  '.repeat(level - 1)}|--${r.name}`;
}

/** Rows in display order (parents before children). Returns '' for no rows. */
export function renderImcTable(rows: ImcRow[]): string {
  if (rows.length === 0) return '';
  const cols = columnsFor(rows);
  const names = rows.map(treeName);
  const cells = rows.map((r) => cols.map((c) => c.cell(r)));
  // Every column is at least two spaces wider than its widest entry: the gap is what a reader
  // (and parseImcReport) uses to split cells.
  const nameW = Math.max(4, ...names.map((n) => n.length)) + 2;
  const widths = cols.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i]!.length)) + 2);
  const line = (first: string, rest: string[]): string =>
    (first.padEnd(nameW) + rest.map((s, i) => s.padEnd(widths[i]!)).join('')).trimEnd();
  const out = [line('name', cols.map((c) => c.header))];
  out.push('-'.repeat(nameW + widths.reduce((a, w) => a + w, 0) - 2));
  rows.forEach((_, i) => out.push(line(names[i]!, cells[i]!)));
  return out.join('\n') + '\n';
}

/**
 * One row from our own coverage figures. Block and toggle are the code metrics we measure, so the
 * code columns equal the overall ones (as in LLM4Cov's published example, where both are 90.83%).
 */
export function imcRowFromFigures(name: string, level: number, f: CoverageFigures): ImcRow {
  const t = (x: { covered: number; total: number }): CoveredTally | null => (x.total > 0 ? [x.covered, x.total] : null);
  const block = t(f.tallies.block);
  const toggle = t(f.tallies.toggle);
  const pooled = t({
    covered: f.tallies.block.covered + f.tallies.toggle.covered,
    total: f.tallies.block.total + f.tallies.toggle.total,
  });
  return {
    name,
    level,
    overallAverage: f.overall,
    overallCovered: pooled,
    codeAverage: f.overall,
    codeCovered: pooled,
    block,
    toggle,
  };
}
