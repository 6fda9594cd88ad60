// How the two slang readings of a design (VERILATOR defined, and not) make one set of facts.
import { describe, expect, it } from 'vitest';
import { combineReadings, type DesignReading, type FactReset } from '../../src/core/design/facts.js';

const reading = (fields: Partial<DesignReading>): DesignReading => ({
  version: 1,
  ok: true,
  slang: '12.1.0',
  diagnostics: [],
  top: 't',
  topCandidates: ['t'],
  modules: [],
  clocks: [],
  resets: [],
  assertions: [],
  loads: [],
  includes: [],
  ...fields,
});
const reset = (signal: string, activeLow: boolean, evidence = 'disable iff (!rst_ni) in t'): FactReset => ({
  signal,
  activeLow,
  async: false,
  uses: 1,
  evidence,
});

describe('combineReadings', () => {
  it('a clock and a reset only hidden assertions use come from the reading without VERILATOR', () => {
    const withV = reading({});
    const withoutV = reading({ clocks: [{ signal: 'clk_i', edge: 'pos', uses: 5 }], resets: [reset('rst_ni', true)] });
    const f = combineReadings(withV, withoutV, 't');
    expect(f.clocks).toEqual([{ signal: 'clk_i', edge: 'pos', uses: 5 }]);
    expect(f.resets).toEqual([{ ...reset('rst_ni', true), evidence: 'disable iff (!rst_ni) in t (only without the VERILATOR define)' }]);
    expect(f.disagreements).toEqual([]);
  });

  it("where both readings use a port, Verilator's decides, and a different use is reported", () => {
    const withV = reading({ clocks: [{ signal: 'clk', edge: 'pos', uses: 1 }], resets: [reset('rst', false, 'always_ff')] });
    const withoutV = reading({ clocks: [{ signal: 'clk', edge: 'neg', uses: 3 }], resets: [reset('rst', true)] });
    const f = combineReadings(withV, withoutV, 't');
    expect(f.clocks).toEqual(withV.clocks);
    expect(f.resets).toEqual(withV.resets);
    expect(f.disagreements).toEqual([
      'the resets rst are used differently with and without the VERILATOR define; the reading Verilator compiles is used',
    ]);
  });

  it('a port one reading uses as a reset is never a clock from the other', () => {
    const withV = reading({ resets: [reset('rst_ni', true, 'always_ff')] });
    const withoutV = reading({ clocks: [{ signal: 'rst_ni', edge: 'neg', uses: 1 }] });
    expect(combineReadings(withV, withoutV, 't').clocks).toEqual([]);
    expect(combineReadings(withV, null, 't').resets).toEqual(withV.resets);
  });
});
