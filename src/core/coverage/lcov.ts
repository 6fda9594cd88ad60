// lcov tracefile export of the DUT points (Coverage Gutters and genhtml read it). Verilator 5.006's
// own --write-info has no branch records, so we write ours: DA per line (max hit count of the line's
// block points), BRDA per branch arm, and toggles as branches of a pseudo-block (two arms per bit is
// not what lcov means; we keep toggles out of lcov and in the JSON record instead).
import type { CoveragePoint } from './model.js';

export function toLcov(points: CoveragePoint[], testName = 'chorus'): string {
  const byFile = new Map<string, CoveragePoint[]>();
  for (const p of points) {
    if (p.type === 'toggle') continue;
    const list = byFile.get(p.file) ?? [];
    list.push(p);
    byFile.set(p.file, list);
  }
  const out: string[] = [];
  for (const [file, pts] of [...byFile.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    out.push(`TN:${testName}`, `SF:${file}`);
    const lines = new Map<number, number>();
    for (const p of pts) {
      if (p.type !== 'line' && p.type !== 'user') continue;
      lines.set(p.line, Math.max(lines.get(p.line) ?? 0, p.count));
    }
    // A line that only carries branch points still ran if any arm ran.
    for (const p of pts) if (p.type === 'branch' && !lines.has(p.line)) lines.set(p.line, 0);
    for (const p of pts) if (p.type === 'branch') lines.set(p.line, Math.max(lines.get(p.line) ?? 0, p.count));
    const branches = pts.filter((p) => p.type === 'branch').sort((a, b) => a.line - b.line || a.column - b.column);
    const blockIds = new Map<string, number>();
    let brHit = 0;
    for (const b of branches) {
      const key = `${b.line}:${b.hier}`;
      if (!blockIds.has(key)) blockIds.set(key, blockIds.size);
      const armIndex = branches.filter((o) => o.line === b.line && o.hier === b.hier).indexOf(b);
      out.push(`BRDA:${b.line},${blockIds.get(key)},${armIndex},${b.count > 0 ? b.count : '-'}`);
      if (b.count > 0) brHit += 1;
    }
    if (branches.length) out.push(`BRF:${branches.length}`, `BRH:${brHit}`);
    const sorted = [...lines.entries()].sort(([a], [b]) => a - b);
    for (const [ln, cnt] of sorted) out.push(`DA:${ln},${cnt}`);
    out.push(`LF:${sorted.length}`, `LH:${sorted.filter(([, c]) => c > 0).length}`, 'end_of_record');
  }
  return out.join('\n') + (out.length ? '\n' : '');
}
