// Per-file, per-line coverage from the simulator's points, in the shape the editor shows:
// decorations (covered/uncovered lines with counts) and VS Code's test-coverage API (statements
// and branches). Pure: no vscode import, runs in the worker and in unit tests.
import type { CoveragePoint } from '../../core/coverage/model.js';
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

export interface FileLineCoverage {
  file: string;
  lines: LineCoverage[];
  branches: BranchArm[];
  /** Toggle bits of the file: covered/total (shown in hovers and the dashboard). */
  toggles: { covered: number; total: number };
}

/** Merges the points of every instance per file and line (several instances of one module add up). */
export function coverageByFile(points: CoveragePoint[]): FileLineCoverage[] {
  const files = new Map<
    string,
    { lines: Map<number, LineCoverage>; branches: Map<string, BranchArm>; toggles: { covered: number; total: number } }
  >();
  for (const p of points) {
    // The scored set only: a waived point is in the record but not in the figure (nor in lcov).
    if (p.waived) continue;
    let f = files.get(p.file);
    if (!f) {
      f = { lines: new Map(), branches: new Map(), toggles: { covered: 0, total: 0 } };
      files.set(p.file, f);
    }
    if (p.type === 'toggle') {
      f.toggles.total += 1;
      if (isCovered(p)) f.toggles.covered += 1;
      continue;
    }
    // A line point where its code starts (as the summary and lcov show it); a branch arm at its
    // condition's line.
    const at = p.type === 'branch' ? p.line : displayLine(p);
    const l = f.lines.get(at) ?? { line: at, count: 0, covered: false, pointsCovered: 0, pointsTotal: 0 };
    l.count += p.count;
    l.pointsTotal += 1;
    if (isCovered(p)) l.pointsCovered += 1;
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
    out.push({
      file,
      lines,
      branches: [...f.branches.values()].sort((a, b) => a.line - b.line || a.column - b.column),
      toggles: f.toggles,
    });
  }
  return out;
}

/** Text for a line's hover. */
export function lineHover(l: LineCoverage): string {
  const state = l.covered ? 'covered' : l.pointsCovered === 0 ? 'not covered' : 'partly covered';
  return `CHORUS coverage: ${state} — ${l.pointsCovered}/${l.pointsTotal} points hit, ${l.count} hit${l.count === 1 ? '' : 's'}`;
}
