// The coverage report of a run folder (coverage.html), one self-contained page an engineer opens
// first: the verdict (a run whose stimulus broke the design's assertions is a failure, whatever
// its figure), the scored figure beside the reachable ceiling, a table per file and per instance
// (block = line + branch points, toggle, line, branch), the uncovered points grouped by reason
// (with the -G that enables a parameter-dead region), the design's assertions that fired, the
// rounds' history, then every source file annotated line by line (its own anchor, each line too)
// and the testbench. Inline CSS, no script, nothing fetched; long text wraps instead of running off
// the page. Every text on it (the sources, the testbench, labels, reasons, file names) is escaped:
// the testbench is untrusted and the design's text is data, never markup.
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
  /** The run's verdict: a failed one (the design's assertions fired, the run failed) is shown as such. */
  verdict?: { passed: boolean; text: string };
  /** The scored figure and the reachable ceiling, fractions. */
  figures?: { scored: number | null; ceiling: number | null };
  /** The design's assertions that fired (SimResult.dutAssertions). */
  assertions?: Array<{ file: string; line: number; kind: string; message: string; count: number; firstTime: string; lastTime: string }>;
  /** Every round: its coverage and why it ended as it did. */
  rounds?: Array<{ label: string; status: string; coverage: number | null; note: string }>;
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
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;background:#fff;overflow-wrap:anywhere}
h1{font-size:1.3em}h2{font-size:1.1em;margin-top:2em}h3{font-size:1em}
nav a{margin-right:1em}
pre{white-space:pre-wrap;overflow-wrap:anywhere}
pre.sum{background:#f6f6f6;padding:.6em;border:1px solid #ddd}
.verdict{padding:.5em .8em;border-radius:4px;font-weight:600}
.verdict.pass{background:#e6ffed;border:1px solid #9ad9a8}
.verdict.fail{background:#ffeef0;border:1px solid #f0a0a8}
table.sum{border-collapse:collapse;font-size:13px;margin:.5em 0}
table.sum th,table.sum td{border:1px solid #ddd;padding:.2em .6em;text-align:right}
table.sum th:first-child,table.sum td:first-child{text-align:left}
table.src{border-collapse:collapse;font-family:ui-monospace,monospace;font-size:12px;width:100%;table-layout:fixed}
table.src td{padding:0 .5em;vertical-align:top}
table.src col.ln{width:4em}table.src col.hits{width:4.5em}table.src col.tog{width:5em}table.src col.note{width:35%}
td.ln{color:#888;text-align:right;user-select:none}
td.hits{text-align:right;color:#555}
td.tog{color:#555}
td.code{white-space:pre-wrap;overflow-wrap:anywhere}
td.note{white-space:normal;color:#8a4b00;font-family:system-ui,sans-serif;font-size:11px}
tr.hit td.code{background:#e6ffed}
tr.miss td.code{background:#ffeef0}
tr.excl td.code{background:#eef2ff}
tr.wit td.code{background:#fff4d6}
tr.bnd td.code{background:#f1f1f1}
ul.why li{margin:.1em 0}
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
  /** The formal engine's mark on an uncovered point here: reached by a witness, or not reached
   * by its bounded search (neither is a proof). */
  formal?: 'witness' | 'bounded';
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

interface Tally {
  line: [number, number];
  branch: [number, number];
  toggle: [number, number];
}

function tallyOf(points: CoveragePoint[]): Tally {
  const t: Tally = { line: [0, 0], branch: [0, 0], toggle: [0, 0] };
  for (const p of points) {
    if (p.waived) continue;
    const k = p.type === 'toggle' ? 'toggle' : p.type === 'branch' ? 'branch' : p.type === 'line' ? 'line' : null;
    if (!k) continue;
    t[k][1] += 1;
    if (isCovered(p)) t[k][0] += 1;
  }
  return t;
}

const pctOf = ([c, n]: [number, number]): string => (n ? `${((100 * c) / n).toFixed(1)}%` : 'n/a');
const frac = (x: number | null | undefined): string => (x === null || x === undefined ? '-' : `${(x * 100).toFixed(2)}%`);

/** One row of the per-file or per-instance table: block (line + branch), toggle, line, branch. */
function tallyRow(name: string, t: Tally): string {
  const block: [number, number] = [t.line[0] + t.branch[0], t.line[1] + t.branch[1]];
  const cell = (x: [number, number]): string => `<td>${pctOf(x)} <small>(${x[0]}/${x[1]})</small></td>`;
  return `<tr><td>${name}</td>${cell(block)}${cell(t.toggle)}${cell(t.line)}${cell(t.branch)}</tr>`;
}

const REASON_TITLE: Record<string, string> = {
  'not-hit': 'Not reached by the stimulus',
  'dead-param': 'Dead under the chosen parameters (no instance runs it after elaboration)',
  'unreachable-formal': 'Proven unreachable by the formal engine (how, and what it assumes, per point)',
  witness: 'Reachable: the formal engine found the inputs that reach it, not yet covered',
  bounded: 'Not reached in N cycles by a bounded search (not proven: it stays in the ceiling)',
};

/** Where the page links: each source file's anchor (`f1`), and one for each of its lines (`f1-L12`). */
interface Anchors {
  /** The files with a section on the page: file name -> its number there. */
  fileIndex: Map<string, number>;
  /** The anchor of a file (or of one of its lines), null for a file the page does not show. */
  anchor: (file: string, line?: number) => string | null;
  /** `name.sv:12`, escaped, linked to its line when the file is on the page. */
  link: (file: string, line: number) => string;
}

function anchorsOf(sources: CoveragePageInput['sources']): Anchors {
  const fileIndex = new Map(sources.map((src, i) => [src.file, i + 1]));
  const anchor = (file: string, line?: number): string | null => {
    const i = fileIndex.get(file);
    return i === undefined ? null : line === undefined ? `f${i}` : `f${i}-L${line}`;
  };
  const link = (file: string, line: number): string => {
    const a = anchor(file, line);
    const text = `${escapeHtml(file.slice(file.lastIndexOf('/') + 1))}:${line}`;
    return a ? `<a href="#${a}">${text}</a>` : text;
  };
  return { fileIndex, anchor, link };
}

/** The head of the page, the verdict and figures, the summary and the navigation. */
function pageTop(input: CoveragePageInput): string[] {
  const e = escapeHtml;
  const out = [
    '<!DOCTYPE html>',
    '<html lang="en"><head><meta charset="utf-8">',
    // No script and nothing from elsewhere, even if some text slipped through unescaped.
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    `<title>${e(input.title)}</title><style>${CSS}</style></head><body>`,
    `<h1>${e(input.title)}</h1>`,
  ];
  if (input.verdict)
    out.push(`<p class="verdict ${input.verdict.passed ? 'pass' : 'fail'}" id="verdict">${e(input.verdict.text)}</p>`);
  if (input.figures)
    out.push(`<p id="figures">scored ${frac(input.figures.scored)}; reachable ceiling ${frac(input.figures.ceiling)}</p>`);
  out.push(`<pre class="sum">${e(input.summary.join('\n'))}</pre>`);
  out.push(
    '<nav><a href="#files">files</a><a href="#instances">instances</a><a href="#uncovered">uncovered points</a>' +
      (input.assertions ? '<a href="#assertions">assertions</a>' : '') +
      (input.rounds ? '<a href="#rounds">rounds</a>' : '') +
      '<a href="#sources">sources</a>' +
      (input.testbench ? '<a href="#testbench">testbench</a>' : '') +
      '</nav>',
  );
  return out;
}

/** The tables per file and per instance, from the scored point set. */
function tallyTables(input: CoveragePageInput, anchors: Anchors): string[] {
  const e = escapeHtml;
  const out: string[] = [];
  const head = '<tr><th>name</th><th>block</th><th>toggle</th><th>line</th><th>branch</th></tr>';
  out.push('<h2 id="files">Files</h2>', `<table class="sum" id="file-table"><thead>${head}</thead><tbody>`);
  for (const src of input.sources) {
    const a = anchors.anchor(src.file)!;
    out.push(tallyRow(`<a href="#${a}">${e(src.file)}</a>`, tallyOf(input.points.filter((p) => p.file === src.file))));
  }
  out.push(tallyRow('<b>all</b>', tallyOf(input.points.filter((p) => anchors.fileIndex.has(p.file)))), '</tbody></table>');
  const hiers = [...new Set(input.points.map((p) => p.hier))].sort();
  out.push('<h2 id="instances">Instances</h2>', `<table class="sum" id="instance-table"><thead>${head}</thead><tbody>`);
  for (const h of hiers) out.push(tallyRow(e(h), tallyOf(input.points.filter((p) => p.hier === h))));
  out.push('</tbody></table>');
  return out;
}

/** The uncovered points grouped by reason, 500 at most per reason. */
function uncoveredSection(input: CoveragePageInput, anchors: Anchors): string[] {
  const e = escapeHtml;
  const out = ['<h2 id="uncovered">Uncovered points by reason</h2>'];
  const byKind = new Map<string, UncoveredPoint[]>();
  for (const u of input.uncovered) {
    const k = u.reason?.kind ?? 'not-hit';
    byKind.set(k, [...(byKind.get(k) ?? []), u]);
  }
  if (!byKind.size) out.push('<p>none</p>');
  for (const [kind, list] of byKind) {
    out.push(`<h3>${e(REASON_TITLE[kind] ?? kind)}: ${list.length}</h3>`, '<ul class="why">');
    for (const u of list.slice(0, 500)) {
      const where = anchors.link(u.file, u.type !== 'toggle' && u.span ? u.span[0] : u.line);
      const what = u.type === 'toggle' ? `toggle ${u.label}` : `${u.type} ${u.label}`;
      const enable = u.reason?.enable ? ` <b>enable: ${e(u.reason.enable)}</b>` : '';
      out.push(`<li>${where} ${e(what)} [${e(u.hier)}]${u.reason ? `: ${e(u.reason.detail)}` : ''}${enable}</li>`);
    }
    if (list.length > 500) out.push(`<li>... ${list.length - 500} more</li>`);
    out.push('</ul>');
  }
  return out;
}

/** The design's own assertions that fired (nothing when the input gives none). */
function assertionsSection(input: CoveragePageInput, anchors: Anchors): string[] {
  if (!input.assertions) return [];
  const e = escapeHtml;
  const fired = input.assertions;
  const n = fired.reduce((a, x) => a + x.count, 0);
  const out = [
    '<h2 id="assertions">The design\'s assertions</h2>',
    fired.length
      ? `<p class="verdict fail">fired ${n} time${n === 1 ? '' : 's'} at ${fired.length} site${fired.length === 1 ? '' : 's'}: the stimulus broke the design's own checks, so the run failed</p>`
      : '<p class="verdict pass">none fired</p>',
  ];
  if (fired.length) {
    out.push('<table class="sum"><thead><tr><th>site</th><th>kind</th><th>count</th><th>first</th><th>last</th><th>message</th></tr></thead><tbody>');
    for (const a of fired)
      out.push(
        `<tr><td>${anchors.link(a.file, a.line)}</td><td>${e(a.kind)}</td><td>${a.count}</td><td>${e(a.firstTime)}</td><td>${e(a.lastTime)}</td><td style="text-align:left">${e(a.message)}</td></tr>`,
      );
    out.push('</tbody></table>');
  }
  return out;
}

/** The rounds' history (nothing when the input gives none). */
function roundsSection(input: CoveragePageInput): string[] {
  if (!input.rounds) return [];
  const e = escapeHtml;
  const out = [
    '<h2 id="rounds">Rounds</h2>',
    '<table class="sum"><thead><tr><th>round</th><th>status</th><th>coverage</th><th>why it ended so</th></tr></thead><tbody>',
  ];
  for (const r of input.rounds)
    out.push(`<tr><td>${e(r.label)}</td><td>${e(r.status)}</td><td>${frac(r.coverage)}</td><td style="text-align:left">${e(r.note)}</td></tr>`);
  out.push('</tbody></table>');
  return out;
}

/** What the annotation of one source file shows per line: hits, toggles, and why points are uncovered. */
function sourceLineInfo(input: CoveragePageInput, file: string): Map<number, LineInfo> {
  const lines = new Map<number, LineInfo>();
  for (const p of input.points) {
    if (p.file !== file || p.waived) continue;
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
    if (u.file !== file) continue;
    const l = lineInfo(lines, u.type !== 'toggle' && u.span ? u.span[0] : u.line);
    l.notes.push(reasonText(u));
    const kind = u.reason?.kind ?? 'not-hit';
    if (kind === 'not-hit') l.notHit = true;
    else if (kind === 'witness') l.formal = 'witness';
    else if (kind === 'bounded') l.formal = l.formal ?? 'bounded';
    else l.excluded = true;
  }
  return lines;
}

/** One annotated source line: its own anchor, hits, toggles, the code and the notes. */
function sourceRow(a: string, n: number, text: string, l: LineInfo | undefined): string {
  const e = escapeHtml;
  // A line whose only misses are proven out of reach is shown as such, not as a miss.
  // Three marks from the formal engine: proven (excl), witness found (wit), bounded (bnd).
  const cls = !l
    ? ''
    : l.notHit
      ? 'miss'
      : l.formal === 'witness'
        ? 'wit'
        : l.formal === 'bounded'
          ? 'bnd'
          : l.missed && !l.excluded
            ? 'miss'
            : l.excluded
        ? 'excl'
        : l.hits !== null || l.togTotal
          ? 'hit'
          : '';
  const hits = l?.hits !== null && l?.hits !== undefined ? String(l.hits) : '';
  const tog = l?.togTotal ? `${l.togCovered}/${l.togTotal}` : '';
  const notes = l?.notes.length ? l.notes.slice(0, 20).map(e).join('<br>') + (l.notes.length > 20 ? `<br>... ${l.notes.length - 20} more` : '') : '';
  return (
    `<tr${cls ? ` class="${cls}"` : ''} id="${a}-L${n}"><td class="ln">${n}</td><td class="hits">${hits}</td><td class="tog">${tog}</td>` +
    `<td class="code">${e(text)}</td><td class="note">${notes}</td></tr>`
  );
}

/** Every source file annotated line by line. */
function sourcesSection(input: CoveragePageInput, anchors: Anchors): string[] {
  const e = escapeHtml;
  const out = [
    '<h2 id="sources">Sources</h2>',
    '<p class="legend"><span style="background:#e6ffed">covered</span><span style="background:#ffeef0">not covered</span>' +
      '<span style="background:#eef2ff">cannot be covered (reason given)</span><span style="background:#fff4d6">reachable: witness found, not yet covered</span>' +
      '<span style="background:#f1f1f1">not reached in N cycles (bounded search, not proven)</span> hits: line/branch hits at the line; toggles: covered/total bits declared there</p>',
  ];
  for (const src of input.sources) {
    const lines = sourceLineInfo(input, src.file);
    const a = anchors.anchor(src.file)!;
    out.push(
      `<h3 id="${a}">${e(src.file)}</h3>`,
      '<table class="src"><colgroup><col class="ln"><col class="hits"><col class="tog"><col class="code"><col class="note"></colgroup><tbody>',
    );
    src.text.split('\n').forEach((text, i) => out.push(sourceRow(a, i + 1, text, lines.get(i + 1))));
    out.push('</tbody></table>');
  }
  return out;
}

/** The page, as one HTML string. */
export function coverageHtml(input: CoveragePageInput): string {
  const e = escapeHtml;
  const anchors = anchorsOf(input.sources);
  const out = [
    ...pageTop(input),
    ...tallyTables(input, anchors),
    ...uncoveredSection(input, anchors),
    ...assertionsSection(input, anchors),
    ...roundsSection(input),
    ...sourcesSection(input, anchors),
  ];
  if (input.testbench) out.push(`<h2 id="testbench">testbench ${e(input.testbench.name)}</h2>`, `<pre>${e(input.testbench.text)}</pre>`);
  out.push('</body></html>', '');
  return out.join('\n');
}
