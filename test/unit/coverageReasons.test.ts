// Reasons for uncovered points on hand-made points: before the formal engine answers every
// uncovered point is `not-hit` and the ceiling is the scored figure; its proofs (withReasons, as
// coverage/formal.ts enters them) take points out of the ceiling, never out of the scored figure,
// and the text for people groups them by reason.
import { describe, expect, it } from 'vitest';
import { analyzeCoverage, withReasons } from '../../src/core/coverage/analyze.js';
import type { CoveragePoint, Proof } from '../../src/core/coverage/model.js';
import { uncoveredByReason } from '../../src/core/coverage/report.js';

const FILE = '/d/m.sv';
const pt = (type: CoveragePoint['type'], line: number, label: string, extra: Partial<CoveragePoint> = {}): CoveragePoint => ({
  type,
  file: FILE,
  line,
  column: 1,
  module: 'm',
  hier: 'tb.uut',
  label,
  count: 0,
  ...extra,
});
const bits = (name: string, w: number, extra: Partial<CoveragePoint> = {}): CoveragePoint[] =>
  Array.from({ length: w }, (_, k) => pt('toggle', 1, `${name}[${k}]`, extra));
const src = [
  'module m (input clk, input [3:0] in, output logic [3:0] o);',
  '  logic [3:0] spare;',
  '  always @(posedge clk) o <= in ^ spare;',
  'endmodule',
].join('\n');

describe('reasons on the uncovered list, the ceiling and the text for people', () => {
  it('every uncovered point is not-hit until the engine answers; its proofs leave the ceiling, the scored figure stays', () => {
    const pts = [...bits('spare', 4), ...bits('o', 4, { count: 2 }), pt('line', 3, 'block', { count: 5 }), pt('toggle', 1, 'in[0]')];
    const cov = analyzeCoverage(pts, { isDutFile: () => true, top: 'm', readSource: () => src });
    expect(cov.uncovered.map((u) => u.reason!.kind)).toEqual(['not-hit', 'not-hit', 'not-hit', 'not-hit', 'not-hit']);
    expect(cov.breakdown.ceiling).toMatchObject({ excluded: 0 });
    expect(cov.breakdown.ceiling!.figures.overall).toBe(cov.breakdown.waived.overall);
    const proof: Proof = { kind: 'unreachable-formal', detail: 'proven by PDR (ABC): the bit stays 0, so it never toggles' };
    withReasons(cov, new Map(pts.filter((p) => p.label.startsWith('spare')).map((p) => [p, proof])));
    expect(cov.uncovered.map((u) => u.reason!.kind)).toEqual([
      'unreachable-formal',
      'unreachable-formal',
      'unreachable-formal',
      'unreachable-formal',
      'not-hit',
    ]);
    expect(cov.breakdown.waived.overall).toBeCloseTo((1 + 4 / 9) / 2, 10);
    expect(cov.breakdown.ceiling).toMatchObject({ excluded: 4, byReason: { 'unreachable-formal': 4, 'dead-param': 0 } });
    expect(cov.breakdown.ceiling!.figures.overall).toBeCloseTo((1 + 4 / 5) / 2, 10);
    expect(uncoveredByReason(cov.uncovered, cov.breakdown)).toEqual([
      'uncovered points by reason (5):',
      '  reachable, not hit (1):',
      '    uut.in [0]',
      '  proven unreachable (formal) (4):',
      '    uut.spare [0,1,2,3] -- proven by PDR (ABC): the bit stays 0, so it never toggles',
      'reachable ceiling: coverage excluding the 4 points proven unreachable (4 proven unreachable (formal)): 90.00% (block 100.00%, toggle 80.00%); the scored figure stays 72.22%',
    ]);
  });
  it('a witness or a bounded search keeps the point in the ceiling', () => {
    const pts = [...bits('o', 2), pt('line', 3, 'if', { count: 1 })];
    const cov = analyzeCoverage(pts, { isDutFile: () => true, top: 'm', readSource: () => src });
    withReasons(
      cov,
      new Map<CoveragePoint, Proof>([
        [pts[0], { kind: 'witness', detail: 'the formal engine: PDR found an input sequence that moves the bit both ways' }],
        [pts[1], { kind: 'bounded', detail: 'not reached in 20 cycles' }],
      ]),
    );
    expect(cov.breakdown.ceiling).toMatchObject({ excluded: 0 });
    expect(cov.uncovered.map((u) => u.reason!.kind)).toEqual(['witness', 'bounded']);
  });
  it('bounds each reason to max entries with a count of the rest', () => {
    const cov = analyzeCoverage(
      bits('o', 4).map((p, k) => ({ ...p, label: `s${k}` })),
      { isDutFile: () => true, top: 'm', readSource: () => src },
    );
    expect(uncoveredByReason(cov.uncovered, cov.breakdown, 2)).toEqual([
      'uncovered points by reason (4):',
      '  reachable, not hit (4):',
      '    uut.s0',
      '    uut.s1',
      '    ... 2 more',
    ]);
  });
});
