// The build without VERILATOR that checks assertions only another simulator compiles
// (generate/otherSimulator.ts): what its failures add to a round, a flood stopped at the output
// limit still counted, and a build that cannot be made said as such. A scripted simulator stands in
// for Verilator (its records have the shape the backend writes; test/integration/legalStimulus
// runs the real one).
import { describe, expect, it } from 'vitest';
import type { Simulator, SimRequest } from '../../src/core/sim/simulator.js';
import type { SimResult } from '../../src/core/sim/result.js';
import { checkWithoutVerilator, withFailures, withoutVerilatorDefine } from '../../src/core/generate/otherSimulator.js';
import { emptyDesign } from '../../src/core/design/types.js';

const req: SimRequest = {
  design: { ...emptyDesign(), files: ['d.sv'] },
  top: 'd',
  testbench: { name: 'tb_d.sv', content: 'module tb_d; endmodule' },
};
const fail = (line: number, count = 2) => ({
  file: 'd.sv',
  line,
  kind: 'assertion' as const,
  message: 'm',
  count,
  firstTime: '5 ns',
  lastTime: '9 ns',
});
const result = (o: Partial<SimResult>): SimResult => ({ status: 'success', diagnostics: [], uncovered: [], ...o }) as unknown as SimResult;

function scripted(answer: SimResult): { sim: Simulator; seen: SimRequest[] } {
  const seen: SimRequest[] = [];
  const sim = {
    name: 'scripted',
    info: async () => ({ name: 'scripted', version: '0' }),
    simulate: async (r: SimRequest) => {
      seen.push(r);
      return answer;
    },
  } as unknown as Simulator;
  return { sim, seen };
}

describe('the build without VERILATOR', () => {
  it('runs the same testbench with VERILATOR undefined; only the sites the round did not report are added', async () => {
    const { sim, seen } = scripted(result({ dutAssertions: [fail(3), fail(7, 5)] }));
    const own = result({ dutAssertions: [fail(3)] });
    const c = await checkWithoutVerilator(sim, req, own);
    expect(seen[0].design.verilatorArgs).toEqual(['-UVERILATOR']);
    expect(seen[0].testbench).toBe(req.testbench);
    expect(c).toEqual({ failures: [fail(7, 5)] });
    expect(withFailures(own, c.failures).dutAssertions?.map((a) => a.line)).toEqual([3, 7]);
    expect(own.dutAssertions?.length).toBe(1); // not changed
    expect(withoutVerilatorDefine({ ...emptyDesign(), verilatorArgs: ['-Wno-WIDTH'] }).verilatorArgs).toEqual([
      '-Wno-WIDTH',
      '-UVERILATOR',
    ]);
  });

  it('a run stopped at the output limit by the flood still counts its failures, per site (a lower bound)', async () => {
    const printed = (line: number, count?: number) => ({
      file: 'tb_d.sv',
      origin: 'testbench',
      line: 1,
      column: 1,
      severity: 'error',
      stage: 'run',
      code: 'ASSERT',
      message: `printed by the testbench, not reported by the simulator: "/x/d.sv:${line}: Assertion failed in tb_d.uut.A: 5: [ASSERT FAILED] A"`,
      ...(count ? { count } : {}),
    });
    const { sim } = scripted(
      result({ status: 'xrun_failed', diagnostics: [printed(4, 300), printed(4), printed(9)] as SimResult['diagnostics'] }),
    );
    const c = await checkWithoutVerilator(sim, req, result({}));
    expect(c.failures.map((f) => [f.file, f.line, f.count])).toEqual([
      ['/x/d.sv', 4, 301],
      ['/x/d.sv', 9, 1],
    ]);
  });

  it('look-alike: a build that fails is said as unavailable, with its first error, and adds nothing', async () => {
    const { sim } = scripted(
      result({
        status: 'xrun_failed',
        diagnostics: [
          { file: 'p.sv', line: 48, column: 1, severity: 'error', stage: 'build', message: 'Unsupported: for loop initialization' },
        ] as SimResult['diagnostics'],
      }),
    );
    const c = await checkWithoutVerilator(sim, req, result({}));
    expect(c.failures).toEqual([]);
    expect(c.unavailable).toBe('xrun_failed: p.sv:48: Unsupported: for loop initialization');
  });
});
