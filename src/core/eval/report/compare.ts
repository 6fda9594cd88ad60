// compare.json / compare.md / compare.html: the writers of `chorus eval compare` (eval/compare.ts).
// The page is self-contained like report.html: inline CSS and SVG, escaped text, nothing fetched.
// Unlike report.html it carries one small inline script, for one purpose: sorting the per-task
// table when a column header is clicked (task id, each row's best coverage, rows passing, union
// pick; a second click reverses; aria-sort and an arrow show the order). The script is a constant
// (no report text goes into it) and it reads only the cells' data-v attributes, numbers written
// here, never the displayed text. Without JavaScript the table reads the same, in task-id order.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Comparison, Figures, TaskComparison } from '../compare.js';
import { escapeHtml } from './html.js';
import { pct } from './md.js';

const esc = (s: string): string => s.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');

export function renderComparisonJson(c: Comparison): string {
  return JSON.stringify(c, null, 2) + '\n';
}

const cellText = (c: TaskComparison['cells'][number]): string =>
  c.pass_at_1 === null ? 'error' : `${pct(c.best_coverage)}${c.passed ? ' ✓' : ''}`;

export function renderComparisonMarkdown(c: Comparison): string {
  const L: string[] = [];
  L.push(`# Comparison: ${esc(c.suite.name)} (${c.suite.format})`, '');
  for (const w of c.warnings) L.push(`> **Warning** (--force): ${esc(w)}`, '');
  for (const d of c.dropped)
    L.push(`> ${d.tasks.length} task(s) of ${esc(d.label)} left out (--intersect): ${esc(d.tasks.join(', '))}`, '');
  L.push('| row | Pass@1 | Pass@5 | Cov@1 | Cov@5 | tasks |', '|---|---:|---:|---:|---:|---:|');
  for (const r of c.rows)
    L.push(`| ${esc(r.label)} | ${pct(r.pass_at_1)} | ${pct(r.pass_at_5)} | ${pct(r.cov_at_1)} | ${pct(r.cov_at_5)} | ${r.tasks} |`);
  const u = c.union;
  L.push(`| **oracle union** | ${pct(u.pass_at_1)} | ${pct(u.pass_at_5)} | ${pct(u.cov_at_1)} | ${pct(u.cov_at_5)} | ${u.tasks} |`, '');
  L.push(
    'The oracle union takes each task from the row that did best on it (Pass@1 of the task, then Cov@1): an upper bound on combining the rows. ' +
      `Tasks taken from each row: ${Object.entries(u.picks)
        .map(([l, n]) => `${esc(l)} ${n}`)
        .join(', ')}.`,
    '',
  );
  L.push('## Complementarity (tasks solved: some sample passed)', '');
  L.push('| A | B | A only | B only | both | neither |', '|---|---|---:|---:|---:|---:|');
  for (const p of c.pairs) L.push(`| ${esc(p.a)} | ${esc(p.b)} | ${p.a_only} | ${p.b_only} | ${p.both} | ${p.neither} |`);
  L.push(
    '',
    `Tasks solved by exactly one row: ${c.solved_by_one.length}${c.solved_by_one.length ? ` (${c.solved_by_one.map((s) => `${esc(s.id)}: ${esc(s.row)}`).join(', ')})` : ''}.`,
    '',
  );
  L.push('## Per task (best coverage; ✓ passed)', '');
  L.push(
    `| task | ${c.rows.map((r) => esc(r.label)).join(' | ')} | passing | union picks |`,
    `|---|${c.rows.map(() => '---:').join('|')}|---|---|`,
  );
  for (const t of c.tasks)
    L.push(
      `| ${esc(t.id)} | ${t.cells.map(cellText).join(' | ')} | ${t.passing.length ? esc(t.passing.join(', ')) : '—'} | ${esc(t.best ?? '—')} |`,
    );
  return L.join('\n') + '\n';
}

const CSS = `body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
table{border-collapse:collapse;margin:8px 0 20px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}tr.union td{font-weight:bold;background:#f4f4ff}
.pass{background:#e6f6e6}.err{color:#a00}.warn{color:#a60}svg text{font-size:11px;fill:#333}
.axis{stroke:#333}.grid{stroke:#e4e4e4}.s-pass{fill:#4a7bd0}.s-cov{fill:#7bc07b}.uband{fill:#fbf1e8}
svg text.ulabel{font-weight:bold}
table.js th{cursor:pointer}table.js th button{font:inherit;font-weight:bold;border:0;background:none;padding:0;cursor:pointer;color:inherit}
table.js th::after{content:' \\2195';color:#aaa}table.js th[aria-sort=ascending]::after{content:' \\25B2';color:#333}
table.js th[aria-sort=descending]::after{content:' \\25BC';color:#333}`;

/** Pass@1 and Cov@1 of each row and of the union: a group of two bars each, with a legend. */
function barChart(c: Comparison): string {
  const groups: Array<{ label: string; f: Figures; union: boolean }> = [
    ...c.rows.map((r) => ({ label: r.label, f: r, union: false })),
    { label: 'oracle union', f: c.union, union: true },
  ];
  const series = [
    { name: 'Pass@1', cls: 's-pass', v: (f: Figures): number => f.pass_at_1 },
    { name: 'Cov@1', cls: 's-cov', v: (f: Figures): number => f.cov_at_1 },
  ];
  const W = Math.max(360, 140 * groups.length + 60);
  const H = 260;
  const l = 48;
  const t = 34;
  const b = 40;
  const y0 = H - b;
  const ph = y0 - t;
  const slot = (W - l - 16) / groups.length;
  const bw = (slot * 0.8) / series.length;
  const grid = [0, 0.25, 0.5, 0.75, 1]
    .map(
      (v) =>
        `<line x1="${l}" y1="${y0 - v * ph}" x2="${W - 16}" y2="${y0 - v * ph}" class="grid"/><text x="${l - 6}" y="${y0 - v * ph + 4}" text-anchor="end">${v * 100}%</text>`,
    )
    .join('');
  const legend = series
    .map(
      (s, i) =>
        `<g class="legend"><rect x="${l + i * 90}" y="6" width="12" height="12" class="${s.cls}"/><text x="${l + i * 90 + 16}" y="16">${escapeHtml(s.name)}</text></g>`,
    )
    .join('');
  const bars = groups
    .map((g, i) => {
      const x0 = l + slot * i + slot * 0.1;
      const cx = l + slot * i + slot / 2;
      const name = g.label.length > 20 ? `${g.label.slice(0, 19)}…` : g.label;
      const band = g.union ? `<rect x="${l + slot * i}" y="${t}" width="${slot}" height="${ph}" class="uband"/>` : '';
      const rects = series
        .map((s, k) => {
          const v = s.v(g.f);
          const h = Math.max(0, Math.min(1, v)) * ph;
          const x = x0 + k * bw;
          return (
            `<rect x="${x}" y="${y0 - h}" width="${bw * 0.92}" height="${h}" class="${s.cls}"><title>${escapeHtml(`${g.label}: ${s.name} ${pct(v)}`)}</title></rect>` +
            `<text x="${x + bw * 0.46}" y="${y0 - h - 4}" text-anchor="middle">${escapeHtml(pct(v))}</text>`
          );
        })
        .join('');
      return `<g>${band}${rects}<text x="${cx}" y="${y0 + 16}" text-anchor="middle"${g.union ? ' class="ulabel"' : ''}>${escapeHtml(name)}<title>${escapeHtml(g.label)}</title></text></g>`;
    })
    .join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" role="img" aria-label="Pass@1 and Cov@1 per row and for the oracle union">${legend}${grid}<line x1="${l}" y1="${y0}" x2="${W - 16}" y2="${y0}" class="axis"/>${bars}</svg>`;
}

// Sorting the per-task table: a constant, no report text in it. Each cell's key is its data-v
// (a number; empty: an error cell or no pick, always last); ties keep the task-id order (the
// first column's key). A header's first click sorts ascending, the next one reverses.
const SORT_SCRIPT = `(function () {
  var table = document.getElementById('tasks');
  if (!table) return;
  var heads = table.tHead.rows[0].cells;
  var body = table.tBodies[0];
  var key = function (tr, c) {
    var v = tr.cells[c].getAttribute('data-v');
    return v === null || v === '' ? null : Number(v);
  };
  var sortBy = function (c) {
    var dir = heads[c].getAttribute('aria-sort') === 'ascending' ? -1 : 1;
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a, c), y = key(b, c);
      if (x === null || y === null) {
        if (x !== y) return x === null ? 1 : -1;
      } else if (x !== y) return dir * (x - y);
      return key(a, 0) - key(b, 0);
    });
    rows.forEach(function (r) { body.appendChild(r); });
    for (var i = 0; i < heads.length; i++) heads[i].removeAttribute('aria-sort');
    heads[c].setAttribute('aria-sort', dir > 0 ? 'ascending' : 'descending');
  };
  Array.prototype.forEach.call(heads, function (th, c) {
    var button = document.createElement('button');
    button.type = 'button';
    while (th.firstChild) button.appendChild(th.firstChild);
    th.appendChild(button);
    // On the header, so that a click anywhere in it sorts (the button's own click bubbles up).
    th.addEventListener('click', function () { sortBy(c); });
  });
  table.classList.add('js');
  var hint = document.getElementById('sort-hint');
  if (hint) hint.hidden = false;
})();`;

/** The per-task table, in task-id order; every cell carries its numeric sort key in data-v. */
function taskTable(c: Comparison): string {
  const head =
    `<thead><tr><th aria-sort="ascending">task</th>${c.rows.map((r) => `<th>${escapeHtml(r.label)}</th>`).join('')}` +
    `<th>rows passing</th><th>union pick</th></tr></thead>`;
  const rowIndex = new Map(c.rows.map((r, k) => [r.label, k]));
  const body = c.tasks
    .map((t, i) => {
      const cells = t.cells
        .map(
          (x) =>
            `<td class="${x.pass_at_1 === null ? 'err' : x.passed ? 'pass' : ''}" data-v="${x.pass_at_1 === null ? '' : x.best_coverage}">${escapeHtml(cellText(x))}</td>`,
        )
        .join('');
      const pick = t.best === null ? '' : String(rowIndex.get(t.best) ?? '');
      return `<tr><td data-v="${i}">${escapeHtml(t.id)}</td>${cells}<td data-v="${t.passing.length}">${t.passing.length}</td><td data-v="${pick}">${escapeHtml(t.best ?? '—')}</td></tr>`;
    })
    .join('\n');
  return `<table id="tasks">${head}\n<tbody>\n${body}\n</tbody></table>`;
}

export function renderComparisonHtml(c: Comparison): string {
  const u = c.union;
  const row = (
    label: string,
    f: { pass_at_1: number; pass_at_5: number; cov_at_1: number; cov_at_5: number; tasks: number },
    cls = '',
  ): string =>
    `<tr${cls ? ` class="${cls}"` : ''}><td>${escapeHtml(label)}</td><td>${pct(f.pass_at_1)}</td><td>${pct(f.pass_at_5)}</td><td>${pct(f.cov_at_1)}</td><td>${pct(f.cov_at_5)}</td><td>${f.tasks}</td></tr>`;
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(`Comparison: ${c.suite.name}`)}</title>
<style>${CSS}</style></head><body>
<h1>${escapeHtml(`Comparison: ${c.suite.name} (${c.suite.format})`)}</h1>
${c.warnings.map((w) => `<p class="warn">${escapeHtml(`Warning (--force): ${w}`)}</p>`).join('\n')}
${c.dropped.map((d) => `<p class="warn">${escapeHtml(`${d.tasks.length} task(s) of ${d.label} left out (--intersect): ${d.tasks.join(', ')}`)}</p>`).join('\n')}
<table><tr><th>row</th><th>Pass@1</th><th>Pass@5</th><th>Cov@1</th><th>Cov@5</th><th>tasks</th></tr>
${c.rows.map((r) => row(r.label, r)).join('\n')}
${row('oracle union', u, 'union')}</table>
<p>${escapeHtml(
    `The oracle union takes each task from the row that did best on it (Pass@1 of the task, then Cov@1): an upper bound on combining the rows. Tasks taken from each row: ${Object.entries(
      u.picks,
    )
      .map(([l, n]) => `${l} ${n}`)
      .join(', ')}.`,
  )}</p>
<h2>Pass@1 and Cov@1</h2>
${barChart(c)}
<h2>Complementarity (tasks solved: some sample passed)</h2>
<table><tr><th>A</th><th>B</th><th>A only</th><th>B only</th><th>both</th><th>neither</th></tr>
${c.pairs.map((p) => `<tr><td>${escapeHtml(p.a)}</td><td>${escapeHtml(p.b)}</td><td>${p.a_only}</td><td>${p.b_only}</td><td>${p.both}</td><td>${p.neither}</td></tr>`).join('\n')}</table>
<p>${escapeHtml(`Tasks solved by exactly one row: ${c.solved_by_one.length}${c.solved_by_one.length ? ` (${c.solved_by_one.map((s) => `${s.id}: ${s.row}`).join(', ')})` : ''}.`)}</p>
<h2>Per task (best coverage; ✓ passed)</h2>
<p id="sort-hint" hidden>Click a column header to sort by it (a row's column: by best coverage, errors last); click again to reverse.</p>
${taskTable(c)}
<script>${SORT_SCRIPT}</script>
</body></html>
`;
}

/** Writes compare.json, compare.md and compare.html into dir; returns their paths. */
export function writeComparison(c: Comparison, dir: string): { json: string; md: string; html: string } {
  mkdirSync(dir, { recursive: true });
  const paths = { json: join(dir, 'compare.json'), md: join(dir, 'compare.md'), html: join(dir, 'compare.html') };
  writeFileSync(paths.json, renderComparisonJson(c));
  writeFileSync(paths.md, renderComparisonMarkdown(c));
  writeFileSync(paths.html, renderComparisonHtml(c));
  return paths;
}
