// What the coverage looks like to the outside: LLM4Cov summary rows (docs/protocol.md §6), and the
// feedback text a model sees (an IMC-style per-instance table plus the uncovered source lines).
import type { DutCoverage } from './analyze.js';
import { displayLine, type FormalSummary, type CoverageBreakdown, type CoverageFigures, type CovSummaryRow, type Exclusion, type UncoveredPoint, type UncoveredReason } from './model.js';
import { renderImcTable, type ImcRow } from './imcTable.js';
import { pct } from '../util/format.js';

function row(name: string, level: number, f: CoverageFigures): CovSummaryRow {
  return {
    name,
    level,
    'Overall Average': f.overall,
    'Overall Covered': f.overallCovered,
    'Code Average': f.overall,
    'Code Covered': f.overallCovered,
    'Fsm Average': null,
    'Fsm Covered': null,
    'Functional Average': f.user,
    'Functional Covered': f.user,
    Toggle: f.toggle,
    Block: f.block,
    Assertion: null,
  };
}

/** One row per DUT instance and sub-instance; the DUT row is named after the top module, level 0. */
export function summaryRows(cov: DutCoverage, top: string): CovSummaryRow[] {
  const rows: CovSummaryRow[] = [];
  if (cov.instances.length === 0) return rows;
  // The scored row: every DUT point (all instances of the top), named as LLM4Cov looks it up.
  rows.push(row(top, 0, cov.breakdown.waived));
  // One DUT instance: the scored row is that instance, its children sit at level 1, 2...
  // Several: each instance gets its own row at level 1 under the scored row.
  const offset = cov.dutInstances.length === 1 ? 0 : 1;
  for (const inst of cov.instances) {
    if (inst.level === 0 && offset === 0) continue;
    rows.push(row(`${inst.path} (${inst.module})`, inst.level + offset, inst.figures));
  }
  return rows;
}

function imcRows(cov: DutCoverage): ImcRow[] {
  return cov.instances.map((i) => {
    const t = i.figures.tallies;
    return {
      name: i.level === 0 ? `${i.path} (${i.module})` : i.path.split('.').pop() ?? i.path,
      level: i.level,
      overallAverage: i.figures.overall,
      overallCovered: t.block.total + t.toggle.total ? [t.block.covered + t.toggle.covered, t.block.total + t.toggle.total] : null,
      codeAverage: i.figures.overall,
      codeCovered: t.block.total + t.toggle.total ? [t.block.covered + t.toggle.covered, t.block.total + t.toggle.total] : null,
      block: t.block.total ? [t.block.covered, t.block.total] : null,
      toggle: t.toggle.total ? [t.toggle.covered, t.toggle.total] : null,
    };
  });
}

/** The IMC-style table and the scored figure's line: the head of the feedback text and of the
 * person's report alike. */
function reportHead(cov: DutCoverage, top: string): string[] {
  const w = cov.breakdown.waived;
  return [
    renderImcTable(imcRows(cov)).trimEnd(),
    `\nDUT '${top}': overall ${pct(w.overall)} = mean(block ${pct(w.block)}, toggle ${pct(w.toggle)}); ` +
      `line ${pct(w.line)}, branch ${pct(w.branch)}` +
      (cov.breakdown.waivedPoints ? `; ${cov.breakdown.waivedPoints} points waived (raw overall ${pct(cov.breakdown.raw.overall)})` : ''),
  ];
}

/** Feedback text: the table, the scored figure, then uncovered points with their source lines. */
export function coverageDetail(cov: DutCoverage, top: string, maxLines = 60): string {
  const parts = reportHead(cov, top);
  const blocks = cov.uncovered.filter((u) => u.type !== 'toggle');
  const toggles = cov.uncovered.filter((u) => u.type === 'toggle');
  if (blocks.length) {
    parts.push('\nUncovered code (file:line [kind] source):');
    for (const u of blocks.slice(0, maxLines)) {
      parts.push(`  ${u.file.split('/').pop()}:${u.span && u.span[0] !== u.line ? u.span[0] : u.line} [${u.type} ${u.label}] ${u.source ?? ''}`.trimEnd());
    }
    if (blocks.length > maxLines) parts.push(`  ... ${blocks.length - maxLines} more`);
  }
  if (toggles.length) {
    // Group toggle bits by signal so a 32-bit bus is one line, not 32.
    const bySignal = new Map<string, string[]>();
    for (const u of toggles) {
      const sig = u.label.replace(/\[\d+\]$/, '');
      const bit = /\[(\d+)\]$/.exec(u.label)?.[1];
      const key = `${u.hier.split('.').slice(1).join('.')}.${sig}`;
      const list = bySignal.get(key) ?? [];
      if (bit !== undefined) list.push(bit);
      bySignal.set(key, list);
    }
    parts.push('\nSignals whose bits did not toggle both ways (instance.signal [bits]):');
    let n = 0;
    for (const [sig, bits] of bySignal) {
      if (n++ >= maxLines) {
        parts.push(`  ... ${bySignal.size - maxLines} more signals`);
        break;
      }
      parts.push(`  ${sig}${bits.length ? ` [${bits.join(',')}]` : ''}`);
    }
  }
  return parts.join('\n') + '\n';
}

// ---- human-facing text (never the model's: coverageDetail above stays what the checkpoints saw) --

const REASON_TITLE: Record<UncoveredReason['kind'], string> = {
  'not-hit': 'reachable, not hit',
  'dead-param': 'dead under the chosen parameters',
  'unreachable-formal': 'proven unreachable (formal)',
  witness: 'reachable: witness found, not yet covered',
  bounded: 'not reached in a bounded search (not proven)',
};
const REASON_ORDER: Array<UncoveredReason['kind']> = ['not-hit', 'witness', 'bounded', 'dead-param', 'unreachable-formal'];

/** `file:line [kind label] source` of a block point, as coverageDetail shows it. */
function blockText(u: UncoveredPoint): string {
  return `${u.file.split('/').pop()}:${displayLine(u)} [${u.type} ${u.label}] ${u.source ?? ''}`.trimEnd();
}

/**
 * "Uncovered points by reason" for a person (the CLI, the dashboard): one heading per reason with
 * its count, then its points, at most `max` entries each (toggle bits grouped per signal and
 * reason) and a count of the rest; the proof's words and, where there is one, the `-G` that
 * enables the code. Then the reachable ceiling beside the scored figure, when the breakdown has it.
 * `uncovered` is a result record's list (bounded by the backend: 500 points).
 */
export function uncoveredByReason(uncovered: UncoveredPoint[], breakdown?: CoverageBreakdown | null, max = 10): string[] {
  const lines: string[] = [];
  if (uncovered.length) lines.push(`uncovered points by reason (${uncovered.length}):`);
  for (const kind of REASON_ORDER) {
    const mine = uncovered.filter((u) => (u.reason?.kind ?? 'not-hit') === kind);
    if (!mine.length) continue;
    lines.push(`  ${REASON_TITLE[kind]} (${mine.length}):`);
    const entries: string[] = [];
    // Block points one by one; toggle bits per instance, signal and reason.
    for (const u of mine.filter((x) => x.type !== 'toggle')) {
      const why = kind === 'not-hit' ? '' : ` -- ${u.reason!.detail}${u.reason!.enable ? `; enable with ${u.reason!.enable}` : ''}`;
      entries.push(`${blockText(u)}${why}`);
    }
    const bySignal = new Map<string, { name: string; bits: string[]; reason?: UncoveredReason }>();
    for (const u of mine.filter((x) => x.type === 'toggle')) {
      const sig = u.label.replace(/\[\d+\]$/, '');
      const key = `${u.hier}\0${sig}\0${u.reason?.detail ?? ''}`;
      const e = bySignal.get(key) ?? { name: `${u.hier.split('.').slice(1).join('.') || u.hier}.${sig}`, bits: [], reason: u.reason };
      const bit = /\[(\d+)\]$/.exec(u.label)?.[1];
      if (bit !== undefined) e.bits.push(bit);
      bySignal.set(key, e);
    }
    for (const e of bySignal.values())
      entries.push(`${e.name}${e.bits.length ? ` [${e.bits.join(',')}]` : ''}${kind === 'not-hit' || !e.reason ? '' : ` -- ${e.reason.detail}`}`);
    for (const x of entries.slice(0, max)) lines.push(`    ${x}`);
    if (entries.length > max) lines.push(`    ... ${entries.length - max} more`);
  }
  const c = breakdown?.ceiling;
  if (breakdown && c && c.excluded > 0) {
    const parts = REASON_ORDER.filter((k): k is Exclusion => k !== 'not-hit' && k !== 'witness' && k !== 'bounded' && c.byReason[k as Exclusion] > 0).map((k) => `${c.byReason[k]} ${REASON_TITLE[k]}`);
    lines.push(
      `reachable ceiling: coverage excluding the ${c.excluded} point${c.excluded === 1 ? '' : 's'} proven unreachable (${parts.join(', ')}): ${pct(c.figures.overall)} ` +
        `(block ${pct(c.figures.block)}, toggle ${pct(c.figures.toggle)}); the scored figure stays ${pct(breakdown.waived.overall)}`,
    );
  }
  return lines;
}

/** The formal engine's one line for a person: what it decided, how long it took, its limits and
 * what its proofs assume (or why it did not run). */
export function formalLine(f: FormalSummary): string {
  if (!f.ok && f.proven + f.witnessed === 0) return `formal: ${f.message}`;
  const secs = (f.seconds.model + f.seconds.pdr).toFixed(1);
  return (
    `formal (${f.engine}, ${secs} s; budget ${f.budget.designS} s per design, ${f.budget.pointS} s per point): ` +
    `${f.proven} uncovered point${f.proven === 1 ? '' : 's'} proven unreachable, ${f.witnessed} reachable with a witness, ${f.notProven} not proven` +
    (f.assumptions.length ? `; proofs assume ${f.assumptions.join(', ')}` : '') +
    (f.message ? `; ${f.message}` : '')
  );
}
