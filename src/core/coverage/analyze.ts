// Turns raw simulator points into what every caller needs: the DUT-only point set, the scored
// figure (with waivers), the per-instance hierarchy, and the uncovered points with source text.
import { figures, isCovered, type FormalSummary, type CoverageBreakdown, type CoverageFigures, type CoveragePoint, type Exclusion, type Proof, type UncoveredPoint, type UncoveredReason } from './model.js';
import { isWaived, type Waiver } from './waivers.js';

export interface InstanceCoverage {
  /** Instance path below the testbench, e.g. `uut` or `uut.u_fifo`. */
  path: string;
  module: string;
  /** 0 for the DUT instance, 1 for its children... */
  level: number;
  figures: CoverageFigures;
}

export interface DutCoverage {
  /** The DUT's points, waived ones included and marked `waived` (the scored set: the others). */
  points: CoveragePoint[];
  breakdown: CoverageBreakdown;
  instances: InstanceCoverage[];
  uncovered: UncoveredPoint[];
  /** Hierarchy prefixes of the DUT instances found (e.g. `tb.uut`). */
  dutInstances: string[];
  /** The reasons found for uncovered points (the formal engine's, coverage/formal.ts; empty until
   * it ran): its proofs set the reachable ceiling, reported beside the scored figure, never part of it. */
  proven: Map<CoveragePoint, Proof>;
  /** The formal engine's work on this design, when it ran (coverage/formal.ts applyFormal). */
  formal?: FormalSummary;
}

export interface AnalyzeOptions {
  /** Decides whether a point's file belongs to the DUT (the testbench's own file does not). */
  isDutFile: (file: string) => boolean;
  top: string;
  waivers?: Waiver[];
  /** Reads a design file for the uncovered-line text. Required, and the caller's to restrict:
   * point files come from the simulation, so the reader must open only files the host resolved as
   * the design's (undefined for anything else). */
  readSource: (file: string) => string | undefined;
  /** Cap on the uncovered list (feedback must stay bounded). */
  maxUncovered?: number;
}

export function analyzeCoverage(all: CoveragePoint[], opts: AnalyzeOptions): DutCoverage {
  const inDutFiles = all.filter((p) => p.file && opts.isDutFile(p.file));
  // DUT instances: the shallowest hierarchies whose points belong to the top module. Only points
  // at or below them count: a testbench that instantiates DUT sub-modules on its own (fully
  // exercised, say) must not raise the DUT's score.
  // Verilator names a parameterized copy of a module `top__W4` (one per parameter set).
  const isTop = (m: string): boolean => m === opts.top || m.startsWith(opts.top + '__');
  const topHiers = [...new Set(inDutFiles.filter((p) => isTop(p.module)).map((p) => p.hier))].sort(
    (a, b) => a.split('.').length - b.split('.').length || a.localeCompare(b),
  );
  const dutInstances = topHiers.filter((h, i) => !topHiers.slice(0, i).some((o) => h.startsWith(o + '.')));
  const under = (h: string): boolean => dutInstances.some((d) => h === d || h.startsWith(d + '.'));
  const waivers = opts.waivers ?? [];
  // One point set for every view: a waived point stays in the list (raw figures) marked, so
  // lcov, the editor and the summary all leave the same points out.
  const points = inDutFiles.filter((p) => under(p.hier)).map((p) => (waivers.length && isWaived(p, waivers) ? { ...p, waived: true as const } : p));
  const kept = waivers.length ? points.filter((p) => !p.waived) : points;
  const breakdown: CoverageBreakdown = {
    raw: figures(points),
    waived: figures(kept),
    waivedPoints: points.length - kept.length,
  };

  const instances: InstanceCoverage[] = [];
  for (const dut of dutInstances) {
    const base = dut.split('.').length;
    const below = [...new Set(kept.filter((p) => p.hier === dut || p.hier.startsWith(dut + '.')).map((p) => p.hier))].sort();
    for (const h of below) {
      const sub = kept.filter((p) => p.hier === h || p.hier.startsWith(h + '.'));
      const own = sub.find((p) => p.hier === h);
      instances.push({
        path: h.split('.').slice(1).join('.') || h,
        module: own?.module ?? (h === dut ? opts.top : ''),
        level: h.split('.').length - base,
        figures: figures(sub),
      });
    }
  }

  // Each file is read once, for the uncovered lines' text.
  const cache = new Map<string, string[] | undefined>();
  const sourceLine = (file: string, line: number): string | undefined => {
    if (!cache.has(file)) cache.set(file, opts.readSource(file)?.split(/\r?\n/));
    return cache.get(file)?.[line - 1]?.trim();
  };
  const proven = new Map<CoveragePoint, Proof>();
  breakdown.ceiling = ceilingOf(kept, proven);
  const max = opts.maxUncovered ?? 500;
  const uncovered: UncoveredPoint[] = [];
  // Block points first (they say which code never ran), then toggles.
  const order = { line: 0, branch: 1, user: 2, toggle: 3, expr: 4, cond: 5 } as const;
  // Expression and `?:` points are extra rows only: the feedback (and so the agent's targets)
  // stays what it is on every Verilator version.
  const missing = kept.filter((p) => p.type !== 'expr' && p.type !== 'cond' && !isCovered(p)).sort((a, b) => order[a.type] - order[b.type] || a.file.localeCompare(b.file) || a.line - b.line);
  for (const p of missing.slice(0, max)) {
    const first = p.span && p.type !== 'toggle' ? p.span[0] : p.line;
    uncovered.push({
      type: p.type,
      file: p.file,
      line: p.line,
      span: p.type !== 'toggle' ? p.span : undefined,
      label: p.label,
      hier: p.hier,
      count: p.count,
      source: sourceLine(p.file, first),
      reason: reasonOf(p, proven),
    });
  }
  return { points, breakdown, instances, uncovered, dutInstances, proven };
}

/** Reasons found after the analysis (the formal engine's) entered in `cov`; the ceiling and the
 * uncovered list's reasons follow. */
export function withReasons(cov: DutCoverage, extra: Map<CoveragePoint, Proof>): void {
  if (!extra.size) return;
  const proven = cov.proven;
  for (const [p, r] of extra) proven.set(p, r);
  const kept = cov.points.filter((p) => !p.waived);
  cov.breakdown.ceiling = ceilingOf(kept, proven);
  const byKey = new Map(kept.map((p) => [`${p.type}\0${p.file}\0${p.line}\0${p.label}\0${p.hier}`, p]));
  for (const u of cov.uncovered) {
    const p = byKey.get(`${u.type}\0${u.file}\0${u.line}\0${u.label}\0${u.hier}`);
    if (p) u.reason = reasonOf(p, proven);
  }
}

const NOT_HIT: UncoveredReason = { kind: 'not-hit', detail: 'not proven unreachable; the stimulus did not get there' };

/** An uncovered point's reason: the one the formal engine found, else not hit. */
export function reasonOf(p: CoveragePoint, proven: Map<CoveragePoint, UncoveredReason>): UncoveredReason {
  const r = proven.get(p);
  return r ? { kind: r.kind, detail: r.detail, ...(r.enable ? { enable: r.enable } : {}) } : NOT_HIT;
}

/** The reachable ceiling over the scored points: the figures without the proven ones. */
function ceilingOf(kept: CoveragePoint[], proven: Map<CoveragePoint, UncoveredReason>): NonNullable<CoverageBreakdown['ceiling']> {
  const byReason: Record<Exclusion, number> = { 'dead-param': 0, 'unreachable-formal': 0 };
  let excluded = 0;
  for (const p of kept) {
    const r = proven.get(p);
    if (!r || r.kind === 'not-hit' || r.kind === 'witness' || r.kind === 'bounded') continue;
    byReason[r.kind] += 1;
    excluded += 1;
  }
  return { figures: figures(kept.filter((p) => { const r = proven.get(p); return !r || r.kind === 'not-hit' || r.kind === 'witness' || r.kind === 'bounded'; })), excluded, byReason };
}
