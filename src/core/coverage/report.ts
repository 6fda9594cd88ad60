// What the coverage looks like to the outside: LLM4Cov summary rows (docs/protocol.md §6), and the
// feedback text a model sees (an IMC-style per-instance table plus the uncovered source lines).
import type { DutCoverage } from './analyze.js';
import type { CoverageFigures, CovSummaryRow } from './model.js';
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

/** Feedback text: the table, the scored figure, then uncovered points with their source lines. */
export function coverageDetail(cov: DutCoverage, top: string, maxLines = 60): string {
  const w = cov.breakdown.waived;
  const parts: string[] = [renderImcTable(imcRows(cov)).trimEnd()];
  parts.push(
    `\nDUT '${top}': overall ${pct(w.overall)} = mean(block ${pct(w.block)}, toggle ${pct(w.toggle)}); ` +
      `line ${pct(w.line)}, branch ${pct(w.branch)}` +
      (cov.breakdown.waivedPoints ? `; ${cov.breakdown.waivedPoints} points waived (raw overall ${pct(cov.breakdown.raw.overall)})` : ''),
  );
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
