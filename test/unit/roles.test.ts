import { describe, expect, it } from 'vitest';
import { portInfo } from '../helpers.js';
import { assignRoles } from '../../src/core/generate/roles.js';
import type { ModuleInfo, PortInfo } from '../../src/core/design/types.js';
import { cornerValues, literal, randomExpr, withNeighbours } from '../../src/core/generate/values.js';

const port = portInfo;
const mod = (ports: PortInfo[], edges: ModuleInfo['edges'] = {}): ModuleInfo => ({
  name: 'm',
  file: 'm.sv',
  line: 1,
  ports,
  params: [],
  instantiates: [],
  edges,
  comparisons: {},
});

describe('assignRoles', () => {
  it('async active-low reset from its negedge, clock from its posedge', () => {
    const r = assignRoles(
      mod([port('clk'), port('rst_n'), port('en'), port('d', 'input', 8), port('q', 'output', 8)], { clk: ['pos'], rst_n: ['neg'] }),
    );
    expect(r.clocks.map((c) => c.port.name)).toEqual(['clk']);
    expect(r.resets).toMatchObject([{ port: { name: 'rst_n' }, activeLow: true, async: true }]);
    expect(r.data.map((p) => p.name)).toEqual(['en', 'd']);
    expect(r.outputs.map((p) => p.name)).toEqual(['q']);
  });

  it('VerilogEval-style names: areset is async active-high, reset sync active-high, resetn sync active-low', () => {
    expect(assignRoles(mod([port('clk'), port('areset')], { clk: ['pos'], areset: ['pos'] })).resets[0]).toMatchObject({
      activeLow: false,
      async: true,
    });
    expect(assignRoles(mod([port('clk'), port('reset')], { clk: ['pos'] })).resets[0]).toMatchObject({ activeLow: false, async: false });
    expect(assignRoles(mod([port('clk'), port('resetn')], { clk: ['pos'] })).resets[0]).toMatchObject({ activeLow: true, async: false });
  });

  it('several clocks get unrelated periods; a negedge-only design is sampled on negedge', () => {
    const r = assignRoles(mod([port('wclk'), port('rclk'), port('d', 'input', 4)], { wclk: ['pos'], rclk: ['neg'] }));
    expect(r.clocks.map((c) => [c.port.name, c.halfPeriodNs, c.activeEdge])).toEqual([
      ['wclk', 5, 'pos'],
      ['rclk', 7, 'neg'],
    ]);
  });

  it('a wide input named like a clock is data; a combinational design has no clock', () => {
    const r = assignRoles(mod([port('clk_div', 'input', 4), port('a'), port('b')]));
    expect(r.clocks).toEqual([]);
    expect(r.data.map((p) => p.name)).toEqual(['clk_div', 'a', 'b']);
  });
});

describe('stimulus values', () => {
  it('random expressions cover any width', () => {
    expect(randomExpr(1)).toBe("1'($urandom)");
    expect(randomExpr(32)).toBe('$urandom');
    expect(randomExpr(100)).toBe("100'({$urandom, $urandom, $urandom, $urandom})");
  });
  it('corners and literals', () => {
    expect(cornerValues(4).map((v) => v.toString(2))).toEqual(['0', '1111', '1000', '1', '111', '101', '1010']);
    expect(cornerValues(1)).toEqual([0n, 1n]);
    expect(literal(8, 255n)).toBe("8'hff");
    expect(literal(4, 31n)).toBe("4'hf");
    expect(withNeighbours(8, 255n)).toEqual([255n, 0n, 254n]);
  });
});
