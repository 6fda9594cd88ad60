// Parses the text table of Cadence IMC `report -metrics ...` (and our renderImcTable output) into
// LLM4Cov summary rows (docs/protocol.md §6). Written from the documented shape of the report, not from
// Cadence code:
//   name                Overall Average  Overall Covered  ...  Toggle          Block
//   -----------------------------------------------------------------------------------
//   tb                  n/a              n/a              ...  n/a             n/a
//   |--dut              90.83%           90.38% (47/52)   ...  90.00% (36/40)  91.67% (11/12)
//   |  |--u_sub         ...
// Robust to: banner/prompt lines before and after the table, several tables, `n/a` cells, CRLF,
// names long enough to touch the next cell (IMC then leaves a single space), a long name printed
// on its own line with its cells on the next, and connector indents that are not a fixed 3
// characters per level (seen in real reports: the level comes from a stack of connector columns).
import type { CovSummaryRow } from '../result.js';

type SummaryField = Exclude<keyof CovSummaryRow, 'name' | 'level'>;

interface Cell {
  /** The printed percentage, or null for `n/a`. */
  pct: number | null;
  covered?: number;
  total?: number;
}

interface Assign {
  field: SummaryField;
  /** `grade`: the printed percentage; `covered`: covered/total when the cell has a tally. */
  from: 'grade' | 'covered';
  /** When two columns feed one field (`Block Average Grade`, `Block Covered`), the higher wins. */
  prio: number;
}

/** Removes floating noise so 91.67% reads as 0.9167, not 0.9167000000000001. */
const clean = (x: number): number => Math.round(x * 1e10) / 1e10;

// Metric names IMC uses as column heads (text and HTML spellings). Used to split header words
// when columns are separated by a single space, and to map columns to LLM4Cov fields.
const METRIC =
  /\b(overall|code|fsm|functional|covergroup|block|toggle|expression|statement|branch|assertion)(?:\s+(average|covered))?(?:\s+grade)?\b/gi;
const HAS_METRIC = new RegExp(METRIC.source, 'i');

const GROUP_FIELDS: Record<string, [SummaryField, SummaryField]> = {
  overall: ['Overall Average', 'Overall Covered'],
  code: ['Code Average', 'Code Covered'],
  fsm: ['Fsm Average', 'Fsm Covered'],
  functional: ['Functional Average', 'Functional Covered'],
  covergroup: ['Functional Average', 'Functional Covered'],
};
const SINGLE_FIELDS: Record<string, SummaryField> = { block: 'Block', toggle: 'Toggle', assertion: 'Assertion' };

/** What a column contributes; [] for metrics with no LLM4Cov field (expression, branch...). */
export function columnAssignments(header: string): Assign[] {
  const words = header
    .toLowerCase()
    .replace(/\s+grade$/, '')
    .trim()
    .split(/\s+/);
  const metric = words[0] ?? '';
  const aspect = words[1]; // 'average' | 'covered' | undefined
  const group = GROUP_FIELDS[metric];
  if (group) {
    if (aspect === 'average') return [{ field: group[0], from: 'grade', prio: 2 }];
    if (aspect === 'covered') return [{ field: group[1], from: 'covered', prio: 2 }];
    return [
      { field: group[0], from: 'grade', prio: 1 },
      { field: group[1], from: 'covered', prio: 1 },
    ];
  }
  const single = SINGLE_FIELDS[metric];
  if (single) return [{ field: single, from: aspect === 'covered' ? 'covered' : 'grade', prio: aspect === 'covered' ? 1 : 2 }];
  return [];
}

/** Column heads after `name`: split on 2+ spaces, then on known metric names inside a chunk. */
export function parseHeader(rest: string): string[] {
  const cols: string[] = [];
  for (const chunk of rest.trim().split(/\s{2,}/)) {
    if (!chunk) continue;
    const found = [...chunk.matchAll(METRIC)].map((m) => m[0].replace(/\s+/g, ' '));
    const rebuilt = found.join(' ');
    cols.push(...(found.length > 1 && rebuilt === chunk.replace(/\s+/g, ' ') ? found : [chunk]));
  }
  return cols;
}

// One cell: `n/a`; `91.67%` optionally followed by `(11/12)` or `(11/12/1)` (third: exceptions);
// or `11/12 (91.67%)`.
const CELL =
  /\s*(?:(n\/a)|(\d+(?:\.\d+)?)\s*%(?:\s*\(\s*(\d+)\s*\/\s*(\d+)(?:\s*\/\s*\d+)?\s*\))?|(\d+)\s*\/\s*(\d+)(?:\s*\/\s*\d+)?\s*\(\s*(\d+(?:\.\d+)?)\s*%\s*\))(?=\s|$)/y;

/** All cells of `text`, or null when `text` holds anything that is not a cell. */
export function parseCells(text: string): Cell[] | null {
  const cells: Cell[] = [];
  CELL.lastIndex = 0;
  while (CELL.lastIndex < text.length) {
    if (/^\s*$/.test(text.slice(CELL.lastIndex))) break;
    const at = CELL.lastIndex;
    const m = CELL.exec(text);
    if (!m || CELL.lastIndex === at) return null;
    if (m[1]) cells.push({ pct: null });
    else if (m[2] !== undefined) {
      const c: Cell = { pct: Number(m[2]) };
      if (m[3] !== undefined) {
        c.covered = Number(m[3]);
        c.total = Number(m[4]);
      }
      cells.push(c);
    } else cells.push({ pct: Number(m[7]), covered: Number(m[5]), total: Number(m[6]) });
  }
  return cells;
}

function cellValue(c: Cell, from: Assign['from']): number | null {
  if (from === 'covered' && c.total !== undefined && c.covered !== undefined) {
    return c.total > 0 ? c.covered / c.total : null;
  }
  if (c.pct !== null) return clean(c.pct / 100);
  return c.total ? (c.covered ?? 0) / c.total : null;
}

export function emptyRow(name: string, level: number): CovSummaryRow {
  return {
    name,
    level,
    'Overall Average': null,
    'Overall Covered': null,
    'Code Average': null,
    'Code Covered': null,
    'Fsm Average': null,
    'Fsm Covered': null,
    'Functional Average': null,
    'Functional Covered': null,
    Toggle: null,
    Block: null,
    Assertion: null,
  };
}

function toRow(name: string, level: number, cols: Assign[][], cells: Cell[]): CovSummaryRow {
  const row = emptyRow(name, level);
  const prio: Partial<Record<SummaryField, number>> = {};
  cols.forEach((assigns, i) => {
    const cell = cells[i];
    if (!cell) return;
    for (const a of assigns) {
      if ((prio[a.field] ?? 0) > a.prio) continue;
      const v = cellValue(cell, a.from);
      if (v === null && prio[a.field] !== undefined) continue;
      row[a.field] = v;
      prio[a.field] = a.prio;
    }
  });
  return row;
}

const HEADER = /^\s*name\s+(.*)$/i;
const SEPARATOR = /^\s*[-=_]{3,}\s*$/;
/** Tree connector (`|--`, also `` `-- `` / `+--`) preceded only by bars and spaces. */
const TREE = /^([\s|]*)[|`+]--(.*)$/;

export function parseImcReport(text: string): CovSummaryRow[] {
  const rows: CovSummaryRow[] = [];
  let cols: Assign[][] | null = null;
  let stack: number[] = [];
  let pending: { name: string; level: number; cells: Cell[] } | null = null;

  const flush = (): void => {
    if (pending && cols && pending.cells.length > 0) rows.push(toRow(pending.name, pending.level, cols, pending.cells));
    pending = null;
  };

  for (const raw of text.split(/\r\n|\r|\n/)) {
    const line = raw.replace(/\t/g, '    ').trimEnd();
    const header = HEADER.exec(line);
    if (header && HAS_METRIC.test(header[1] ?? '')) {
      flush();
      cols = parseHeader(header[1] ?? '').map(columnAssignments);
      stack = [];
      continue;
    }
    if (!cols) continue; // banner before the first table
    if (line.trim() === '' || SEPARATOR.test(line)) {
      flush();
      continue;
    }

    // A line of cells only continues the previous row (name printed on its own line, or wrapped).
    const onlyCells = /^\s/.test(line) && !TREE.test(line) ? parseCells(line) : null;
    if (onlyCells && onlyCells.length > 0) {
      const p = pending as { cells: Cell[] } | null;
      if (p && p.cells.length < cols.length) p.cells.push(...onlyCells);
      continue;
    }

    let level: number;
    let body: string;
    const tree = TREE.exec(line);
    if (tree) {
      const col = (tree[1] ?? '').length;
      while (stack.length > 0 && stack[stack.length - 1]! >= col) stack.pop();
      stack.push(col);
      level = stack.length;
      body = tree[2] ?? '';
    } else {
      level = 0;
      stack = [];
      body = line;
    }
    const m = /^\s*(\S+)(.*)$/.exec(body);
    const cells = m ? parseCells(m[2] ?? '') : null;
    flush();
    if (!m || cells === null) continue; // prompt echo, legend or other prose: not a row
    pending = { name: m[1]!, level, cells };
  }
  flush();
  return rows;
}

/**
 * The DUT's row. LLM4Cov reads the row whose name is the DUT module at level 0; reports that show
 * the testbench as the root list the DUT deeper, by module or by instance name, so fall back to the
 * shallowest row named like the module, then like the instance (also as the last component of a
 * dotted path).
 */
export function dutRow(rows: CovSummaryRow[], dutModule: string, dutInstance?: string): CovSummaryRow | undefined {
  const exact = rows.find((r) => r.level === 0 && r.name === dutModule);
  if (exact) return exact;
  const shallowest = (pred: (r: CovSummaryRow) => boolean): CovSummaryRow | undefined =>
    rows.filter(pred).sort((a, b) => a.level - b.level)[0];
  const named = (n: string) => (r: CovSummaryRow) => r.name === n || r.name.endsWith(`.${n}`);
  return shallowest(named(dutModule)) ?? (dutInstance ? shallowest(named(dutInstance)) : undefined);
}
