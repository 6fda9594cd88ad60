// Points a 2-state simulator cannot reach, with the real Verilator: each rule's points are listed
// with file, line and reason; look-alikes that a run can reach are not; and the scored figure,
// the reward and the summary rows are exactly what they are without the analysis.
import { describe, expect, it } from 'vitest';
import { execa } from 'execa';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { analyzeCoverage } from '../../src/core/coverage/analyze.js';
import { figures } from '../../src/core/coverage/model.js';
import { parseVerilatorCoverage } from '../../src/core/coverage/verilatorDat.js';
import { fixtures, read, repoRoot, simulateFiles } from '../helpers.js';

const dir = join(fixtures, 'designs', 'two_state');
const dut = join(dir, 'two_state.sv');
const tbName = 'tb_two_state.sv';

describe('unreachable under 2-state simulation', () => {
  it('lists each rule at its line with its reason, and nothing a run can reach', async () => {
    const r = await simulateFiles([dut], tbName, read(join(dir, tbName)));
    expect(r.status, r.err_msg).toBe('success');
    const u = r.unreachable2State!;
    const at = (line: number, label: string) => u.points.find((p) => p.line === line && p.label === label);
    expect(at(29, 'case')).toMatchObject({ file: dut, type: 'line' });
    expect(at(29, 'case')!.reason).toMatch(/all 4 values of the 2-bit selector 'sel'/);
    expect(at(50, 'case')!.reason).toMatch(/enum type has 2 members, all listed/);
    expect(at(17, 'mode')!.reason).toMatch(/enum type whose 2 members all leave this bit 0/);
    expect(at(55, 'sh')).toMatchObject({ type: 'toggle', points: 4 });
    expect(at(55, 'sh')!.reason).toMatch(/bits 0-3 of 'sh' hold the same value/);
    expect(at(66, 'k')!.reason).toMatch(/for-loop index 'k' with constant bounds/);
    expect(at(70, 'tied')!.reason).toMatch(/only ever assigned the constant 1'b0/);
    // The 3-bit case lists 3 of 8 values: its default arm (line 39) is reachable, and was reached.
    expect(u.points.filter((p) => p.line === 39 || p.label === 'cnt' || p.label === 'din')).toEqual([]);
    expect(u.count).toBe(u.points.reduce((a, p) => a + p.points, 0));
    // Listed points are uncovered ones: the figure without them is higher.
    expect(u.overall!).toBeGreaterThan(r.coverage!.waived.overall!);
  });

  it('the scored figure, the reward and the summary rows are unchanged by it', async () => {
    const r = await simulateFiles([dut], tbName, read(join(dir, tbName)), { keepRunDir: true });
    try {
      const points = parseVerilatorCoverage(readFileSync(r.coverageFile!, 'utf8'));
      const cov = analyzeCoverage(points, {
        isDutFile: (f) => f === dut,
        top: 'two_state',
        readSource: (f) => (f === dut ? readFileSync(f, 'utf8') : undefined),
      });
      // Every DUT point counts in c, the unreachable ones included.
      expect(r.coverage!.waived.overall).toBe(figures(cov.points).overall);
      expect(r.coverage!.waived.tallies.block.total + r.coverage!.waived.tallies.toggle.total).toBe(
        cov.points.filter((p) => p.type === 'line' || p.type === 'branch' || p.type === 'toggle').length,
      );
      expect(r.reward).toBe(1 + r.coverage!.waived.overall!);
      expect(r.cov_info!.summary[0]['Overall Average']).toBe(r.coverage!.waived.overall);
      expect(r.unreachable2State!.overall).toBe(cov.twoState.figures.overall);
    } finally {
      rmSync(r.protection.scratchDir!, { recursive: true, force: true });
    }
  });

  it('the CLI lists them by reason and gives the reachable ceiling beside the scored figure', async () => {
    const out = await execa(
      process.execPath,
      // The source rules alone (the formal engine, when on, replaces their proofs with its own).
      [join(repoRoot, 'dist', 'cli.js'), 'sim', '--top', 'two_state', '--tb', join(dir, tbName), '--formal-budget', '0', dut],
      {
        cwd: repoRoot,
        reject: false,
        env: { NO_COLOR: '1' },
      },
    );
    expect(out.exitCode, out.stderr).toBe(0);
    expect(out.stdout).toMatch(/^ {2}unreachable in 2-state simulation \(\d+\):$/m);
    expect(out.stdout).toMatch(
      /^reachable ceiling: coverage excluding the \d+ points? proven unreachable \([^)]*\d+ unreachable in 2-state simulation[^)]*\): \d+\.\d\d% .*; the scored figure stays \d+\.\d\d%$/m,
    );
  });
});
