// Human-readable summary of a result record for the terminal.
import type { SimResult } from '../core/run/types.js';
import type { CoverageFigures } from '../core/run/types.js';
import { formatDiagnostic, humanStatus, pct, safeText } from '../core/run/frontEnd.js';
import { safeResult } from '../core/run/coverage.js';
import {
  assertionCount,
  assertionSummary,
  cancelledRun,
  failureReason,
  formalLine,
  thousands,
  uncoveredByReason,
} from '../core/run/coverage.js';

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
  // The design's own assertions, from the harness's record: a run that broke them failed, in
  // every score mode (sim/assertions.ts runFailure); paper scoring keeps its reward.
  const broke = assertionSummary(r.dutAssertions);
  const statusText =
    ok && broke ? c('31', "failed (the design's assertions fired)") : ok ? c('32', humanStatus(r.status)) : c('31', humanStatus(r.status));
  lines.push(
    `status: ${statusText}  stage: ${r.stage}  reward: ${r.reward.toFixed(4)}  time: ${t.total.toFixed(2)}s${stageTimes ? ` (${stageTimes})` : ''}`,
  );
  if (broke) {
    const legal = !ok && r.stage === 'run' && r.err_msg.startsWith(broke);
    lines.push(
      c('31', `${broke}${legal ? ' (legal scoring: a failed run, reward 0)' : ' (a failed run; paper scoring keeps its reward)'}`),
    );
  }
  if (r.coverage) {
    const w = r.coverage.waived;
    lines.push(
      `coverage of ${r.dutTop}: ${c('1', pct(w.overall))} overall = mean(block, toggle)${broke ? ", reached with illegal stimulus (it broke the design's assertions)" : ''}`,
    );
    lines.push(`  block  ${tallyText(w, 'block')}   [line ${tallyText(w, 'line')}, branch ${tallyText(w, 'branch')}]`);
    lines.push(`  toggle ${tallyText(w, 'toggle')}`);
    if (w.tallies.user.total) lines.push(`  user cover points ${tallyText(w, 'user')}`);
    if (w.tallies.expr?.total) lines.push(`  expression ${tallyText(w, 'expr')}   (where the simulator has it; not part of overall)`);
    if (w.tallies.cond?.total) lines.push(`  ?: arms   ${tallyText(w, 'cond')}   (where the simulator has it; not part of overall)`);
    if (r.coverage.waivedPoints) lines.push(`  ${r.coverage.waivedPoints} points waived; raw overall ${pct(r.coverage.raw.overall)}`);
    // Every uncovered point with its reason (dead under the parameters, tied off, unreachable in
    // 2-state simulation, or reachable but not hit), toggles included, bounded per reason; then the
    // reachable ceiling beside (never instead of) the scored figure.
    lines.push(...uncoveredByReason(r.uncovered, r.coverage, 8));
    if (r.formal) lines.push(formalLine(r.formal));
  }
  const errs = r.diagnostics.filter((d) => d.severity === 'error');
  const warns = r.diagnostics.filter((d) => d.severity === 'warning');
  if (errs.length) {
    lines.push(c('31', `errors (${errs.length}):`));
    for (const d of errs.slice(0, opts.maxErrors ?? 10)) {
      lines.push(
        `  ${formatDiagnostic(d)}${d.count && d.count > 1 ? ` (${thousands(d.count)} times${d.time ? `, at times ${d.time} to ${d.lastTime ?? d.time}` : ''})` : d.time ? ` (at time ${d.time})` : ''}${d.suggestion ? `\n    suggestion: ${d.suggestion}` : ''}`,
      );
    }
  }
  if (warns.length) lines.push(`warnings: ${warns.length} (--json for the list)`);
  if (!ok && !errs.length && r.err_msg) lines.push(c('31', r.err_msg.split('\n').slice(0, 12).join('\n')));
  return lines.join('\n') + '\n';
}

/** A round's verdict in one line: the status and, for a failed run, why (from the record's own
 * fields: failureReason), or the broken DUT assertions of a run that succeeded. */
export function verdictText(result: SimResult): string {
  if (cancelledRun(result)) return 'cancelled';
  if (result.status !== 'success') return safeText(failureReason(result).replace(/^\w+/, humanStatus(result.status)));
  const n = assertionCount(result.dutAssertions ?? []);
  return n ? `success (illegal stimulus: broke the design's assertions ${thousands(n)} time${n === 1 ? '' : 's'})` : 'success';
}
