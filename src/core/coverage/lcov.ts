// lcov tracefile export of the DUT points (Coverage Gutters and genhtml read it). Verilator 5.006's
// own --write-info has no branch records, so we write ours. The tracefile is the scored point set
// and nothing else, so its line figures are the summary's: waived points are left out (as the
// scored figure leaves them out), a DA record stands for the line points shown at that line
// (displayLine: an arm's code, where the summary lists it, not the `if` Verilator files it under),
// hit only when every one of them was hit, and branch arms are BRDA records at their condition's
// line, never DA lines. Toggles stay out of lcov (two arms per bit is not what lcov means) and in
// the JSON record instead.
import { displayLine, isCovered, type CoveragePoint } from './model.js';

export function toLcov(points: CoveragePoint[], testName = 'chorus'): string {
  const byFile = new Map<string, CoveragePoint[]>();
  for (const p of points) {
    if (p.type !== 'line' && p.type !== 'branch') continue;
    if (p.waived) continue;
    const list = byFile.get(p.file) ?? [];
    list.push(p);
    byFile.set(p.file, list);
  }
  const out: string[] = [];
  for (const [file, pts] of [...byFile.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    out.push(`TN:${testName}`, `SF:${file}`);
    // Line points by the line they are shown at: hits add up over instances; one unhit point
    // makes the line unhit (the editor and the summary say the same).
    const lines = new Map<number, { count: number; missed: boolean }>();
    for (const p of pts) {
      if (p.type !== 'line') continue;
      const at = displayLine(p);
      const l = lines.get(at) ?? { count: 0, missed: false };
      l.count += p.count;
      if (!isCovered(p)) l.missed = true;
      lines.set(at, l);
    }
    const branches = pts.filter((p) => p.type === 'branch').sort((a, b) => a.line - b.line || a.column - b.column || a.hier.localeCompare(b.hier));
    const blockIds = new Map<string, number>();
    const arms = new Map<string, number>();
    let brHit = 0;
    for (const b of branches) {
      const key = `${b.line}:${b.hier}`;
      if (!blockIds.has(key)) blockIds.set(key, blockIds.size);
      const arm = arms.get(key) ?? 0;
      arms.set(key, arm + 1);
      out.push(`BRDA:${b.line},${blockIds.get(key)},${arm},${b.count > 0 ? b.count : '-'}`);
      if (b.count > 0) brHit += 1;
    }
    if (branches.length) out.push(`BRF:${branches.length}`, `BRH:${brHit}`);
    const sorted = [...lines.entries()].sort(([a], [b]) => a - b);
    for (const [ln, l] of sorted) out.push(`DA:${ln},${l.missed ? 0 : l.count}`);
    out.push(`LF:${sorted.length}`, `LH:${sorted.filter(([, l]) => !l.missed).length}`, 'end_of_record');
  }
  return out.join('\n') + (out.length ? '\n' : '');
}
