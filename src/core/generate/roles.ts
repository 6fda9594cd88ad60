// What each DUT input is for: clock, reset (with polarity and whether it is asynchronous), or
// data. Decided from how the design uses each input (the slang front end's facts: design/facts.ts);
// only where slang could not read the design, from Verilator's netlist and the names designers use.
import type { ModuleInfo, PortInfo } from '../design/types.js';
import { clockFact, resetFact, type DesignFacts } from '../design/facts.js';

export interface ClockRole {
  port: PortInfo;
  /** Half period in ns: several clocks get unrelated periods (asynchronous FIFOs). */
  halfPeriodNs: number;
  /** Edge the design samples on; stimulus changes on the other one. */
  activeEdge: 'pos' | 'neg';
}

export interface ResetRole {
  port: PortInfo;
  activeLow: boolean;
  async: boolean;
  /** Where the design showed it (the front end's facts), for the testbench's header. */
  evidence?: string;
}

export interface Roles {
  clocks: ClockRole[];
  resets: ResetRole[];
  /** Every other input, driven with data stimulus. */
  data: PortInfo[];
  outputs: PortInfo[];
}

const CLOCK_NAME = /^(clk|clock|i_clk|clk_i|aclk|hclk|pclk|sclk|mclk)$|(^|_)(clk|clock)(_|$)|clk\d*$|^clk/i;
// AMBA prefixes its reset with the bus letter: PRESETn, HRESETn.
const RESET_NAME =
  /^(n?a?s?rst\w*|a?reset\w*|ar|areset\w*|nreset|resetb|clr|clear|i_rst\w*|rst_i\w*)$|(^|_)(a?rst|a?reset)(_?n|_b|b)?$|^[ph](reset|rst)(_?n|_b|b)?$/i;
const ACTIVE_LOW = /(_n|_b|n|b)$|^n(rst|reset)/i;
/** Direction suffixes (`reset_in`, `rst_i`) say nothing about polarity: strip them first. */
const DIR_SUFFIX = /_(in|i|inp|input)$/i;

export function isClockName(name: string): boolean {
  return CLOCK_NAME.test(name);
}

export function isResetName(name: string): boolean {
  return RESET_NAME.test(name);
}

/**
 * Sensitivity edges of a top port, looked up in the top module and, where the top only wires
 * the port through, in the modules below it that name a signal the same (the usual
 * pass-through: `encoder u (.clk_in(clk_in), .reset_in(reset_in))`).
 */
export function portEdges(m: ModuleInfo, name: string, modules: ModuleInfo[] = []): Array<'pos' | 'neg'> {
  if (m.edges[name]?.length) return m.edges[name];
  const seen = new Set<string>([m.name]);
  const queue = [...m.instantiates];
  while (queue.length) {
    const n = queue.shift()!;
    if (seen.has(n)) continue;
    seen.add(n);
    const sub = modules.find((x) => x.name === n);
    if (!sub) continue;
    if (sub.edges[name]?.length) return sub.edges[name];
    queue.push(...sub.instantiates);
  }
  return [];
}

/** Half periods of several clocks in `round`: one period for all in the first round (the clocks of
 * one design are related unless it crosses domains), then other ratios, so a clock-domain crossing
 * is exercised at several relations across rounds. */
export function clockHalves(n: number, round: number): number[] {
  const ratios = [5, 7, 11, 3, 13];
  return Array.from({ length: n }, (_, i) => (i === 0 || round === 0 ? 5 : ratios[(round + i - 1) % ratios.length]));
}

/**
 * Roles from the design's use (design/facts.ts, slang): a reset is an input the design tests at the
 * top of an edge-triggered block (its polarity from the condition, asynchronous when it is also an
 * edge of that block); a clock is an input used as an edge that is not a reset, the one most
 * blocks use first. Names decide nothing. Everything else is data.
 */
function rolesFromFacts(m: ModuleInfo, facts: DesignFacts, round: number): Roles {
  const inputs = m.ports.filter((p) => p.direction === 'input' || p.direction === 'inout');
  const outputs = m.ports.filter((p) => p.direction === 'output');
  const single = (p: PortInfo): boolean => p.width === 1 && p.unpackedDims.length === 0;
  const resets: ResetRole[] = [];
  for (const p of inputs) {
    const f = single(p) ? resetFact(facts, p.name) : undefined;
    if (f) resets.push({ port: p, activeLow: f.activeLow, async: f.async, evidence: f.evidence });
  }
  const isReset = (p: PortInfo): boolean => resets.some((r) => r.port === p);
  const clocked = inputs
    .map((p, i) => ({ p, i, f: single(p) && !isReset(p) ? clockFact(facts, p.name) : undefined }))
    .filter((x): x is { p: PortInfo; i: number; f: NonNullable<ReturnType<typeof clockFact>> } => x.f !== undefined)
    .sort((a, b) => b.f.uses - a.f.uses || a.i - b.i);
  const halves = clockHalves(clocked.length, round);
  const clocks: ClockRole[] = clocked.map((x, k) => ({ port: x.p, halfPeriodNs: halves[k], activeEdge: x.f.edge }));
  const data = inputs.filter((p) => !isReset(p) && !clocks.some((c) => c.port === p));
  return { clocks, resets, data, outputs };
}

/**
 * What each input is for. With the design's facts (the slang front end), from use alone. Without
 * them (slang could not elaborate the design: said as a warning where the facts are read), from
 * Verilator's netlist: its sensitivity-list edges, and the names designers use where edges are
 * silent.
 */
export function assignRoles(m: ModuleInfo, modules: ModuleInfo[] = [], facts?: DesignFacts, round = 0): Roles {
  if (facts) return rolesFromFacts(m, facts, round);
  const inputs = m.ports.filter((p) => p.direction === 'input' || p.direction === 'inout');
  const outputs = m.ports.filter((p) => p.direction === 'output');
  const single = (p: PortInfo): boolean => p.width === 1 && p.unpackedDims.length === 0;
  const resets: ResetRole[] = [];
  const clocks: ClockRole[] = [];
  const data: PortInfo[] = [];
  // Resets first: an async reset is an edge too, but its name says what it is.
  for (const p of inputs) {
    if (!single(p) || !isResetName(p.name)) continue;
    const edges = portEdges(m, p.name, modules);
    const bare = p.name.replace(DIR_SUFFIX, '');
    const activeLow =
      edges.includes('neg') && !edges.includes('pos')
        ? true
        : edges.includes('pos')
          ? false
          : ACTIVE_LOW.test(bare) && !/^(areset|reset|ar|clr|clear)$/i.test(bare);
    resets.push({ port: p, activeLow, async: edges.length > 0 });
  }
  const isReset = (p: PortInfo): boolean => resets.some((r) => r.port === p);
  const cands = inputs.filter((p) => !isReset(p) && single(p));
  const anyUsed = cands.some((p) => portEdges(m, p.name, modules).length > 0);
  for (const p of cands) {
    const edges = portEdges(m, p.name, modules);
    if (edges.length > 0 || (isClockName(p.name) && !anyUsed)) {
      const half = [5, 7, 11, 13][clocks.length % 4];
      clocks.push({ port: p, halfPeriodNs: half, activeEdge: edges.includes('neg') && !edges.includes('pos') ? 'neg' : 'pos' });
    }
  }
  for (const p of inputs) if (!isReset(p) && !clocks.some((c) => c.port === p)) data.push(p);
  return { clocks, resets, data, outputs };
}
