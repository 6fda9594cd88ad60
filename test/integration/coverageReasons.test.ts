// Reasons for uncovered points, the reachable ceiling and one point set, with the real Verilator:
// lcov's line records are the summary's line figure on a design with else-if chains, a case and
// a generate loop; with the formal engine, code dead under the parameters and constant signals are
// proven with how, beside an unchanged scored figure; a microcode ROM read through a variable
// index and arrays a run toggles are never claimed.
import { describe, expect, it } from 'vitest';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { toLcov } from '../../src/core/coverage/lcov.js';
import { displayLine, isCovered } from '../../src/core/coverage/model.js';
import { uncoveredByReason } from '../../src/core/coverage/report.js';
import { parseVerilatorCoverage } from '../../src/core/coverage/verilatorDat.js';
import { judged, pointKey } from '../../src/core/coverage/formal.js';
import { formalReach } from '../../src/core/sim/formal/reach.js';
import { fixtures, read, simulateFiles } from '../helpers.js';

/** LF, LH and the DA records of an lcov tracefile. */
function lcovLines(text: string): { lf: number; lh: number; da: Map<number, number> } {
  const da = new Map<number, number>();
  let lf = 0;
  let lh = 0;
  for (const l of text.split('\n')) {
    const m = /^DA:(\d+),(\d+)$/.exec(l);
    if (m) da.set(Number(m[1]), Number(m[2]));
    if (l.startsWith('LF:')) lf += Number(l.slice(3));
    if (l.startsWith('LH:')) lh += Number(l.slice(3));
  }
  return { lf, lh, da };
}

describe('one point set: lcov agrees with the summary', () => {
  for (const [name, top, tb] of [
    ['point_set', 'point_set', 'tb_point_set.sv'],
    ['two_state', 'two_state', 'tb_two_state.sv'],
  ] as const) {
    it(`LF/LH and DA are the summary's line figures (${name})`, async () => {
      const dir = join(fixtures, 'designs', name);
      const r = await simulateFiles([join(dir, `${name}.sv`)], tb, read(join(dir, tb)), { wantPoints: true }, top);
      expect(r.status, r.err_msg).toBe('success');
      const { lf, lh, da } = lcovLines(toLcov(r.points!));
      const line = r.coverage!.waived.tallies.line;
      expect(lf).toBe(line.total);
      expect(lh).toBe(line.covered);
      // The uncovered lines the summary lists are exactly lcov's unhit DA lines.
      const missed = new Set(r.uncovered.filter((u) => u.type === 'line').map((u) => displayLine(u)));
      expect(new Set([...da].filter(([, c]) => c === 0).map(([l]) => l))).toEqual(missed);
      for (const l of missed) expect(r.cov_info!.detail).toMatch(new RegExp(`${name}\\.sv:${l} \\[line`));
    });
  }
});

const budget = { designS: 20, pointS: 5 };

describe('reasons for uncovered points, and the reachable ceiling', () => {
  const dir = join(fixtures, 'designs', 'point_set');
  const dut = join(dir, 'point_set.sv');
  it('proves dead code under the parameters and constant signals, beside an unchanged scored figure', async () => {
    const r = await simulateFiles([dut], 'tb_point_set.sv', read(join(dir, 'tb_point_set.sv')), { formal: budget });
    const plain = await simulateFiles([dut], 'tb_point_set.sv', read(join(dir, 'tb_point_set.sv')));
    expect(r.status, r.err_msg).toBe('success');
    // The scored figure is the simulator's, reasons or not; the model's text is unchanged.
    expect(r.coverage!.waived).toEqual(plain.coverage!.waived);
    expect(r.cov_info!.detail).toBe(plain.cov_info!.detail);
    const why = (line: number, label: string, hier = 'tb.u') =>
      r.uncovered.find((u) => u.line === line && u.label === label && u.hier === hier)?.reason;
    // `if (P)` with P = 0, and the items of `case (MODE)` that MODE = 1 (fixed by the
    // instantiation) leaves: elaboration removed them.
    expect(why(20, 'if')).toMatchObject({ kind: 'dead-param', enable: '-G P=1' });
    expect(why(20, 'if')!.detail).toMatch(/proven by elaboration/);
    expect(why(42, 'case', 'tb.u.u_sub')).toMatchObject({ kind: 'dead-param' });
    // The else of `if (en)` with en tied to 1 by the instantiation, and the default of a case
    // whose items list every value: proven by the model checker.
    expect(why(40, 'else', 'tb.u.u_sub')!.kind).toBe('unreachable-formal');
    expect(why(44, 'case', 'tb.u.u_sub')!.kind).toBe('unreachable-formal');
    // Reachable look-alike: the case default on a 2-bit input, with the inputs that reach it.
    expect(why(18, 'case')!.kind).toBe('witness');
    const bit = (label: string, hier = 'tb.u') =>
      r.uncovered.find((u) => u.type === 'toggle' && u.label === label && u.hier === hier)?.reason;
    expect(bit('spare[2]')!.detail).toMatch(/stays 0/); // never assigned
    expect(bit('cfg[1]')!.detail).toMatch(/stays 0/); // written only at time 0
    expect(bit('cfg[0]')!.detail).toMatch(/stays 1/);
    expect(bit('ctrl[5]')!.kind).toBe('unreachable-formal'); // bits no assignment writes
    expect(bit('en', 'tb.u.u_sub')).toMatchObject({ kind: 'unreachable-formal' });
    expect(bit('d[1]', 'tb.u.u_sub')!.kind).toBe('witness');
    // The ceiling: the scored points less the proven ones, reported beside the figure.
    const c = r.coverage!.ceiling!;
    const provenKinds = new Set(['dead-param', 'unreachable-formal']);
    expect(c.excluded).toBe(r.uncovered.filter((u) => provenKinds.has(u.reason!.kind)).length);
    expect(c.byReason['dead-param']).toBe(2);
    expect(c.figures.overall!).toBeGreaterThan(r.coverage!.waived.overall!);
    const text = uncoveredByReason(r.uncovered, r.coverage!).join('\n');
    expect(text).toMatch(/^ {2}dead under the chosen parameters \(2\):$/m);
    expect(text).toMatch(/^reachable ceiling: .* the scored figure stays \d+\.\d\d%$/m);
    // Without the engine nothing is claimed.
    expect(plain.coverage!.ceiling).toMatchObject({ excluded: 0 });
    expect(plain.uncovered.every((u) => u.reason!.kind === 'not-hit')).toBe(true);
  });
});

describe('no claim on what a run reaches', () => {
  for (const [name, top, tb, words] of [
    ['microcode', 'microcode', 'tb_microcode.sv', /^(?:microinstruction|train_action)(?:\[|$)/],
    ['array_slots', 'array_slots', 'tb_array_slots.sv', /^(?:tree|chain|mem|full|upto|whole|other)\[/],
  ] as const) {
    it(`the engine proves no bit the testbench toggles (${name})`, async () => {
      const dir = join(fixtures, 'designs', name);
      const dut = join(dir, `${name}.sv`);
      const r = await simulateFiles([dut], tb, read(join(dir, tb)), { keepRunDir: true });
      try {
        expect(r.status, r.err_msg).toBe('success');
        const points = parseVerilatorCoverage(readFileSync(r.coverageFile!, 'utf8')).filter((p) => p.file === dut);
        const toggled = points.filter((p) => p.type === 'toggle' && words.test(p.label) && isCovered(p) && judged(p));
        expect(toggled.length).toBeGreaterThan(4);
        // The engine is asked about every point, covered or not (as the product asks it, so one
        // answer serves every run): a bit this run toggled both ways must never be proven.
        const spec = { files: [dut], libraryFiles: [], includeDirs: [], defines: {}, params: {} };
        const report = await formalReach(spec, top, points.filter(judged), { budget });
        expect(report.ok, report.message).toBe(true);
        const verdicts = toggled.map((p) => report.points[pointKey(p)]?.verdict);
        expect(verdicts.filter((v) => v === 'unreachable')).toEqual([]);
        expect(verdicts.filter((v) => v === 'witness').length).toBeGreaterThan(4);
      } finally {
        rmSync(r.protection.scratchDir!, { recursive: true, force: true });
      }
    });
  }
});
