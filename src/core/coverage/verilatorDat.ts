// Reader for Verilator's coverage.dat (SystemC::Coverage-3 format). Each point is one line:
//   C '<\x01key\x02value ...>' <count>
// with keys f (file), l (line), n (column), page (v_line|v_branch|v_toggle|v_user "/" module),
// o (comment: block kind, branch arm, signal bit, cover label), S (line span), h (hierarchy).
// Across Verilator 5.x: 5.006 writes one toggle point per bit (`count[3]`, counting every change);
// current releases write two (`count[3]:0->1`, `count[3]:1->0`) and add expression points
// (page v_expr) and branch points for the arms of `?:` (o=cond_then/cond_else), which become
// the unscored kinds `expr` and `cond`. The toggle pair is folded back into one point whose count is the sum (the number of
// changes, as 5.006 counts), so the scored figure c means the same on every version.
import type { CoveragePoint, PointType } from './model.js';

const POINT = /^C '(.*)' (\d+)\s*$/;

function pointType(page: string): PointType | null {
  if (page.startsWith('v_line')) return 'line';
  if (page.startsWith('v_branch')) return 'branch';
  if (page.startsWith('v_toggle')) return 'toggle';
  if (page.startsWith('v_user')) return 'user';
  if (page.startsWith('v_expr')) return 'expr';
  return null;
}

function parseSpan(span: string | undefined): [number, number] | undefined {
  if (!span) return undefined;
  const nums = span.split(/[-,]/).map((s) => Number.parseInt(s, 10)).filter((n) => Number.isFinite(n));
  return nums.length ? [Math.min(...nums), Math.max(...nums)] : undefined;
}

/** One point from its line's fields (`page` among them), its hierarchy, its label and its count. */
function pointOf(type: PointType, fields: Map<string, string>, hier: string, label: string, count: string): CoveragePoint {
  const page = fields.get('page') ?? '';
  return {
    type,
    file: fields.get('f') ?? '',
    line: Number.parseInt(fields.get('l') ?? '0', 10),
    column: Number.parseInt(fields.get('n') ?? '0', 10),
    span: parseSpan(fields.get('S')),
    module: page.includes('/') ? page.slice(page.indexOf('/') + 1) : '',
    hier,
    label,
    count: Number.parseInt(count, 10),
  };
}

const TOGGLE_DIRECTION = /:(?:0->1|1->0)$/;

export function parseVerilatorCoverage(text: string): CoveragePoint[] {
  const points: CoveragePoint[] = [];
  const toggles = new Map<string, CoveragePoint>();
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
    const kind = pointType(page);
    if (!kind) continue;
    const type: PointType = kind === 'branch' && /^cond_(?:then|else)$/.test(fields.get('o') ?? '') ? 'cond' : kind;
    const hier = (fields.get('h') ?? '').replace(/^\./, '');
    const label = fields.get('o') ?? '';
    if (type === 'toggle' && TOGGLE_DIRECTION.test(label)) {
      const bit = label.replace(TOGGLE_DIRECTION, '');
      const key = `${hier}\0${fields.get('f') ?? ''}\0${bit}`;
      const seen = toggles.get(key);
      if (seen) {
        seen.count += Number.parseInt(m[2], 10);
        continue;
      }
      const p = pointOf(type, fields, hier, bit, m[2]);
      toggles.set(key, p);
      points.push(p);
      continue;
    }
    points.push(pointOf(type, fields, hier, label, m[2]));
  }
  return points;
}
