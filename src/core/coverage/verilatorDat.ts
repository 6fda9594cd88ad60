// Reader for Verilator's coverage.dat (SystemC::Coverage-3 format). Each point is one line:
//   C '<\x01key\x02value ...>' <count>
// with keys f (file), l (line), n (column), page (v_line|v_branch|v_toggle|v_user "/" module),
// o (comment: block kind, branch arm, signal bit, cover label), S (line span), h (hierarchy).
import type { CoveragePoint, PointType } from './model.js';

const POINT = /^C '(.*)' (\d+)\s*$/;

function pointType(page: string): PointType | null {
  if (page.startsWith('v_line')) return 'line';
  if (page.startsWith('v_branch')) return 'branch';
  if (page.startsWith('v_toggle')) return 'toggle';
  if (page.startsWith('v_user')) return 'user';
  return null;
}

function parseSpan(span: string | undefined): [number, number] | undefined {
  if (!span) return undefined;
  const nums = span.split(/[-,]/).map((s) => Number.parseInt(s, 10)).filter((n) => Number.isFinite(n));
  return nums.length ? [Math.min(...nums), Math.max(...nums)] : undefined;
}

export function parseVerilatorCoverage(text: string): CoveragePoint[] {
  const points: CoveragePoint[] = [];
  for (const raw of text.split('\n')) {
    const m = POINT.exec(raw);
    if (!m) continue;
    const fields = new Map<string, string>();
    for (const kv of m[1].split('\x01')) {
      if (!kv) continue;
      const sep = kv.indexOf('\x02');
      if (sep < 0) continue;
      fields.set(kv.slice(0, sep), kv.slice(sep + 1));
    }
    const page = fields.get('page') ?? '';
    const type = pointType(page);
    if (!type) continue;
    const hier = (fields.get('h') ?? '').replace(/^\./, '');
    points.push({
      type,
      file: fields.get('f') ?? '',
      line: Number.parseInt(fields.get('l') ?? '0', 10),
      column: Number.parseInt(fields.get('n') ?? '0', 10),
      span: parseSpan(fields.get('S')),
      module: page.includes('/') ? page.slice(page.indexOf('/') + 1) : '',
      hier,
      label: fields.get('o') ?? '',
      count: Number.parseInt(m[2], 10),
    });
  }
  return points;
}
