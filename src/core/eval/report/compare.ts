// compare.json / compare.md / compare.html: the writers of `chorus eval compare` (eval/compare.ts).
// The page is self-contained like report.html: inline CSS and SVG, escaped text, no scripts. With
// no script the per-task table cannot sort on a click, so it is shown twice instead: by task id,
// then by the number of rows that pass the task (fewest first: the hard and the complementary
// tasks on top).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Comparison, TaskComparison } from '../compare.js';
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
.bar{fill:#4a7bd0}.ubar{fill:#d07b4a}.axis{stroke:#333}.grid{stroke:#e4e4e4}`;

/** Pass@1 of each row and of the union, as bars. */
function barChart(c: Comparison): string {
  const bars = [
    ...c.rows.map((r) => ({ label: r.label, v: r.pass_at_1, cls: 'bar' })),
    { label: 'oracle union', v: c.union.pass_at_1, cls: 'ubar' },
  ];
  const W = Math.max(320, 90 * bars.length + 60);
  const H = 240;
  const l = 48;
  const t = 16;
  const b = 40;
  const y0 = H - b;
  const ph = y0 - t;
  const slot = (W - l - 16) / bars.length;
  const grid = [0, 0.25, 0.5, 0.75, 1]
    .map(
      (v) =>
        `<line x1="${l}" y1="${y0 - v * ph}" x2="${W - 16}" y2="${y0 - v * ph}" class="grid"/><text x="${l - 6}" y="${y0 - v * ph + 4}" text-anchor="end">${v * 100}%</text>`,
    )
    .join('');
  const rects = bars
    .map((x, i) => {
      const h = Math.max(0, Math.min(1, x.v)) * ph;
      const cx = l + slot * i + slot / 2;
      const name = x.label.length > 14 ? `${x.label.slice(0, 13)}…` : x.label;
      return (
        `<rect x="${cx - slot * 0.35}" y="${y0 - h}" width="${slot * 0.7}" height="${h}" class="${x.cls}"><title>${escapeHtml(`${x.label}: ${pct(x.v)}`)}</title></rect>` +
        `<text x="${cx}" y="${y0 - h - 4}" text-anchor="middle">${escapeHtml(pct(x.v))}</text>` +
        `<text x="${cx}" y="${y0 + 16}" text-anchor="middle">${escapeHtml(name)}</text>`
      );
    })
    .join('');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" role="img" aria-label="Pass@1 per row">${grid}<line x1="${l}" y1="${y0}" x2="${W - 16}" y2="${y0}" class="axis"/>${rects}</svg>`;
}

function taskTable(c: Comparison, tasks: TaskComparison[]): string {
  const head = `<tr><th>task</th>${c.rows.map((r) => `<th>${escapeHtml(r.label)}</th>`).join('')}<th>rows passing</th><th>union picks</th></tr>`;
  const body = tasks
    .map(
      (t) =>
        `<tr><td>${escapeHtml(t.id)}</td>${t.cells
          .map((x) => `<td class="${x.pass_at_1 === null ? 'err' : x.passed ? 'pass' : ''}">${escapeHtml(cellText(x))}</td>`)
          .join('')}<td>${t.passing.length}</td><td>${escapeHtml(t.best ?? '—')}</td></tr>`,
    )
    .join('\n');
  return `<table>${head}\n${body}</table>`;
}

export function renderComparisonHtml(c: Comparison): string {
  const u = c.union;
  const row = (
    label: string,
    f: { pass_at_1: number; pass_at_5: number; cov_at_1: number; cov_at_5: number; tasks: number },
    cls = '',
  ): string =>
    `<tr${cls ? ` class="${cls}"` : ''}><td>${escapeHtml(label)}</td><td>${pct(f.pass_at_1)}</td><td>${pct(f.pass_at_5)}</td><td>${pct(f.cov_at_1)}</td><td>${pct(f.cov_at_5)}</td><td>${f.tasks}</td></tr>`;
  const byPassing = [...c.tasks].sort((a, b) => a.passing.length - b.passing.length || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
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
<h2>Pass@1</h2>
${barChart(c)}
<h2>Complementarity (tasks solved: some sample passed)</h2>
<table><tr><th>A</th><th>B</th><th>A only</th><th>B only</th><th>both</th><th>neither</th></tr>
${c.pairs.map((p) => `<tr><td>${escapeHtml(p.a)}</td><td>${escapeHtml(p.b)}</td><td>${p.a_only}</td><td>${p.b_only}</td><td>${p.both}</td><td>${p.neither}</td></tr>`).join('\n')}</table>
<p>${escapeHtml(`Tasks solved by exactly one row: ${c.solved_by_one.length}${c.solved_by_one.length ? ` (${c.solved_by_one.map((s) => `${s.id}: ${s.row}`).join(', ')})` : ''}.`)}</p>
<h2>Per task, by task id (best coverage; ✓ passed)</h2>
${taskTable(c, c.tasks)}
<h2>Per task, by rows passing (fewest first)</h2>
${taskTable(c, byPassing)}
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
