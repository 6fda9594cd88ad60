// Points no stimulus can cover under Verilator's two-state simulation, proven by the formal engine
// through the product's path (a real Verilator run with `formal` set): a full case's default arm,
// an enum's unused encoding, bits a shift always clears, a loop index left at its bound (it moves
// once: Verilator counts a toggle only both ways), a constant output; look-alikes a run can reach
// are never claimed; and the scored figure, the reward and the summary rows are what they are
// without the engine.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { join } from 'node:path';
import type { SimResult } from '../../src/core/sim/result.js';
import { fixtures, read, repoRoot, simulateFiles } from '../helpers.js';

const dir = join(fixtures, 'designs', 'two_state');
const dut = join(dir, 'two_state.sv');
const tbName = 'tb_two_state.sv';
const budget = { designS: 20, pointS: 5 };

const reason = (r: SimResult, line: number, label: string): string | undefined =>
  r.uncovered.find((u) => u.line === line && u.label === label)?.reason?.kind;
const proven = (r: SimResult, signal: string): string[] =>
  r.uncovered
    .filter((u) => u.type === 'toggle' && u.label.replace(/\[\d+\]$/, '') === signal && u.reason?.kind === 'unreachable-formal')
    .map((u) => u.label);

describe('unreachable under two-state simulation, proven by the formal engine', () => {
  it('proves each kind at its line, with how, and claims nothing a run can reach', async () => {
    const r = await simulateFiles([dut], tbName, read(join(dir, tbName)), { formal: budget });
    expect(r.status, r.err_msg).toBe('success');
    expect(r.formal).toMatchObject({ ok: true });
    expect(reason(r, 29, 'case')).toBe('unreachable-formal'); // all 4 values of a 2-bit selector listed
    expect(reason(r, 50, 'case')).toBe('unreachable-formal'); // a 2-member enum on 2 bits
    expect(proven(r, 'mode')).toEqual(['mode[1]']);
    expect(proven(r, 'sh').sort()).toEqual(['sh[0]', 'sh[1]', 'sh[2]', 'sh[3]']);
    // k ends every pass at 8: bits 0-2 stay 0, bit 3 moves once.
    const k = r.uncovered.filter((u) => u.type === 'toggle' && u.label.startsWith('k['));
    expect(k.map((u) => u.reason?.kind)).toEqual(k.map(() => 'unreachable-formal'));
    expect(k.find((u) => u.label === 'k[3]')?.reason?.detail).toMatch(/moves at most once/);
    expect(proven(r, 'tied')).toEqual(['tied']); // assign tied = 1'b0
    // The 3-bit case lists 3 of 8 values: its default arm (line 39) is reachable, and was reached.
    expect(r.uncovered.filter((u) => u.line === 39 || u.label.startsWith('cnt') || u.label.startsWith('din'))).toEqual([]);
    // The proven points are uncovered ones: the ceiling without them is higher; c is unchanged.
    const ceiling = r.coverage!.ceiling!;
    expect(ceiling.excluded).toBe(r.uncovered.filter((u) => u.reason?.kind === 'unreachable-formal').length);
    expect(ceiling.figures.overall!).toBeGreaterThan(r.coverage!.waived.overall!);
    const plain = await simulateFiles([dut], tbName, read(join(dir, tbName)));
    expect(r.coverage!.waived.overall).toBe(plain.coverage!.waived.overall);
    expect(r.reward).toBe(plain.reward);
    expect(r.reward).toBe(1 + r.coverage!.waived.overall!);
    expect(r.cov_info!.summary).toEqual(plain.cov_info!.summary);
    // Without the engine nothing is claimed: the ceiling is the scored figure.
    expect(plain.coverage!.ceiling).toMatchObject({ excluded: 0 });
  });

  it('the CLI lists them by reason and gives the reachable ceiling beside the scored figure', async () => {
    const out = await execa(
      process.execPath,
      [join(repoRoot, 'dist', 'cli.js'), 'sim', '--top', 'two_state', '--tb', join(dir, tbName), dut],
      {
        cwd: repoRoot,
        reject: false,
        env: { NO_COLOR: '1' },
      },
    );
    expect(out.exitCode, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/^ {2}proven unreachable \(formal\) \(\d+\):$/m);
    expect(out.stdout).toMatch(
      /^reachable ceiling: coverage excluding the \d+ points? proven unreachable \(\d+ proven unreachable \(formal\)\): \d+\.\d\d% .*; the scored figure stays \d+\.\d\d%$/m,
    );
  });
});
