// Reasons for uncovered points, the reachable ceiling and one point set, with the real Verilator:
// lcov's line records are the summary's line figure on a design with else-if chains, a case and
// a generate loop; code dead under the parameters and constant signals are proven with their
// reasons; a microcode ROM read through a variable index is never called constant.
import { describe, expect, it } from 'vitest';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { analyzeCoverage } from '../../src/core/coverage/analyze.js';
import { toLcov } from '../../src/core/coverage/lcov.js';
import { displayLine, isCovered } from '../../src/core/coverage/model.js';
import { coverageDetail, uncoveredByReason } from '../../src/core/coverage/report.js';
import { parseVerilatorCoverage } from '../../src/core/coverage/verilatorDat.js';
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

describe('reasons for uncovered points, and the reachable ceiling', () => {
  const dir = join(fixtures, 'designs', 'point_set');
  const dut = join(dir, 'point_set.sv');
  it('proves dead code under the parameters and tied-off signals, beside an unchanged scored figure', async () => {
    const r = await simulateFiles([dut], 'tb_point_set.sv', read(join(dir, 'tb_point_set.sv')), { keepRunDir: true });
    try {
      expect(r.status, r.err_msg).toBe('success');
      const points = parseVerilatorCoverage(readFileSync(r.coverageFile!, 'utf8'));
      const cov = analyzeCoverage(points, {
        isDutFile: (f) => f === dut,
        top: 'point_set',
        params: {},
        readSource: (f) => (f === dut ? readFileSync(f, 'utf8') : undefined),
      });
      // The scored figure is the simulator's, reasons or not; the model's text is unchanged.
      expect(cov.breakdown.waived).toEqual(r.coverage!.waived);
      expect(coverageDetail(cov, 'point_set')).toBe(r.cov_info!.detail);
      const why = (line: number, label: string, hier = 'tb.u') =>
        cov.uncovered.find((u) => u.line === line && u.label === label && u.hier === hier)?.reason;
      expect(why(20, 'if')).toMatchObject({ kind: 'dead-param', enable: '-G P=1' });
      expect(why(20, 'if')!.detail).toMatch(/if \(P\)', false with P = 0/);
      expect(why(42, 'case', 'tb.u.u_sub')).toMatchObject({ kind: 'dead-param' });
      expect(why(42, 'case', 'tb.u.u_sub')!.detail).toMatch(/MODE = 1 \(fixed by the instantiation 'u_sub'/);
      expect(why(44, 'case', 'tb.u.u_sub')!.kind).toBe('dead-param');
      // Reachable look-alikes: the case default on a 2-bit input, the else of `if (en)` (en is
      // tied off, but this rule reads parameters only), and data bits.
      expect(why(18, 'case')!.kind).toBe('not-hit');
      expect(why(40, 'else', 'tb.u.u_sub')!.kind).toBe('not-hit');
      const bit = (label: string, hier = 'tb.u') =>
        cov.uncovered.find((u) => u.type === 'toggle' && u.label === label && u.hier === hier)?.reason;
      expect(bit('spare[2]')!.detail).toMatch(/never assigned/);
      expect(bit('cfg[1]')!.detail).toMatch(/written only at time 0/);
      expect(bit('ctrl[5]')!.detail).toMatch(/bits 4-7 of 'ctrl' are never assigned/);
      expect(bit('en', 'tb.u.u_sub')).toMatchObject({ kind: 'constant' });
      expect(bit('y[3]')!.kind).toBe('not-hit');
      expect(bit('d[1]', 'tb.u.u_sub')!.kind).toBe('not-hit');
      // The ceiling: the scored points less the proven ones, reported beside the figure.
      const c = cov.breakdown.ceiling!;
      expect(c.excluded).toBe(cov.uncovered.filter((u) => u.reason!.kind !== 'not-hit').length);
      expect(c.byReason['dead-param']).toBe(3);
      expect(c.figures.overall!).toBeGreaterThan(cov.breakdown.waived.overall!);
      const proven = new Set(
        cov.uncovered.filter((u) => u.reason!.kind !== 'not-hit').map((u) => `${u.hier}\0${u.type}\0${u.line}\0${u.label}`),
      );
      const rest = cov.points.filter((p) => !proven.has(`${p.hier}\0${p.type}\0${p.line}\0${p.label}`));
      expect(c.figures.tallies.block.total + c.figures.tallies.toggle.total).toBe(rest.filter((p) => p.type !== 'user').length);
      expect(c.figures.tallies.block.covered).toBe(rest.filter((p) => p.type !== 'toggle' && isCovered(p)).length);
      const text = uncoveredByReason(cov.uncovered, cov.breakdown).join('\n');
      expect(text).toMatch(/^ {2}dead under the chosen parameters \(3\):$/m);
      expect(text).toMatch(/enable with -G P=1/);
      expect(text).toMatch(/^reachable ceiling: .* the scored figure stays \d+\.\d\d%$/m);
      // Without the run's overrides the top's parameters are unknown: no claim on its code.
      const blind = analyzeCoverage(points, {
        isDutFile: (f) => f === dut,
        top: 'point_set',
        readSource: (f) => (f === dut ? readFileSync(f, 'utf8') : undefined),
      });
      expect(blind.uncovered.find((u) => u.line === 20 && u.label === 'if')!.reason!.kind).toBe('not-hit');
    } finally {
      rmSync(r.protection.scratchDir!, { recursive: true, force: true });
    }
  });
});

describe('a microcode ROM read through a variable index', () => {
  it('never calls the bits of the word read, or of fields of it, constant: the testbench toggles them', async () => {
    const dir = join(fixtures, 'designs', 'microcode');
    const dut = join(dir, 'microcode.sv');
    const r = await simulateFiles([dut], 'tb_microcode.sv', read(join(dir, 'tb_microcode.sv')), { keepRunDir: true });
    try {
      expect(r.status, r.err_msg).toBe('success');
      const points = parseVerilatorCoverage(readFileSync(r.coverageFile!, 'utf8'));
      const ofWord = (l: string) => /^(?:microinstruction|train_action)(?:\[|$)/.test(l);
      // The run toggles several of these bits: they are reachable.
      expect(points.filter((p) => p.type === 'toggle' && ofWord(p.label) && isCovered(p)).length).toBeGreaterThan(4);
      // With every point taken as unhit, no rule may claim any bit of them.
      const unhit = points.map((p) => ({ ...p, count: 0 }));
      const cov = analyzeCoverage(unhit, {
        isDutFile: (f) => f === dut,
        top: 'microcode',
        params: {},
        readSource: (f) => (f === dut ? readFileSync(f, 'utf8') : undefined),
      });
      const claimed = cov.uncovered.filter((u) => u.type === 'toggle' && ofWord(u.label) && u.reason!.kind !== 'not-hit');
      expect(claimed).toEqual([]);
      expect(cov.twoState.points.filter((p) => ofWord(p.label))).toEqual([]);
      expect(r.unreachable2State?.points.filter((p) => ofWord(p.label)) ?? []).toEqual([]);
    } finally {
      rmSync(r.protection.scratchDir!, { recursive: true, force: true });
    }
  });
});

describe('array slots no assignment writes', () => {
  it('claims the slots of a level-by-level tree and of a constant-index chain, which the run never toggles, and nothing it reaches', async () => {
    const dir = join(fixtures, 'designs', 'array_slots');
    const dut = join(dir, 'array_slots.sv');
    const r = await simulateFiles([dut], 'tb_array_slots.sv', read(join(dir, 'tb_array_slots.sv')), { keepRunDir: true });
    try {
      expect(r.status, r.err_msg).toBe('success');
      const points = parseVerilatorCoverage(readFileSync(r.coverageFile!, 'utf8'));
      const opts = {
        isDutFile: (f: string) => f === dut,
        top: 'array_slots',
        params: {},
        readSource: (f: string) => (f === dut ? readFileSync(f, 'utf8') : undefined),
      };
      const cov = analyzeCoverage(points, opts);
      // The scored figure and the model's text are the simulator's, reasons or not.
      expect(cov.breakdown.waived).toEqual(r.coverage!.waived);
      expect(coverageDetail(cov, 'array_slots')).toBe(r.cov_info!.detail);
      const slotBits = (name: string, slots: number[]) => slots.flatMap((s) => [0, 1, 2, 3].map((b) => `${name}[${s}][${b}]`));
      const expected = new Set([...slotBits('tree', [6, 7, 9, 10, 11]), ...slotBits('chain', [2, 4, 5, 6, 7])]);
      const arrays = /^(?:tree|chain|mem|full|upto|whole|other)\[/;
      const claimed = cov.uncovered.filter((u) => u.type === 'toggle' && arrays.test(u.label) && u.reason!.kind !== 'not-hit');
      expect(new Set(claimed.map((u) => u.label))).toEqual(expected);
      expect(claimed.every((u) => u.reason!.kind === 'constant')).toBe(true);
      const why = (label: string) => cov.uncovered.find((u) => u.label === label)!.reason!.detail;
      expect(why('tree[9][1]')).toMatch(
        /^slots 6-7, 9-11 of 'tree' are never written: every write indexes 0-5, 8 \(constant indices and the generate loops over 'i', 'l' unrolled\)$/,
      );
      expect(why('chain[2][0]')).toMatch(/^slots 2, 4-7 of 'chain' are never written: every write indexes 0-1, 3 \(constant indices\)$/);
      // Each point claimed was indeed never toggled by the run...
      const run = points.filter((p) => p.type === 'toggle' && p.hier === 'tb.u' && arrays.test(p.label));
      for (const p of run.filter((x) => expected.has(x.label))) expect(p.count, p.label).toBe(0);
      // ...and every other bit of these arrays was toggled both ways: reachable, and not claimed
      // even with every point taken as unhit (the look-alikes: a variable index, a loop reaching
      // every slot, a runtime loop bound, a whole-array write).
      expect(run.filter((p) => !expected.has(p.label) && !isCovered(p)).map((p) => p.label)).toEqual([]);
      const blind = analyzeCoverage(
        points.map((p) => ({ ...p, count: 0 })),
        opts,
      );
      const blindClaimed = blind.uncovered.filter((u) => u.type === 'toggle' && arrays.test(u.label) && u.reason!.kind !== 'not-hit');
      expect(new Set(blindClaimed.map((u) => u.label))).toEqual(expected);
    } finally {
      rmSync(r.protection.scratchDir!, { recursive: true, force: true });
    }
  });
});
