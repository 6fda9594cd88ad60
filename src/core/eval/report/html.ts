// report.html: one self-contained page (inline CSS and SVG, no scripts, fonts or images from
// anywhere): the aggregate figures, the per-round pass-rate chart, the coverage histogram and the
// per-task table.
import type { EvalReport } from './model.js';
import { pct } from './md.js';

export const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const W = 520;
const H = 260;
const PAD = { l: 48, r: 16, t: 16, b: 40 };

function axes(xLabel: string, yLabel: string): string {
  const x0 = PAD.l;
  const y0 = H - PAD.b;
  const ticks = [0, 0.25, 0.5, 0.75, 1]
    .map((v) => {
      const y = y0 - v * (H - PAD.t - PAD.b);
      return `<line x1="${x0}" y1="${y}" x2="${W - PAD.r}" y2="${y}" class="grid"/><text x="${x0 - 6}" y="${y + 4}" text-anchor="end">${v * 100}%</text>`;
    })
    .join('');
  return (
    ticks +
    `<line x1="${x0}" y1="${y0}" x2="${W - PAD.r}" y2="${y0}" class="axis"/><line x1="${x0}" y1="${PAD.t}" x2="${x0}" y2="${y0}" class="axis"/>` +
    `<text x="${(x0 + W - PAD.r) / 2}" y="${H - 6}" text-anchor="middle">${escapeHtml(xLabel)}</text>` +
    `<text x="12" y="${(PAD.t + y0) / 2}" text-anchor="middle" transform="rotate(-90 12 ${(PAD.t + y0) / 2})">${escapeHtml(yLabel)}</text>`
  );
}

/** Pass@1, Pass@5 and Cov@1 after each round. */
export function roundChart(r: EvalReport): string {
  const pts = r.per_round;
  const n = Math.max(1, pts.length - 1);
  const x = (i: number): number => PAD.l + (pts.length === 1 ? 0.5 : i / n) * (W - PAD.l - PAD.r);
  const y = (v: number): number => H - PAD.b - v * (H - PAD.t - PAD.b);
  const series: Array<{ key: 'pass_at_1' | 'pass_at_5' | 'cov_at_1'; label: string; cls: string }> = [
    { key: 'pass_at_1', label: 'Pass@1', cls: 's1' },
    { key: 'pass_at_5', label: 'Pass@5', cls: 's2' },
    { key: 'cov_at_1', label: 'Cov@1', cls: 's3' },
  ];
  const lines = series
    .map((s) => {
      const d = pts.map((p, i) => `${i ? 'L' : 'M'}${x(i).toFixed(1)},${y(p[s.key]).toFixed(1)}`).join(' ');
      const dots = pts
        .map(
          (p, i) =>
            `<circle cx="${x(i).toFixed(1)}" cy="${y(p[s.key]).toFixed(1)}" r="3" class="${s.cls}"><title>${s.label} after round ${p.round}: ${pct(p[s.key])}</title></circle>`,
        )
        .join('');
      return `<path d="${d}" class="line ${s.cls}"/>${dots}`;
    })
    .join('');
  const xt = pts.map((p, i) => `<text x="${x(i).toFixed(1)}" y="${H - PAD.b + 16}" text-anchor="middle">${p.round}</text>`).join('');
  const legend = series
    .map(
      (s, i) =>
        `<rect x="${PAD.l + 10 + i * 90}" y="${PAD.t + 2}" width="12" height="4" class="${s.cls} fillbg"/><text x="${PAD.l + 26 + i * 90}" y="${PAD.t + 8}">${s.label}</text>`,
    )
    .join('');
  return `<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="Pass rate per round">${axes('after refinement round', 'rate')}${xt}${lines}${legend}</svg>`;
}

/** Sample coverages in 10 bins. */
export function histogramChart(r: EvalReport): string {
  const h = r.aggregate.coverage_histogram;
  const max = Math.max(1, ...h);
  const bw = (W - PAD.l - PAD.r) / h.length;
  const bars = h
    .map((c, i) => {
      const bh = (c / max) * (H - PAD.t - PAD.b);
      const x = PAD.l + i * bw;
      const label = i === h.length - 1 ? `${i * 10}-100%` : `${i * 10}-${i * 10 + 10}%`;
      return (
        `<rect x="${(x + 2).toFixed(1)}" y="${(H - PAD.b - bh).toFixed(1)}" width="${(bw - 4).toFixed(1)}" height="${bh.toFixed(1)}" class="bar"><title>${label}: ${c} samples</title></rect>` +
        (c ? `<text x="${(x + bw / 2).toFixed(1)}" y="${(H - PAD.b - bh - 4).toFixed(1)}" text-anchor="middle">${c}</text>` : '') +
        `<text x="${(x + bw / 2).toFixed(1)}" y="${H - PAD.b + 16}" text-anchor="middle">${i * 10}</text>`
      );
    })
    .join('');
  const y0 = H - PAD.b;
  return (
    `<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="Coverage histogram">` +
    `<line x1="${PAD.l}" y1="${y0}" x2="${W - PAD.r}" y2="${y0}" class="axis"/><line x1="${PAD.l}" y1="${PAD.t}" x2="${PAD.l}" y2="${y0}" class="axis"/>` +
    `<text x="${PAD.l - 6}" y="${PAD.t + 4}" text-anchor="end">${max}</text><text x="${PAD.l - 6}" y="${y0}" text-anchor="end">0</text>` +
    `<text x="${(PAD.l + W - PAD.r) / 2}" y="${H - 6}" text-anchor="middle">sample coverage (%), bins of 10</text>${bars}</svg>`
  );
}

const CSS = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#1d2330;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 8px}
.meta{color:#5a6275;margin-bottom:16px}
.cards{display:flex;flex-wrap:wrap;gap:12px}
.card{border:1px solid #d8dce6;border-radius:6px;padding:8px 14px;min-width:92px}
.card b{display:block;font-size:20px}.card span{color:#5a6275;font-size:12px}
.charts{display:flex;flex-wrap:wrap;gap:24px}
svg text{font-size:11px;fill:#3b4252}
.grid{stroke:#eceff4}.axis{stroke:#4c566a}
.line{fill:none;stroke-width:2}
.s1{stroke:#2e6fdb;fill:#2e6fdb}.s2{stroke:#1f9d55;fill:#1f9d55}.s3{stroke:#d08700;fill:#d08700}
.bar{fill:#5e81ac}
table{border-collapse:collapse;font-size:13px}
th,td{border-bottom:1px solid #e5e9f0;padding:4px 8px;text-align:right;vertical-align:top}
th:first-child,td:first-child,td.note{text-align:left}
tr.err td{color:#b42318}
.pass{color:#1f9d55;font-weight:600}.fail{color:#b42318}
.warn{background:#fff4e5;border:1px solid #f0c36d;padding:6px 10px;border-radius:4px}
@media (prefers-color-scheme: dark){body{background:#1e1f24;color:#e5e9f0}svg text{fill:#d8dee9}.meta,.card span{color:#a3acbf}.grid{stroke:#2e3440}.axis{stroke:#a3acbf}.card{border-color:#3b4252}th,td{border-color:#3b4252}.warn{background:#3b2f1a}}
`;

export function renderHtml(r: EvalReport): string {
  const a = r.aggregate;
  const card = (label: string, v: string): string => `<div class="card"><b>${v}</b><span>${escapeHtml(label)}</span></div>`;
  const rows = r.tasks
    .map((t) => {
      if (t.error)
        return `<tr class="err"><td>${escapeHtml(t.id)}</td><td>${pct(t.coverage_target / 100, 0)}</td><td></td><td></td><td></td><td class="note">error: ${escapeHtml(t.error.slice(0, 400))}</td></tr>`;
      const covs = t.samples.map((s) => s.coverage);
      const passed = t.samples.filter((s) => s.passed).length;
      const cells = t.samples
        .map(
          (s) =>
            `<span class="${s.passed ? 'pass' : 'fail'}" title="sample ${s.sample}: ${escapeHtml(s.error ?? s.status)}">${s.sim_ok ? pct(s.coverage) : 'fail'}</span>`,
        )
        .join(' ');
      const notes = [...new Set(t.samples.filter((s) => !s.sim_ok).map((s) => s.error ?? s.status))].join(', ');
      return `<tr><td>${escapeHtml(t.id)}</td><td>${pct(t.coverage_target / 100, 0)}</td><td>${passed}/${t.samples.length}</td><td>${pct(covs.length ? Math.max(...covs) : null)}</td><td>${cells}</td><td class="note">${escapeHtml(notes)}</td></tr>`;
    })
    .join('\n');
  const roundsTable = r.per_round
    .map(
      (p) =>
        `<tr><td>${p.round}</td><td>${pct(p.pass_at_1)}</td><td>${pct(p.pass_at_5)}</td><td>${pct(p.cov_at_1)}</td><td>${pct(p.cov_at_5)}</td><td>${pct(p.sim_pass)}</td></tr>`,
    )
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(`Evaluation: ${r.suite.name} — ${r.row.label}`)}</title>
<style>${CSS}</style></head><body>
<h1>${escapeHtml(`${r.suite.name} — ${r.row.label}`)}</h1>
<div class="meta">${escapeHtml(`${r.suite.format} suite ${r.suite.path}; ${r.suite.tasks_selected} of ${r.suite.tasks_in_suite} tasks; ${r.config.settings.samples} samples × ${r.config.settings.rounds} refinement rounds${r.config.settings.history ? ` (${r.config.settings.history} history)` : ''}${r.config.settings.score === 'legal' ? '; legal scoring' : ''}; ${r.config.simulator.name} ${r.config.simulator.version}; ${r.config.workers} workers; ${r.finished_at}`)}</div>
${r.complete ? '' : '<p class="warn">Incomplete run (interrupted): the figures cover the samples that finished.</p>'}
<div class="cards">${card('Pass@1', pct(a.pass_at_1))}${card('Pass@5', pct(a.pass_at_5))}${card('Cov@1', pct(a.cov_at_1))}${card('Cov@5', pct(a.cov_at_5))}${card('sim pass', pct(a.sim_pass))}${card('tasks', String(a.tasks))}${card('errors', String(a.errors))}${card('tokens', String(a.tokens.total))}${card('wall', `${a.wall_s.toFixed(1)} s`)}${card('candidates/min', a.candidates_per_min.toFixed(1))}</div>
<h2>Pass rate per round</h2>
<div class="charts">${roundChart(r)}<table><thead><tr><th>after round</th><th>Pass@1</th><th>Pass@5</th><th>Cov@1</th><th>Cov@5</th><th>sim pass</th></tr></thead><tbody>${roundsTable}</tbody></table></div>
<h2>Coverage histogram</h2>
${histogramChart(r)}
<h2>Tasks</h2>
<table><thead><tr><th>task</th><th>target</th><th>passed</th><th>best</th><th>coverage per sample</th><th>note</th></tr></thead>
<tbody>
${rows}
</tbody></table>
</body></html>
`;
}
