// The annotated coverage page of a run folder (coverage.html): the design's sources line by line
// with the hits of the line and branch points shown there, the toggles of the signals declared
// there, and every uncovered point's reason; the figures on top, the testbench at the bottom. One
// self-contained page: inline CSS, no script, nothing fetched. Every text on it (the sources, the
// testbench, labels, reasons, file names) is escaped: the testbench is untrusted and the design's
// text is data, never markup.
import { displayLine, isCovered, type CoveragePoint, type UncoveredPoint } from './model.js';

export interface CoveragePageInput {
  title: string;
  /** Summary lines shown on top (plain text). */
  summary: string[];
  /** The design's sources the host read itself: file name as the points name it, and its text. */
  sources: Array<{ file: string; text: string }>;
  /** The scored point set (SimResult.points). */
  points: CoveragePoint[];
  /** The record's uncovered points with their reasons. */
  uncovered: UncoveredPoint[];
  testbench?: { name: string; text: string };
}

/** Text as HTML: every character that could start markup or end an attribute is an entity; control
 * characters (other than tab) become U+FFFD. */
export function escapeHtml(s: string): string {
  return s
    .replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, '\ufffd')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const CSS = `
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;background:#fff}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:2em}
pre.sum{background:#f6f6f6;padding:.6em;border:1px solid #ddd}
table.src{border-collapse:collapse;font-family:ui-monospace,monospace;font-size:12px;width:100%}
table.src td{padding:0 .5em;vertical-align:top;white-space:pre}
td.ln{color:#888;text-align:right;user-select:none}
td.hits{text-align:right;color:#555;min-width:4em}
td.tog{color:#555;min-width:6em}
td.note{white-space:normal;color:#8a4b00;font-family:system-ui,sans-serif;font-size:11px}
tr.hit td.code{background:#e6ffed}
tr.miss td.code{background:#ffeef0}
tr.excl td.code{background:#eef2ff}
.legend span{display:inline-block;padding:0 .5em;margin-right:.5em;border:1px solid #ccc}
`;

interface LineInfo {
  hits: number | null;
  missed: boolean;
  togCovered: number;
  togTotal: number;
  notes: string[];
  excluded: boolean;
  /** An uncovered point here some stimulus could reach. */
  notHit: boolean;
}

function lineInfo(map: Map<number, LineInfo>, line: number): LineInfo {
  let l = map.get(line);
  if (!l) {
    l = { hits: null, missed: false, togCovered: 0, togTotal: 0, notes: [], excluded: false, notHit: false };
    map.set(line, l);
  }
  return l;
}

function reasonText(u: UncoveredPoint): string {
  const what = u.type === 'toggle' ? `toggle ${u.label}` : `${u.type} ${u.label}`;
  const why = u.reason ? `${u.reason.kind}: ${u.reason.detail}${u.reason.enable ? ` (enable: ${u.reason.enable})` : ''}` : 'not hit';
  return `${what}${u.hier ? ` [${u.hier}]` : ''}: ${why}`;
}

/** The page, as one HTML string. */
export function coverageHtml(input: CoveragePageInput): string {
  const e = escapeHtml;
  const out: string[] = [];
  out.push(
    '<!DOCTYPE html>',
    '<html lang="en"><head><meta charset="utf-8">',
    // No script and nothing from elsewhere, even if some text slipped through unescaped.
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`,
    `<title>${e(input.title)}</title><style>${CSS}</style></head><body>`,
    `<h1>${e(input.title)}</h1>`,
    `<pre class="sum">${e(input.summary.join('\n'))}</pre>`,
    '<p class="legend"><span style="background:#e6ffed">covered</span><span style="background:#ffeef0">not covered</span>' +
      '<span style="background:#eef2ff">cannot be covered (reason given)</span> hits: line/branch hits at the line; toggles: covered/total bits declared there</p>',
  );
  for (const src of input.sources) {
    const lines = new Map<number, LineInfo>();
    for (const p of input.points) {
      if (p.file !== src.file || p.waived) continue;
      const l = lineInfo(lines, displayLine(p));
      if (p.type === 'toggle') {
        l.togTotal += 1;
        if (isCovered(p)) l.togCovered += 1;
      } else if (p.type === 'line' || p.type === 'branch' || p.type === 'user') {
        l.hits = (l.hits ?? 0) + p.count;
        if (!isCovered(p)) l.missed = true;
      }
    }
    for (const u of input.uncovered) {
      if (u.file !== src.file) continue;
      const l = lineInfo(lines, u.type !== 'toggle' && u.span ? u.span[0] : u.line);
      l.notes.push(reasonText(u));
      if (u.reason && u.reason.kind !== 'not-hit') l.excluded = true;
      else l.notHit = true;
    }
    out.push(`<h2>${e(src.file)}</h2>`, '<table class="src"><tbody>');
    src.text.split('\n').forEach((text, i) => {
      const n = i + 1;
      const l = lines.get(n);
      // A line whose only misses are proven out of reach is shown as such, not as a miss.
      const cls = !l
        ? ''
        : l.notHit || (l.missed && !l.excluded)
          ? 'miss'
          : l.excluded
            ? 'excl'
            : l.hits !== null || l.togTotal
              ? 'hit'
              : '';
      const hits = l?.hits !== null && l?.hits !== undefined ? String(l.hits) : '';
      const tog = l?.togTotal ? `${l.togCovered}/${l.togTotal}` : '';
      const notes = l?.notes.length ? l.notes.slice(0, 20).map(e).join('<br>') + (l.notes.length > 20 ? `<br>... ${l.notes.length - 20} more` : '') : '';
      out.push(
        `<tr${cls ? ` class="${cls}"` : ''} id="${e(`L${n}`)}"><td class="ln">${n}</td><td class="hits">${hits}</td><td class="tog">${tog}</td>` +
          `<td class="code">${e(text)}</td><td class="note">${notes}</td></tr>`,
      );
    });
    out.push('</tbody></table>');
  }
  if (input.testbench) out.push(`<h2>testbench ${e(input.testbench.name)}</h2>`, `<pre>${e(input.testbench.text)}</pre>`);
  out.push('</body></html>', '');
  return out.join('\n');
}
