// Per-file, per-line coverage from the simulator's points, in the shape the editor shows:
// decorations (covered/uncovered lines with counts) and VS Code's test-coverage API (statements
// and branches). Pure: no vscode import, runs in the worker and in unit tests.
import type { CoveragePoint, UncoveredPoint, UncoveredReason } from '../../core/run/types.js';
import { displayLine, isCovered } from '../../core/run/coverage.js';

export interface LineCoverage {
  line: number;
  /** Highest hit count of the line's block points (line/user points, or branch arms on it). */
  count: number;
  covered: boolean;
  /** Points on the line: covered and total, for hovers. */
  pointsCovered: number;
  pointsTotal: number;
}

export interface BranchArm {
  line: number;
  column: number;
  label: string;
  count: number;
}

/** What the editor marks on one line: the code's points and the toggle bits declared there, the
 * uncovered ones named with why (the reasons the CLI prints). */
export interface LineMark {
  line: number;
  state: 'covered' | 'partial' | 'uncovered';
  /** Set when every point the line missed is explained (a reason other than "not reached"): the
   * formal engine's three marks, shown apart from a plain miss. `unreachable`: proven (how, in
   * the hover); `witness`: reachable, inputs found, not yet covered; `bounded`: not reached in N
   * cycles by a bounded search (not proven). */
  formal?: 'unreachable' | 'witness' | 'bounded';
  /** Hover text (markdown): the state, then one bullet per point not covered. */
  hover: string;
}

export interface FileLineCoverage {
  file: string;
  /** The line metric of VS Code's test-coverage API (statements and branch arms). */
  lines: LineCoverage[];
  /** The editor's marks: every line with a point, every line of a block that never ran, every
   * declaration with toggle bits. */
  marks: LineMark[];
  branches: BranchArm[];
  /** Toggle bits of the file: covered/total (shown in hovers and the dashboard). */
  toggles: { covered: number; total: number };
}

/** Markdown code text: backticks cannot end the span early. */
const code = (t: string): string => `\`${t.replace(/`/g, "'")}\``;

/** Why a point is uncovered, in the words the CLI prints. */
export function reasonWords(r: UncoveredReason | undefined): string {
  if (!r) return 'not covered';
  if (r.kind === 'not-hit') return 'not reached by the stimulus';
  const what = {
    'dead-param': 'parameter-dead',
    'unreachable-formal': 'proven unreachable (formal)',
    witness: 'reachable (witness found), not yet covered',
    bounded: 'not reached in a bounded search (not proven)',
  }[r.kind];
  return `${what}${r.enable ? ` (enable with ${code(r.enable)})` : ''}: ${r.detail}`;
}

/** One uncovered point in a hover bullet: what it is and why. */
function missedWords(p: CoveragePoint, reason: UncoveredReason | undefined): string {
  const what =
    p.type === 'toggle'
      ? `${code(p.label)} ${p.count === 0 ? 'never toggled' : 'toggled one way only (covered needs 0→1 and 1→0)'}`
      : p.type === 'branch'
        ? `the ${code(p.label)} arm (line ${p.line}) was never taken`
        : `the ${code(p.label)} block never ran`;
  return `${what} — ${reasonWords(reason)}`;
}

const pointKey = (p: Pick<CoveragePoint, 'type' | 'file' | 'line' | 'label' | 'hier'>): string =>
  `${p.type}\u0000${p.file}\u0000${p.line}\u0000${p.label}\u0000${p.hier}`;

interface MarkAcc {
  hit: number;
  total: number;
  count: number;
  missed: string[];
  /** The reasons of the missed points. */
  kinds: Set<UncoveredReason['kind']>;
  /** Set on a line with no point of its own, inside a block that never ran. */
  inside?: string;
}

/** Merges the points of every instance per file and line (several instances of one module add
 * up). `uncovered` (the result's list) gives each uncovered point its reason. */
export function coverageByFile(points: CoveragePoint[], uncovered: UncoveredPoint[] = []): FileLineCoverage[] {
  const reasons = new Map(uncovered.map((u) => [pointKey(u), u.reason]));
  const files = new Map<
    string,
    {
      lines: Map<number, LineCoverage>;
      branches: Map<string, BranchArm>;
      toggles: { covered: number; total: number };
      marks: Map<number, MarkAcc>;
      spans: Array<[number, number, string]>;
    }
  >();
  const mark = (m: Map<number, MarkAcc>, line: number): MarkAcc => {
    let a = m.get(line);
    if (!a) m.set(line, (a = { hit: 0, total: 0, count: 0, missed: [], kinds: new Set() }));
    return a;
  };
  for (const p of points) {
    // The scored set only: a waived point is in the record but not in the figure (nor in lcov).
    if (p.waived) continue;
    let f = files.get(p.file);
    if (!f) {
      f = { lines: new Map(), branches: new Map(), toggles: { covered: 0, total: 0 }, marks: new Map(), spans: [] };
      files.set(p.file, f);
    }
    const covered = isCovered(p);
    // The editor's mark: a block point where its code starts, a branch arm where its code starts
    // (an untaken `else` is marked on the `else`, not only on its `if`), a toggle bit at its declaration.
    const m = mark(f.marks, displayLine(p));
    m.total += 1;
    m.count += p.count;
    if (covered) m.hit += 1;
    else {
      const reason = reasons.get(pointKey(p));
      m.missed.push(missedWords(p, reason));
      m.kinds.add(reason?.kind ?? 'not-hit');
      if (p.type !== 'toggle' && p.span && p.span[1] > p.span[0])
        f.spans.push([p.span[0], p.span[1], `${p.label} at line ${displayLine(p)}`]);
    }
    if (p.type === 'toggle') {
      f.toggles.total += 1;
      if (covered) f.toggles.covered += 1;
      continue;
    }
    // The line metric: a line point where its code starts (as the summary and lcov show it); a
    // branch arm at its condition's line.
    const at = p.type === 'branch' ? p.line : displayLine(p);
    const l = f.lines.get(at) ?? { line: at, count: 0, covered: false, pointsCovered: 0, pointsTotal: 0 };
    l.count += p.count;
    l.pointsTotal += 1;
    if (covered) l.pointsCovered += 1;
    f.lines.set(at, l);
    if (p.type === 'branch') {
      const key = `${p.line}:${p.column}:${p.label}`;
      const arm = f.branches.get(key) ?? { line: p.line, column: p.column, label: p.label, count: 0 };
      arm.count += p.count;
      f.branches.set(key, arm);
    }
  }
  const out: FileLineCoverage[] = [];
  for (const [file, f] of [...files.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    const lines = [...f.lines.values()].sort((a, b) => a.line - b.line);
    // A line is covered only when every point on it ran (an `if` whose else arm never ran is not).
    for (const l of lines) l.covered = l.pointsCovered === l.pointsTotal;
    // The body of a block that never ran: its lines without points of their own are marked too.
    for (const [from, to, what] of f.spans)
      for (let n = from + 1; n <= to; n++)
        if (!f.marks.has(n)) f.marks.set(n, { hit: 0, total: 0, count: 0, missed: [], kinds: new Set(), inside: what });
    const marks = [...f.marks.entries()]
      .sort(([a], [b]) => a - b)
      .map(([line, a]): LineMark => {
        const formal = formalMark(a);
        return { line, state: markState(a), ...(formal ? { formal } : {}), hover: markHover(a) };
      });
    out.push({
      file,
      lines,
      marks,
      branches: [...f.branches.values()].sort((a, b) => a.line - b.line || a.column - b.column),
      toggles: f.toggles,
    });
  }
  return out;
}

/** The line's mark when no missed point on it is a plain miss: witness before bounded before proven. */
function formalMark(a: MarkAcc): LineMark['formal'] {
  if (a.inside !== undefined || a.kinds.size === 0 || a.kinds.has('not-hit')) return undefined;
  if (a.kinds.has('witness')) return 'witness';
  if (a.kinds.has('bounded')) return 'bounded';
  return 'unreachable';
}

function markState(a: MarkAcc): LineMark['state'] {
  if (a.inside !== undefined || a.hit === 0) return 'uncovered';
  return a.hit === a.total ? 'covered' : 'partial';
}

function markHover(a: MarkAcc): string {
  if (a.inside !== undefined) return `CHORUS coverage: not covered — inside the ${code(a.inside)} block, which never ran`;
  const state = a.hit === a.total ? 'covered' : a.hit === 0 ? 'not covered' : 'partly covered';
  const head = `CHORUS coverage: ${state} — ${a.hit}/${a.total} points hit, ${a.count} hit${a.count === 1 ? '' : 's'}`;
  const shown = a.missed.slice(0, 16);
  const more = a.missed.length - shown.length;
  return [head, ...shown.map((m) => `- ${m}`), ...(more > 0 ? [`- … and ${more} more`] : [])].join('\n');
}
