// report.md: the aggregate table, the per-round curve and the per-task table.
import type { EvalReport } from './model.js';
import { pct as formatPct } from '../../util/format.js';

/** Reports show one decimal. */
export const pct = (x: number | null | undefined, digits = 1): string => formatPct(x, digits);
const esc = (s: string): string => s.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');

export function renderMarkdown(r: EvalReport): string {
  const a = r.aggregate;
  const L: string[] = [];
  L.push(`# Evaluation: ${esc(r.suite.name)} — ${esc(r.row.label)}`, '');
  L.push(
    `Suite \`${esc(r.suite.path)}\` (${r.suite.format}, ${r.suite.tasks_selected} of ${r.suite.tasks_in_suite} tasks${r.suite.skipped.length ? `, ${r.suite.skipped.length} records of other categories skipped` : ''}); ` +
      `${r.config.settings.samples} sample${r.config.settings.samples === 1 ? '' : 's'} per task, ${r.config.settings.rounds} refinement round${r.config.settings.rounds === 1 ? '' : 's'}` +
      `${r.config.settings.history ? `, ${r.config.settings.history} history` : ''}${r.config.settings.score === 'legal' ? ', legal scoring' : ''}; ${r.config.simulator.name} ${r.config.simulator.version}; ${r.config.workers} worker${r.config.workers === 1 ? '' : 's'}.` +
      (r.complete ? '' : ' **Incomplete run** (interrupted): metrics cover the samples that finished.'),
    '',
  );
  L.push(
    '| Pass@1 | Pass@5 | Cov@1 | Cov@5 | sim pass | tasks | errors | samples | tokens | wall |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  L.push(
    `| ${pct(a.pass_at_1)} | ${pct(a.pass_at_5)} | ${pct(a.cov_at_1)} | ${pct(a.cov_at_5)} | ${pct(a.sim_pass)} | ${a.tasks} | ${a.errors} | ${a.samples} | ${a.tokens.total} | ${a.wall_s.toFixed(1)} s |`,
    '',
  );
  L.push(
    `Candidates simulated: ${a.candidates} (${a.candidates_per_min.toFixed(1)}/min)${a.cached_samples ? `; ${a.cached_samples} samples from the cache` : ''}. Pass@5/Cov@5 use the first min(5, samples) samples.`,
    '',
  );
  if (r.per_round.length > 1) {
    L.push(
      '## Per round (best candidate so far)',
      '',
      '| after round | Pass@1 | Pass@5 | Cov@1 | Cov@5 | sim pass |',
      '|---:|---:|---:|---:|---:|---:|',
    );
    for (const p of r.per_round)
      L.push(`| ${p.round} | ${pct(p.pass_at_1)} | ${pct(p.pass_at_5)} | ${pct(p.cov_at_1)} | ${pct(p.cov_at_5)} | ${pct(p.sim_pass)} |`);
    L.push('');
  }
  L.push(
    '## Tasks',
    '',
    '| task | target | samples passed | best coverage | mean coverage | coverage per sample | note |',
    '|---|---:|---:|---:|---:|---|---|',
  );
  for (const t of r.tasks) {
    if (t.error) {
      L.push(`| ${esc(t.id)} | ${pct(t.coverage_target / 100, 0)} | | | | | error: ${esc(t.error).slice(0, 300)} |`);
      continue;
    }
    const covs = t.samples.map((s) => s.coverage);
    const passed = t.samples.filter((s) => s.passed).length;
    const failed = t.samples.filter((s) => !s.sim_ok).map((s) => s.error ?? s.status);
    L.push(
      `| ${esc(t.id)} | ${pct(t.coverage_target / 100, 0)} | ${passed}/${t.samples.length} | ${pct(covs.length ? Math.max(...covs) : null)} | ${pct(covs.length ? covs.reduce((x, y) => x + y, 0) / covs.length : null)} | ${t.samples.map((s) => (s.sim_ok ? pct(s.coverage, 1) : 'fail')).join(' ')} | ${esc([...new Set(failed)].join(', '))} |`,
    );
  }
  if (r.suite.skipped.length) {
    L.push('', '## Skipped records', '');
    for (const s of r.suite.skipped) L.push(`- ${esc(s.id)}: ${esc(s.reason)}`);
  }
  return L.join('\n') + '\n';
}
