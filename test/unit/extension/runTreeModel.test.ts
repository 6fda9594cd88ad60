import { describe, expect, it } from 'vitest';
import { children, view, MAX_POINTS } from '../../../src/extension/views/runTreeModel.js';
import type { RunRecord } from '../../../src/extension/views/history.js';
import type { RoundRecord } from '../../../src/extension/worker/protocol.js';

const round = (o: Partial<RoundRecord>): RoundRecord => ({
  sample: 0,
  round: 0,
  testbench: 'module tb; endmodule',
  status: 'success',
  verdict: { passed: true },
  coverage: null,
  uncovered: [],
  diagnostics: [],
  notes: [],
  errMsg: '',
  ...o,
});
const cov = (overall: number) => ({ overall }) as RoundRecord['coverage'];
const point = (line: number) => ({
  type: 'line' as const,
  file: 'rtl/counter.sv',
  line,
  label: 'if',
  hier: 'tb.uut',
  count: 0,
  source: 'if (en)',
});

const run: RunRecord = {
  id: 'r1',
  kind: 'generate',
  startedAt: '2026-12-03T10:00:00Z',
  top: 'counter',
  model: 'model-free',
  simulator: 'verilator 5.006',
  state: 'done',
  message: '',
  best: 1,
  testbenchPath: '/w/tb_counter_1.sv',
  designDir: '/w',
  rounds: [
    round({ round: 0, coverage: cov(0.5), uncovered: [point(12), point(19)] }),
    round({ round: 1, coverage: cov(0.9), uncovered: Array.from({ length: 80 }, (_, i) => point(i + 1)) }),
    round({ round: 2, testbench: null, status: 'unparsable' }),
  ],
};

describe('run-history tree', () => {
  it('runs -> rounds -> uncovered points (bounded)', () => {
    expect(children([run])).toEqual([{ kind: 'run', runId: 'r1' }]);
    expect(children([run], { kind: 'run', runId: 'r1' })).toHaveLength(3);
    expect(children([run], { kind: 'round', runId: 'r1', index: 0 })).toHaveLength(2);
    expect(children([run], { kind: 'round', runId: 'r1', index: 1 })).toHaveLength(MAX_POINTS);
    expect(children([run], { kind: 'round', runId: 'gone', index: 0 })).toEqual([]);
  });

  it('a run shows its best coverage and opens its testbench file', () => {
    const v = view([run], { kind: 'run', runId: 'r1' })!;
    expect(v.label).toBe('generate counter');
    expect(v.description).toBe('90.0% · done');
    expect(v.open).toEqual({ command: 'vscode.open', args: ['/w/tb_counter_1.sv'] });
  });

  it('a round opens its testbench, marks the best, and has no action without a testbench', () => {
    const best = view([run], { kind: 'round', runId: 'r1', index: 1 })!;
    expect(best.label).toBe('round 2 ★');
    expect(best.open).toEqual({ command: 'chorus.openRound', args: ['r1', 1] });
    expect(best.contextValue).toBe('chorus.round');
    const empty = view([run], { kind: 'round', runId: 'r1', index: 2 })!;
    expect(empty.open).toBeUndefined();
    expect(empty.contextValue).toBe('chorus.roundEmpty');
  });

  it('a round stopped by Cancel says cancelled, not exception', () => {
    const stopped: RunRecord = {
      ...run,
      state: 'cancelled',
      best: null,
      rounds: [round({ status: 'exception', verdict: { passed: false }, errMsg: 'cancelled', testbench: null })],
    };
    const v = view([stopped], { kind: 'round', runId: 'r1', index: 0 })!;
    expect(v.description).toBe('cancelled · n/a');
    expect(v.icon).toBe('circle-slash');
    const failed = view([{ ...stopped, rounds: [round({ status: 'exception', verdict: { passed: false }, errMsg: 'g++ crashed' })] }], {
      kind: 'round',
      runId: 'r1',
      index: 0,
    })!;
    expect(failed.description).toBe('exception · n/a');
  });

  it('a point opens its source line, resolved against the design folder', () => {
    const v = view([run], { kind: 'point', runId: 'r1', index: 0, point: 1 })!;
    expect(v.label).toBe('counter.sv:19');
    expect(v.open).toEqual({ command: 'chorus.openLocation', args: ['/w/rtl/counter.sv', 19] });
  });

  it('every command the tree runs is contributed or built in', async () => {
    const { readFileSync } = await import('node:fs');
    const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
    const ids = new Set(pkg.contributes.commands.map((c: { command: string }) => c.command));
    for (const c of ['chorus.openRound', 'chorus.openLocation', 'chorus.diffRound']) expect(ids.has(c)).toBe(true);
    expect(pkg.contributes.views.chorus[0].id).toBe('chorus.runs');
  });
});
