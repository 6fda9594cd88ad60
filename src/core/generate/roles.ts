// What each DUT input is for: clock, reset (with polarity and whether it is asynchronous), or
// data. Decided from the front end's facts (which signals are sensitivity-list edges, port
// widths) and, where facts are silent, from the names designers use.
import type { ModuleInfo, PortInfo } from '../design/types.js';
import { significant, tokenize } from '../design/svTokens.js';

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

/**
 * How often each name is used as an edge in the design's source (`posedge X` / `negedge X` in
 * always blocks, clocking blocks and property clocks): clocks are identified by use, and the one
 * most registers use is the one stimulus steps on.
 */
export function sourceEdgeUses(sources: string[]): Map<string, number> {
  const uses = new Map<string, number>();
  for (const src of sources) {
    const t = significant(tokenize(src));
    for (let i = 0; i + 1 < t.length; i++) {
      if (t[i].kind !== 'id' || (t[i].value !== 'posedge' && t[i].value !== 'negedge')) continue;
      let j = i + 1;
      while (t[j]?.kind === 'op' && t[j].value === '(') j++;
      if (t[j]?.kind === 'id') uses.set(t[j].value, (uses.get(t[j].value) ?? 0) + 1);
    }
  }
  return uses;
}

/**
 * `sources`: the design's source text, when available: an input is a clock when it is used as an
 * edge (the netlist's sensitivity lists, or `posedge X` in the source); a name that looks like a
 * clock (`en_clk_x`) is one only when nothing is used as a clock at all. The clock most edges use
 * comes first: the stimulus steps on it.
 */
export function assignRoles(m: ModuleInfo, modules: ModuleInfo[] = [], sources?: string[]): Roles {
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
  const uses = sources ? sourceEdgeUses(sources) : new Map<string, number>();
  const used = (p: PortInfo): boolean => portEdges(m, p.name, modules).length > 0 || (uses.get(p.name) ?? 0) > 0;
  const cands = inputs.filter((p) => !isReset(p) && single(p));
  // Without the source, the names decide as before; with it, a name alone makes a clock only
  // when no input is used as one.
  const anyUsed = sources !== undefined && cands.some(used);
  for (const p of cands) {
    const edges = portEdges(m, p.name, modules);
    if (used(p) || (isClockName(p.name) && !anyUsed)) {
      const half = [5, 7, 11, 13][clocks.length % 4];
      clocks.push({ port: p, halfPeriodNs: half, activeEdge: edges.includes('neg') && !edges.includes('pos') ? 'neg' : 'pos' });
    }
  }
  // The clock most edges use first (port order among equals).
  if (sources && clocks.length > 1) {
    const n = (c: ClockRole): number => uses.get(c.port.name) ?? 0;
    const order = clocks.map((c, i) => ({ c, i })).sort((a, b) => n(b.c) - n(a.c) || a.i - b.i);
    clocks.splice(0, clocks.length, ...order.map((x) => x.c));
  }
  for (const p of inputs) if (!isReset(p) && !clocks.some((c) => c.port === p)) data.push(p);
  return { clocks, resets, data, outputs };
}
