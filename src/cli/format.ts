// Human-readable summary of a result record for the terminal.
import type { SimResult } from '../core/sim/result.js';
import type { CoverageFigures } from '../core/coverage/model.js';
import { formatDiagnostic, pct } from '../core/run/frontEnd.js';
import { safeResult } from '../core/run/coverage.js';

function tallyText(f: CoverageFigures, k: 'block' | 'toggle' | 'line' | 'branch' | 'user' | 'expr' | 'cond'): string {
  const t = f.tallies[k];
  return `${pct(f[k])} (${t.covered}/${t.total})`;
}

export function formatSimResult(result: SimResult, opts: { color?: boolean; maxErrors?: number } = {}): string {
  // The backends already return text-safe records; a record from anywhere else (a cache, a warm
  // start, a caller's own) gets the same rule before any of it reaches the terminal.
  const r = safeResult(result);
  const c = (code: string, s: string): string => (opts.color ? `\x1b[${code}m${s}\x1b[0m` : s);
  const ok = r.status === 'success';
  const lines: string[] = [];
  const t = r.timings;
  const stageTimes = (['lint', 'build', 'run', 'coverage'] as const)
    .filter((k) => t[k] !== undefined)
    .map((k) => `${k} ${(t[k] as number).toFixed(2)}s`)
    .join(', ');
  lines.push(
    `${r.tbTop ?? 'testbench'} on ${r.dutTop} (${r.simulator.name} ${r.simulator.version.replace(/^Verilator /, '')}; jail: ${r.protection.jail})`,
  );
  lines.push(
    `status: ${ok ? c('32', r.status) : c('31', r.status)}  stage: ${r.stage}  reward: ${r.reward.toFixed(4)}  time: ${t.total.toFixed(2)}s${stageTimes ? ` (${stageTimes})` : ''}`,
  );
  if (r.coverage) {
    const w = r.coverage.waived;
    lines.push(`coverage of ${r.dutTop}: ${c('1', pct(w.overall))} overall = mean(block, toggle)`);
    lines.push(`  block  ${tallyText(w, 'block')}   [line ${tallyText(w, 'line')}, branch ${tallyText(w, 'branch')}]`);
    lines.push(`  toggle ${tallyText(w, 'toggle')}`);
    if (w.tallies.user.total) lines.push(`  user cover points ${tallyText(w, 'user')}`);
    if (w.tallies.expr?.total) lines.push(`  expression ${tallyText(w, 'expr')}   (where the simulator has it; not part of overall)`);
    if (w.tallies.cond?.total) lines.push(`  ?: arms   ${tallyText(w, 'cond')}   (where the simulator has it; not part of overall)`);
    if (r.coverage.waivedPoints) lines.push(`  ${r.coverage.waivedPoints} points waived; raw overall ${pct(r.coverage.raw.overall)}`);
    const u2 = r.unreachable2State;
    if (u2?.count)
      lines.push(
        `  ${u2.count} point${u2.count === 1 ? '' : 's'} cannot be reached under 2-state simulation; coverage excluding them: ${pct(u2.overall)} (the scored figure stays ${pct(w.overall)}; --json lists them)`,
      );
    const blocks = r.uncovered.filter((u) => u.type !== 'toggle');
    if (blocks.length) {
      lines.push(`uncovered code (${blocks.length}):`);
      for (const u of blocks.slice(0, 8))
        lines.push(`  ${u.file}:${u.span && u.span[0] !== u.line ? u.span[0] : u.line} [${u.type} ${u.label}] ${u.source ?? ''}`.trimEnd());
      if (blocks.length > 8) lines.push(`  ... ${blocks.length - 8} more (--json for all)`);
    }
  }
  const errs = r.diagnostics.filter((d) => d.severity === 'error');
  const warns = r.diagnostics.filter((d) => d.severity === 'warning');
  if (errs.length) {
    lines.push(c('31', `errors (${errs.length}):`));
    for (const d of errs.slice(0, opts.maxErrors ?? 10)) {
      lines.push(
        `  ${formatDiagnostic(d)}${d.time ? ` (at time ${d.time})` : ''}${d.suggestion ? `\n    suggestion: ${d.suggestion}` : ''}`,
      );
    }
  }
  if (warns.length) lines.push(`warnings: ${warns.length} (--json for the list)`);
  if (!ok && !errs.length && r.err_msg) lines.push(c('31', r.err_msg.split('\n').slice(0, 12).join('\n')));
  return lines.join('\n') + '\n';
}
